"""Results of consistency tests (``oxy test``), one row per test per run.

A test is identified by its file (relative to the project) and its name, so its history
survives reordering tests in a file. ``history`` lists one test's results newest first.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ._errors import NotFoundError
from ._rows import ConsistencyResult, NewConsistencyResult
from ._tables import TEST_STATUSES, runs, test_results
from ._util import canonical_json, loads, new_id, redact_json, redact_text, utc_timestamp

if TYPE_CHECKING:
    from ._core import Store

__all__ = ["ConsistencyResults"]

_T = test_results.c


def _row(r: Any) -> ConsistencyResult:
    return ConsistencyResult(
        id=r.id,
        run_id=r.run_id,
        file=r.file,
        name=r.name,
        test_index=r.test_index,
        status=r.status,
        accuracy=r.accuracy,
        n=r.n,
        runs_ok=r.runs_ok,
        pairing=r.pairing,
        model=r.model,
        judge_model=r.judge_model,
        pairs_total=r.pairs_total,
        pairs_judged=r.pairs_judged,
        identical_pairs=r.identical_pairs,
        judge_calls=r.judge_calls,
        selected_run=r.selected_run,
        selected_output=r.selected_output,
        run_errors=tuple(loads(r.run_errors) or ()),
        error=r.error_message,
        duration_ms=r.duration_ms,
        created_at=r.created_at,
    )


class ConsistencyResults:
    def __init__(self, store: Store) -> None:
        self._store = store

    def record(self, run_id: str, result: NewConsistencyResult) -> ConsistencyResult:
        """Store one test's result under its run (kind 'consistency') and count it done."""
        if result.status not in TEST_STATUSES:
            raise ValueError(
                f"test status must be one of {', '.join(TEST_STATUSES)}, not {result.status!r}"
            )
        if not result.file or not result.name:
            raise ValueError("a consistency result needs its file and test name")
        if result.accuracy is not None and not 0.0 <= result.accuracy <= 1.0:
            raise ValueError(f"accuracy must be between 0 and 1 (or None), got {result.accuracy!r}")
        if result.pairs_judged > result.pairs_total:
            raise ValueError("pairs_judged cannot exceed pairs_total")
        values = {
            "id": result.id or new_id(),
            "run_id": run_id,
            "file": result.file,
            "name": result.name,
            "test_index": result.test_index,
            "status": result.status,
            "accuracy": result.accuracy,
            "n": result.n,
            "runs_ok": result.runs_ok,
            "pairing": result.pairing,
            "model": result.model,
            "judge_model": result.judge_model,
            "pairs_total": result.pairs_total,
            "pairs_judged": result.pairs_judged,
            "identical_pairs": result.identical_pairs,
            "judge_calls": result.judge_calls,
            "selected_run": result.selected_run,
            "selected_output": redact_text(result.selected_output),
            "run_errors": canonical_json(redact_json(list(result.run_errors))),
            "error_message": redact_text(result.error),
            "duration_ms": float(result.duration_ms),
            "created_at": utc_timestamp(result.created_at),
        }
        with self._store.write("recording a test result") as conn:
            done = conn.execute(
                runs.update().where(runs.c.id == run_id).values(done=runs.c.done + 1)
            )
            if done.rowcount == 0:
                raise NotFoundError(
                    f"no run {run_id!r} in {self._store.path}", path=self._store.path
                )
            conn.execute(test_results.insert().values(**values))
        return _row(SimpleNamespace(**values))

    def for_run(self, run_id: str) -> list[ConsistencyResult]:
        with self._store.read("reading test results") as conn:
            rows = conn.execute(
                sa.select(test_results).where(_T.run_id == run_id).order_by(_T.seq)
            ).all()
        return [_row(r) for r in rows]

    def history(self, file: str, name: str, limit: int = 20) -> list[ConsistencyResult]:
        """One test's results, newest first."""
        with self._store.read("reading test history") as conn:
            rows = conn.execute(
                sa.select(test_results)
                .where(_T.file == file, _T.name == name)
                .order_by(_T.created_at.desc(), _T.seq.desc())
                .limit(limit)
            ).all()
        return [_row(r) for r in rows]
