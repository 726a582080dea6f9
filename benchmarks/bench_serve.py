"""`oxy serve` under a realistic history: does the Testing API answer within 100 ms (p95)?

Builds an SQLite history with one test case holding 100,000 executions over 90 days
(``bench_store``'s builder, through ``executions.record_many``) and 1,000 cases of one
prompt, starts ``oxy serve`` on it (its own process, as users run it), and times over
HTTP, one request after another, with the seed's own documents:

* ``testCaseStats`` of the 100k-execution case (recentRuns, regressions, trendData)
* ``testCases(promptId)`` of the 1,000-case prompt, every field of the seed's query
* the same with ``regressionCount`` (what the dashboard's list asks)
* ``testCaseExecutions`` of the big case, limit 50
* ``runs`` (the dashboard's runs page and ``oxy history``'s list): the 20 newest runs
  counted, the 100k-execution run among them

and prints p50 / p95 / max per query (target: p95 under 100 ms).

    python benchmarks/bench_serve.py [--executions 100000] [--cases 1000] [--requests 200]
"""

from __future__ import annotations

import argparse
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import httpx  # noqa: E402
from bench_store import BATCH, big_case_rows  # noqa: E402

from oxyeval.store import NewExecution, open_store  # noqa: E402

STATS = """query GetTestCaseStats($testCaseId: ID!) {
  testCaseStats(testCaseId: $testCaseId) {
    totalRuns passRate avgScore
    recentRuns { id passed score promptVersion createdAt }
    regressions { id passed score regressionType promptVersion createdAt }
    trendData { date totalRuns passRate avgScore }
  }
}"""
CASES = """query GetTestCases($promptId: ID!) {
  testCases(promptId: $promptId) {
    id name description input expectedOutput totalRuns passRate avgScore
    lastRun lastPassed createdAt updatedAt
  }
}"""
CASES_DASHBOARD = """query Cases($promptId: ID!) {
  testCases(promptId: $promptId) {
    id name totalRuns passRate avgScore lastRun regressionCount
  }
}"""
RUNS = """{ runs(limit: 20) { id kind status total passed failed pending errors regressions } }"""

EXECUTIONS = """query GetTestCaseExecutions($testCaseId: ID!, $limit: Int, $offset: Int) {
  testCaseExecutions(testCaseId: $testCaseId, limit: $limit, offset: $offset) {
    id passed score actualOutput expectedOutput exactMatch semanticScore lengthDiff
    tokenDiff isRegression regressionType promptVersion runDuration createdAt
  }
}"""


def build(root: Path, executions: int, cases: int) -> Path:
    (root / "config.yml").write_text(
        "models:\n  - name: m\n    vendor: mock\n    outputs: [ok]\n", encoding="utf-8"
    )
    db = root / ".oxy" / "oxyeval.db"
    store = open_store(db)
    rng = random.Random(7)
    store.prompts.upsert("p-big", "Big prompt", "api")
    store.prompts.ensure_version("p-big", {"template": "{{ q }}", "model": "m"})
    store.cases.create("p-big", "big case", {"q": "?"}, "The answer is x", id="big")
    run = store.runs.start(prompt_id="p-big", prompt_version=1, total=executions)
    rows = big_case_rows(executions, 90, run, rng)
    written = 0
    while written < executions:
        chunk = [next(rows) for _ in range(min(BATCH, executions - written))]
        written += store.executions.record_many(chunk)
    store.runs.finish(run)
    store.prompts.upsert("p-many", "Many cases", "api")
    store.prompts.ensure_version("p-many", {"template": "{{ n }}", "model": "m"})
    small = []
    for c in range(cases):
        case = store.cases.create("p-many", f"case {c}", {"n": c}, "ok")
        for k in range(3):
            score = rng.random()
            small.append(
                NewExecution(
                    test_case_id=case.id,
                    status="passed" if score >= 0.8 else "failed",
                    score=score,
                    actual_output="ok",
                    prompt_version=1,
                    is_regression=k == 2 and score < 0.8,
                    regression_type="FAILED" if k == 2 and score < 0.8 else None,
                )
            )
    store.executions.record_many(small)
    store.close()
    return db


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentiles(times: list[float]) -> tuple[float, float, float]:
    ordered = sorted(times)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return statistics.median(ordered), p95, ordered[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--executions", type=int, default=100_000)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="oxy-bench-serve-"))
    try:
        t = time.perf_counter()
        db = build(root, args.executions, args.cases)
        print(
            f"history: {args.executions:,} executions of one case + {args.cases:,} cases "
            f"(3 executions each), built in {time.perf_counter() - t:.1f} s"
        )
        port = free_port()
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "oxyeval",
                "serve",
                "--project",
                str(root),
                "--db",
                str(db),
                "--port",
                str(port),
            ],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
        )
        url = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                for _ in range(100):
                    try:
                        if client.get("/healthz").status_code == 200:
                            break
                    except httpx.TransportError:
                        time.sleep(0.1)
                else:
                    raise SystemExit("the server did not start: " + server.stderr.read().decode())
                checks = [
                    ("testCaseStats (100k executions)", STATS, {"testCaseId": "big"}),
                    (f"testCases ({args.cases:,} cases)", CASES, {"promptId": "p-many"}),
                    (
                        f"testCases + regressionCount ({args.cases:,})",
                        CASES_DASHBOARD,
                        {"promptId": "p-many"},
                    ),
                    (
                        "testCaseExecutions (limit 50)",
                        EXECUTIONS,
                        {"testCaseId": "big", "limit": 50},
                    ),
                    ("runs (20 newest, one of 100k)", RUNS, {}),
                ]
                print(
                    f"\n{'query':<38} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}  target p95 < 100"
                )
                for name, query, variables in checks:
                    body = {"query": query, "variables": variables}
                    first = client.post("/graphql", json=body).json()
                    if first.get("errors"):
                        raise SystemExit(f"{name}: {first['errors']}")
                    times = []
                    for _ in range(args.requests):
                        t = time.perf_counter()
                        response = client.post("/graphql", json=body)
                        times.append((time.perf_counter() - t) * 1000)
                        assert response.status_code == 200
                    p50, p95, worst = percentiles(times)
                    verdict = "OK" if p95 < 100 else "OVER TARGET"
                    print(f"{name:<38} {p50:8.1f} {p95:8.1f} {worst:8.1f}  {verdict}")
                stats = first  # the last query's answer proves the data is there
                del stats
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
