"""100,000 samples in the kinds that run each test many times, offline (``mock`` models):
wall time and peak RSS of a first run and of a ``--cache`` replay, at two sizes, so it
shows whether memory grows with the number of samples.

* ``*.test.yml`` (judged pass/fail): ``--tests`` cases of ``--runs`` runs each;
* consistency tests (``oxy test`` on an agent): ``--tests`` tests of ``n: --runs``;
* A/B (``oxy ab run``): ``--tests`` cases, two branches, ``--runs // 2`` iterations.

Every answer is the same, so the judge is asked once per test: what is measured is the
run's own work per sample (answering, judging by the answer's group, storing, the
report). Target: peak RSS under 300 MB at 100,000 samples, and the same at half of them
give or take the start-up's memory.

    python benchmarks/bench_samples_scale.py [--tests 1000] [--runs 100] [--kinds testfiles,consistency,ab]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _server import timed_rss  # noqa: E402

CONFIG = """\
models:
  - {name: bot, vendor: mock, outputs: ["The total is 1,204."]}
  - {name: other, vendor: mock, outputs: ["The total is 1,204 in all."]}
  - name: judge
    vendor: mock
    rules:
      - {match: "Verdict", output: "It says the total.\\nVerdict: PASS"}
      - {match: ".", output: "Same.\\nAnswer: A\\nVerdict: PASS"}
"""


def write_testfiles(root: Path, tests: int, runs: int) -> list[str]:
    (root / "a.agent.yml").write_text("model: bot\nsystem_instructions: Answer.\n")
    cases = "".join(
        f"  - {{name: case {i}, prompt: 'Total of order {i}?', expected: 'The total is 1,204.'}}\n"
        for i in range(tests)
    )
    (root / "a.agent.test.yml").write_text(
        f"settings: {{runs: {runs}, concurrency: 50, judge_model: judge}}\ncases:\n{cases}"
    )
    return ["test", "a.agent.test.yml"]


def write_consistency(root: Path, tests: int, runs: int) -> list[str]:
    lines = "".join(
        f"  - {{type: consistency, name: t{i}, n: {runs}, task_description: 'total {i}?', "
        "model_ref: judge}\n"
        for i in range(tests)
    )
    (root / "c.agent.yml").write_text(f"model: bot\nsystem_instructions: Answer.\ntests:\n{lines}")
    return ["test", "c.agent.yml"]


def write_ab(root: Path, tests: int, runs: int) -> list[str]:
    cases = "".join(
        f"  - {{name: c{i}, input: {{text: 'order {i}'}}, expected_output: 'The total is 1,204.'}}\n"
        for i in range(tests)
    )
    (root / "p.prompt.yml").write_text(
        "name: totals\nmodel: bot\ntemplate: 'Total of {{ text }}?'\nsimilarity: lexical\n"
        "branches:\n  - {name: Bot, model: bot, control: true}\n  - {name: Other, model: other}\n"
        f"cases:\n{cases}"
    )
    return ["ab", "run", "--iterations", str(max(1, runs // 2))]


KINDS = {"testfiles": write_testfiles, "consistency": write_consistency, "ab": write_ab}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tests", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise SystemExit(f"unknown kind(s) {unknown}; choose from {sorted(KINDS)}")

    print(f"samples: {args.tests:,} tests x {args.runs} runs, mock models, --format json")
    for kind in kinds:
        for tests in (args.tests // 2, args.tests):
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                (root / "config.yml").write_text(CONFIG)
                command = KINDS[kind](root, tests, args.runs)
                oxy = [sys.executable, "-m", "oxyeval", *command, "--format", "json"]
                first = timed_rss(oxy, root)
                again = timed_rss([*oxy, "--cache"], root)
                shutil.rmtree(root / ".oxy", ignore_errors=True)
            samples = tests * args.runs
            print(
                f"  {kind:12s} {samples:>8,} samples  first {first[0]:6.1f} s {first[1]:5.0f} MB"
                f"   --cache {again[0]:6.1f} s {again[1]:5.0f} MB"
            )
    print("  target: peak RSS under 300 MB at 100,000 samples, flat as the samples double")


if __name__ == "__main__":
    main()
