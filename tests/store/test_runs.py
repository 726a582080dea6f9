"""Runs: kinds, groups, counts, finishing, and stale runs across processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oxyeval.store import Location, NotFoundError, Store, open_store

from ._helpers import make_case, record

REPO = Path(__file__).resolve().parents[2]


def test_runs_list_counts_and_finish(store: Store) -> None:
    make_case(store)
    r1 = store.runs.start(
        prompt_id="p1", prompt_version=1, total=2, started_at="2026-07-01T00:00:00Z"
    )
    record(store, run_id=r1, passed=True)
    record(store, run_id=r1, passed=False, regression_type="FAILED")
    store.runs.finish(r1, "completed")
    r2 = store.runs.start(
        prompt_id="p1", prompt_version=2, total=3, started_at="2026-07-02T00:00:00Z"
    )
    record(store, run_id=r2, status="error", actual_output=None, error="provider timeout")
    record(store, run_id=r2, status="pending", actual_output="new")
    runs = store.runs.list()
    assert [r.id for r in runs] == [r2, r1]
    assert (runs[1].status, runs[1].passed, runs[1].failed, runs[1].regressions, runs[1].done) == (
        "completed",
        1,
        1,
        1,
        2,
    )
    assert (runs[0].status, runs[0].errors, runs[0].pending, runs[0].done, runs[0].total) == (
        "running",
        1,
        1,
        2,
        3,
    )
    assert store.runs.list(limit=1)[0].id == r2
    assert store.runs.mark_stale() == []  # r2 is live: this process owns it
    with pytest.raises(ValueError):
        store.runs.finish(r2, "running")
    with pytest.raises(NotFoundError):
        store.runs.finish("nope")


def test_kinds_and_groups(store: Store) -> None:
    group = store.runs.new_group_id()
    a = store.runs.start("cases", prompt_id="p", total=1, group_id=group)
    b = store.runs.start("cases", prompt_id="q", total=1, group_id=group)
    c = store.runs.start("consistency", subject="tests/a.test.yml", total=2)
    w = store.runs.start("workflow", subject="w.workflow.yml")
    assert {r.id for r in store.runs.list(group_id=group)} == {a, b}
    assert [r.id for r in store.runs.list(kind="consistency")] == [c]
    got = store.runs.get(w)
    assert got is not None and (got.kind, got.subject) == ("workflow", "w.workflow.yml")
    with pytest.raises(ValueError, match="kind"):
        store.runs.start("nightly")


def test_a_closed_store_interrupts_its_unfinished_runs(location: Location) -> None:
    a = open_store(location)
    make_case(a)
    run = a.runs.start(prompt_id="p1", prompt_version=1, total=5)
    for score in (0.9, 0.5, None):
        record(a, run_id=run, passed=score is not None and score > 0.8, score=score)
    b = open_store(location)  # e.g. the user's next command, while the first still runs
    assert b.runs.find_stale() == [] and b.runs.mark_stale() == []  # same live process
    a.close()  # goes away without finishing its run
    assert len(b.executions.list("c1")) == 3
    case = b.cases.get("c1")
    assert case is not None and case.total_runs == 3
    assert case.pass_rate == pytest.approx(100 / 3) and case.avg_score == pytest.approx(0.7)
    got = b.runs.get(run)
    assert got is not None
    assert (got.status, got.done, got.total) == ("interrupted", 3, 5)
    assert got.finished_at is not None
    b.close()


def test_crashed_process_run_is_found_and_marked(location: Location) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        from oxyeval.store import open_store, NewExecution
        s = open_store(sys.argv[1])
        s.cases.create("p1", "c", {{}}, "ok", id="c1")
        run = s.runs.start(prompt_id="p1", prompt_version=1, total=10)
        for i in range(3):
            s.executions.record(NewExecution(test_case_id="c1", run_id=run, status="passed",
                                             score=0.9, actual_output="ok", prompt_version=1))
        print(run, flush=True)
        os._exit(9)  # a real crash: no finish, no close, no atexit
        """
    )
    target = str(location.path) if location.path is not None else location.url
    proc = subprocess.run(
        [sys.executable, "-c", script, target], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 9, proc.stderr
    run = proc.stdout.strip()
    with open_store(location, read_only=True) as reader:
        assert reader.runs.find_stale() == [run]  # found without writing
        assert reader.runs.get(run).status == "running"  # type: ignore[union-attr]
    with open_store(location) as s:
        assert s.cases.get("c1").total_runs == 3  # type: ignore[union-attr]
        assert s.runs.mark_stale() == [run]  # its pid no longer exists
        assert s.runs.get(run).status == "interrupted"  # type: ignore[union-attr]
        assert s.runs.mark_stale() == []


def test_runs_of_another_host_are_stale_only_when_old(store: Store) -> None:
    from oxyeval.store._tables import runs

    old = store.runs.start(prompt_id="p", started_at="2020-01-01T00:00:00Z")
    young = store.runs.start(prompt_id="p")
    with store.write("test") as conn:
        conn.execute(runs.update().values(host="elsewhere", pid=1))
    assert store.runs.mark_stale() == [old]
    assert store.runs.get(young).status == "running"  # type: ignore[union-attr]
