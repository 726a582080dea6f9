"""Concurrent writers: threads sharing a database, and two real `oxy cases run` processes
writing to the same SQLite file or PostgreSQL database at once. Nothing may be lost, and
every maintained aggregate must equal a recount from the executions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from oxyeval.store import Location, open_store

from ..conftest import MakeProject
from ._helpers import make_case, new

REPO = Path(__file__).resolve().parents[2]
CASES = 30
CONFIG = """\
models:
  - name: m
    vendor: mock
    latency_ms: 25
    rules:
      - {match: "explode", error: "backend down"}
      - {match: "even", output: "even"}
      - {match: ".", output: "odd one"}
"""


def _prompt() -> str:
    lines = ["name: load", "model: m", 'template: "{{ text }}"', "similarity: lexical", "cases:"]
    for i in range(CASES):
        text = "explode" if i == 7 else ("even" if i % 2 == 0 else "odd")
        expected = "" if i == 5 else ", expected_output: even"  # one pending case
        lines.append(f"  - {{name: c{i:02d}, input: {{text: {text}}}{expected}}}")
    return "\n".join(lines) + "\n"


def test_two_stores_writing_from_threads(location: Location) -> None:
    a = open_store(location)
    b = open_store(location)
    make_case(a)
    errors: list[BaseException] = []
    gate = threading.Barrier(2)

    def writer(store, prompt: str) -> None:  # type: ignore[no-untyped-def]
        try:
            gate.wait()
            for i in range(24):
                store.executions.record(new(passed=i % 2 == 0, score=1.0, actual_output="x"))
                store.prompts.ensure_version(prompt, {"n": i % 3})
                store.prompts.ensure_version("shared", {"n": i % 4})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s, p)) for s, p in ((a, "pa"), (b, "pb"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    case = b.cases.get("c1")
    assert case is not None and (case.total_runs, case.pass_count) == (48, 24)
    assert len(a.executions.list("c1", limit=200)) == 48
    assert a.prompts.latest_version("pa") == 3 and b.prompts.latest_version("pb") == 3
    assert [v.version for v in a.prompts.versions("shared")] == [1, 2, 3, 4]  # no duplicate
    a.close()
    b.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)
def test_two_oxy_cases_run_processes_lose_nothing(
    backend,
    make_project: MakeProject,  # type: ignore[no-untyped-def]
) -> None:
    root = make_project(CONFIG, {"load.prompt.yml": _prompt()})
    location = backend.fresh()
    target = str(location.path) if location.path is not None else location.url
    env = {**os.environ, "PYTHONPATH": str(REPO), "OXY_DB": target}
    cmd = [
        sys.executable,
        "-m",
        "oxyeval",
        "cases",
        "run",
        "--format",
        "json",
        "--concurrency",
        "4",
    ]
    procs = [
        subprocess.Popen(
            cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 3, err  # the exploding case is a provider error in both
        assert json.loads(out)["summary"]["results"] == CASES
    with open_store(location) as s:
        cases = {c.id: c for c in s.cases.list()}
        assert len(cases) == CASES
        runs = s.runs.list()
        assert len(runs) == 2 and all(r.status == "failed" and r.done == CASES for r in runs)
        assert sum(r.passed for r in runs) == 2 * (CASES // 2)  # the even cases pass
        assert sum(r.errors for r in runs) == 2 and sum(r.pending for r in runs) == 2
        for case_id, case in cases.items():
            execs = s.executions.list(case_id, limit=10)
            assert len(execs) == 2, case_id
            judged = [e for e in execs if e.status in ("passed", "failed")]
            assert case.total_runs == len(judged)
            assert case.pass_count == sum(e.passed for e in judged)
        trends = {c: s.stats.case_stats(c).trend for c in cases}  # type: ignore[union-attr]
        s.stats.rebuild()  # the recount from the executions...
        for case in s.cases.list():
            before = cases[case.id]  # ...equals what the two writers maintained
            assert (case.total_runs, case.pass_count, case.scored_runs, case.length_sum) == (
                before.total_runs,
                before.pass_count,
                before.scored_runs,
                before.length_sum,
            )
            assert case.score_sum == pytest.approx(before.score_sum)
            assert (case.last_run, case.last_passed) == (before.last_run, before.last_passed)
            got = s.stats.case_stats(case.id).trend  # type: ignore[union-attr]
            assert [(t.date, t.total_runs, t.passes, t.scored) for t in got] == [
                (t.date, t.total_runs, t.passes, t.scored) for t in trends[case.id]
            ]
        assert sorted(r.done for r in s.runs.list()) == [CASES, CASES]
        assert [v.version for v in s.prompts.versions("load")] == [1]
