"""The results spine (revision 0004): every kind's results in one table with named scores
and a daily rollup; a new kind is registered, never migrated; both writers write it; a
history made by the 0.2 release upgrades with every row kept, on SQLite and PostgreSQL."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from oxyeval.evaluation import Gates, Result, ResultKind, Score, decide, register_kind
from oxyeval.redact import register_secret
from oxyeval.store import NewConsistencyResult, Store, open_results, open_store, resolve_location

from .conftest import Backend

FIXTURE = Path(__file__).parent / "fixtures" / "history-v0.2.db"
#: What the 0.2 fixture holds (tests/store/fixtures/README.md).
FIXTURE_COUNTS = {"executions": 14, "test_results": 4, "workflow_runs": 1}


@pytest.fixture
def toy() -> Iterator[ResultKind]:
    """A kind of test nobody wrote a migration for: graded essays, pass or fail."""
    kind = register_kind(
        ResultKind("toy-essay", ("graded", "error", "interrupted"), metric="grade", noun="essay"),
        replace=True,
    )
    yield kind


def _essay(subject: str, grade: float, passed: bool, **extra: object) -> Result:
    return Result(
        kind="toy-essay",
        subject=subject,
        status="graded",
        passed=passed,
        score=grade,
        latency_ms=120.0,
        ttft_ms=40.0,
        input_tokens=10,
        output_tokens=20,
        cost_usd=0.0005,
        output=f"essay on {subject}",
        scores=[
            Score("grade", grade, passed=passed, threshold=0.7, reason="clear thesis"),
            Score("rubric", 4.0, label="4/5"),
        ],
        details={"words": 250},
        **extra,  # type: ignore[arg-type]
    )


def test_a_new_kind_is_stored_read_aggregated_and_decided_without_a_migration(
    store: Store, toy: ResultKind
) -> None:
    run = store.runs.start("toy-essay", total=3)
    written = [
        _essay("rivers", 0.9, True),
        _essay("rivers", 0.5, False, repeat=1),
        Result(kind="toy-essay", subject="mountains", status="error", error="judge down"),
    ]
    ids = store.results.add(run, written)
    store.runs.finish(run)
    assert len(set(ids)) == 3
    back = store.results.for_run(run)
    assert [r.id for r in back] == ids
    assert [r.to_result() for r in back] == written  # every field, scores in order
    # One JSON shape, live or stored: the stored one adds where it is kept.
    stored_json = back[0].to_dict()
    where = ("id", "runId", "createdAt", "outcome")
    assert {k: v for k, v in stored_json.items() if k not in where} == written[0].to_dict()
    assert [r.outcome for r in back] == ["passed", "failed", "unknown"]
    assert stored_json["scores"][0] == {
        "metric": "grade",
        "value": 0.9,
        "label": None,
        "passed": True,
        "threshold": 0.7,
        "reason": "clear thesis",
    }
    counted = store.runs.get(run)
    assert counted is not None and counted.done == 3
    # Its run is counted like any other: no reader knows the kind.
    assert (counted.results, counted.passed, counted.failed, counted.errors) == (3, 1, 1, 1)
    assert counted.average_score == pytest.approx(0.7)
    assert [r.repeat for r in store.results.history("toy-essay", "rivers")] == [1, 0]
    assert store.results.subjects("toy-essay") == ["mountains", "rivers"]
    (rivers,) = store.results.daily("toy-essay", "rivers")
    assert (rivers.results, rivers.passes, rivers.failures, rivers.errors) == (2, 1, 1, 0)
    assert rivers.avg_score == pytest.approx(0.7) and rivers.pass_rate == 0.5
    assert rivers.cost_sum == pytest.approx(0.001) and rivers.input_tokens == 20
    (mountains,) = store.results.daily("toy-essay", "mountains")
    assert (mountains.errors, mountains.scored, mountains.pass_rate) == (1, 0, None)
    decision = decide([r.to_result() for r in back], Gates())
    assert decision.code == 3  # an essay could not be graded: outcome unknown
    graded = decide([r.to_result() for r in back if r.status == "graded"], Gates())
    assert graded.code == 1 and any("rivers" in line for line in graded.failures)


def test_an_unregistered_kind_is_refused_not_invented(store: Store) -> None:
    run = store.runs.start("consistency")
    with pytest.raises(ValueError, match="unknown result kind 'essay'"):
        store.results.add(run, [Result(kind="essay", subject="x", status="graded")])
    with pytest.raises(ValueError, match="run kind must be one of"):
        store.runs.start("essay")


def test_results_are_checked_and_redacted(store: Store, toy: ResultKind) -> None:
    secret = "sk-spine-" + "q" * 24
    register_secret(secret)
    run = store.runs.start("toy-essay")
    with pytest.raises(ValueError, match="between 0 and 1"):
        store.results.add(run, [_essay("x", 1.5, True)])
    leaked = Result(
        kind="toy-essay",
        subject="leak",
        status="error",
        output=f"the key is {secret}",
        error=f"echoed {secret}",
        details={"prompt": secret},
        scores=[Score("grade", None, reason=f"saw {secret}")],
    )
    store.results.add(run, [leaked])
    (row,) = store.results.for_run(run)
    text = repr(row)
    assert secret not in text and "the key is" in text


def test_the_lean_writer_writes_the_same_spine_rows(tmp_path: Path) -> None:
    """``oxy test`` records through the lean sqlite3 store; its result reads back through
    the full store exactly as one recorded there."""
    db = tmp_path / "h.db"
    open_store(db).close()
    result = NewConsistencyResult(
        file="a.agent.yml", name="t", status="scored", accuracy=0.75, n=4, runs_ok=4
    )
    lite = open_results(resolve_location(str(db), environ={}))
    assert lite is not None
    with lite:
        lean_run = lite.runs.start("consistency")
        lite.tests.record(lean_run, result)
        lite.runs.finish(lean_run)
    with open_store(db) as full:
        full_run = full.runs.start("consistency")
        full.tests.record(full_run, result)
        full.runs.finish(full_run)
        (lean,) = full.results.for_run(lean_run)
        (same,) = full.results.for_run(full_run)
        (daily,) = full.results.daily("consistency")
    skip = {"id", "run_id", "created_at"}
    assert {k: v for k, v in vars(lean).items() if k not in skip} == {
        k: v for k, v in vars(same).items() if k not in skip
    }
    assert lean.subject == "a.agent.yml::t" and lean.score == 0.75
    assert [(s.metric, s.value) for s in lean.scores] == [("accuracy", 0.75)]
    assert (daily.results, daily.scored, daily.score_sum) == (2, 2, 1.5)


def _fixture_rows(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence'"
        )
    ]
    return {t: sorted(map(tuple, conn.execute(f"SELECT * FROM {t}")), key=repr) for t in tables}


def _check_upgraded(store: Store, before: dict[str, list[tuple]]) -> None:
    import sqlalchemy as sa

    with store.read("test") as conn:
        for table, rows in before.items():
            if table == "oxyeval_schema_version":
                continue
            after = conn.execute(sa.text(f"SELECT * FROM {table}")).all()
            assert len(after) == len(rows), table
            if table not in ("runs",):  # booleans read back as bool on PostgreSQL
                # columns added since (case_baselines' recent window) come after the old
                width = len(rows[0]) if rows else 0
                norm = [
                    tuple(int(v) if isinstance(v, bool) else v for v in r)[:width] for r in after
                ]
                assert sorted(norm, key=repr) == rows, table
        counts = dict(
            conn.execute(sa.text("SELECT kind, count(*) FROM results GROUP BY kind")).all()
        )
        exec_ids = {r[0] for r in conn.execute(sa.text("SELECT id FROM executions"))}
        result_ids = {
            r[0] for r in conn.execute(sa.text("SELECT id FROM results WHERE kind = 'cases'"))
        }
    assert counts == {"cases": 14, "consistency": 4, "workflow": 1}
    assert result_ids == exec_ids  # same ids: a result is its execution
    runs = {r.id: r for r in store.runs.list(100)}
    for run_id, run in runs.items():
        stored = store.results.for_run(run_id)
        if run.kind == "workflow":
            assert [(r.kind, r.status) for r in stored] == [("workflow", run.status)]
        for r in stored:
            assert r.kind == run.kind
    # The rollup equals a recount from the copied results.
    for kind in ("cases", "consistency", "workflow"):
        for day in store.results.daily(kind):
            rows = [r for r in store.results.history(kind, day.subject, 1000)]
            assert day.results == len(rows)
            assert day.passes == sum(r.passed is True for r in rows)
            assert day.errors == sum(r.error is not None for r in rows)
            assert day.score_sum == pytest.approx(sum(r.score or 0 for r in rows))
    passed = [r for r in store.results.history("cases", "sentiment::positive", 10)]
    assert passed and all(r.passed and r.scores[0].metric == "score" for r in passed)
    pending = store.results.history("cases", "extra::later", 10)
    assert pending and all(r.status == "pending" and r.passed is None for r in pending)
    # And the upgraded history takes a new kind at once.
    register_kind(ResultKind("toy-essay", ("graded", "error", "interrupted")), replace=True)
    run = store.runs.start("toy-essay")
    store.results.add(run, [_essay("after", 0.8, True)])
    assert store.results.daily("toy-essay", "after")[0].passes == 1


def test_a_0_2_history_upgrades_with_every_row_kept_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURE, db)
    with sqlite3.connect(db) as conn:
        before = _fixture_rows(conn)
        assert conn.execute("SELECT version_num FROM oxyeval_schema_version").fetchone() == (
            "0003",
        )
    assert {t: len(before[t]) for t in FIXTURE_COUNTS} == FIXTURE_COUNTS
    with open_store(db) as store:
        _check_upgraded(store, before)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    # The upgraded file is at the current schema: the lean store takes it.
    lite = open_results(resolve_location(str(db), environ={}))
    assert lite is not None
    lite.close()


def test_a_0_2_history_upgrades_with_every_row_kept_postgresql(backend: Backend) -> None:
    """The same rows, loaded into a PostgreSQL database at revision 0003, then upgraded."""
    if backend.name != "postgresql":
        pytest.skip("the SQLite upgrade is the test above")
    import sqlalchemy as sa

    from oxyeval.store._engine import create_engine
    from oxyeval.store._migrations import _alembic

    loc = backend.fresh()
    engine = create_engine(loc)
    source = sqlite3.connect(FIXTURE)
    before = _fixture_rows(source)
    order = [
        "prompts",
        "prompt_versions",
        "test_cases",
        "runs",
        "executions",
        "case_daily",
        "case_baselines",
        "test_results",
        "workflow_runs",
        "workflow_tasks",
        "cache_entries",
    ]
    bools = {"executions": ("exact_match", "is_regression"), "test_cases": ("last_passed",)}
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(oxy_write=True)
            with conn.begin():
                _alembic(conn, "0003")
                meta = sa.MetaData()
                meta.reflect(conn)
                for table in order:
                    cur = source.execute(f"SELECT * FROM {table}")
                    names = [d[0] for d in cur.description]
                    rows = [dict(zip(names, r, strict=True)) for r in cur]
                    for row in rows:
                        for col in bools.get(table, ()):
                            if row[col] is not None:
                                row[col] = bool(row[col])
                    if rows:
                        conn.execute(meta.tables[table].insert(), rows)
                    if rows and "seq" in names:  # the copy gave seq: move the identity on
                        conn.execute(
                            sa.text(
                                f"SELECT setval(pg_get_serial_sequence('{table}', 'seq'), "
                                f"(SELECT max(seq) FROM {table}))"
                            )
                        )
    finally:
        engine.dispose()
        source.close()
    with open_store(loc) as store:
        _check_upgraded(store, {t: before[t] for t in order})


def test_baselines_of_many_subjects_across_runs_are_read_in_order(
    store: Store, toy: ResultKind
) -> None:
    old = store.runs.start("toy-essay")
    store.results.add(
        old, [_essay("a", 0.9, True), _essay("b", 0.1, False), _essay("a", 0.7, True)]
    )
    new = store.runs.start("toy-essay")
    store.results.add(new, [_essay("a", 0.2, False), _essay("c", 0.5, False)])
    found = store.results.in_runs("toy-essay", [("a", old), ("b", old), ("c", new), ("a", old)])
    assert sorted(found) == [("a", old), ("b", old), ("c", new)]
    assert [r.score for r in found[("a", old)]] == [0.9, 0.7]  # in the order stored
    assert [r.score for r in found[("c", new)]] == [0.5]
    assert store.results.in_runs("toy-essay", [("b", new)]) == {}


def test_tally_rows_count_what_whole_results_count(store: Store, toy: ResultKind) -> None:
    """What a run reads of each baseline (status, passed, details) tallies exactly as the
    whole results do, an errored result (no tally) and a result with its own tally
    included."""
    from oxyeval.evaluation import add_tallies, tally_of, tally_of_row

    old = store.runs.start("toy-essay")
    store.results.add(
        old,
        [
            _essay("a", 0.9, True),
            _essay("a", 0.2, False),
            _essay("b", 0.1, False),
            replace(_essay("c", 0.5, None), status="error", error="timeout"),
            replace(_essay("d", 0.6, True), details={"tally": [3, 4]}),
        ],
    )
    pairs = [("a", old), ("b", old), ("c", old), ("d", old), ("e", old)]
    whole = store.results.in_runs("toy-essay", pairs)
    lean = store.results.tally_rows("toy-essay", pairs)
    assert sorted(lean) == sorted(whole) == [("a", old), ("b", old), ("c", old), ("d", old)]
    for pair, rows in whole.items():
        expected = add_tallies(tally_of(r.to_result()) for r in rows)
        assert add_tallies(tally_of_row("toy-essay", *row) for row in lean[pair]) == expected
    counted = {
        pair: add_tallies(tally_of_row("toy-essay", *row) for row in rows)
        for pair, rows in lean.items()
    }
    assert counted == {("a", old): (1, 2), ("b", old): (0, 1), ("c", old): None, ("d", old): (3, 4)}


def test_a_baseline_lookup_is_an_index_search_not_a_scan_of_the_earlier_run(
    tmp_path: Path,
) -> None:
    """Each batch of results reads its baselines; scanning the whole earlier run per batch
    made a run quadratic in its number of cases."""
    with open_store(tmp_path / "h.db"):
        pass
    db = sqlite3.connect(tmp_path / "h.db")
    plan = db.execute(
        "EXPLAIN QUERY PLAN SELECT r.id FROM results r WHERE r.kind = 'k' AND r.run_id = 'x' "
        "AND r.subject IN ('a', 'b') ORDER BY r.subject, r.seq"
    ).fetchall()
    db.close()
    assert any("ix_results_run_subject (run_id=? AND kind=? AND subject=?)" in p[-1] for p in plan)
    assert not any("TEMP B-TREE" in p[-1] for p in plan)


def test_the_previous_result_is_found_past_a_subjects_latest_errors(
    store: Store, toy: ResultKind
) -> None:
    """The latest few rows are read first; a subject whose latest rows are errors or this
    run's own is read further back, up to the lookback."""
    from oxyeval.suites.earlier import _FIRST_LOOK, earlier_results

    old = store.runs.start("toy-essay")
    store.results.add(old, [_essay("a", 0.9, True), _essay("b", 0.4, False)])
    for _ in range(_FIRST_LOOK + 1):  # newer runs in which "a" only errored
        errored = store.runs.start("toy-essay")
        store.results.add(errored, [Result(kind="toy-essay", subject="a", status="error")])
    now = store.runs.start("toy-essay")
    store.results.add(now, [_essay("b", 0.8, True)])  # this run's own: never its previous
    found = earlier_results(
        store,
        now,
        [
            (_essay("a", 0.5, False), None),
            (_essay("b", 0.8, True), None),
            (_essay("c", 1.0, True), None),
        ],
    )
    a, b, c = found
    assert a is not None and (a.accuracy, a.run_id, a.tally) == (0.9, old, (1, 1))
    assert b is not None and (b.accuracy, b.run_id) == (0.4, old)
    assert c is None
    newest = store.results.recent("toy-essay", ["a", "b"], limit=2)
    assert [r[1] for r in newest["a"]] == ["error", "error"] and newest["b"][0][0] == now


def test_a_case_results_scores_are_read_from_its_execution(store: Store) -> None:
    """Named scores of a cases result are its execution's columns, not rows of their own."""
    from ._helpers import make_case, new

    make_case(store, "a")
    run = store.runs.start("cases", total=3)
    store.executions.record_many(
        [
            new(
                "a",
                run_id=run,
                score=0.75,
                exact_match=False,
                semantic_score=0.5,
                similarity_method="lexical",
                id="e1",
                passed=True,
            ),
            new("a", run_id=run, score=None, exact_match=True, id="e2", passed=False),
            new("a", run_id=run, status="pending", actual_output=None, id="e3"),
        ]
    )
    with store.read("counting") as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM scores").scalar() == 0
    scores = {
        r.id: [(s.metric, s.value, s.label, s.passed) for s in r.scores]
        for r in store.results.for_run(run)
    }
    assert scores == {
        "e1": [
            ("score", 0.75, None, None),
            ("exact_match", 0.0, None, None),
            ("similarity", 0.5, "lexical", None),
        ],
        "e2": [("score", None, None, None), ("exact_match", 1.0, None, None)],
        "e3": [],
    }
