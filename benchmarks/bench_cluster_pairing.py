"""pairing: cluster against pairing: all: judge calls and the verdict, on answers whose
clusters are known.

n runs give distinct texts that fall into k true clusters (a scripted judge says
"consistent" exactly when two texts share their cluster). Both pairings are scored by
the one consistency routine (:func:`oxyeval.judge.assess`); the table shows the judge
calls each made, the calls ``cluster`` saved, the inferred pairs it checked and the
accuracy each found, which must be equal. No model, no network: the figures are counts.

    python benchmarks/bench_cluster_pairing.py [--n 20] [--clusters 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import random

from oxyeval.judge.consistency import assess
from oxyeval.judge.judge import JudgeResult


def _texts(n: int, k: int, seed: int) -> dict[int, str]:
    rng = random.Random(seed)
    # The first cluster the majority, the rest shared out at random.
    return {
        run: f"cluster {0 if rng.random() < 0.6 else rng.randrange(1, k) if k > 1 else 0} run {run}"
        for run in range(1, n + 1)
    }


async def _measure(texts: dict[int, str], pairing: str) -> tuple[int, float | None, object]:
    calls = 0

    async def compare(s1: str, s2: str) -> JudgeResult:
        nonlocal calls
        calls += 1
        same = s1.split()[1] == s2.split()[1]
        return JudgeResult("A" if same else "B", "", "", 1, None)

    out = await assess(texts, compare, n=len(texts), pairing=pairing, concurrency=10)
    return calls, out.accuracy, out.pairing_check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--clusters", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(
        f"{'n':>5} {'k':>3} {'all calls':>10} {'cluster calls':>14} {'saved':>7} "
        f"{'checked':>8} {'disagree':>9} {'accuracy all':>13} {'accuracy cluster':>17}"
    )
    for n in sorted({args.n, 50, 200}):
        texts = _texts(n, args.clusters, args.seed)
        all_calls, all_acc, _ = asyncio.run(_measure(texts, "all"))
        calls, acc, check = asyncio.run(_measure(texts, "cluster"))
        assert check is not None and acc == all_acc, "the two pairings disagree"
        print(
            f"{n:>5} {args.clusters:>3} {all_calls:>10} {calls:>14} {check.calls_saved:>7} "
            f"{check.checked:>8} {len(check.disagreements):>9} {all_acc:>13.4f} {acc:>17.4f}"
        )


if __name__ == "__main__":
    main()
