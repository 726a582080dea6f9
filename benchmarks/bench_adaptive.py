"""``--adaptive`` on scripted models: runs used and judge calls saved against a fixed ``runs``.

Each sequence is one (subject, criterion) whose runs pass independently with the model's
true rate; :class:`oxyeval.evaluation.AdaptiveTest` sees each verdict as it comes and
stops when the pass/fail decision against the threshold is settled (alpha 0.05, anytime
valid), else at the maximum. For each true rate: mean runs used of the maximum, the calls
saved, how the sequences ended (decided early or at the maximum), and the share of wrong
early decisions. Issue 17's figure is the first line: a 95%-pass model, threshold 0.8,
runs 50.

    python benchmarks/bench_adaptive.py [--sequences 1000] [--runs 50] [--threshold 0.8] [--seed 17]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from oxyeval.evaluation import AdaptiveTest  # noqa: E402


def simulate(p: float, threshold: float, runs: int, sequences: int, seed: int) -> dict[str, float]:
    """Figures for ``sequences`` scripted sequences at true pass rate ``p``."""
    rng = random.Random(seed)
    used = passed = failed = wrong = 0
    for _ in range(sequences):
        test = AdaptiveTest(threshold, runs)
        while not test.done:
            test.observe(rng.random() < p)
        used += test.runs
        if test.decided == "pass":
            passed += 1
            wrong += p < threshold
        elif test.decided == "fail":
            failed += 1
            wrong += p >= threshold
    return {
        "mean_runs": used / sequences,
        "saved": 1.0 - used / (runs * sequences),
        "pass": passed / sequences,
        "fail": failed / sequences,
        "undecided": (sequences - passed - failed) / sequences,
        "wrong": wrong / sequences,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()

    print(
        f"threshold {args.threshold}, runs {args.runs} (maximum), alpha 0.05, "
        f"{args.sequences} sequences per row"
    )
    print(
        f"{'true p':>6}  {'mean runs':>9}  {'saved':>6}  {'pass':>6}  {'fail':>6}  "
        f"{'at max':>6}  {'wrong':>6}"
    )
    start = time.perf_counter()
    for p in (0.95, 0.5, 0.8):
        r = simulate(p, args.threshold, args.runs, args.sequences, args.seed)
        print(
            f"{p:>6.2f}  {r['mean_runs']:>5.1f}/{args.runs:<3d}  {r['saved']:>6.1%}  "
            f"{r['pass']:>6.1%}  {r['fail']:>6.1%}  {r['undecided']:>6.1%}  {r['wrong']:>6.1%}"
        )
    print(f"({time.perf_counter() - start:.2f} s)")


if __name__ == "__main__":
    main()
