"""Run kinds and statuses have one definition (``store.kinds``): the schema's CHECK
constraints, the repositories and the lean store all use it. Since
revision 0004 a run's kind is not a CHECK: a built-in kind or one registered with the
evaluation core (``tests/store/test_result_spine.py``)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from oxyeval.store import Store, open_results, open_store, resolve_location
from oxyeval.store._tables import executions, runs, test_results
from oxyeval.store.kinds import (
    CONSISTENCY_STATUSES,
    EXECUTION_STATUSES,
    FINISHED_RUN_STATUSES,
    RESERVED_RUN_KINDS,
    RUN_KINDS,
    RUN_STATUSES,
)


def _check(table, name: str) -> set[str]:  # type: ignore[no-untyped-def]
    (constraint,) = [c for c in table.constraints if c.name == name]
    return set(re.findall(r"'(\w+)'", str(constraint.sqltext)))


def test_the_tables_check_exactly_the_defined_values() -> None:
    assert not [c for c in runs.constraints if c.name == "ck_runs_kind"]
    assert _check(runs, "ck_runs_status") == set(RUN_STATUSES)
    assert _check(executions, "ck_executions_status") == set(EXECUTION_STATUSES)
    assert _check(test_results, "ck_test_results_status") == set(CONSISTENCY_STATUSES)
    assert set(FINISHED_RUN_STATUSES) == set(RUN_STATUSES) - {"running"}
    assert not set(RUN_KINDS) & set(RESERVED_RUN_KINDS)


def test_a_run_of_a_reserved_kind_cannot_be_started(store: Store) -> None:
    for kind in RESERVED_RUN_KINDS:
        with pytest.raises(ValueError, match=rf"one of {', '.join(RUN_KINDS)}.*, not '{kind}'"):
            store.runs.start(kind)
    for kind in RUN_KINDS:
        store.runs.start(kind)
    assert sorted(r.kind for r in store.runs.list(10)) == sorted(RUN_KINDS)


def test_both_stores_finish_a_run_only_with_a_finished_status(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with open_store(db) as full:
        run_id = full.runs.start("consistency")
        with pytest.raises(ValueError, match="one of completed, interrupted, failed"):
            full.runs.finish(run_id, "running")
    lite = open_results(resolve_location(str(db), environ={}))
    assert lite is not None
    with lite:
        lean_id = lite.runs.start("workflow")
        with pytest.raises(ValueError, match="one of completed, interrupted, failed"):
            lite.runs.finish(lean_id, "running")
        with pytest.raises(ValueError, match=r"one of consistency, workflow.*, not 'cases'"):
            lite.runs.start("cases")
        for status in FINISHED_RUN_STATUSES:
            lite.runs.finish(lean_id, status)
    with sqlite3.connect(db) as conn:
        (status,) = conn.execute("SELECT status FROM runs WHERE id = ?", (lean_id,)).fetchone()
    assert status == FINISHED_RUN_STATUSES[-1]
