"""A/B branches: ``store.branches`` on SQLite and PostgreSQL. The rules hold
for every caller, even two racing; YAML sync keeps API branches and every branch's
history; the aggregates follow a scripted set of executions exactly; executions are
results of kind ``ab`` and page newest first; secrets never reach a row; revision 0005
upgrades a history of the release before it."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import oxyeval.evaluation.kinds as evaluation_kinds
from oxyeval.errors import EXIT_INPUT
from oxyeval.evaluation import ResultKind, register_kind
from oxyeval.redact import register_secret
from oxyeval.store import (
    AlreadyExistsError,
    BranchRuleError,
    NewBranchExecution,
    NotFoundError,
    Store,
    StoreError,
    TestBranch,
    branch_id,
    open_store,
)
from oxyeval.store._migrations import HEAD, VERSION_TABLE

from ._helpers import make_case
from .conftest import Backend

CASE = "c1"
FIXTURE = Path(__file__).parent / "fixtures" / "history-v0.2.db"


@pytest.fixture
def ab(monkeypatch: pytest.MonkeyPatch) -> Iterator[ResultKind]:
    """The ``ab`` kind registered as the suites package will, for this test only: other
    tests check that a reserved kind is refused while unregistered."""
    monkeypatch.setattr(evaluation_kinds, "_KINDS", dict(evaluation_kinds._KINDS))
    yield register_kind(
        ResultKind(
            "ab", statuses=("success", "error", "interrupted"), noun="branch", metric="quality"
        ),
        replace=True,
    )


def _ex(branch: TestBranch | str, status: str = "success", **kw: Any) -> NewBranchExecution:
    bid = branch if isinstance(branch, str) else branch.id
    fields: dict[str, Any] = {"branch_id": bid, "test_case_id": CASE, "status": status}
    if status == "error":
        fields.setdefault("error", "provider said no")
    fields.update(kw)
    return NewBranchExecution(**fields)


def _names(store: Store, case: str = CASE) -> list[str]:
    return [b.name for b in store.branches.list(case)]


# ----------------------------------------------------------------------- create/update/delete


def test_branches_are_created_updated_listed_and_deleted(store: Store) -> None:
    make_case(store, CASE)
    b = store.branches.create(CASE, "Zeta", model="gpt-4o-mini", provider="openai")
    assert b.id == branch_id(CASE, "Zeta") == "c1@Zeta"
    assert (b.temperature, b.max_tokens, b.top_p, b.is_control, b.is_active) == (
        0.7,
        2048,
        1.0,
        False,
        True,
    )
    assert (b.other_params, b.source_file, b.deleted_at, b.total_runs) == ({}, None, None, 0)
    store.branches.create(
        CASE,
        "Local",
        model="local",
        description="config.yml model",
        temperature=0.0,
        max_tokens=1,
        top_p=0.0,
        other_params={"seed": 7},
    )
    control = store.branches.create(CASE, "Baseline", model="m", is_control=True)
    assert _names(store) == ["Baseline", "Local", "Zeta"]  # the control first, then by name
    assert store.branches.get("c1@Local").other_params == {"seed": 7}  # type: ignore[union-attr]

    changed = store.branches.update(b.id, temperature=1.5, is_active=False, description="hot")
    assert (changed.temperature, changed.is_active, changed.description) == (1.5, False, "hot")
    assert changed.updated_at >= b.updated_at and changed.created_at == b.created_at
    same = store.branches.update(b.id, temperature=1.5)
    assert same.updated_at == changed.updated_at  # nothing changed: not touched
    with pytest.raises(TypeError, match="unknown field"):
        store.branches.update(b.id, test_case_id="other")
    with pytest.raises(NotFoundError, match="no branch 'c1@nope'"):
        store.branches.update("c1@nope", temperature=1.0)

    with pytest.raises(AlreadyExistsError, match="c1@Zeta"):
        store.branches.create(CASE, "Zeta", model="other")
    with pytest.raises(NotFoundError, match="no test case 'missing'"):
        store.branches.create("missing", "A", model="m")

    assert store.branches.delete(control.id) is True
    assert store.branches.delete(control.id) is False
    assert store.branches.get(control.id) is None
    assert store.branches.get(control.id, include_deleted=True).deleted_at is not None  # type: ignore[union-attr]
    assert _names(store) == ["Local", "Zeta"]
    assert len(store.branches.list(CASE, include_deleted=True)) == 3
    with pytest.raises(NotFoundError):
        store.branches.update(control.id, temperature=1.0)
    back = store.branches.create(CASE, "Baseline", model="m2", is_control=True)
    assert back.id == control.id and back.model == "m2" and back.deleted_at is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"temperature": 2.5}, "temperature must be between 0 and 2"),
        ({"temperature": -0.1}, "temperature must be between 0 and 2"),
        ({"temperature": float("nan")}, "temperature must be a number"),
        ({"top_p": 1.01}, "top_p must be between 0 and 1"),
        ({"max_tokens": 0}, "max_tokens must be a whole number from 1 to 10000000"),
        ({"max_tokens": 10.5}, "max_tokens must be a whole number from 1"),
        ({"max_tokens": 2**63}, "max_tokens must be a whole number from 1"),
        ({"other_params": {"seed": float("nan")}}, "other_params must be plain JSON"),
        ({"other_params": {"seed": object()}}, "other_params must be plain JSON"),
        ({"provider": "opneai"}, "provider must be one of openai, anthropic, gemini, ollama"),
        ({"model": " "}, "model must be a non-empty string"),
        ({"is_control": "yes"}, "is_control must be true or false"),
        ({"other_params": ["x"]}, "other_params must be a mapping"),
    ],
)
def test_settings_out_of_range_are_refused_naming_the_branch(
    store: Store, fields: dict[str, Any], message: str
) -> None:
    make_case(store, CASE)
    args = {"model": "m", **fields}
    with pytest.raises(BranchRuleError, match=message) as info:
        store.branches.create(CASE, "Hot", **args)
    assert "branch 'Hot' of test case 'c1'" in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, StoreError)
    assert info.value.exit_code == EXIT_INPUT
    assert store.branches.list(CASE) == []
    ok = store.branches.create(CASE, "Hot", model="m")
    with pytest.raises(BranchRuleError, match=message):
        store.branches.update(ok.id, **fields)
    assert store.branches.get(ok.id) == ok  # unchanged


def test_a_sixth_branch_and_a_second_control_are_refused(store: Store) -> None:
    make_case(store, CASE)
    store.branches.create(CASE, "A", model="m", is_control=True)
    for name in "BCDE":
        store.branches.create(CASE, name, model="m")
    with pytest.raises(BranchRuleError, match=r"branch 'F' of test case 'c1': .* at most 5"):
        store.branches.create(CASE, "F", model="m")
    assert _names(store) == ["A", "B", "C", "D", "E"]
    with pytest.raises(BranchRuleError, match=r"branch 'B' .* at most one control.*'A'"):
        store.branches.update("c1@B", is_control=True)
    assert store.branches.get("c1@B").is_control is False  # type: ignore[union-attr]
    with pytest.raises(BranchRuleError, match=r"branch 'C' .* a branch name is used once"):
        store.branches.update("c1@B", name="C")
    store.branches.delete("c1@E")  # a deleted branch frees its place
    with pytest.raises(BranchRuleError, match="at most one control"):
        store.branches.create(CASE, "F", model="m", is_control=True)
    store.branches.create(CASE, "F", model="m")
    store.branches.update("c1@A", is_control=False)
    store.branches.update("c1@F", is_control=True)  # the control moved: allowed
    assert [b.name for b in store.branches.list(CASE) if b.is_control] == ["F"]
    # Another case has its own five.
    make_case(store, "c2")
    for name in "ABCDE":
        store.branches.create("c2", name, model="m")


def test_two_racing_creates_cannot_make_a_sixth_branch(store: Store) -> None:
    """Two writers each see four branches and add one more: the case's lock (PostgreSQL)
    or the write lock (SQLite) puts the second one after the first, and it is refused."""
    make_case(store, CASE)
    for name in "ABCD":
        store.branches.create(CASE, name, model="m")
    for round_ in range(3):
        gate = threading.Barrier(2)
        outcomes: list[str] = []

        def add(
            name: str,
            is_control: bool,
            gate: threading.Barrier = gate,
            outcomes: list[str] = outcomes,
        ) -> None:
            gate.wait()
            try:
                store.branches.create(CASE, name, model="m", is_control=is_control)
                outcomes.append("made")
            except BranchRuleError:
                outcomes.append("refused")

        threads = [
            threading.Thread(target=add, args=(f"X{round_}", True)),
            threading.Thread(target=add, args=(f"Y{round_}", True)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["made", "refused"]
        live = store.branches.list(CASE)
        assert len(live) == 5 and sum(b.is_control for b in live) == 1
        store.branches.delete(next(b.id for b in live if b.is_control))


# ----------------------------------------------------------------------- sync


def test_sync_keeps_api_branches_and_every_branch_history(store: Store, ab: ResultKind) -> None:
    make_case(store, CASE)
    api = store.branches.create(CASE, "api", model="m")
    made = store.branches.sync(
        CASE,
        [
            {"name": "GPT-4 Turbo", "provider": "openai", "model": "gpt-4", "is_control": True},
            {"name": "Local", "model": "local", "temperature": 0.2},
        ],
        "p.prompt.yml",
    )
    assert [b.id for b in made] == ["c1@GPT-4 Turbo", "c1@Local"]
    assert {b.source_file for b in made} == {"p.prompt.yml"}
    assert _names(store) == ["GPT-4 Turbo", "Local", "api"]
    store.branches.add_executions(None, [_ex("c1@Local", quality_score=0.9, latency_ms=10)])

    # Edited in the file: same id, same history; Local no longer declared; New added.
    again = store.branches.sync(
        CASE,
        [
            {"name": "GPT-4 Turbo", "provider": "openai", "model": "gpt-4", "temperature": 0.9},
            {"name": "New", "model": "m"},
        ],
        "p.prompt.yml",
    )
    assert again[0].id == made[0].id and again[0].temperature == 0.9
    assert again[0].is_control is False and again[0].created_at == made[0].created_at
    assert _names(store) == ["GPT-4 Turbo", "New", "api"]
    local = store.branches.get("c1@Local", include_deleted=True)
    assert local is not None and local.deleted_at is not None and local.total_runs == 1
    assert store.branches.get(api.id) == api  # untouched

    # Declared again: it comes back with its history.
    store.branches.sync(
        CASE,
        [{"name": "GPT-4 Turbo", "model": "gpt-4"}, {"name": "Local", "model": "local"}],
        "p.prompt.yml",
    )
    back = store.branches.get("c1@Local")
    assert back is not None and back.total_runs == 1 and back.avg_quality_score == 0.9
    assert len(store.branches.executions("c1@Local")) == 1

    before = store.branches.list(CASE, include_deleted=True)
    # The rules over the result as a whole: nothing written on a violation.
    too_many = [{"name": n, "model": "m"} for n in ("GPT-4 Turbo", "Local", "B", "C", "D")]
    with pytest.raises(BranchRuleError, match="at most 5 branches"):
        store.branches.sync(CASE, too_many, "p.prompt.yml")  # 5 declared + the API one
    store.branches.update(api.id, is_control=True)
    before = store.branches.list(CASE, include_deleted=True)
    with pytest.raises(BranchRuleError, match="at most one control"):
        store.branches.sync(
            CASE, [{"name": "Local", "model": "m", "is_control": True}], "p.prompt.yml"
        )
    with pytest.raises(BranchRuleError, match=r"'Local' .* used once"):
        store.branches.sync(CASE, [{"name": "Local", "model": "m"}] * 2, "p.prompt.yml")
    with pytest.raises(BranchRuleError, match="needs a name and a model"):
        store.branches.sync(CASE, [{"name": "Local"}], "p.prompt.yml")
    with pytest.raises(BranchRuleError, match="unknown setting"):
        store.branches.sync(CASE, [{"name": "Local", "model": "m", "temp": 1}], "p.prompt.yml")
    assert store.branches.list(CASE, include_deleted=True) == before

    # Nothing declared any more: the YAML branches go, the API one stays.
    assert store.branches.sync(CASE, [], "p.prompt.yml") == []
    assert _names(store) == ["api"]
    with pytest.raises(NotFoundError):
        store.branches.sync("missing", [], "p.prompt.yml")


# ----------------------------------------------------------------------- executions


def test_aggregates_follow_a_scripted_set_of_executions(store: Store, ab: ResultKind) -> None:
    make_case(store, CASE)
    fast = store.branches.create(CASE, "fast", model="m", is_control=True)
    free = store.branches.create(CASE, "free", model="local")
    idle = store.branches.create(CASE, "idle", model="m")
    run = store.runs.start("ab", total=7)
    first = store.branches.add_executions(
        run,
        [
            _ex(
                fast,
                latency_ms=100,
                estimated_cost=0.01,
                quality_score=0.9,
                passed=True,
                tokens_per_second=10,
                consistency_hash="h1",
                similarity_score=0.8,
                clarity_score=0.6,
                input_tokens=5,
                output_tokens=7,
                time_to_first_token=20,
                valid_json=True,
                judge_cost=0.001,
                prompt_version=3,
                iteration=0,
                details={"branch_name": "fast"},
            ),
            _ex(
                fast,
                latency_ms=200,
                estimated_cost=None,
                quality_score=0.5,
                passed=False,
                consistency_hash="h1",
                iteration=1,
            ),
            _ex(
                fast,
                latency_ms=300,
                estimated_cost=0.03,
                quality_score=0.7,
                passed=True,
                tokens_per_second=30,
                consistency_hash="h2",
                iteration=2,
            ),
            # An error is counted, never averaged (its latency and cost say nothing).
            _ex(fast, "error", latency_ms=9000, estimated_cost=5.0, iteration=3),
            _ex(
                free,
                latency_ms=50,
                estimated_cost=None,
                quality_score=0.2,
                passed=False,
                consistency_hash="x",
            ),
            _ex(free, latency_ms=70, quality_score=None, consistency_hash="y"),
            _ex(free, "error"),
        ],
    )
    store.runs.finish(run)
    assert len(first) == 7 and first[0].total_tokens == 12 and first[0].similarity_score == 0.8
    f = store.branches.get(fast.id)
    assert f is not None
    assert (f.total_runs, f.errors, f.successes) == (4, 1, 3)
    assert f.avg_latency == pytest.approx(200.0)
    assert f.avg_cost == pytest.approx(0.02)  # over the two priced successes only
    assert f.avg_quality_score == pytest.approx(0.7)
    assert f.avg_tokens_per_sec == pytest.approx(20.0)
    assert f.pass_rate == pytest.approx(100 * 2 / 3)  # 0.9 and 0.7 pass; a percent
    assert f.consistency_score == pytest.approx(2 / 3)  # h1 twice out of three
    g = store.branches.get(free.id)
    assert g is not None and (g.total_runs, g.errors) == (3, 1)
    assert g.avg_cost is None  # nothing priced: unknown, not free
    assert g.pass_rate == 0.0 and g.avg_quality_score == pytest.approx(0.2)
    assert g.consistency_score == pytest.approx(0.5)
    i = store.branches.get(idle.id)
    assert i is not None and i.total_runs == 0
    assert (i.avg_latency, i.avg_cost, i.pass_rate, i.consistency_score) == (None,) * 4

    # A second batch: the most common output changes (h2 now 3 of 5).
    store.branches.add_executions(
        None, [_ex(fast, consistency_hash="h2", quality_score=1.0, passed=True)] * 2
    )
    f = store.branches.get(fast.id)
    assert f is not None and f.consistency_score == pytest.approx(3 / 5)
    assert f.pass_rate == pytest.approx(100 * 4 / 5) and f.total_runs == 6

    # The executions are results of kind ab on the spine, counted in the run and the rollup.
    assert store.runs.get(run).done == 7  # type: ignore[union-attr]
    spine = {r.repeat: r for r in store.results.for_run(run) if r.branch == fast.id}
    assert [spine[n].passed for n in range(4)] == [True, False, True, None]
    assert spine[0].kind == "ab" and spine[0].subject == fast.id and spine[0].case_id == CASE
    assert [(s.metric, s.value) for s in spine[0].scores] == [
        ("quality", 0.9),
        ("similarity", 0.8),
        ("clarity", 0.6),
    ]
    assert spine[0].details["judgeCostUsd"] == 0.001 and spine[0].details["branch_name"] == "fast"
    (day,) = store.results.daily("ab", fast.id)
    assert (day.results, day.errors, day.passes, day.failures) == (6, 1, 4, 1)
    (back,) = [
        e for e in store.branches.executions(fast.id, limit=100) if e.iteration == 0 and e.run_id
    ]
    assert back == first[0]
    assert (back.valid_json, back.prompt_version, back.time_to_first_token) == (True, 3, 20.0)
    assert back.details == {"branch_name": "fast"} and back.execution_id is None
    err = next(e for e in store.branches.executions(fast.id, limit=100) if e.status == "error")
    assert err.output == "" and err.error == "provider said no" and err.quality_score is None


def test_passes_are_the_writers_not_the_quality_score(store: Store, ab: ResultKind) -> None:
    """The store counts what the A/B kind decided: a high score its writer did not pass is
    no pass, and an ungraded success neither passes nor fails."""
    make_case(store, CASE)
    b = store.branches.create(CASE, "A", model="m")
    run = store.runs.start("ab", total=3)
    store.branches.add_executions(
        run,
        [
            _ex(b, quality_score=0.95, passed=False),
            _ex(b, quality_score=0.1, passed=True, iteration=1),
            _ex(b, quality_score=0.9, iteration=2),
        ],
    )
    back = store.branches.get(b.id)
    assert back is not None and (back.passes, back.pass_rate) == (1, pytest.approx(100 / 3))
    assert [r.passed for r in store.results.for_run(run)] == [False, True, None]
    (day,) = store.results.daily("ab", b.id)
    assert (day.passes, day.failures) == (1, 1)


def test_bad_executions_write_nothing(store: Store, ab: ResultKind) -> None:
    make_case(store, CASE)
    make_case(store, "c2")
    b = store.branches.create(CASE, "A", model="m")
    good = _ex(b, quality_score=0.9)
    cases = [
        (_ex("c1@nope"), NotFoundError, "no branch 'c1@nope'"),
        (
            NewBranchExecution(branch_id=b.id, test_case_id="c2", status="success"),
            ValueError,
            "belongs to test case 'c1'",
        ),
        (_ex(b, "passed"), ValueError, "status must be one of success, error"),
        (_ex(b, quality_score=1.2), ValueError, "between 0 and 1"),
        (_ex(b, latency_ms=-1), ValueError, "cannot be negative"),
        (_ex(b, "error", error=None), ValueError, "needs its error text"),
        (_ex(b, "error", passed=False), ValueError, "None unless it succeeded"),
        (_ex(b, passed=1), ValueError, "passed is true, false or None"),
    ]
    for bad, error, message in cases:
        with pytest.raises(error, match=message):
            store.branches.add_executions(None, [good, bad])
    with pytest.raises(NotFoundError, match="no run 'gone'"):
        store.branches.add_executions("gone", [good])
    assert store.branches.executions(b.id) == []
    assert store.branches.get(b.id).total_runs == 0  # type: ignore[union-attr]
    assert store.results.daily("ab") == []
    store.branches.delete(b.id)  # a deleted branch still takes a run in flight's results
    store.branches.add_executions(None, [good])
    assert store.branches.get(b.id, include_deleted=True).total_runs == 1  # type: ignore[union-attr]


def test_executions_page_newest_first(store: Store, ab: ResultKind) -> None:
    make_case(store, CASE)
    a = store.branches.create(CASE, "A", model="m")
    other = store.branches.create(CASE, "B", model="m")
    for start in (0, 10, 20):  # three writes: newest last
        store.branches.add_executions(
            None, [_ex(a, iteration=i) for i in range(start, start + 10)] + [_ex(other)]
        )
    page = store.branches.executions(a.id, limit=10)
    assert [e.iteration for e in page] == list(range(29, 19, -1))
    assert [e.iteration for e in store.branches.executions(a.id, limit=10, offset=10)] == list(
        range(19, 9, -1)
    )
    assert [e.iteration for e in store.branches.executions(a.id, limit=5, offset=28)] == [1, 0]
    assert len(store.branches.executions(a.id)) == 20  # the default page
    assert len(store.branches.executions(a.id, limit=0)) == 1  # kept within 1..1000
    assert len(store.branches.executions(a.id, limit=10**6)) == 30
    assert {e.branch_id for e in store.branches.executions(a.id, limit=100)} == {a.id}
    assert store.branches.executions("c1@none") == []


def test_secrets_never_reach_a_row(store: Store, ab: ResultKind) -> None:
    secret = "sk-branch-" + "z" * 24
    register_secret(secret)
    make_case(store, CASE)
    b = store.branches.create(
        CASE, "A", model="m", description=f"uses {secret}", other_params={"api_key": secret}
    )
    assert secret not in repr(b)
    out = store.branches.add_executions(
        None,
        [
            _ex(b, output=f"the key is {secret}", details={"prompt": f"say {secret}"}),
            _ex(b, "error", error=f"401 for key {secret}"),
        ],
    )
    assert secret not in repr(out) and "the key is" in out[0].output
    assert secret not in repr(store.branches.executions(b.id))
    with store.read("test") as conn:
        for table in ("test_branches", "results", "scores", "branch_outputs"):
            for row in conn.execute(sa.text(f"SELECT * FROM {table}")):
                assert secret not in repr(tuple(row)), table


# ----------------------------------------------------------------------- migration 0005


def _upgraded_has_branches(store: Store, case: str) -> None:
    with store.read("test") as conn:
        inspector = sa.inspect(conn)
        tables = set(inspector.get_table_names())
        assert {"test_branches", "branch_outputs"} <= tables
        indexes = {i["name"]: i["column_names"] for i in inspector.get_indexes("results")}
        assert indexes["ix_results_branch"] == ["branch", "seq"]
        assert conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar() == HEAD
    b = store.branches.create(case, "after", model="m", is_control=True)
    store.branches.add_executions(
        None,
        [
            NewBranchExecution(
                branch_id=b.id,
                test_case_id=case,
                status="success",
                quality_score=1.0,
                passed=True,
            )
        ],
    )
    assert store.branches.get(b.id).pass_rate == 100.0  # type: ignore[union-attr]


def test_revision_0005_upgrades_the_0_2_history_sqlite(tmp_path: Path) -> None:
    """The 0.2 fixture brought to 0004 first (the release before this one), then opened."""
    from oxyeval.store._engine import create_engine, resolve_location
    from oxyeval.store._migrations import _alembic

    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURE, db)
    loc = resolve_location(str(db), environ={})
    engine = create_engine(loc)
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(oxy_write=True)
            with conn.begin():
                _alembic(conn, "0004")
    finally:
        engine.dispose()
    with sqlite3.connect(db) as conn:
        assert conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone() == ("0004",)
        before = conn.execute("SELECT * FROM results ORDER BY seq").fetchall()
    assert len(before) == 19
    with open_store(db) as store:
        _upgraded_has_branches(store, "sentiment::positive")
    with sqlite3.connect(db) as conn:
        after = conn.execute("SELECT * FROM results WHERE kind != 'ab' ORDER BY seq").fetchall()
        assert [row[:-1] for row in after] == before  # 0007 adds the outcome, last
        assert {row[-1] for row in after} <= {"passed", "failed", "unknown", "neutral", "unjudged"}
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_revision_0005_upgrades_a_0004_history_postgresql(backend: Backend) -> None:
    if backend.name != "postgresql":
        pytest.skip("the SQLite upgrade is the test above")
    from oxyeval.store._engine import create_engine
    from oxyeval.store._migrations import _alembic

    loc = backend.fresh()
    engine = create_engine(loc)
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(oxy_write=True)
            with conn.begin():
                _alembic(conn, "0004")
                conn.execute(
                    sa.text(
                        "INSERT INTO prompts (id, name, source, created_at) VALUES "
                        "('p', 'p', '', '2026-01-01T00:00:00.000Z');"
                        "INSERT INTO test_cases (id, prompt_id, name, input, created_at, updated_at) "
                        "VALUES ('p::c', 'p', 'c', '{}', '2026-01-01T00:00:00.000Z', "
                        "'2026-01-01T00:00:00.000Z');"
                        "INSERT INTO results (id, kind, subject, status, details, created_at) VALUES "
                        "('r1', 'cases', 'p::c', 'passed', '{}', '2026-01-01T00:00:00.000Z')"
                    )
                )
    finally:
        engine.dispose()
    with open_store(loc) as store:
        _upgraded_has_branches(store, "p::c")
        with store.read("test") as conn:
            assert conn.execute(sa.text("SELECT id FROM results WHERE kind = 'cases'")).all() == [
                ("r1",)
            ]
    # And back: the downgrade drops what 0005 added (tests and unreleased databases only).
    engine = create_engine(loc)
    try:
        from alembic import command
        from alembic.config import Config

        from oxyeval.store._migrations import __file__ as migrations_init

        with engine.connect() as conn:
            conn = conn.execution_options(oxy_write=True)
            with conn.begin():
                cfg = Config()
                cfg.set_main_option("script_location", str(Path(migrations_init).parent))
                cfg.attributes["connection"] = conn
                command.downgrade(cfg, "0004")
            assert "test_branches" not in sa.inspect(conn).get_table_names()
    finally:
        engine.dispose()


@pytest.mark.parametrize("name", ["a@b", "red\x1b[31m", "two\nlines"])
def test_a_name_that_could_share_an_id_or_drive_a_terminal_is_refused(
    store: Store, name: str
) -> None:
    """``<case id>@<name>`` is the id: with an "@" in a name, case "c1" branch "x@y" and
    case "c1@x" branch "y" shared one. Control characters would reach terminals."""
    make_case(store, CASE)
    with pytest.raises(BranchRuleError, match="may not hold control characters"):
        store.branches.create(CASE, name, model="m")
    assert store.branches.list(CASE) == []
