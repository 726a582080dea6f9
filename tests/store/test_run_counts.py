"""A run's counts (passed, failed, errors, pending), its result count and its average
score come from its ``results`` rows by one rule for every kind: the outcome each row
was stored with. Readers need no knowledge of the kind, so a kind registered only in the
process that wrote it still counts right everywhere."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from oxyeval.evaluation import Result, ResultKind, register_kind
from oxyeval.evaluation import kinds as evaluation_kinds
from oxyeval.store import (
    NewBranchExecution,
    NewConsistencyResult,
    NewWorkflowRun,
    Store,
    open_store,
)

from ._helpers import make_case, new
from .conftest import Backend


@pytest.fixture(autouse=True)
def built_in_kinds() -> None:
    """The kinds as their own code registers them where their results are written."""
    import oxyeval.suites.ab.results
    import oxyeval.suites.cases.results
    import oxyeval.suites.consistency.results
    import oxyeval.suites.passfail.results
    import oxyeval.suites.workflows
    import oxyeval.testing._results  # noqa: F401


@pytest.fixture
def private_kind(monkeypatch: pytest.MonkeyPatch) -> Iterator[ResultKind]:
    """A kind whose own words for an unknown outcome are not the core's defaults."""
    monkeypatch.setattr(evaluation_kinds, "_KINDS", dict(evaluation_kinds._KINDS))
    yield register_kind(
        ResultKind(
            "toy-audit",
            ("clean", "dirty", "timeout", "skipped"),
            unknown=frozenset({"timeout"}),
            neutral=frozenset({"skipped"}),
        )
    )


def _counts(store: Store, run_id: str) -> tuple[int, int, int, int, int]:
    run = store.runs.get(run_id)
    assert run is not None
    listed = {r.id: r for r in store.runs.list(50)}[run_id]
    assert listed == run  # the list and one run count alike
    return run.results, run.passed, run.failed, run.errors, run.pending


def test_test_case_runs_count_by_outcome_with_their_regressions(store: Store) -> None:
    make_case(store, "c1")
    run = store.runs.start("cases", prompt_id="p1", prompt_version=1, total=4)
    store.executions.record_many(
        [
            new(run_id=run, status="passed", score=1.0),
            new(
                run_id=run, status="failed", score=0.2, is_regression=True, regression_type="FAILED"
            ),
            new(run_id=run, status="pending"),
            new(run_id=run, status="error", error="timeout"),
        ]
    )
    assert _counts(store, run) == (4, 1, 1, 1, 1)
    got = store.runs.get(run)
    assert got is not None and got.regressions == 1
    assert got.average_score == pytest.approx(0.6)
    assert dict(got.statuses) == {"passed": 1, "failed": 1, "pending": 1, "error": 1}


def test_consistency_runs_count_errors_and_average_only_known_scores(store: Store) -> None:
    run = store.runs.start("consistency", total=3)
    for name, status, accuracy in (
        ("a", "scored", 0.6),
        ("b", "error", None),
        ("c", "interrupted", 0.1),  # a partial score: no average
    ):
        store.tests.record(
            run,
            NewConsistencyResult(
                file="t.agent.yml",
                name=name,
                status=status,
                accuracy=accuracy,
                error=None if status == "scored" else "cut",
            ),
        )
    assert _counts(store, run) == (3, 0, 0, 2, 0)
    got = store.runs.get(run)
    assert got is not None and got.average_score == pytest.approx(0.6) and got.scored == 1
    assert dict(got.statuses) == {"scored": 1, "error": 1, "interrupted": 1}


def test_a_failed_workflow_run_is_an_error_as_its_kind_says(store: Store) -> None:
    run = store.runs.start("workflow", subject="w.workflow.yml", total=1)
    store.workflows.record(
        run, NewWorkflowRun(workflow="w.workflow.yml", error="task 2 failed", status="failed")
    )
    assert _counts(store, run) == (1, 0, 0, 1, 0)


