"""`oxy test` against a bare httpx script: wall time for the same calls.

Target (the developers' brief): n=200 at concurrency 10 against a local server
answering in 50 ms, `oxy test` within 1.25x the bare script's wall time, both
timed as whole processes (start-up included), median of several rounds.

`oxy test` keeps each test's result and the judge verdicts in the project's history
database. Each round times, in turn:

* the bare script;
* `oxy test` on a project with no history at all (a project's first run, the worst
  case: the database is created with SQLAlchemy and Alembic, and every verdict is
  asked for, as the bare script does);
* `oxy test` again, the history now there (every later run: results and cache through
  the lean sqlite3 store; the 3 verdicts are replayed, the 200 answers asked);
* `oxy test --no-history`, which never opens the history, to show what it costs.

    python benchmarks/bench_oxy_test.py [--n 200] [--concurrency 10] [--latency 0.05] [--rounds 5]
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _server import project_with_server, run_checked, w1_arguments  # noqa: E402


def timed(cmd: list[str], cwd: Path, *, fresh_history: bool = False) -> float:
    if fresh_history:
        shutil.rmtree(cwd / ".oxy", ignore_errors=True)
    start = time.perf_counter()
    run_checked(cmd, cwd)
    return time.perf_counter() - start


def main() -> None:
    args = w1_arguments(__doc__, rounds=5)

    with project_with_server(args.latency, args.concurrency) as root:
        url = (root / "config.yml").read_text().split("api_url: ")[1].split()[0]
        (root / "bench.agent.yml").write_text(
            "model: local\nsystem_instructions: Answer briefly.\ntests:\n"
            f"  - type: consistency\n    n: {args.n}\n    concurrency: {args.concurrency}\n"
            "    task_description: What is the total?\n"
        )
        oxy = [sys.executable, "-m", "oxyeval", "test", "bench.agent.yml", "--format", "json", "-q"]
        off = [*oxy, "--no-history"]
        bare = [sys.executable, str(HERE / "_bare.py"), url, str(args.n), str(args.concurrency)]
        timed(bare, root)  # warm the OS file cache for both interpreters
        timed(oxy, root, fresh_history=True)
        timed(off, root)
        bare_times, first_times, rerun_times, off_times = [], [], [], []
        for _ in range(args.rounds):
            bare_times.append(timed(bare, root))
            first_times.append(timed(oxy, root, fresh_history=True))
            rerun_times.append(timed(oxy, root))
            off_times.append(timed(off, root))

    b, first = statistics.median(bare_times), statistics.median(first_times)
    rerun, no_history = statistics.median(rerun_times), statistics.median(off_times)

    def runs(times: list[float]) -> str:
        return f"(runs: {', '.join(f'{t:.2f}' for t in times)})"

    ideal = -(-args.n // args.concurrency) * args.latency
    print(
        f"n={args.n} concurrency={args.concurrency} latency={args.latency * 1000:.0f} ms, {args.rounds} rounds (median)"
    )
    print(f"  ideal (network only)       {ideal:6.2f} s")
    print(f"  bare httpx script          {b:6.2f} s   {runs(bare_times)}")
    print(f"  oxy test, first run        {first:6.2f} s   {runs(first_times)}")
    print(f"  oxy test, history exists   {rerun:6.2f} s   {runs(rerun_times)}")
    print(f"  oxy test --no-history      {no_history:6.2f} s   {runs(off_times)}")
    print(f"  ratio first run/bare       {first / b:6.2f} x")
    print(f"  ratio history exists/bare  {rerun / b:6.2f} x   (target <= 1.25)")
    print(f"  ratio --no-history/bare    {no_history / b:6.2f} x")


if __name__ == "__main__":
    main()
