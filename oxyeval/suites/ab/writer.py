"""Storing executions as they finish, several to a transaction when they finish together.

One transaction per execution made the history the slowest part of an A/B run: 100
executions cost 100 commits (about 4 ms each on SQLite, fsync included), queued behind
one write lock while the calls waited. Here the first execution to finish starts a
write; those that finish while it is being written go together in the next one (group
commit), so a burst of executions costs a few commits and a lone one is written at once.
Nothing waits for a batch to fill: an interrupted run has every execution that finished
before the signal in the history.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..._tasks import finish_shielded

if TYPE_CHECKING:
    from ...store import BranchExecution, NewBranchExecution, Store

__all__ = ["ExecutionWriter"]


class ExecutionWriter:
    """Group commit of branch executions into one store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._pending: list[
            tuple[str | None, NewBranchExecution, asyncio.Future[BranchExecution]]
        ] = []
        self._flushing: asyncio.Future[None] | None = None

    async def write(
        self, run_id: str | None, execution: NewBranchExecution
    ) -> tuple[BranchExecution, bool]:
        """The stored row, and whether the caller was cancelled while it was written (the
        row is in the history either way: the caller reports it, then re-raises)."""
        future: asyncio.Future[BranchExecution] = asyncio.get_running_loop().create_future()
        self._pending.append((run_id, execution, future))
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.ensure_future(self._flush())
        return await finish_shielded(future)

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            by_run: dict[
                str | None, list[tuple[NewBranchExecution, asyncio.Future[BranchExecution]]]
            ] = {}
            for run_id, execution, future in batch:
                by_run.setdefault(run_id, []).append((execution, future))
            for run_id, items in by_run.items():  # a run is one case: one transaction each
                await self._write(run_id, items)

    async def _write(
        self,
        run_id: str | None,
        items: list[tuple[NewBranchExecution, asyncio.Future[BranchExecution]]],
    ) -> None:
        add = self._store.branches.add_executions
        try:
            rows = await asyncio.to_thread(add, run_id, [e for e, _ in items])
        except BaseException as exc:  # every waiter hears why; later batches still run
            for _, future in items:
                if not future.done():
                    future.set_exception(
                        exc if isinstance(exc, Exception) else asyncio.CancelledError()
                    )
            if not isinstance(exc, Exception):
                raise
            return
        for (_, future), row in zip(items, rows, strict=True):
            if not future.done():
                future.set_result(row)
