"""A fake OpenAI-compatible server in its own process, for benchmarks.

Run in a separate process so its threads do not compete with the measured
client for the GIL. Agent calls get one of three answers in turn; judge calls
(recognised by the built-in judge prompt) get a verdict.
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes import RecordedRequest, fake_openai

__all__ = ["project_with_server"]

ANSWERS = ["The total is 1,204.", "Total: 1204", "We have 1,204 in total."]


@contextlib.contextmanager
def project_with_server(latency: float, concurrency: int) -> Iterator[Path]:
    """A temporary project whose one model points at this server, run in its own process."""
    server = subprocess.Popen(
        [sys.executable, __file__, str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "config.yml").write_text(
                "models:\n  - name: local\n    vendor: openai\n    model_ref: bench\n"
                f"    api_url: {url}\n    concurrency: {concurrency}\n"
            )
            yield root
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=10)


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
