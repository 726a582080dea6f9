"""A pytest session's ``assert_test`` s as one SDK run per project, kept open between tests.

Each test calls ``assert_test`` synchronously, from its own thread and event loop (or
none); a run (its history rows, its cache, its model pool and HTTP connections) is async
and belongs to one loop. So the session's runs live on an event loop thread of their own,
started by the first ``assert_test`` and stopped when the session ends: every
``assert_test`` of the session is measured there, one run row ("pytest") per project's
history, the judges' connections and the verdicts they gave shared by the whole session.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from ..suites import SuiteRun
    from ._run import Finished, SdkRun, Subject

__all__ = ["LiveRun", "SessionSummary"]

T = TypeVar("T")


@dataclass
class SessionSummary:
    """What the session's runs kept: results stored, and the regressions they showed."""

    stored: int = 0
    regressions: list[str] = field(default_factory=list)


class LiveRun:
    """The SDK runs labelled ``label`` of one session, one per project (found from the
    working directory of each call); ``history=False`` keeps nothing."""

    def __init__(self, label: str, *, history: bool = True) -> None:
        self.label = label
        self.history = history
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # By project (its config.yml); None: outside any project.
        self._runs: dict[Path | None, tuple[SuiteRun, SdkRun]] = {}

    def _submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="oxyeval-session", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def measure(self, subjects: Sequence[Subject]) -> Finished:
        """Measure ``subjects`` in the session's run for the working directory's project
        (opened at its first call); blocks until they are recorded."""
        return self._submit(self._measure(Path.cwd().resolve(), subjects)).result()

    async def _measure(self, where: Path, subjects: Sequence[Subject]) -> Finished:
        from ._results import decide_results, regression_lines
        from ._run import Finished

        run = await self._run(where)
        outcomes = await run.run(subjects)
        mine = [r for o in outcomes for r in o.results]
        return Finished(outcomes, decide_results(mine), regression_lines(mine))

    async def _run(self, where: Path) -> SdkRun:
        from ..project import find_config
        from ..suites import SuiteRun
        from ._regressions import STORAGE
        from ._run import SdkRun

        config = find_config(where)
        key = config.resolve() if config is not None else None
        found = self._runs.get(key)
        if found is None:
            suite = SuiteRun("sdk", history=self.history, storage=STORAGE)
            await suite.__aenter__()
            run = SdkRun(suite, self.label, where=where)
            try:
                await run.__aenter__()
            except BaseException as exc:
                await suite.__aexit__(type(exc), exc, exc.__traceback__)
                raise
            found = self._runs[key] = (suite, run)
        return found[1]

    def close(self) -> SessionSummary:
        """Finish every run (its run row, its cache, its connections) and stop the
        session's loop; what they kept. Closing twice, or a session that measured
        nothing, keeps nothing more."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return SessionSummary()
        try:
            return asyncio.run_coroutine_threadsafe(self._close(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    async def _close(self) -> SessionSummary:
        from ._results import decide_results

        summary = SessionSummary()
        runs, self._runs = list(self._runs.values()), {}
        for suite, run in runs:
            try:
                await run.__aexit__(None, None, None)
                suite.decision = decide_results(run.results)
            finally:
                await suite.__aexit__(None, None, None)
            summary.stored += run.stored
            summary.regressions += run.regressions()
        return summary
