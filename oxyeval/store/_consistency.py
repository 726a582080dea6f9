"""Results of consistency tests (``oxy test``), one row per test per run.

A test is identified by its file (relative to the project) and its name, so its history
survives reordering tests in a file. ``history`` lists one test's results newest first;
``previous`` is what a new result is compared with (the latest earlier *scored* one: a
partial score of an interrupted run, or a test that could not be scored, is no baseline).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

import sqlalchemy as sa

from ._core import _SaSql
from ._errors import NotFoundError
from ._result_rows import (
    ConsistencyResult,
    NewConsistencyResult,
    consistency_from_row,
    consistency_values,
)
from ._results import consistency_result, write_results
from ._tables import runs, test_results

if TYPE_CHECKING:
    from ._core import Store

__all__ = ["ConsistencyResults"]

_T = test_results.c


_row = consistency_from_row


class ConsistencyResults:
    def __init__(self, store: Store) -> None:
        self._store = store

    def record(self, run_id: str, result: NewConsistencyResult) -> ConsistencyResult:
        """Store one test's result under its run (kind 'consistency') and count it done."""
        values = consistency_values(run_id, result)
        with self._store.write("recording a test result") as conn:
            done = conn.execute(
                runs.update().where(runs.c.id == run_id).values(done=runs.c.done + 1)
            )
            if done.rowcount == 0:
                raise NotFoundError(
                    f"no run {run_id!r} in {self._store.path}", path=self._store.path
                )
            conn.execute(test_results.insert().values(**values))
            write_results(_SaSql(conn), [consistency_result(values, tally=result.tally)])
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

    def previous(
        self, file: str, name: str, *, before_run: str | None = None
    ) -> ConsistencyResult | None:
        """The latest scored result of this test outside run ``before_run`` (the run being
        recorded), or None: what a new accuracy is compared with."""
        q = sa.select(test_results).where(
            _T.file == file, _T.name == name, _T.status == "scored", _T.accuracy.is_not(None)
        )
        if before_run is not None:
            q = q.where(_T.run_id != before_run)
        q = q.order_by(_T.created_at.desc(), _T.seq.desc()).limit(1)
        with self._store.read("reading the previous test result") as conn:
            row = conn.execute(q).first()
        return None if row is None else _row(row)

    def files(self, name: str) -> list[str]:
        """The files that hold a test of this name (a name alone may be ambiguous)."""
        with self._store.read("reading test history") as conn:
            rows = conn.execute(
                sa.select(_T.file).where(_T.name == name).distinct().order_by(_T.file)
            ).all()
        return [r.file for r in rows]

    def names(self, limit: int = 50) -> list[tuple[str, str]]:
        """(file, name) of stored tests, most recently run first: a hint for a wrong name."""
        q = (
            sa.select(_T.file, _T.name, sa.func.max(_T.created_at).label("last"))
            .group_by(_T.file, _T.name)
            .order_by(sa.desc("last"), _T.file, _T.name)
            .limit(limit)
        )
        with self._store.read("reading test history") as conn:
            return [(r.file, r.name) for r in conn.execute(q).all()]