def test_ab_sdk_and_pass_fail_runs_count_by_the_same_rule(store: Store) -> None:
    make_case(store, "c1")
    branch = store.branches.create("c1", "A", model="m")
    ab = store.runs.start("ab", subject="c1", total=3)
    store.branches.add_executions(
        ab,
        [
            NewBranchExecution(
                branch_id=branch.id,
                test_case_id="c1",
                status="success",
                quality_score=0.9,
                passed=True,
            ),
            NewBranchExecution(
                branch_id=branch.id,
                test_case_id="c1",
                status="success",
                quality_score=0.3,
                passed=False,
                iteration=1,
            ),
            NewBranchExecution(
                branch_id=branch.id, test_case_id="c1", status="error", error="429", iteration=2
            ),
        ],
    )
    assert _counts(store, ab) == (3, 1, 1, 1, 0)
    sdk = store.runs.start("sdk", total=6)
    store.results.add(
        sdk,
        [Result("sdk", f"case{k}", "scored", passed=False, score=0.1) for k in range(4)]
        + [Result("sdk", f"bad{k}", "error", error="boom") for k in range(2)],
    )
    assert _counts(store, sdk) == (6, 0, 4, 2, 0)
    passfail = store.runs.start("passfail", total=2)
    store.results.add(
        passfail,
        [
            Result("passfail", "t::one", "scored", passed=True, score=1.0),
            Result("passfail", "t::two", "interrupted", passed=False, score=0.5),
        ],
    )
    assert _counts(store, passfail) == (2, 1, 0, 1, 0)  # interrupted: unknown, never failed


