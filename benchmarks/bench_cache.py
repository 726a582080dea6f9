"""W1 cold against a `--cache` rerun: wall time and requests of each.

W1 is `oxy test` with n=200 runs at concurrency 10 against a local server answering
in 50 ms. The cold run starts from no history: it makes every agent call and every
judge call, and keeps the answers and verdicts. The rerun of the unchanged test with
`--cache` replays them all: it must make no request, and its wall time is start-up
plus reading the cache. Both timed as whole processes, median of several rounds.

    python benchmarks/bench_cache.py [--n 200] [--concurrency 10] [--latency 0.05] [--rounds 3]
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _server import BenchServer, run_checked, server_project, w1_arguments  # noqa: E402


def timed(cmd: list[str], bench: BenchServer) -> tuple[float, dict[str, int], dict[str, Any]]:
    """Wall time, requests the server received, and the JSON document of one run."""
    before = bench.requests()
    start = time.perf_counter()
    proc = run_checked(cmd, bench.root)
    elapsed = time.perf_counter() - start
    after = bench.requests()
    made = {k: after[k] - before[k] for k in after}
    return elapsed, made, json.loads(proc.stdout)


def main() -> None:
    args = w1_arguments(__doc__, rounds=3)

    cold_times, warm_times = [], []
    cold_made: dict[str, int] = {}
    warm_made: dict[str, int] = {}
    served = 0
    with server_project(args.latency, args.concurrency) as bench:
        (bench.root / "bench.agent.yml").write_text(
            "model: local\nsystem_instructions: Answer briefly.\ntests:\n"
            f"  - type: consistency\n    n: {args.n}\n    concurrency: {args.concurrency}\n"
            "    task_description: What is the total?\n"
        )
        oxy = [
            sys.executable,
            "-m",
            "oxyeval",
            "test",
            "bench.agent.yml",
            "--format",
            "json",
            "-q",
            "--cache",
        ]
        timed(oxy, bench)  # warm the OS file cache
        for _ in range(args.rounds):
            shutil.rmtree(bench.root / ".oxy", ignore_errors=True)  # no history: cold
            wall, cold_made, _doc = timed(oxy, bench)
            cold_times.append(wall)
            wall, warm_made, doc = timed(oxy, bench)
            warm_times.append(wall)
            served = doc["summary"]["cachedCalls"]

    cold, warm = statistics.median(cold_times), statistics.median(warm_times)
    print(
        f"W1: n={args.n} concurrency={args.concurrency} latency={args.latency * 1000:.0f} ms, "
        f"{args.rounds} rounds (median)"
    )
    print(
        f"  cold (no history)       {cold:6.2f} s   {cold_made['total']:4d} requests "
        f"({cold_made['agent']} agent, {cold_made['judge']} judge)   "
        f"(runs: {', '.join(f'{t:.2f}' for t in cold_times)})"
    )
    print(
        f"  rerun with --cache      {warm:6.2f} s   {warm_made['total']:4d} requests "
        f"({served} calls served from the cache)   "
        f"(runs: {', '.join(f'{t:.2f}' for t in warm_times)})"
    )
    print(f"  speed-up               {cold / warm:6.1f} x")
    if warm_made["total"]:
        raise SystemExit(f"the --cache rerun made {warm_made['total']} request(s); expected 0")


if __name__ == "__main__":
    main()
