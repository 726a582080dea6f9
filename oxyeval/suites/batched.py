"""``--batch`` on the one run pipeline: a run of any kind, its calls sent as batches.

The passes (see :mod:`oxyeval.providers.batching`): collecting passes of the same run,
recording nothing and showing nothing, each followed by the batches of what it noted,
until a pass notes nothing; then the run itself, every answer served from the batches.
The batches are kept in the project's history (``store.batches``) so a stopped run
resumes: the next ``--batch`` run of the same command collects the open batches instead
of submitting them again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..errors import OxyError

__all__ = ["MAX_PASSES", "batch_ledger", "run_batched"]

T = TypeVar("T")

#: Most collecting passes: a call chain deeper than this (an agent's turns) finishes live.
MAX_PASSES = 12


def batch_ledger(
    files: Sequence[str] = (),
    *,
    project_dir: str | None = None,
    db: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Any:
    """The history store of the project the run is of, opened for writing (blocking)."""
    from ..project.config import load_project
    from ..store import open_store
    from .history_store import history_location

    start = files[0] if files and project_dir is None else None
    project = load_project(start, project_dir=project_dir)
    return open_store(history_location(project, db, environ))


#: What a run stopped while its batches run says: they go on at the vendor, and where.
_STOPPED = (
    "batch: stopped while waiting for its batches; they stay open (`oxy batch status`), "
    "and the same command with --batch, or `oxy batch resume`, collects them without "
    "paying again"
)
_STOPPED_UNKEPT = (
    "batch: stopped while waiting for its batches; they run on at the vendor, but with "
    "--no-history this run kept no record to resume them from"
)


async def run_batched(
    run_once: Callable[[bool], Awaitable[T]],
    *,
    say: Callable[[str], object],
    kind: str = "",
    ledger: Callable[[], Any] | None = None,
) -> T:
    """Run ``run_once(final)`` in collecting passes (``final`` False: record and show
    nothing) and batches, then once for real (``final`` True). ``ledger`` opens the
    history the batches are kept in (None: ``--no-history``, no resuming)."""
    from ..providers import Batcher, batch_scope, collecting

    store = None
    if ledger is not None:
        store = await asyncio.to_thread(ledger)
    else:
        say("batch: no history (--no-history): a stopped run cannot resume its batches")
    try:
        batcher = Batcher(ledger=None if store is None else store.batches, say=say, kind=kind)
        await batcher.load()
        with batch_scope(batcher):
            for _ in range(MAX_PASSES):
                with collecting():
                    try:
                        await run_once(False)
                    except OxyError:
                        if not batcher.noted:
                            break  # the run itself says what stopped it
                if not batcher.noted:
                    break
                try:
                    await batcher.settle()
                except (asyncio.CancelledError, KeyboardInterrupt):
                    say(_STOPPED if store is not None else _STOPPED_UNKEPT)
                    raise
            batcher.final = True
            result = await run_once(True)
        await batcher.finish()
        for line in batcher.closing_lines():
            say(line)
        return result
    finally:
        if store is not None:
            await asyncio.to_thread(store.close)