def test_a_kind_unknown_to_the_reader_counts_by_what_its_writer_stored(
    store: Store, private_kind: ResultKind, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = store.runs.start("toy-audit", total=4)
    store.results.add(
        run,
        [
            Result("toy-audit", "a", "clean", passed=True, score=1.0),
            Result("toy-audit", "b", "dirty", passed=False, score=0.0),
            Result("toy-audit", "c", "timeout", error="slow"),
            Result("toy-audit", "d", "skipped"),
        ],
    )
    # Another process (oxy history, oxy serve) never registered it.
    monkeypatch.setattr(evaluation_kinds, "_KINDS", {})
    assert _counts(store, run) == (4, 1, 1, 1, 1)
    assert [r.outcome for r in store.results.for_run(run)] == [
        "passed",
        "failed",
        "unknown",
        "neutral",
    ]


def test_an_sdk_result_that_regressed_counts_in_its_run(store: Store) -> None:
    run = store.runs.start("sdk", total=2)
    store.results.add(
        run,
        [
            Result("sdk", "a", "scored", passed=True, score=0.5, regressions=("score fell",)),
            Result("sdk", "b", "scored", passed=True, score=0.9),
        ],
    )
    got = store.runs.get(run)
    assert got is not None and (got.passed, got.regressions) == (2, 1)


def test_a_run_with_no_results_counts_nothing(store: Store) -> None:
    run = store.runs.start("sdk")
    got = store.runs.get(run)
    assert got is not None
    assert (got.results, got.passed, got.failed, got.errors, got.average_score) == (
        0,
        0,
        0,
        0,
        None,
    )


# ----------------------------------------------------------------- revision 0007

_BEFORE = "0006"  # the revision 0007 follows

_OLD_ROWS = [
    # (kind, status, passed) -> the outcome 0007 gives it
    ("cases", "passed", True, "passed"),
    ("cases", "failed", False, "failed"),
    ("cases", "pending", None, "neutral"),
    ("cases", "error", None, "unknown"),
    ("consistency", "scored", None, "unjudged"),
    ("consistency", "interrupted", None, "unknown"),
    ("workflow", "completed", None, "unjudged"),
    ("workflow", "failed", None, "unknown"),
    ("ab", "success", True, "passed"),
    ("ab", "error", None, "unknown"),
    ("sdk", "scored", False, "failed"),
    ("passfail", "interrupted", True, "unknown"),
    ("someone-elses", "error", None, "unknown"),
    ("someone-elses", "fine", None, "unjudged"),
]


def _at(engine_location: object, target: str) -> None:
    from oxyeval.store._engine import create_engine
    from oxyeval.store._migrations import _alembic

    engine = create_engine(engine_location)  # type: ignore[arg-type]
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(oxy_write=True)
            with conn.begin():
                _alembic(conn, target)
                if target == _BEFORE:
                    for n, (kind, status, passed, _) in enumerate(_OLD_ROWS):
                        conn.execute(
                            sa.text(
                                "INSERT INTO results (id, kind, subject, status, passed, details, "
                                "created_at) VALUES (:id, :kind, 's', :status, :passed, '{}', "
                                "'2026-01-01T00:00:00.000Z')"
                            ),
                            {"id": f"r{n}", "kind": kind, "status": status, "passed": passed},
                        )
    finally:
        engine.dispose()


def test_revision_0007_gives_every_stored_result_its_kinds_outcome(backend: Backend) -> None:
    location = backend.fresh()
    _at(location, _BEFORE)
    with open_store(location) as store, store.read("test") as conn:
        got = conn.execute(sa.text("SELECT id, outcome FROM results ORDER BY seq")).all()
    assert [o for _, o in got] == [row[3] for row in _OLD_ROWS]


def test_revision_0007_on_the_0_2_history_file(tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "old.db"
    shutil.copyfile(Path(__file__).parent / "fixtures" / "history-v0.2.db", db)
    with open_store(db) as store:
        runs = store.runs.list(100)
        assert runs
        for run in runs:  # the totals 0007 made are what a scan of the run finds
            stored = store.results.for_run(run.id)
            assert run.results == len(stored)
            assert run.passed == sum(r.outcome == "passed" for r in stored)
            assert run.errors == sum(r.outcome == "unknown" for r in stored)
    with sqlite3.connect(db) as conn:
        (left,) = conn.execute("SELECT count(*) FROM results WHERE outcome IS NULL").fetchone()
    assert left == 0


def _down_to_before(location: object) -> None:
    from alembic import command
    from alembic.config import Config

    from oxyeval.store._engine import create_engine
    from oxyeval.store._migrations import __file__ as migrations_init

    engine = create_engine(location)  # type: ignore[arg-type]
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(oxy_write=True)
            with conn.begin():
                cfg = Config()
                cfg.set_main_option("script_location", str(Path(migrations_init).parent))
                cfg.attributes["connection"] = conn
                command.downgrade(cfg, _BEFORE)
            assert "run_totals" not in sa.inspect(conn).get_table_names()
    finally:
        engine.dispose()


def test_revision_0007_totals_every_run_as_its_writers_would_have(backend: Backend) -> None:
    """Runs written at this revision, taken back to the revision before 0007 and upgraded again: the totals
    the upgrade makes from the stored rows are the ones the writers kept, regressions
    included."""
    location = backend.fresh()
    with open_store(location) as store:
        make_case(store, "c1")
        cases = store.runs.start("cases", prompt_id="p1", prompt_version=1, total=3)
        store.executions.record_many(
            [
                new(run_id=cases, status="passed", score=0.9),
                new(run_id=cases, status="failed", score=0.1, is_regression=True),
                new(run_id=cases, status="error", error="boom"),
            ]
        )
        consistency = store.runs.start("consistency", total=2)
        for name, status in (("a", "scored"), ("b", "interrupted")):
            store.tests.record(
                consistency,
                NewConsistencyResult(file="t.agent.yml", name=name, status=status, accuracy=0.5),
            )
        store.runs.finish(cases)
        store.runs.finish(consistency)
        kept = {r.id: r for r in store.runs.list(10)}
    _down_to_before(location)
    with open_store(location) as store:
        again = {r.id: r for r in store.runs.list(10)}
    assert again == kept
    assert (kept[cases].passed, kept[cases].failed, kept[cases].errors) == (1, 1, 1)
    assert kept[cases].regressions == 1
    assert (kept[consistency].errors, kept[consistency].average_score) == (1, 0.5)
