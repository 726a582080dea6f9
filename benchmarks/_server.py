"""A fake OpenAI-compatible server in its own process, for benchmarks.

Run in a separate process so its threads do not compete with the measured
client for the GIL. Agent calls get one of three answers in turn; judge calls
(recognised by the built-in judge prompt) get a verdict.
"""

from __future__ import annotations

import itertools
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes import RecordedRequest, fake_openai

ANSWERS = ["The total is 1,204.", "Total: 1204", "We have 1,204 in total."]


def main() -> None:
    latency = float(sys.argv[1]) if len(sys.argv) > 1 else 0.05
    counter = itertools.count()
    lock = threading.Lock()

    def answer(request: RecordedRequest) -> str:
        last = request.body["messages"][-1]["content"]
        if "[Submission 1]" in last:
            return "Both report 1,204.\nAnswer: A"
        with lock:
            k = next(counter)
        return ANSWERS[k % len(ANSWERS)]

    with fake_openai(answer, latency=latency) as server:
        print(server.url, flush=True)
        sys.stdin.read()  # until the parent closes our stdin


if __name__ == "__main__":
    main()
