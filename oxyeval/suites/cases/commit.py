"""Committing one case's execution: in the history and the report, or in neither.

The history row is written in a worker thread, which a cancellation (Ctrl-C,
SIGTERM) cannot stop: a case cancelled while its row was being written used to be
in the history (and in the run's count of finished cases) but missing from the
report. :func:`commit` always waits for the write; when a cancellation arrived
meanwhile it raises :class:`CommittedThenCancelled` carrying the result, so the
caller reports the case before the cancellation goes on.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..._tasks import finish_shielded

if TYPE_CHECKING:
    from ...store import NewExecution, Store
    from .run import CaseResult

__all__ = ["CommittedThenCancelled", "commit"]


class CommittedThenCancelled(asyncio.CancelledError):
    """A cancellation that arrived while the case's execution was being written: the row
    is in the history, so ``result`` goes in the report too."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__()
        self.result = result


async def commit(result: CaseResult, store: Store, execution: NewExecution) -> CaseResult:
    """Write ``execution`` and fill ``result``'s id and time from the stored row."""
    stored, cancelled = await finish_shielded(asyncio.to_thread(store.executions.record, execution))
    result.execution_id = stored.id
    result.created_at = stored.created_at
    if cancelled:
        raise CommittedThenCancelled(result)
    return result
