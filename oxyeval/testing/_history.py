"""An SDK run in its project's history: one run row of kind ``sdk``, its results in the
``results`` table as they are recorded, each compared with the same test case's
previous result under the same metric.

A regression (a score lower than that previous one) is the SDK's own notion, so it is
worked out here from the history's earlier result, not by the store. The history is the
run's (:class:`~oxyeval.suites.SuiteRun`'s, shared with its cache) and opens in the
background while the first test cases are measured; results that finish together are
written in one transaction (group commit), so a thousand evaluations cost a few
commits, not a thousand. Storing never changes a result: a history that cannot be
opened or written is one warning, and the run goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..evaluation import Previous

if TYPE_CHECKING:
    from ..evaluation import Result

__all__ = ["SdkHistory", "previous_result"]

log = logging.getLogger("oxyeval")

#: Earlier results read to find a subject's previous scored one outside this run.
_LOOKBACK = 20
_EPS = 1e-12


def previous_result(store: Any, subject: str, run_id: str | None) -> Previous | None:
    """The latest scored result of ``subject`` stored before, outside run ``run_id``."""
    for earlier in store.results.history("sdk", subject, limit=_LOOKBACK):
        if earlier.run_id != run_id and earlier.score is not None:
            return Previous(earlier.score, earlier.created_at, earlier.run_id)
    return None


def _compare(store: Any, run_id: str | None, results: Sequence[Result]) -> None:
    """Give each result its previous one and, when its score fell, the regression."""
    for result in results:
        previous = previous_result(store, result.subject, run_id)
        result.previous = previous
        if previous is None or result.score is None:
            continue
        if result.score < previous.accuracy - _EPS:
            why = (
                f"score fell from {previous.accuracy:.3f} to {result.score:.3f} against "
                f"{previous.at}"
            )
            result.regressions = (*result.regressions, why)
            result.details["regressions"] = list(result.regressions)


def _write(store: Any, run_id: str, results: Sequence[Result]) -> None:
    """In a worker thread: compare, then store the results under the run."""
    _compare(store, run_id, results)
    store.results.add(run_id, list(results))


class SdkHistory:
    """The rows of one SDK run labelled ``label`` in ``history`` (None: no history, every
    call a no-op). :meth:`start` once the run's checks have passed, :meth:`write` each
    test case's results as they are final, and always :meth:`close` with the run's status.
    ``warn`` is told, once, why the results are not (all) kept."""

    def __init__(self, history: Any, label: str, total: int, warn: Callable[[str], None]) -> None:
        self._history = history
        self._label = label
        self._total = total
        self._warn = warn
        self._ready: asyncio.Future[tuple[Any, str] | None] | None = None
        self._pending: list[tuple[Sequence[Result], asyncio.Future[None]]] = []
        self._flushing: asyncio.Future[None] | None = None
        self._broken = False
        #: Results stored so far.
        self.stored = 0
        #: The run row's id once it is started (None: no history, or it could not start).
        self.run_id: str | None = None

    def start(self) -> None:
        """Open the history and start the run row, in the background."""
        if self._history is not None and self._ready is None:
            self._ready = asyncio.ensure_future(self._begin())

    def fail(self, exc: BaseException) -> None:
        """The results cannot (all) be kept: said once."""
        if not self._broken:
            self._broken = True
            message = f"warning: the evaluations were not stored in the history: {exc}"
            log.warning("%s", message)
            self._warn(message)

    async def _begin(self) -> tuple[Any, str] | None:
        try:
            store = await self._history.store()
            run_id = await asyncio.to_thread(
                store.runs.start, "sdk", subject=self._label, total=self._total
            )
        except Exception as exc:
            self.fail(exc)
            return None
        self.run_id = run_id
        return store, run_id

    async def write(self, results: Sequence[Result]) -> None:
        """Store ``results`` (with their previous results and regressions filled in)
        together with whatever else finishes meanwhile; returns once they are written,
        or could not be."""
        if self._ready is None or not results:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((results, done))
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.ensure_future(self._flush())
        await asyncio.shield(done)

    async def _flush(self) -> None:
        assert self._ready is not None
        while self._pending:
            batch, self._pending = self._pending, []
            results = [r for items, _ in batch for r in items]
            try:
                opened = await asyncio.shield(self._ready)
                if opened is not None and not self._broken:
                    store, run_id = opened
                    await asyncio.to_thread(_write, store, run_id, results)
                    self.stored += len(results)
            except Exception as exc:
                self.fail(exc)
            finally:
                for _, done in batch:
                    if not done.done():
                        done.set_result(None)

    async def close(self, status: str) -> None:
        """Wait for the writes, then finish the run row with ``status``."""
        if self._ready is None:
            return
        if self._flushing is not None:
            await asyncio.gather(self._flushing, return_exceptions=True)
        opened = await asyncio.shield(self._ready)
        if opened is None:
            return
        store, run_id = opened
        try:
            await asyncio.to_thread(store.runs.finish, run_id, status)
        except Exception as exc:
            self.fail(exc)
