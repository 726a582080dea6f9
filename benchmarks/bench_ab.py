"""`oxy ab run`: 5 branches x 20 iterations against a 100 ms streaming server at
concurrency 10, against the ideal (the calls' network time alone).

The server (its own process, so its threads do not take the client's GIL) speaks
OpenAI's streamed chat completions: the first token after ``--latency``, the rest at
once, usage in the last chunk. Every branch is a ``provider: openai`` branch sent there
through config.yml's ``providers:``. 100 calls at 10 in flight take 10 x 100 ms = 1.0 s
of network time; the command's wall time (a whole process: start-up, the history's
creation, syncing, storing 100 executions, ranking, the report) is printed beside it.

    python benchmarks/bench_ab.py [--branches 5] [--iterations 20] [--concurrency 10] [--latency 0.1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _server import BENCH_ENV, run_checked  # noqa: E402


def serve(latency: float) -> None:
    """The streaming server: prints its URL, then serves until stdin closes."""
    from tests.fakes import FakeServer, RecordedRequest
    from tests.providers.streamfakes import openai_events, timed

    def respond(_request: RecordedRequest):  # type: ignore[no-untyped-def]
        events = openai_events(["The total ", "is 1,204."], usage=(30, 6))
        return timed(events, first=latency, gap=0.0)

    with FakeServer(respond, prefix="/v1") as server:
        print(server.url, flush=True)
        for _line in sys.stdin:
            pass


BARE = """\
import asyncio, sys, time
import httpx

async def main(url, n, concurrency):
    limit = asyncio.Semaphore(concurrency)
    body = {"model": "bench", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "What is the total?"}]}
    async with httpx.AsyncClient(timeout=60) as client:
        async def call():
            async with limit:
                async with client.stream("POST", url + "/chat/completions", json=body) as r:
                    r.raise_for_status()
                    async for _line in r.aiter_lines():
                        pass
        await asyncio.gather(*(call() for _ in range(n)))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


PHASES = """\
import sys, time
t0 = time.perf_counter()
from oxyeval.suites.ab import run_ab_tests
marks = {}
def sink(event):
    marks.setdefault(type(event).__name__, time.perf_counter() - t0)
    if type(event).__name__ == "SampleFinished":
        marks["last"] = time.perf_counter() - t0
run_ab_tests(project_dir=".", iterations=int(sys.argv[1]), concurrency=int(sys.argv[2]), events=sink)
print(marks["SubjectStarted"], marks["last"] - marks["SubjectStarted"], time.perf_counter() - t0)
"""


def project(root: Path, url: str, branches: int) -> None:
    (root / "config.yml").write_text(
        "models:\n  - {name: local, vendor: mock, outputs: [unused]}\n"
        f"providers:\n  openai: {{api_url: '{url}'}}\n"
        "pricing:\n"
        + "".join(f"  bench-{i}: {{input: 0.1, output: 0.4}}\n" for i in range(branches))
    )
    listed = "".join(
        f"  - {{name: b{i}, provider: openai, model: bench-{i}{', control: true' if i == 0 else ''}}}\n"
        for i in range(branches)
    )
    (root / "bench.prompt.yml").write_text(
        "name: bench\nmodel: local\ntemplate: 'What is the total?'\nsimilarity: lexical\n"
        f"branches:\n{listed}"
        "cases:\n  - {name: total, input: {}, expected_output: 'The total is 1,204.'}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--branches", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return

    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(args.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            project(root, url, args.branches)
            cmd = [
                sys.executable, "-m", "oxyeval", "ab", "run", "--iterations", str(args.iterations),
                "--concurrency", str(args.concurrency), "--format", "json", "-q",
            ]  # fmt: skip
            version = [sys.executable, "-m", "oxyeval", "--version"]
            (root / "bare.py").write_text(BARE)
            (root / "phases.py").write_text(PHASES)
            phases = [sys.executable, "phases.py", str(args.iterations), str(args.concurrency)]
            bare = [
                sys.executable,
                "bare.py",
                url,
                str(args.branches * args.iterations),
                str(args.concurrency),
            ]
            run_checked(version, root)  # warm the OS file cache
            run_checked(bare, root)
            starts, walls, bares, reruns = [], [], [], []
            befores: list[float] = []
            call_phases: list[float] = []
            doc: dict = {}
            for _ in range(args.rounds):
                started = time.perf_counter()
                run_checked(version, root)
                starts.append(time.perf_counter() - started)
                started = time.perf_counter()
                run_checked(bare, root)
                bares.append(time.perf_counter() - started)
                shutil.rmtree(root / ".oxy", ignore_errors=True)  # a first run
                started = time.perf_counter()
                proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=BENCH_ENV)
                walls.append(time.perf_counter() - started)
                if proc.returncode != 0:
                    raise SystemExit(f"oxy ab run failed ({proc.returncode}):\n{proc.stderr}")
                doc = json.loads(proc.stdout)
                started = time.perf_counter()
                run_checked(cmd, root)  # again, the history now there
                reruns.append(time.perf_counter() - started)
                before, calls, _total = map(float, run_checked(phases, root).stdout.split())
                befores.append(before)
                call_phases.append(calls)
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=10)

    calls = args.branches * args.iterations
    ideal = -(-calls // args.concurrency) * args.latency
    (case,) = doc["results"]
    runs = sum(b["runs"] for b in case["branches"])
    ttft = statistics.median(b["timeToFirstToken"] for b in case["branches"])
    wall, start = statistics.median(walls), statistics.median(starts)
    b = statistics.median(bares)
    print(
        "(the fake server opens a connection per streamed call, as a server that closes "
        "streams does; the bare script pays that too)"
    )
    print(
        f"{args.branches} branches x {args.iterations} iterations = {calls} calls, concurrency "
        f"{args.concurrency}, server {args.latency * 1000:.0f} ms, {args.rounds} rounds (median)"
    )
    print(f"  ideal (network only)          {ideal:6.2f} s")
    print(f"  bare httpx streaming script   {b:6.2f} s   (the same calls: what the server allows)")
    print(f"  oxy ab run, whole process     {wall:6.2f} s   ({wall / ideal:.2f}x ideal; runs: "
          f"{', '.join(f'{w:.2f}' for w in walls)})")  # fmt: skip
    print(f"  of which start-up (--version) {start:6.2f} s")
    rerun = statistics.median(reruns)
    print(f"  oxy ab run, history exists    {rerun:6.2f} s   ({rerun / b:.2f}x the bare script)")
    print(f"  oxy ab run / bare script      {wall / b:6.2f}x (first run: creates the history)")
    print(
        f"  in process: set-up {statistics.median(befores):.2f} s (imports, project, history, "
        f"sync), calls {statistics.median(call_phases):.2f} s (first call to last stored)"
    )
    print(f"  beyond ideal and start-up     {wall - ideal - start:6.2f} s")
    print(f"  executions stored {runs}, median time to first token {ttft:.0f} ms")


if __name__ == "__main__":
    main()
