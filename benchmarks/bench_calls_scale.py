"""Many model calls through `oxy cases run`, beside a bare httpx loop making the same calls.

A local fake OpenAI-compatible server (its own process, ``_fast_server.py``, on asyncio)
answers every call after ``--latency``; ``--calls`` test cases, one call each, at ``--concurrency``.
Printed for each side: wall time, calls/s, peak RSS; for oxy, the ratio to the bare loop
and how fast its history took the executions (rows/s of the run's own writes, and of
``record_batch`` alone on a fresh history). Targets: peak RSS under 300 MB, calls/s
within 1.3x of the bare loop.

    python benchmarks/bench_calls_scale.py [--calls 100000] [--concurrency 200] [--latency 0.02]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from _server import timed_rss  # noqa: E402

BARE = """\
import asyncio, sys, httpx

async def main(url, n, concurrency):
    limit = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)) as client:
        async def call(i):
            async with limit:
                r = await client.post(f"{url}/chat/completions", json={
                    "model": "bench", "messages": [{"role": "user", "content": f"Say {i}"}]})
                r.raise_for_status()
                return r.json()["choices"][0]["message"]["content"]
        done = 0
        pending = iter(range(n))
        running = set()
        for i in pending:
            running.add(asyncio.ensure_future(call(i)))
            if len(running) >= 4 * concurrency:
                finished, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                done += len(finished)
        done += len(await asyncio.gather(*running))
    print(done, "calls")

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


#: 1: some cases failed their check, which is not what is measured
OK_CODES = (0, 1)


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    return timed_rss(cmd, cwd, OK_CODES)


#: Cases per file: a project file holds at most 5 MB and 250,000 values.
PER_FILE = 10_000


def write_cases(root: Path, calls: int) -> None:
    """One prompt and ``calls`` cases, one call each, in files of PER_FILE cases."""
    for part, first in enumerate(range(0, calls, PER_FILE)):
        head = (
            'name: p\nmodel: local\ntemplate: "Say {{ n }}"\nsimilarity: lexical\ncases:\n'
            if part == 0
            else "prompt: p.prompt.yml\ncases:\n"
        )
        lines = [head]
        lines += [
            f"  - {{name: c{i}, input: {{n: {i}}}, expected_output: 'The total is 1,204.'}}\n"
            for i in range(first, min(calls, first + PER_FILE))
        ]
        name = "p.prompt.yml" if part == 0 else f"part{part}.cases.yml"
        (root / name).write_text("".join(lines))


def store_rate(rows: int) -> float:
    """Executions per second through ``record_batch`` (batches of 500) on a fresh file."""
    from oxyeval.store import NewExecution, open_store

    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "h.db") as store:
        for i in range(rows):
            store.cases.create("p", f"c{i}", {"n": i}, "ok")
        run = store.runs.start(prompt_id="p", prompt_version=1, total=rows)
        start = time.perf_counter()
        for first in range(0, rows, 500):
            store.executions.record_batch(
                NewExecution(
                    test_case_id=f"p::c{i}",
                    run_id=run,
                    status="passed",
                    score=1.0,
                    actual_output="ok",
                    prompt_version=1,
                )
                for i in range(first, min(rows, first + 500))
            )
        return rows / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.02)
    args = parser.parse_args()

    server = subprocess.Popen(
        [sys.executable, str(HERE / "_fast_server.py"), str(args.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    url = server.stdout.readline().strip()  # type: ignore[union-attr]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "config.yml").write_text(
            "models:\n  - name: local\n    vendor: openai\n    model_ref: bench\n"
            f"    api_url: {url}\n    concurrency: {args.concurrency}\n"
        )
        write_cases(root, args.calls)
        (root / "bare.py").write_text(BARE)
        bare = [sys.executable, "bare.py", url, str(args.calls), str(args.concurrency)]
        oxy = [sys.executable, "-m", "oxyeval", "cases", "run", "-q"]  # the whole project
        oxy += ["--format", "json", "--concurrency", str(args.concurrency)]
        bare_s, bare_mb = timed(bare, root)
        oxy_s, oxy_mb = timed(oxy, root)
        from oxyeval.store import open_store

        with open_store(root / ".oxy" / "oxyeval.db", read_only=True) as store:
            (run,) = store.runs.list(1)
            stored = run.done
    server.stdin.close()  # type: ignore[union-attr]
    server.wait(timeout=10)
    rate = store_rate(min(args.calls, 20_000))
    print(
        f"{args.calls:,} calls, concurrency {args.concurrency}, "
        f"server latency {args.latency * 1000:.0f} ms"
    )
    print(
        f"  bare httpx loop    {bare_s:7.1f} s  {args.calls / bare_s:7.0f} calls/s  {bare_mb:5.0f} MB"
    )
    print(
        f"  oxy cases run      {oxy_s:7.1f} s  {args.calls / oxy_s:7.0f} calls/s  {oxy_mb:5.0f} MB"
    )
    print(f"  ratio oxy/bare     {oxy_s / bare_s:7.2f} x   (target <= 1.3; peak RSS < 300 MB)")
    print(f"  history: {stored:,} executions stored during the run ({stored / oxy_s:,.0f}/s);")
    print(f"           record_batch alone on a fresh file: {rate:,.0f} executions/s")


if __name__ == "__main__":
    main()
