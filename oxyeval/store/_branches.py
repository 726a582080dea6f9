"""A/B branches: ``store.branches``, one model configuration per branch of a
test case, created through the API or synced from YAML (same id, same history), and their
executions, which are results of kind ``ab`` on the results table.

The rules hold for every caller (CLI, Python API, GraphQL) because they are checked here,
inside the write transaction, against what is stored: at most :data:`MAX_BRANCHES` live
branches and one live control per test case, a name used once per case, settings in
range. Two writers cannot both add the fifth-plus-one branch: on PostgreSQL the test case's
row is locked first (every branch write of a case queues behind it); on SQLite the write
transaction holds the database's write lock from its start.

Each execution updates the branch's counters in the same transaction (SQL increments and
``ON CONFLICT DO UPDATE`` on ``branch_outputs``), so a branch's averages, pass rate and
consistency read in O(1), however long its history.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ._branch_rows import BranchExecution, NewBranchExecution, TestBranch
from ._branch_rules import check_case, settings
from ._core import _SaSql
from ._errors import AlreadyExistsError, BranchRuleError, NotFoundError
from ._prompts import _upsert
from ._results import BRANCH_DETAIL_KEYS, ResultRow, branch_result, write_results
from ._tables import branch_outputs, runs, test_branches, test_cases
from ._util import branch_id, loads, utc_timestamp

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from ._core import Store
    from ._results_read import StoredResult

__all__ = ["Branches", "branch_row"]

_MAX_LIMIT = 1000
_B = test_branches.c
#: What create/update/sync take, with create's defaults.
_DEFAULTS: dict[str, Any] = {
    "description": None,
    "provider": None,
    "temperature": 0.7,
    "max_tokens": 2048,
    "top_p": 1.0,
    "is_control": False,
    "is_active": True,
    "other_params": None,
}
_SETTINGS = frozenset({"name", "model", *_DEFAULTS})


def branch_row(r: Any) -> TestBranch:
    return TestBranch(
        id=r.id,
        test_case_id=r.test_case_id,
        name=r.name,
        description=r.description,
        provider=r.provider,
        model=r.model,
        temperature=r.temperature,
        max_tokens=r.max_tokens,
        top_p=r.top_p,
        is_control=bool(r.is_control),
        is_active=bool(r.is_active),
        other_params=loads(r.other_params) or {},
        source_file=r.source_file,
        created_at=r.created_at,
        updated_at=r.updated_at,
        deleted_at=r.deleted_at,
        total_runs=r.runs,
        errors=r.errors,
        latency_n=r.latency_n,
        latency_sum=r.latency_sum,
        cost_n=r.cost_n,
        cost_sum=r.cost_sum,
        quality_n=r.quality_n,
        quality_sum=r.quality_sum,
        passes=r.passes,
        tps_n=r.tps_n,
        tps_sum=r.tps_sum,
        hashed_runs=r.hashed_runs,
        top_hash_runs=r.top_hash_runs,
    )


class Branches:
    """``store.branches``: the A/B branches of test cases and their executions."""

    def __init__(self, store: Store) -> None:
        self._store = store

    # ----------------------------------------------------------------- helpers

    def _not_found(self, what: str) -> NotFoundError:
        return NotFoundError(f"no {what} in {self._store.path}", path=self._store.path)

    def _lock_case(self, conn: Connection, case_id: str) -> None:
        """Lock the live test case (PostgreSQL; SQLite's write lock is already held):
        every branch write of one case queues here, so the rules are checked on what
        the previous writer committed."""
        found = conn.execute(
            sa.select(test_cases.c.id)
            .where(test_cases.c.id == case_id, test_cases.c.deleted_at.is_(None))
            .with_for_update()
        ).first()
        if found is None:
            raise self._not_found(f"test case {case_id!r}")

    def _branch(self, conn: Connection, id: str, *, deleted: bool, lock: bool = False) -> Any:
        q = sa.select(test_branches).where(_B.id == id)
        if not deleted:
            q = q.where(_B.deleted_at.is_(None))
        if lock:
            q = q.with_for_update()
        return conn.execute(q).first()

    def _live(self, conn: Connection, case_id: str) -> list[dict[str, Any]]:
        rows = conn.execute(
            sa.select(_B.id, _B.name, _B.is_control)
            .where(_B.test_case_id == case_id, _B.deleted_at.is_(None))
            .order_by(_B.seq)
        ).all()
        return [{"id": r.id, "name": r.name, "is_control": bool(r.is_control)} for r in rows]

    @staticmethod
    def _apply(conn: Connection, row: Any, values: Mapping[str, Any], now: str) -> bool:
        """Write only what differs (and bring a deleted branch back); updated_at moves
        only if something did."""
        sets = {k: v for k, v in values.items() if getattr(row, k) != v}
        if row.deleted_at is not None:
            sets["deleted_at"] = None
        if not sets:
            return False
        conn.execute(test_branches.update().where(_B.id == row.id).values(updated_at=now, **sets))
        return True

    # ----------------------------------------------------------------- branches

    def create(
        self,
        test_case_id: str,
        name: str,
        *,
        model: str,
        provider: str | None = None,
        description: str | None = None,
        temperature: float = 0.7,
        max_tokens: int = 2048,
        top_p: float = 1.0,
        is_control: bool = False,
        is_active: bool = True,
        other_params: Mapping[str, Any] | None = None,
        source_file: str | None = None,
        id: str | None = None,
    ) -> TestBranch:
        """A new branch of a live test case, identified as ``<case id>@<name>``
        (:func:`branch_id`) unless ``id`` says otherwise. A live branch with that id is an
        :class:`AlreadyExistsError` (change it with :meth:`update`); a soft-deleted one
        comes back with these settings and its history. Breaking a rule raises
        :class:`BranchRuleError`, and nothing is written."""
        who = f"branch {name!r} of test case {test_case_id!r}"
        values = settings(
            {
                "name": name,
                "model": model,
                "provider": provider,
                "description": description,
                "temperature": temperature,
                "max_tokens": max_tokens,
                "top_p": top_p,
                "is_control": is_control,
                "is_active": is_active,
                "other_params": other_params,
                "source_file": source_file,
            },
            who,
        )
        new = id or branch_id(test_case_id, values["name"])
        now = utc_timestamp()
        with self._store.write("creating a branch") as conn:
            self._lock_case(conn, test_case_id)
            row = self._branch(conn, new, deleted=True, lock=True)
            if row is not None and (row.deleted_at is None or row.test_case_id != test_case_id):
                raise AlreadyExistsError(
                    f"branch {new!r} already exists in {self._store.path} (test case "
                    f"{row.test_case_id!r}, branch {row.name!r}); change it with "
                    f"store.branches.update({new!r}, ...)",
                    path=self._store.path,
                )
            live = [b for b in self._live(conn, test_case_id) if b["id"] != new]
            live.append({"id": new, "name": values["name"], "is_control": is_control})
            check_case(test_case_id, live, values["name"])
            if row is None:
                conn.execute(
                    test_branches.insert().values(
                        id=new, test_case_id=test_case_id, created_at=now, updated_at=now, **values
                    )
                )
            else:
                self._apply(conn, row, values, now)
            row = self._branch(conn, new, deleted=False)
        return branch_row(row)

    def update(self, branch_id: str, **fields: Any) -> TestBranch:
        """Change some settings of a live branch (the fields of :meth:`create` but its
        case, id and source file); the same rules apply. Unknown (or deleted) id ->
        :class:`NotFoundError`."""
        unknown = set(fields) - _SETTINGS
        if unknown:
            raise TypeError(f"update() got unknown field(s) {sorted(unknown)}")
        now = utc_timestamp()
        with self._store.write("updating a branch") as conn:
            first = self._branch(conn, branch_id, deleted=False)
            if first is None:
                raise self._not_found(f"branch {branch_id!r}")
            case_id = first.test_case_id
            self._lock_case(conn, case_id)  # the case first, as create and sync do
            row = self._branch(conn, branch_id, deleted=False, lock=True)
            if row is None:
                raise self._not_found(f"branch {branch_id!r}")
            values = settings(fields, f"branch {row.name!r} of test case {case_id!r}")
            live = [b for b in self._live(conn, case_id) if b["id"] != branch_id]
            live.append(
                {
                    "id": branch_id,
                    "name": values.get("name", row.name),
                    "is_control": values.get("is_control", bool(row.is_control)),
                }
            )
            check_case(case_id, live, values.get("name", row.name))
            self._apply(conn, row, values, now)
            row = self._branch(conn, branch_id, deleted=False)
        return branch_row(row)

    def delete(self, branch_id: str) -> bool:
        """Soft delete: hidden from lists, executions and counters kept (declaring or
        creating it again brings them back). False if unknown or already deleted."""
        now = utc_timestamp()
        with self._store.write("deleting a branch") as conn:
            done = conn.execute(
                test_branches.update()
                .where(_B.id == branch_id, _B.deleted_at.is_(None))
                .values(deleted_at=now, updated_at=now)
            )
            return done.rowcount == 1

    def get(self, branch_id: str, *, include_deleted: bool = False) -> TestBranch | None:
        with self._store.read("reading a branch") as conn:
            row = self._branch(conn, branch_id, deleted=include_deleted)
        return None if row is None else branch_row(row)

    def list(
        self, test_case_id: str | None = None, *, include_deleted: bool = False
    ) -> list[TestBranch]:
        """A case's branches (or every case's, by case), the control first, then by name.
        Reads only the maintained counters."""
        q = sa.select(test_branches)
        if test_case_id is not None:
            q = q.where(_B.test_case_id == test_case_id)
        if not include_deleted:
            q = q.where(_B.deleted_at.is_(None))
        q = q.order_by(_B.test_case_id, sa.case((_B.is_control, 0), else_=1), _B.name, _B.seq)
        with self._store.read("listing branches") as conn:
            rows = conn.execute(q).all()
        return [branch_row(r) for r in rows]

    def sync(
        self, test_case_id: str, declared: Sequence[Mapping[str, Any]], source_file: str
    ) -> list[TestBranch]:
        """Make a case's YAML branches (declared in ``source_file``) what is stored: each
        declared branch created or updated under its stable id (``<case>@<name>``, keeping
        its history, brought back if it was deleted); the case's branches synced from a
        file earlier and no longer declared soft-deleted; branches made through the API
        left alone. The rules apply to the result as a whole: on a violation nothing is
        written. Returns the declared branches, in their order.

        Each mapping holds :meth:`create`'s settings (``name`` and ``model`` required)."""
        if not isinstance(source_file, str) or not source_file:
            raise ValueError("sync() needs the YAML file the branches come from")
        wanted: list[dict[str, Any]] = []
        for n, spec in enumerate(declared):
            if not isinstance(spec, Mapping):
                raise BranchRuleError(
                    f"branch #{n + 1} of test case {test_case_id!r}: a mapping, not {spec!r}"
                )
            name = spec.get("name")
            who = f"branch {name!r} of test case {test_case_id!r}"
            unknown = set(spec) - _SETTINGS
            if unknown:
                raise BranchRuleError(f"{who}: unknown setting(s) {', '.join(sorted(unknown))}")
            if "model" not in spec or "name" not in spec:
                raise BranchRuleError(f"{who}: a branch needs a name and a model")
            values = settings({**_DEFAULTS, **spec, "source_file": source_file}, who)
            wanted.append({"id": branch_id(test_case_id, values["name"]), **values})
        now = utc_timestamp()
        with self._store.write("saving branches") as conn:
            self._lock_case(conn, test_case_id)
            ids = [w["id"] for w in wanted]
            check_case(test_case_id, [{**w} for w in wanted], None)  # duplicates in the file
            for w in wanted:
                values = {k: v for k, v in w.items() if k != "id"}
                row = self._branch(conn, w["id"], deleted=True, lock=True)
                if row is None:
                    conn.execute(
                        test_branches.insert().values(
                            id=w["id"],
                            test_case_id=test_case_id,
                            created_at=now,
                            updated_at=now,
                            **values,
                        )
                    )
                elif row.test_case_id != test_case_id:
                    raise AlreadyExistsError(
                        f"branch {w['id']!r} belongs to test case {row.test_case_id!r} in "
                        f"{self._store.path}",
                        path=self._store.path,
                    )
                else:
                    self._apply(conn, row, values, now)
            gone = sa.and_(
                _B.test_case_id == test_case_id,
                _B.deleted_at.is_(None),
                _B.source_file.is_not(None),
            )
            if ids:
                gone = sa.and_(gone, _B.id.not_in(ids))
            conn.execute(test_branches.update().where(gone).values(deleted_at=now, updated_at=now))
            check_case(test_case_id, self._live(conn, test_case_id), None)
            rows = {
                r.id: r for r in conn.execute(sa.select(test_branches).where(_B.id.in_(ids))).all()
            }
        return [branch_row(rows[i]) for i in ids]

    # ----------------------------------------------------------------- executions

    def add_executions(
        self, run_id: str | None, executions: Sequence[NewBranchExecution]
    ) -> list[BranchExecution]:
        """Record executions of branches in one transaction: a result of kind ``ab`` each
        (with its scores and the daily rollup), the run's progress, and the branches'
        counters and output tallies. Deleted branches still take executions (a run in
        flight keeps its results); an unknown one is a :class:`NotFoundError` and nothing
        is written."""
        items = list(executions)
        if not items:
            return []
        rows = [branch_result(e, run_id=run_id) for e in items]
        with self._store.write("recording branch executions") as conn:
            self._write_rows(conn, run_id, items, rows)
        return [_from_row(r) for r in rows]

    def record_many(
        self, run_id: str | None, executions: Sequence[NewBranchExecution]
    ) -> list[tuple[str, str]]:
        """:meth:`add_executions` for a run, written by the store's writer process when it
        has one (:mod:`._writer`), on its own core; each execution's (id, time) given
        back. Both are chosen here, so nothing is read back, and a batch the process took
        without answering is found in the history rather than written twice."""
        from ._util import new_ids

        items = list(executions)
        if not items:
            return []
        now = utc_timestamp()
        batch = [(run_id, e, i, now) for e, i in zip(items, new_ids(len(items)), strict=True)]
        self._store.write_through("branches", batch, self.write_batch)
        return [(i, at) for _r, _e, i, at in batch]

    def write_batch(
        self,
        batch: Sequence[tuple[str | None, NewBranchExecution, str, str]],
        *,
        lost: bool = False,
    ) -> int:
        """A batch of :meth:`record_many` (one run's: run id, execution, id, time) written
        in this process; ``lost``: the writer process may have stored it already."""
        if not batch:
            return 0
        run_id = batch[0][0]
        rows = [branch_result(e, run_id=run_id, id=i, created_at=at) for _r, e, i, at in batch]
        with self._store.write("recording branch executions") as conn:
            stored = "SELECT 1 FROM results WHERE id = :id"
            if lost and _SaSql(conn).rows(stored, {"id": rows[0].values["id"]}):
                return len(rows)
            self._write_rows(conn, run_id, [e for _r, e, _i, _at in batch], rows)
        return len(rows)

    def _write_rows(
        self,
        conn: Connection,
        run_id: str | None,
        items: Sequence[NewBranchExecution],
        rows: Sequence[ResultRow],
    ) -> None:
        ids = sorted({e.branch_id for e in items})
        found = {
            r.id: r.test_case_id
            for r in conn.execute(
                sa.select(_B.id, _B.test_case_id)
                .where(_B.id.in_(ids))
                .order_by(_B.id)  # a fixed order: no deadlock between two writers
                .with_for_update()
            )
        }
        for e in items:
            if e.branch_id not in found:
                raise self._not_found(f"branch {e.branch_id!r}")
            if found[e.branch_id] != e.test_case_id:
                raise ValueError(
                    f"branch {e.branch_id!r} belongs to test case {found[e.branch_id]!r}, "
                    f"not {e.test_case_id!r}"
                )
        if run_id is not None:
            done = conn.execute(
                runs.update().where(runs.c.id == run_id).values(done=runs.c.done + len(rows))
            )
            if done.rowcount == 0:
                raise self._not_found(f"run {run_id!r}")
        write_results(_SaSql(conn), list(rows))
        _count(conn, items)

    def executions(
        self, branch_id: str, *, limit: int = 20, offset: int = 0
    ) -> list[BranchExecution]:
        """A branch's executions, newest first (the Testing API's testBranchExecutions); ``limit``
        is kept within 1..1000."""
        limit = max(1, min(int(limit), _MAX_LIMIT))
        offset = max(0, int(offset))
        stored = self._store.results._read_rows(
            "r.branch = :branch AND r.kind = 'ab'",
            {"branch": branch_id, "limit": limit, "offset": offset},
            " ORDER BY r.seq DESC LIMIT :limit OFFSET :offset",
        )
        return [_from_stored(r) for r in stored]

    def executions_of_run(self, run_id: str) -> list[BranchExecution]:
        """Every execution an A/B run stored, in the order stored (what re-ranks it)."""
        stored = self._store.results._read_rows(
            "r.run_id = :run AND r.kind = 'ab'",
            {"run": run_id, "limit": 100_000, "offset": 0},
            " ORDER BY r.seq LIMIT :limit OFFSET :offset",
        )
        return [_from_stored(r) for r in stored]


