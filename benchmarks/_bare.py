"""The baseline: a bare httpx asyncio script making the same calls as `oxy test`.

n agent calls at the given concurrency, then one judge call per distinct pair
of answers, over one shared client: the least any tool could do.
"""

from __future__ import annotations

import asyncio
import itertools
import sys

import httpx


async def main(url: str, n: int, concurrency: int) -> None:
    semaphore = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=60) as client:

        async def call(messages: list[dict[str, str]]) -> str:
            async with semaphore:
                r = await client.post(
                    f"{url}/chat/completions", json={"model": "bench", "messages": messages}
                )
                r.raise_for_status()
                return r.json()["choices"][0]["message"]["content"]

        question = [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "What is the total?"},
        ]
        texts = await asyncio.gather(*(call(question) for _ in range(n)))
        distinct = sorted({" ".join(t.split()) for t in texts})
        prompts = [
            [
                {
                    "role": "user",
                    "content": f"[Submission 1]\n{a}\n[Submission 2]\n{b}\nAnswer: A or B",
                }
            ]
            for a, b in itertools.combinations(distinct, 2)
        ]
        verdicts = await asyncio.gather(*(call(p) for p in prompts))
    print(f"{len(texts)} answers, {len(verdicts)} judge calls")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
