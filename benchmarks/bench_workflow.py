"""A workflow of 50 independent agent tasks against a local server with 100 ms latency.

Prints the wall time of `oxy run` (the engine part, and the whole process) next to
the ideal ceil(50 / concurrency) x 0.1 s and the sequential 50 x 0.1 s = 5 s that
a one-task-at-a-time engine (oxy's) would take.

    python benchmarks/bench_workflow.py [--tasks 50] [--concurrency 10] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _server import BENCH_ENV, project_with_server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()

    with project_with_server(args.latency, args.concurrency) as root:
        (root / "a.agent.yml").write_text("model: local\nsystem_instructions: Answer briefly.\n")
        tasks = "".join(
            f"  - {{name: t{i}, type: agent, agent_ref: a.agent.yml, prompt: 'question {i}'}}\n"
            for i in range(args.tasks)
        )
        (root / "bench.workflow.yml").write_text("tasks:\n" + tasks)
        cmd = [
            sys.executable,
            "-m",
            "oxyeval",
            "run",
            "bench.workflow.yml",
            "--format",
            "json",
            "-q",
            "--concurrency",
            str(args.concurrency),
        ]
        subprocess.run(cmd, cwd=root, capture_output=True, env=BENCH_ENV)  # warm-up
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=BENCH_ENV)
        process_s = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        doc = json.loads(proc.stdout)
        starts = [t["started_s"] for t in doc["tasks"]]
        ends = [t["started_s"] + t["duration_s"] for t in doc["tasks"]]

    ideal = math.ceil(args.tasks / args.concurrency) * args.latency
    print(
        f"{args.tasks} independent agent tasks, concurrency {args.concurrency}, server latency {args.latency * 1000:.0f} ms"
    )
    print(f"  ideal ceil({args.tasks}/{args.concurrency}) x {args.latency:g} s   {ideal:6.2f} s")
    print(f"  engine (first start to last end)   {max(ends) - min(starts):6.2f} s")
    print(f"  whole `oxy run` process            {process_s:6.2f} s")
    print(
        f"  sequential ({args.tasks} x {args.latency:g} s, like oxy)    {args.tasks * args.latency:6.2f} s"
    )


if __name__ == "__main__":
    main()
