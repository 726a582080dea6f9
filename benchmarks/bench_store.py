"""The history store at a realistic size: does reading stats stay flat as history grows?

Builds a temporary database with one test case holding 100,000 executions spread over
90 days, plus 1,000 other cases with a few executions each. Every execution goes through
``Store.record_executions`` (the same per-row bookkeeping as ``record_execution``: case
aggregates, daily rollup, run progress), just batched into big transactions for speed.
Then times, as the median of repeated calls:

* ``test_case_stats`` on the 100k-execution case   (target: under 50 ms)
* ``list_test_cases`` over 1,000 cases              (target: under 200 ms)

and, for context, one committed ``record_execution``, ``history_for_case``, and the
migration 1 -> 2 backfill on a 100k-execution schema-1 database.

    python benchmarks/bench_store.py [--executions 100000] [--cases 1000] [--days 90]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oxyeval.store import Store, migrate, utc_timestamp

START = datetime(2026, 1, 1, tzinfo=timezone.utc)
BATCH = 10_000


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm the page cache and statement cache
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def big_case_rows(n: int, days: int, run_id: str, rng: random.Random) -> Iterator[dict[str, Any]]:
    span = days * 86_400
    for i in range(n):
        score = None if i % 17 == 0 else rng.random()
        passed = score is not None and score >= 0.8
        regression = not passed and i % 29 == 0
        yield {
            "test_case_id": "big",
            "run_id": run_id,
            "passed": passed,
            "score": score,
            "actual_output": "The answer is " + "x" * rng.randint(5, 60),
            "exact_match": False,
            "semantic_score": score,
            "is_regression": regression,
            "regression_type": "SCORE_DROP" if regression else None,
            "prompt_version": 1 + i * 5 // n,
            "run_duration_ms": rng.uniform(50, 900),
            "created_at": utc_timestamp(START + timedelta(seconds=i * span / n)),
        }


def verdict(ms: float, target: float) -> str:
    return "OK" if ms < target else "OVER TARGET"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--executions", type=int, default=100_000)
    parser.add_argument("--cases", type=int, default=1_000)
    parser.add_argument("--per-case", type=int, default=5, help="executions per small case")
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(7)

    with tempfile.TemporaryDirectory(prefix="oxy-bench-store-") as tmp:
        db = Path(tmp) / "oxyeval.db"
        total_start = time.perf_counter()
        with Store.open(db) as store:
            store.upsert_prompt("p-big", "Big prompt", "big.yml")
            store.ensure_version("p-big", {"system": "answer", "model": "m"})
            store.create_test_case("p-big", "big case", {"q": "?"}, "The answer is x", id="big")
            run = store.start_run("p-big", 1, args.executions)

            t = time.perf_counter()
            rows = big_case_rows(args.executions, args.days, run, rng)
            written = 0
            while written < args.executions:
                chunk = [next(rows) for _ in range(min(BATCH, args.executions - written))]
                written += store.record_executions(chunk)
            store.finish_run(run)
            build_big = time.perf_counter() - t

            t = time.perf_counter()
            small: list[dict[str, Any]] = []
            for c in range(args.cases):
                case_id = f"case-{c:04d}"
                store.upsert_test_case(
                    case_id, f"p-{c % 20}", f"case {c}", {"n": c}, "ok", source_file="t.yml"
                )
                for k in range(args.per_case):
                    score = rng.random()
                    small.append(
                        {
                            "test_case_id": case_id,
                            "passed": score >= 0.8,
                            "score": score,
                            "actual_output": "ok",
                            "prompt_version": 1,
                            "created_at": utc_timestamp(START + timedelta(days=k)),
                        }
                    )
            store.record_executions(small)
            build_small = time.perf_counter() - t

            stats = store.test_case_stats("big")
            assert stats is not None and stats["totalRuns"] == args.executions
            listed = store.list_test_cases()
            assert len(listed) == args.cases + 1

            stats_ms = median_ms(lambda: store.test_case_stats("big"), args.repeat)
            list_ms = median_ms(store.list_test_cases, args.repeat)
            hist_ms = median_ms(lambda: store.history_for_case("big"), args.repeat)
            counter = iter(range(10**9))
            record_ms = median_ms(
                lambda: store.record_execution(
                    test_case_id=f"case-{next(counter) % args.cases:04d}",
                    passed=True,
                    score=0.9,
                    actual_output="ok",
                    prompt_version=1,
                ),
                200,
            )
        size_mb = db.stat().st_size / 1e6

        # Migration 1 -> 2 on an old database of the same size: the rollup backfill cost.
        old = Path(tmp) / "v1.db"
        conn = sqlite3.connect(old, isolation_level=None)
        migrate(conn, target=1)
        conn.execute("BEGIN")
        conn.execute("INSERT INTO prompts VALUES ('p', 'p', '', '2026-01-01T00:00:00.000Z')")
        conn.execute(
            "INSERT INTO test_cases (id, prompt_id, name, created_at, updated_at) "
            "VALUES ('big', 'p', 'big', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')"
        )
        conn.executemany(
            "INSERT INTO executions (id, test_case_id, execution_id, passed, score, "
            "actual_output, is_regression, regression_type, prompt_version, created_at) "
            "VALUES (?, 'big', ?, ?, ?, ?, ?, ?, 1, ?)",
            (
                (
                    f"e{i}",
                    f"e{i}",
                    int(r["passed"]),
                    r["score"],
                    r["actual_output"],
                    int(r["is_regression"]),
                    r["regression_type"],
                    r["created_at"],
                )
                for i, r in enumerate(big_case_rows(args.executions, args.days, "", rng))
            ),
        )
        conn.execute("COMMIT")
        t = time.perf_counter()
        migrate(conn)
        migrate_s = time.perf_counter() - t
        days = conn.execute("SELECT count(*) FROM case_daily").fetchone()[0]
        conn.close()
        total_s = time.perf_counter() - total_start

    n, c = args.executions, args.cases
    print(
        f"history store benchmark (SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]})"
    )
    print(f"  setup: {n:,} executions on one case over {args.days} days in {build_big:.1f} s")
    print(f"         ({n / build_big:,.0f} rows/s via record_executions), ", end="")
    print(f"{c:,} cases x {args.per_case} executions in {build_small:.1f} s; db {size_mb:.1f} MB")
    print(
        f"  test_case_stats (100k-execution case) {stats_ms:8.2f} ms   target < 50 ms   "
        f"{verdict(stats_ms, 50)}   (trend days: {len(stats['trendData'])}, "
        f"regressions: {stats['regressionCount']:,})"
    )
    print(
        f"  list_test_cases ({c + 1:,} cases)           {list_ms:8.2f} ms   target < 200 ms  "
        f"{verdict(list_ms, 200)}"
    )
    print(f"  history_for_case (recent 10)           {hist_ms:8.2f} ms")
    print(f"  record_execution (one commit)          {record_ms:8.2f} ms")
    print(
        f"  migrate v1 -> v2 with {n:,} executions  {migrate_s * 1000:8.0f} ms   "
        f"({days} rollup rows backfilled)"
    )
    print(f"  total wall time {total_s:.1f} s (medians of {args.repeat} calls)")


if __name__ == "__main__":
    main()
