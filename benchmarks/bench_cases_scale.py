"""`oxy cases run` on a prompt file of many offline (``mock``) cases, beside a bare loop.

No network and no model time: what is measured is all overhead (loading the file,
rendering, scoring, storing every execution, the report). Target: 10,000 cases end to
end in under 3 s. Each command is timed as a whole process (start-up included), median
of ``--rounds``, with its peak RSS:

* the bare loop (``_bare_cases.py``): libyaml, one Jinja template, one regex per case,
  an exact comparison, every result into SQLite in one ``executemany``: the least a
  tool doing the same could do;
* ``oxy cases run`` on a project with no history yet (the cases are synced, every
  execution and answer stored);
* ``oxy cases run`` again, the history there (regressions read for every case);
* ``oxy cases run --cache`` (every answer replayed from the history);
* with ``--deep N``: ``oxy cases run --cache`` once N more runs are in the history (a
  replay must not slow down as the history grows: each case's recent scores are read
  from its kept window, one row, not from its last executions).

    python benchmarks/bench_cases_scale.py [--cases 10000] [--rounds 3] [--deep 10]
                                           [--format json|pretty]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _server import timed_rss  # noqa: E402

CONFIG = """\
models:
  - name: m
    vendor: mock
    rules:
      - {match: 'good', output: positive}
      - {match: '.', output: negative}
"""


def write_project(root: Path, cases: int) -> None:
    """A project of one prompt with ``cases`` cases, half answered each way."""
    (root / "config.yml").write_text(CONFIG)
    parts = ['name: p\nmodel: m\ntemplate: "Classify: {{ text }}"\nsimilarity: lexical\ncases:\n']
    for i in range(cases):
        word, expected = ("good", "positive") if i % 2 == 0 else ("bad", "negative")
        parts.append(
            f'  - name: case {i}\n    input: {{text: "{word} item {i}"}}\n'
            f"    expected_output: {expected}\n"
        )
    (root / "p.prompt.yml").write_text("".join(parts))


OK_CODES = (0,)


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    return timed_rss(cmd, cwd, OK_CODES)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--format", default="json", choices=("json", "pretty"))
    parser.add_argument("--deep", type=int, default=0, help="runs added before a last replay")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_project(root, args.cases)
        oxy = [sys.executable, "-m", "oxyeval", "cases", "run", "p.prompt.yml"]
        oxy += ["--format", args.format, "-q"]
        bare = [sys.executable, str(HERE / "_bare_cases.py"), "p.prompt.yml"]
        rows: dict[str, list[tuple[float, float]]] = {
            "bare loop": [],
            "oxy cases run, first run": [],
            "oxy cases run, history exists": [],
            "oxy cases run --cache": [],
        }
        for _ in range(args.rounds):
            rows["bare loop"].append(timed(bare, root))
            shutil.rmtree(root / ".oxy", ignore_errors=True)
            rows["oxy cases run, first run"].append(timed(oxy, root))
            rows["oxy cases run, history exists"].append(timed(oxy, root))
            rows["oxy cases run --cache"].append(timed([*oxy, "--cache"], root))
        if args.deep:
            for _ in range(args.deep):
                timed([*oxy, "--cache"], root)
            deep = f"--cache, {3 * args.rounds + args.deep}+ runs behind"
            rows[deep] = [timed([*oxy, "--cache"], root) for _ in range(args.rounds)]

    bare_s = statistics.median(t for t, _ in rows["bare loop"])
    print(f"{args.cases:,} mock cases, --format {args.format}, {args.rounds} rounds (median)")
    for name, runs in rows.items():
        wall = statistics.median(t for t, _ in runs)
        rss = max(m for _, m in runs)
        per_case = wall / args.cases * 1e6
        print(
            f"  {name:31s} {wall:6.2f} s  {per_case:6.0f} us/case  peak RSS {rss:5.0f} MB"
            f"  {wall / bare_s:5.1f}x bare   (runs: {', '.join(f'{t:.2f}' for t, _ in runs)})"
        )
    print("  target: 10,000 cases end to end under 3 s")


if __name__ == "__main__":
    main()
