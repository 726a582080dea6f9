"""Executions of test cases, and the aggregates that are kept in step with them.

Every write records the executions *and* updates what is derived from them (the case's
totals, the per-day rollup, the run's progress) in the same transaction, so the numbers
never drift and reads never scan history. Only judged executions (passed, failed) count
in the aggregates; pending and error executions are kept for the record (and for
``accept``) but are neither a pass nor a failure.

Increments are done in SQL (``total_runs = total_runs + n``), so concurrent writers on
PostgreSQL (row locks, READ COMMITTED) and SQLite (one writer at a time) never lose one.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ._core import _SaSql, executemany
from ._errors import NotFoundError
from ._recent import entry, next_windows
from ._result_rows import bounded_text
from ._results import execution_result, write_results
from ._rows import Execution, NewExecution
from ._tables import EXECUTION_STATUSES, case_baselines, case_daily, executions, runs
from ._tables import results as results_table
from ._util import (
    baseline_key,
    canonical_json,
    insert_sql,
    loads,
    new_id,
    new_ids,
    redact_json,
    redact_text,
    rows_in,
    utc_timestamp,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from ._core import Store

__all__ = ["Executions", "execution_row"]

_E = executions.c
JUDGED = ("passed", "failed")


def execution_row(r: Any) -> Execution:
    return Execution(
        id=r.id,
        test_case_id=r.test_case_id,
        run_id=r.run_id,
        execution_id=r.execution_id,
        cost_usd=getattr(r, "cost_usd", None),
        status=r.status,
        score=r.score,
        actual_output=r.actual_output,
        expected_output=r.expected_output,
        output_diff=loads(r.output_diff),
        exact_match=bool(r.exact_match),
        semantic_score=r.semantic_score,
        similarity_method=r.similarity_method,
        length_diff=r.length_diff,
        token_diff=r.token_diff,
        token_method=r.token_method,
        is_regression=bool(r.is_regression),
        regression_type=r.regression_type,
        regression_types=tuple(loads(r.regression_types) or ()),
        prompt_version=r.prompt_version,
        run_duration_ms=r.run_duration_ms,
        latency_ms=r.latency_ms,
        input_tokens=r.input_tokens,
        output_tokens=r.output_tokens,
        finish_reason=r.finish_reason,
        error=r.error_message,
        created_at=r.created_at,
    )


def _values(e: NewExecution, expected: str | None) -> dict[str, Any]:
    """Validated column values for one execution; every text that may hold model output or
    error text is redacted here, whatever the caller did."""
    if e.status not in EXECUTION_STATUSES:
        raise ValueError(
            f"execution status must be one of {', '.join(EXECUTION_STATUSES)}, not {e.status!r}"
        )
    if not e.test_case_id:
        raise ValueError("an execution needs a test_case_id")
    if e.score is not None and not (
        isinstance(e.score, (int, float)) and 0.0 <= float(e.score) <= 1.0
    ):
        raise ValueError(f"score must be between 0 and 1 (or None), got {e.score!r}")
    if e.status in JUDGED and e.actual_output is None:
        raise ValueError(f"a {e.status} execution needs its actual_output")
    actual = e.actual_output
    length_diff = e.length_diff
    if length_diff is None and actual is not None and expected is not None:
        length_diff = len(actual) - len(expected)
    expected = redact_text(expected)
    rtypes = list(e.regression_types or ([e.regression_type] if e.regression_type else []))
    rtype = e.regression_type or (rtypes[0] if rtypes else None)
    exec_id = e.id or new_id()
    return {
        "id": exec_id,
        "test_case_id": e.test_case_id,
        "run_id": e.run_id,
        "execution_id": e.execution_id or exec_id,
        "status": e.status,
        "score": None if e.score is None else float(e.score),
        "actual_output": bounded_text(redact_text(actual)),
        "expected_output": expected,
        "output_diff": None
        if e.output_diff is None
        else canonical_json(redact_json(e.output_diff)),
        "exact_match": bool(e.exact_match),
        "semantic_score": e.semantic_score,
        "similarity_method": e.similarity_method or "",
        "length_diff": None if length_diff is None else int(length_diff),
        "token_diff": e.token_diff,
        "token_method": e.token_method or "",
        "is_regression": bool(e.is_regression or rtypes),
        "regression_type": rtype,
        "regression_types": json.dumps(rtypes) if rtypes else "[]",
        "prompt_version": int(e.prompt_version),
        "run_duration_ms": float(e.run_duration_ms or 0.0),
        "latency_ms": e.latency_ms,
        "input_tokens": e.input_tokens,
        "output_tokens": e.output_tokens,
        "finish_reason": e.finish_reason,
        "error_message": redact_text(e.error),
        "baseline_key": (
            baseline_key(expected, e.similarity_method or "") if e.status in JUDGED else None
        ),
        "created_at": utc_timestamp(e.created_at),
    }


@dataclass
class _Totals:
    """What a batch adds to one case (or one case-day)."""

    runs: int = 0
    passes: int = 0
    score_sum: float = 0.0
    scored: int = 0
    length_sum: int = 0
    last_run: str | None = None
    last_passed: bool | None = None

    def add(self, v: dict[str, Any]) -> None:
        passed = v["status"] == "passed"
        self.runs += 1
        self.passes += passed
        if v["score"] is not None:
            self.score_sum += v["score"]
            self.scored += 1
        self.length_sum += len(v["actual_output"] or "")
        if self.last_run is None or v["created_at"] >= self.last_run:
            self.last_run, self.last_passed = v["created_at"], passed


def _lock_cases(conn: Connection, case_ids: list[str]) -> dict[str, str | None]:
    """Each case's expected output, its row locked on PostgreSQL (``FOR UPDATE``; SQLite
    has one writer at a time). Plain SQL, a statement per few hundred cases: compiling
    an IN of a thousand ids cost more than reading them."""
    query = "SELECT id, expected_output FROM test_cases WHERE id IN ({marks}) ORDER BY id"
    return {r[0]: r[1] for r in rows_in(_SaSql(conn), query, case_ids, lock=True)}


def _stored_already(conn: Connection, execution_id: str) -> bool:
    """Whether the batch holding this execution is in the history (a batch goes in
    whole or not at all)."""
    query = "SELECT 1 FROM executions WHERE id = :id"
    return bool(_SaSql(conn).rows(query, {"id": execution_id}))


def write_executions(
    conn: Connection, store_path: str, batch: Iterable[NewExecution]
) -> list[dict[str, Any]]:
    """Insert ``batch`` and update everything derived from it; the caller owns the transaction."""
    items = list(batch)
    if not items:
        return []
    case_ids = sorted({e.test_case_id for e in items})
    # Lock the cases in a fixed order (no deadlock between two bulk writers) and read the
    # baselines that executions without an explicit expected output are judged against.
    found = _lock_cases(conn, case_ids)
    missing = [c for c in case_ids if c not in found]
    if missing:
        raise NotFoundError(f"no test case {missing[0]!r} in {store_path}", path=store_path)
    rows = [
        _values(e, e.expected_output if e.expected_output is not None else found[e.test_case_id])
        for e in items
    ]
    per_case: dict[str, _Totals] = defaultdict(_Totals)
    per_day: dict[tuple[str, str], _Totals] = defaultdict(_Totals)
    per_baseline: dict[tuple[str, str], _Totals] = defaultdict(_Totals)
    per_run: dict[str, int] = defaultdict(int)
    added: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    sqlite = conn.dialect.name == "sqlite"
    for v in rows:
        if v["run_id"] is not None:
            per_run[v["run_id"]] += 1
        if v["status"] in JUDGED:
            per_case[v["test_case_id"]].add(v)
            per_day[(v["test_case_id"], v["created_at"][:10])].add(v)
            key = (v["test_case_id"], v["baseline_key"])
            per_baseline[key].add(v)
            added[key].append((v["created_at"], entry(v["score"], v["actual_output"], sqlite)))
    if per_case:
        # One statement for the batch, run for each case (the driver's executemany).
        executemany(
            conn,
            _ADD_TO_CASE,
            [
                {
                    "b_id": case_id,
                    "b_runs": s.runs,
                    "b_passes": s.passes,
                    "b_score_sum": s.score_sum,
                    "b_scored": s.scored,
                    "b_length_sum": s.length_sum,
                    "b_last_passed": s.last_passed,
                    "b_last_run": s.last_run,
                }
                for case_id, s in sorted(per_case.items())
            ],
        )
    for run_id, n in sorted(per_run.items()):
        done = conn.execute(runs.update().where(runs.c.id == run_id).values(done=runs.c.done + n))
        if done.rowcount == 0:
            raise NotFoundError(f"no run {run_id!r} in {store_path}", path=store_path)
    executemany(conn, insert_sql("executions", rows[0]), rows)
    write_results(
        _SaSql(conn),
        [
            execution_result(v, cost_usd=e.cost_usd, ttft_ms=e.ttft_ms)
            for v, e in zip(rows, items, strict=True)
        ],
    )
    _add_up(conn, case_daily, "day", per_day, ("runs", "passes", "score_sum", "scored"))
    windows = next_windows(conn, added)  # after the insert: a window walked again reads it
    _add_up(
        conn,
        case_baselines,
        "baseline_key",
        per_baseline,
        ("runs", "passes", "score_sum", "scored", "length_sum"),
        {key: {"recent": text, "recent_at": at} for key, (text, at) in windows.items()},
    )
    return rows


#: A batch's judged executions added to each case's maintained aggregates; the latest
#: outcome replaced only by a newer one (two runs may write out of order).
_NEWER = "(last_run IS NULL OR last_run <= :b_last_run)"
_ADD_TO_CASE = (
    "UPDATE test_cases SET total_runs = total_runs + :b_runs, "
    "pass_count = pass_count + :b_passes, score_sum = score_sum + :b_score_sum, "
    "scored_runs = scored_runs + :b_scored, length_sum = length_sum + :b_length_sum, "
    f"last_passed = CASE WHEN {_NEWER} THEN :b_last_passed ELSE last_passed END, "
    f"last_run = CASE WHEN {_NEWER} THEN :b_last_run ELSE last_run END "
    "WHERE id = :b_id"
)


def _add_up(
    conn: Connection,
    table: Any,
    key: str,
    totals: dict[tuple[str, str], _Totals],
    columns: tuple[str, ...],
    replaced: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
) -> None:
    """Add ``totals`` to a rollup keyed by (case, ``key``): INSERT ... ON CONFLICT DO UPDATE,
    so two writers creating the same row at once both count. ``replaced``: columns set
    to a new value for every row (the same names for each), not added to."""
    if not totals:
        return
    others = sorted(next(iter(replaced.values()))) if replaced else []
    names = ("test_case_id", key, *columns, *others)
    sets = [f"{c} = {table.name}.{c} + excluded.{c}" for c in columns]
    sets += [f"{c} = excluded.{c}" for c in others]
    executemany(  # one statement, run for each row (the driver's executemany)
        conn,
        f"INSERT INTO {table.name} ({', '.join(names)}) "
        f"VALUES ({', '.join(':' + n for n in names)}) "
        f"ON CONFLICT (test_case_id, {key}) DO UPDATE SET {', '.join(sets)}",
        [
            {
                "test_case_id": case_id,
                key: value,
                **{c: getattr(s, c) for c in columns},
                **(replaced[(case_id, value)] if replaced else {}),
            }
            for (case_id, value), s in sorted(totals.items())
        ],
    )


class Executions:
    def __init__(self, store: Store) -> None:
        self._store = store

    def record(self, execution: NewExecution) -> Execution:
        """Insert one execution and update everything derived from it, in one committed
        transaction. Soft-deleted cases still accept executions: a run in flight should not
        lose results."""
        with self._store.write("recording an execution") as conn:
            (values,) = write_executions(conn, self._store.path, [execution])
        return execution_row(SimpleNamespace(**values))

    def record_batch(self, batch: Iterable[NewExecution]) -> list[Execution]:
        """:meth:`record` for several executions in one committed transaction (a run's
        executions that finished together): each statement runs once per batch."""
        with self._store.write("recording executions") as conn:
            rows = write_executions(conn, self._store.path, batch)
        return [execution_row(SimpleNamespace(**values)) for values in rows]

    def record_many(self, batch: Iterable[NewExecution]) -> int:
        """A run's executions, or a bulk import: same bookkeeping, one transaction, written
        by the store's writer process when it has one (:mod:`._writer`)."""
        # Every id chosen here, so a batch a writer process took without answering can
        # be found in the history rather than written a second time.
        items = list(batch)
        if not items:
            return 0
        ids = iter(new_ids(sum(1 for e in items if not e.id)))
        items = [e if e.id else replace(e, id=next(ids)) for e in items]
        return self._store.write_through("executions", items, self._write_here)

    def _write_here(self, items: list[NewExecution], *, lost: bool) -> int:
        """``items`` written in this process; ``lost``: the writer process may have
        stored them already (it took them and gave no answer)."""
        with self._store.write("recording executions") as conn:
            if lost and _stored_already(conn, str(items[0].id)):
                return len(items)
            return len(write_executions(conn, self._store.path, items))

    def list(self, test_case_id: str, limit: int = 50, offset: int = 0) -> list[Execution]:
        """Newest first (the Testing API's testCaseExecutions)."""
        with self._store.read("reading executions") as conn:
            rows = conn.execute(
                # the call's cost is kept in its results row (same id)
                sa.select(executions, results_table.c.cost_usd)
                .select_from(executions.outerjoin(results_table, results_table.c.id == _E.id))
                .where(_E.test_case_id == test_case_id)
                .order_by(_E.created_at.desc(), _E.seq.desc())
                .limit(limit)
                .offset(offset)
            ).all()
        return [execution_row(r) for r in rows]

    def latest(self, test_case_id: str, *, with_output: bool = True) -> Execution | None:
        """The newest execution of a case (with an output, by default: what accept adopts)."""
        q = sa.select(executions).where(_E.test_case_id == test_case_id)
        if with_output:
            q = q.where(_E.actual_output.is_not(None))
        with self._store.read("reading executions") as conn:
            row = conn.execute(q.order_by(_E.created_at.desc(), _E.seq.desc()).limit(1)).first()
        return None if row is None else execution_row(row)

    def get(self, execution_id: str) -> Execution | None:
        with self._store.read("reading an execution") as conn:
            row = conn.execute(sa.select(executions).where(_E.id == execution_id)).first()
        return None if row is None else execution_row(row)

    def for_run(self, run_id: str) -> list[Execution]:
        with self._store.read("reading a run's executions") as conn:
            rows = conn.execute(
                sa.select(executions).where(_E.run_id == run_id).order_by(_E.seq)
            ).all()
        return [execution_row(r) for r in rows]