def _count(conn: Connection, items: Sequence[NewBranchExecution]) -> None:
    """Add ``items`` to their branches' counters and output tallies (the caller holds the
    branches' rows)."""
    sums: dict[str, Counter[str]] = defaultdict(Counter)
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    hashes: Counter[tuple[str, str]] = Counter()
    for e in items:
        c, t = sums[e.branch_id], totals[e.branch_id]
        c["runs"] += 1
        if e.status != "success":
            c["errors"] += 1
            continue
        for name, value in (
            ("latency", e.latency_ms),
            ("cost", e.estimated_cost),
            ("quality", e.quality_score),
            ("tps", e.tokens_per_second),
        ):
            if value is not None:
                c[f"{name}_n"] += 1
                t[f"{name}_sum"] += float(value)
        if e.passed is True:  # as the A/B kind decided it
            c["passes"] += 1
        if e.consistency_hash is not None:
            c["hashed_runs"] += 1
            hashes[(e.branch_id, str(e.consistency_hash))] += 1
    insert = _upsert(conn)
    top: dict[str, int] = {}
    for (branch, digest), n in sorted(hashes.items()):
        stmt = insert(branch_outputs).values(branch_id=branch, consistency_hash=digest, runs=n)
        conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["branch_id", "consistency_hash"],
                set_={"runs": branch_outputs.c.runs + stmt.excluded.runs},
            )
        )
        now = conn.execute(
            sa.select(branch_outputs.c.runs).where(
                branch_outputs.c.branch_id == branch, branch_outputs.c.consistency_hash == digest
            )
        ).scalar_one()
        top[branch] = max(top.get(branch, 0), int(now))
    for branch in sorted(sums):
        c, t = sums[branch], totals[branch]
        sets: dict[str, Any] = {k: _B[k] + v for k, v in c.items() if k != "runs"}
        sets["runs"] = _B.runs + c["runs"]
        sets.update({k: _B[k] + v for k, v in t.items()})
        if branch in top:
            sets["top_hash_runs"] = sa.case(
                (_B.top_hash_runs < top[branch], top[branch]), else_=_B.top_hash_runs
            )
        conn.execute(test_branches.update().where(_B.id == branch).values(**sets))


