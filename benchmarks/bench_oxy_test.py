"""`oxy test` against a bare httpx script: wall time for the same calls.

Target (the developers' brief): n=200 at concurrency 10 against a local server
answering in 50 ms, `oxy test` within 1.25x the bare script's wall time, both
timed as whole processes (start-up included), median of several rounds.

`oxy test` keeps judge verdicts in the project's history database, so each round
starts from no history at all (the worst case: the database is created, and every
verdict is asked for, as the bare script does); `oxy test --no-cache`, which never
opens the history, is timed too, to show what opening it costs.

    python benchmarks/bench_oxy_test.py [--n 200] [--concurrency 10] [--latency 0.05] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Measure as installed: pip writes .pyc files at install time, so let the timed
# processes cache bytecode even where the environment disables it (this sandbox does).
BENCH_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
sys.path.insert(0, str(HERE))

from _server import project_with_server  # noqa: E402


def timed(cmd: list[str], cwd: Path, *, fresh_history: bool = False) -> float:
    if fresh_history:
        shutil.rmtree(cwd / ".oxy", ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=BENCH_ENV)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    with project_with_server(args.latency, args.concurrency) as root:
        url = (root / "config.yml").read_text().split("api_url: ")[1].split()[0]
        (root / "bench.agent.yml").write_text(
            "model: local\nsystem_instructions: Answer briefly.\ntests:\n"
            f"  - type: consistency\n    n: {args.n}\n    concurrency: {args.concurrency}\n"
            "    task_description: What is the total?\n"
        )
        oxy = [sys.executable, "-m", "oxyeval", "test", "bench.agent.yml", "--format", "json", "-q"]
        no_cache = [*oxy, "--no-cache"]
        bare = [sys.executable, str(HERE / "_bare.py"), url, str(args.n), str(args.concurrency)]
        timed(bare, root)  # warm the OS file cache for both interpreters
        timed(oxy, root, fresh_history=True)
        timed(no_cache, root)
        bare_times, oxy_times, off_times = [], [], []
        for _ in range(args.rounds):
            bare_times.append(timed(bare, root))
            oxy_times.append(timed(oxy, root, fresh_history=True))
            off_times.append(timed(no_cache, root))

    b, o = statistics.median(bare_times), statistics.median(oxy_times)
    off = statistics.median(off_times)
    ideal = -(-args.n // args.concurrency) * args.latency
    print(
        f"n={args.n} concurrency={args.concurrency} latency={args.latency * 1000:.0f} ms, {args.rounds} rounds (median)"
    )
    print(f"  ideal (network only)   {ideal:6.2f} s")
    print(
        f"  bare httpx script      {b:6.2f} s   (runs: {', '.join(f'{t:.2f}' for t in bare_times)})"
    )
    print(
        f"  oxy test               {o:6.2f} s   (runs: {', '.join(f'{t:.2f}' for t in oxy_times)})"
    )
    print(
        f"  oxy test --no-cache    {off:6.2f} s   (runs: {', '.join(f'{t:.2f}' for t in off_times)})"
    )
    print(f"  ratio oxy/bare         {o / b:6.2f} x   (target <= 1.25)")
    print(f"  ratio --no-cache/bare  {off / b:6.2f} x")


if __name__ == "__main__":
    main()
