"""What the SQL sandbox's worker process costs, next to DuckDB in the same process.

Prints: the worker's start (process, imports, Landlock, DuckDB open) on the first query;
one small query's round trip; 200 queries at concurrency 10; a 10,000-row result. Each
beside the same work on an in-process DuckDB connection (no sandbox), the floor.

    python benchmarks/bench_sql.py [--queries 200] [--rows 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path


def _dataset(folder: Path, rows: int) -> None:
    lines = ["region,amount"] + [f"r{i % 7},{i}" for i in range(rows)]
    (folder / "orders.csv").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()

    import duckdb

    from oxyeval.workflow.sql import Databases

    small = "SELECT region, sum(amount) AS s FROM orders.csv GROUP BY 1 ORDER BY 1"
    big = "SELECT * FROM orders.csv"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "data").mkdir()
        _dataset(root / "data", args.rows)
        entry = {"name": "shop", "type": "duckdb", "dataset": "data", "max_rows": args.rows}
        databases = Databases({"shop": entry}, root)

        async def sandboxed() -> dict[str, float]:
            out: dict[str, float] = {}
            t = time.perf_counter()
            await databases.query("shop", small)
            out["first query (worker start)"] = time.perf_counter() - t
            laps = []
            for _ in range(50):
                t = time.perf_counter()
                await databases.query("shop", small)
                laps.append(time.perf_counter() - t)
            out["one small query (median)"] = statistics.median(laps)
            gate = asyncio.Semaphore(10)

            async def one() -> None:
                async with gate:
                    await databases.query("shop", small)

            t = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(args.queries)))
            out[f"{args.queries} queries, concurrency 10"] = time.perf_counter() - t
            t = time.perf_counter()
            result = await databases.query("shop", big)
            out[f"{len(result):,}-row result"] = time.perf_counter() - t
            return out

        try:
            worker = asyncio.run(sandboxed())
        finally:
            databases.close()

        conn = duckdb.connect()
        conn.execute(f"SET GLOBAL file_search_path = '{root / 'data'}'")
        floor: dict[str, float] = {}
        t = time.perf_counter()
        conn.execute(small).fetchall()
        floor["first query (worker start)"] = time.perf_counter() - t
        laps = []
        for _ in range(50):
            t = time.perf_counter()
            conn.cursor().execute(small).fetchall()
            laps.append(time.perf_counter() - t)
        floor["one small query (median)"] = statistics.median(laps)
        t = time.perf_counter()
        for _ in range(args.queries):
            conn.cursor().execute(small).fetchall()
        floor[f"{args.queries} queries, concurrency 10"] = time.perf_counter() - t
        t = time.perf_counter()
        conn.cursor().execute(big).fetchall()
        floor[f"{args.rows:,}-row result"] = time.perf_counter() - t

    print(f"SQL sandbox (worker process{', Landlock' if _landlock() else ''}) vs in-process DuckDB")
    print(f"{'':36} {'sandboxed':>11} {'in-process':>11}")
    for name, value in worker.items():
        print(f"{name:36} {value * 1000:9.1f} ms {floor[name] * 1000:8.1f} ms")


def _landlock() -> bool:
    import subprocess
    import sys

    code = "from oxyeval.workflow._landlock import restrict; print(restrict([]))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return done.stdout.strip() not in ("", "0")


if __name__ == "__main__":
    main()
