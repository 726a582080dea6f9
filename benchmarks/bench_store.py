"""The history store at a realistic size, on SQLite and on PostgreSQL: do reads stay flat
as history grows, and what does a write cost?

For each backend, builds a history with one test case holding 100,000 executions spread
over 90 days, plus 1,000 other cases with a few executions each (through
``executions.record_many``: the same bookkeeping as a single write, in big transactions).
Then times, as the median of repeated calls:

* ``stats.case_stats`` on the 100k-execution case    (target: under 50 ms)
* ``cases.list`` over 1,001 cases                    (target: under 200 ms)
* ``stats.history`` with a baseline (what each case run reads before scoring)
* ``runs.list``, what ``oxy history`` and the API's ``runs`` read: the 20 newest of 100
  small runs, and every run with the 100k-execution one among them (its counts)
* inserting 10,000 executions one by one, each its own committed transaction, as
  ``oxy cases run`` writes them (per-row cost), and in bulk (per-row cost)

and, on SQLite, converting a 0.1.0 history file with 100,000 executions.

PostgreSQL: a throwaway local cluster (``tests/pgcluster.py``: needs initdb/pg_ctl, e.g.
Debian's postgresql package, and psycopg), or an existing empty database with
``--pg-url postgresql://user@host/db``; ``--no-postgres`` skips it.

    python benchmarks/bench_store.py [--executions 100000] [--cases 1000] [--inserts 10000]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from oxyeval.store import NewExecution, Store, open_store, resolve_location, utc_timestamp  # noqa: E402

START = datetime(2026, 1, 1, tzinfo=timezone.utc)
BATCH = 10_000
_SMALL_RUNS = 100  # runs of 10 executions each, listed beside the big one


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm caches (page cache, statement cache, connection pool)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def big_case_rows(
    n: int, days: int, run_id: str | None, rng: random.Random
) -> Iterator[NewExecution]:
    span = days * 86_400
    for i in range(n):
        score = None if i % 17 == 0 else rng.random()
        passed = score is not None and score >= 0.8
        regression = not passed and i % 29 == 0
        yield NewExecution(
            test_case_id="big",
            run_id=run_id,
            status="passed" if passed else "failed",
            score=score,
            actual_output="The answer is " + "x" * rng.randint(5, 60),
            expected_output="The answer is x",
            similarity_method="lexical",
            semantic_score=score,
            is_regression=regression,
            regression_type="SCORE_DROP" if regression else None,
            prompt_version=1 + i * 5 // n,
            run_duration_ms=rng.uniform(50, 900),
            created_at=utc_timestamp(START + timedelta(seconds=i * span / n)),
        )


def verdict(ms: float, target: float) -> str:
    return "OK" if ms < target else "OVER TARGET"


def bench(store: Store, args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(7)
    out: dict[str, Any] = {}
    store.prompts.upsert("p-big", "Big prompt", "big.yml")
    store.prompts.ensure_version("p-big", {"system": "answer", "model": "m"})
    store.cases.create("p-big", "big case", {"q": "?"}, "The answer is x", id="big")
    run = store.runs.start(prompt_id="p-big", prompt_version=1, total=args.executions)
    t = time.perf_counter()
    rows = big_case_rows(args.executions, args.days, run, rng)
    written = 0
    while written < args.executions:
        chunk = [next(rows) for _ in range(min(BATCH, args.executions - written))]
        written += store.executions.record_many(chunk)
    store.runs.finish(run)
    out["build_big"] = time.perf_counter() - t

    t = time.perf_counter()
    small: list[NewExecution] = []
    for c in range(args.cases):
        case_id = f"case-{c:04d}"
        store.cases.upsert(case_id, f"p-{c % 20}", f"case {c}", {"n": c}, "ok", source_file="t.yml")
        for k in range(args.per_case):
            score = rng.random()
            small.append(
                NewExecution(
                    test_case_id=case_id,
                    status="passed" if score >= 0.8 else "failed",
                    score=score,
                    actual_output="ok",
                    prompt_version=1,
                    created_at=utc_timestamp(START + timedelta(days=k)),
                )
            )
    store.executions.record_many(small)
    out["build_small"] = time.perf_counter() - t

    stats = store.stats.case_stats("big")
    assert stats is not None and stats.total_runs == args.executions
    assert len(store.cases.list()) == args.cases + 1
    out["trend_days"] = len(stats.trend)
    out["regressions"] = stats.regression_count
    out["stats_ms"] = median_ms(lambda: store.stats.case_stats("big"), args.repeat)
    out["list_ms"] = median_ms(store.cases.list, args.repeat)
    out["history_ms"] = median_ms(
        lambda: store.stats.history("big", 10, baseline=("The answer is x", "lexical")), args.repeat
    )

    for r in range(_SMALL_RUNS):
        small_run = store.runs.start(prompt_id=f"p-{r % 20}", prompt_version=1, total=10)
        store.executions.record_many(
            NewExecution(
                test_case_id=f"case-{(r * 10 + k) % args.cases:04d}",
                run_id=small_run,
                status=("passed", "failed", "pending", "error")[k % 4],
                score=None if k % 4 >= 2 else k / 10,
                actual_output="ok",
                error="no answer" if k % 4 == 3 else None,
                prompt_version=1,
            )
            for k in range(10)
        )
        store.runs.finish(small_run)
    newest = store.runs.list(20)
    assert len(newest) == 20 and all(x.passed + x.failed + x.errors == 8 for x in newest)
    out["runs_ms"] = median_ms(lambda: store.runs.list(20), args.repeat)
    out["runs_all_ms"] = median_ms(lambda: store.runs.list(_SMALL_RUNS + 1), args.repeat)

    run = store.runs.start(prompt_id="p-0", prompt_version=1, total=args.inserts)
    counter = iter(range(10**9))

    def one() -> NewExecution:
        return NewExecution(
            test_case_id=f"case-{next(counter) % args.cases:04d}",
            run_id=run,
            status="passed",
            score=0.9,
            actual_output="ok",
            prompt_version=1,
        )

    t = time.perf_counter()
    for _ in range(args.inserts):
        store.executions.record(one())
    out["insert_one_ms"] = (time.perf_counter() - t) * 1000 / args.inserts
    t = time.perf_counter()
    store.executions.record_many(one() for _ in range(args.inserts))
    out["insert_bulk_ms"] = (time.perf_counter() - t) * 1000 / args.inserts
    store.runs.finish(run)
    return out


def convert_0_1_0(tmp: Path, n: int) -> tuple[float, int]:
    """Time the one-off conversion of a 0.1.0 history file holding ``n`` executions."""
    db = tmp / "v010.db"
    shutil.copyfile(REPO / "tests" / "store" / "fixtures" / "history-v0.1.0.db", db)
    conn = sqlite3.connect(db, isolation_level=None)
    rng = random.Random(3)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO executions (id, test_case_id, execution_id, passed, score, actual_output, "
        "is_regression, regression_type, regression_types, prompt_version, created_at) "
        "VALUES (?, 'sentiment::happy', ?, ?, ?, ?, ?, ?, ?, 1, ?)",
        (
            (
                f"e{i}",
                f"e{i}",
                int(r.status == "passed"),
                r.score,
                r.actual_output,
                int(r.is_regression),
                r.regression_type,
                "[]" if r.regression_type is None else f'["{r.regression_type}"]',
                r.created_at,
            )
            for i, r in enumerate(big_case_rows(n, 90, None, rng))
        ),
    )
    conn.execute("COMMIT")
    conn.close()
    t = time.perf_counter()
    with open_store(db) as store:
        seconds = time.perf_counter() - t
        with store.read("counting") as conn:
            count = conn.exec_driver_sql("SELECT count(*) FROM executions").scalar_one()
    return seconds, int(count)


def report(name: str, r: dict[str, Any], args: argparse.Namespace) -> None:
    n, c = args.executions, args.cases
    print(f"{name}:")
    print(
        f"  setup: {n:,} executions on one case in {r['build_big']:.1f} s "
        f"({n / r['build_big']:,.0f} rows/s via record_many); {c:,} cases x {args.per_case} "
        f"executions in {r['build_small']:.1f} s"
    )
    print(
        f"  case_stats ({n:,}-execution case)  {r['stats_ms']:8.2f} ms   target < 50 ms   "
        f"{verdict(r['stats_ms'], 50)}   (trend days: {r['trend_days']}, "
        f"regressions: {r['regressions']:,})"
    )
    print(
        f"  cases.list ({c + 1:,} cases)             {r['list_ms']:8.2f} ms   target < 200 ms  "
        f"{verdict(r['list_ms'], 200)}"
    )
    print(
        f"  stats.history with a baseline         {r['history_ms']:8.2f} ms   (read before each case is scored)"
    )
    print(
        f"  runs.list (20 newest runs, counted)   {r['runs_ms']:8.2f} ms   (oxy history, the API's runs)"
    )
    print(f"  runs.list (all {_SMALL_RUNS + 1}, one of {n:,})     {r['runs_all_ms']:8.2f} ms")
    print(
        f"  insert {args.inserts:,} executions one by one   {r['insert_one_ms']:8.3f} ms per row "
        f"(each its own committed transaction, as oxy cases run writes)"
    )
    print(
        f"  insert {args.inserts:,} executions in bulk      {r['insert_bulk_ms']:8.3f} ms per row"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--executions", type=int, default=100_000)
    parser.add_argument("--cases", type=int, default=1_000)
    parser.add_argument("--per-case", type=int, default=5, help="executions per small case")
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--inserts", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--pg-url", help="an existing, empty PostgreSQL database to use")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    import sqlalchemy

    started = time.perf_counter()
    print(
        f"history store benchmark (SQLAlchemy {sqlalchemy.__version__}, SQLite "
        f"{sqlite3.sqlite_version}, Python {sys.version.split()[0]})"
    )
    with tempfile.TemporaryDirectory(prefix="oxy-bench-store-") as tmp:
        with open_store(Path(tmp) / "oxyeval.db") as store:
            result = bench(store, args)
        report("SQLite (WAL, synchronous=NORMAL)", result, args)
        seconds, count = convert_0_1_0(Path(tmp), args.executions)
        print(
            f"  convert a 0.1.0 file with {args.executions:,} executions  {seconds * 1000:8.0f} ms (once; {count:,} executions after)"
        )
    if not args.no_postgres:
        cluster = None
        try:
            url = args.pg_url
            if url is None:
                from tests.pgcluster import PgCluster, PgUnavailable

                try:
                    cluster = PgCluster().start(durable=True)
                except PgUnavailable as exc:
                    print(f"PostgreSQL: skipped ({exc})")
                    return
                url = cluster.url(cluster.create_database())
            with open_store(resolve_location(url, environ={})) as store:
                with store.engine.connect() as conn:
                    server = conn.exec_driver_sql("SHOW server_version").scalar()
                result = bench(store, args)
            where = (
                "throwaway local cluster, default fsync/synchronous_commit"
                if cluster
                else "given URL"
            )
            report(f"PostgreSQL {server} (psycopg 3, {where})", result, args)
        finally:
            if cluster is not None:
                cluster.stop()
    print(f"total wall time {time.perf_counter() - started:.1f} s (medians of {args.repeat} calls)")


if __name__ == "__main__":
    main()
