"""A fake OpenAI-compatible server in its own process, for benchmarks.

Run in a separate process so its threads do not compete with the measured
client for the GIL. Agent calls get one of three answers in turn; judge calls
(recognised by the built-in judge prompt) get a verdict. Sent a line on its stdin,
the server answers with how many requests it has received (agent and judge calls).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes import RecordedRequest, fake_openai

__all__ = [
    "BENCH_ENV",
    "BenchServer",
    "project_with_server",
    "run_checked",
    "server_project",
    "timed_rss",
    "w1_arguments",
]

# Measure as installed: pip writes .pyc files at install time, so let the timed
# processes cache bytecode even where the environment disables it (this sandbox does);
# and a team's OXY_DB must not send the benchmark's history elsewhere.
BENCH_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "OXY_DB")}


def w1_arguments(description: str | None, rounds: int) -> argparse.Namespace:
    """The W1 workload's options (n=200 runs, concurrency 10, a 50 ms server)."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser.parse_args()


def run_checked(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run one timed command as installed; stop the benchmark if it failed."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=BENCH_ENV)
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    return proc


def timed_rss(cmd: list[str], cwd: Path, ok_codes: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one command, run to its end (its stderr kept in
    a file: a pipe nobody reads while it runs would stop it once full); stop the
    benchmark if it exits with a code not in ``ok_codes``. The peak counts the processes
    the command starts (a history's writer process) on top of its own: the kernel's
    figure for a waited-for process is the largest of them, not their sum."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=BENCH_ENV, stdout=subprocess.DEVNULL, stderr=err)
        helpers: dict[int, int] = {}
        done = threading.Event()
        watcher = threading.Thread(target=_watch_children, args=(proc.pid, helpers, done))
        watcher.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            done.set()
            watcher.join()
        elapsed = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in ok_codes:
            err.seek(0)
            text = err.read().decode(errors="replace")[-3000:]
            raise SystemExit(f"command failed ({code}): {' '.join(cmd)}\n{text}")
    own = usage.ru_maxrss / 1024
    others = sum(helpers.values()) / 1024
    # ru_maxrss is already the largest of the command and its waited-for children
    return elapsed, own + others if others < own else max(own, others)


def _watch_children(pid: int, peaks: dict[int, int], done: threading.Event) -> None:
    """The peak RSS (kB, VmHWM) of each process ``pid`` starts, looked at every 20 ms."""
    while not done.wait(0.02):
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return
        for child in children:
            try:
                status = Path(f"/proc/{child}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    peaks[int(child)] = max(peaks.get(int(child), 0), int(line.split()[1]))


ANSWERS = ["The total is 1,204.", "Total: 1204", "We have 1,204 in total."]


class BenchServer:
    """The server process and its project: ``requests()`` asks it how many it has had."""

    def __init__(self, process: subprocess.Popen[str], url: str, root: Path) -> None:
        self._process = process
        self.url = url
        self.root = root

    def requests(self) -> dict[str, int]:
        """Requests received so far: {"agent": ..., "judge": ..., "total": ...}."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write("count\n")
        self._process.stdin.flush()
        agent, judge = (int(x) for x in self._process.stdout.readline().split())
        return {"agent": agent, "judge": judge, "total": agent + judge}


@contextlib.contextmanager
def server_project(latency: float, concurrency: int) -> Iterator[BenchServer]:
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
            yield BenchServer(server, url, root)
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=10)


@contextlib.contextmanager
def project_with_server(latency: float, concurrency: int) -> Iterator[Path]:
    """:func:`server_project`, for callers that only need the project folder."""
    with server_project(latency, concurrency) as bench:
        yield bench.root


def main() -> None:
    latency = float(sys.argv[1]) if len(sys.argv) > 1 else 0.05
    counter = itertools.count()
    counts = {"agent": 0, "judge": 0}
    lock = threading.Lock()

    def answer(request: RecordedRequest) -> str:
        last = request.body["messages"][-1]["content"]
        if "[Submission 1]" in last:
            with lock:
                counts["judge"] += 1
            return "Both report 1,204.\nAnswer: A"
        with lock:
            counts["agent"] += 1
            k = next(counter)
        return ANSWERS[k % len(ANSWERS)]

    with fake_openai(answer, latency=latency) as server:
        print(server.url, flush=True)
        for _line in sys.stdin:  # a line asks for the counts; EOF: the parent is done
            with lock:
                print(counts["agent"], counts["judge"], flush=True)


if __name__ == "__main__":
    main()