def _execution(
    r: Any, *, error: str | None, details: Mapping[str, Any], scores: Mapping[str, Any]
) -> BranchExecution:
    own = {k: v for k, v in details.items() if k not in BRANCH_DETAIL_KEYS}
    tokens = (r.input_tokens, r.output_tokens)
    return BranchExecution(
        id=r.id,
        run_id=r.run_id,
        execution_id=None,
        branch_id=r.branch,
        test_case_id=r.case_id,
        status=r.status,
        output=r.output or "",
        error=error,
        latency_ms=r.latency_ms,
        time_to_first_token=r.ttft_ms,
        tokens_per_second=details.get("tokensPerSecond"),
        input_tokens=r.input_tokens,
        output_tokens=r.output_tokens,
        total_tokens=None if tokens == (None, None) else sum(t or 0 for t in tokens),
        estimated_cost=r.cost_usd,
        quality_score=r.score,
        similarity_score=scores.get("similarity"),
        clarity_score=scores.get("clarity"),
        valid_json=bool(details.get("validJson", False)),
        consistency_hash=details.get("consistencyHash"),
        prompt_version=int(details.get("promptVersion", 1)),
        iteration=r.repeat,
        judge_cost=details.get("judgeCostUsd"),
        cached=bool(details.get("cached", False)),
        details=own,
        created_at=r.created_at,
    )


def _from_stored(r: StoredResult) -> BranchExecution:
    return _execution(
        r, error=r.error, details=r.details, scores={s.metric: s.value for s in r.scores}
    )


def _from_row(row: ResultRow) -> BranchExecution:
    from types import SimpleNamespace

    v = row.values
    return _execution(
        SimpleNamespace(**v),
        error=v["error_message"],
        details=loads(v["details"]) or {},
        scores={s["metric"]: s["value"] for s in row.scores},
    )
