"""Where a suite keeps its history, and the store opened without holding up the run.

Every suite records what it ran (test-case executions, consistency results, workflow
runs) and reads what it ran before (baselines, the previous accuracy, cached answers
and verdicts). Opening the store costs an import of SQLAlchemy and a migration check:
:class:`History` starts that in a worker thread as soon as a run begins, so it overlaps
the first model calls instead of adding to the wall time, and hands the store to
whoever needs it first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LoadError
from ..project.config import Project
from ..store import Location, LocationError, resolve_location

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["History", "history_location"]


def history_location(
    project: Project, db: str | Path | None = None, environ: Mapping[str, str] | None = None
) -> Location:
    """Where this project's history is (``--db``, ``OXY_DB``, config.yml ``history:``, or
    ``.oxy/oxyeval.db``); a bad ``history:`` entry is reported at its line in config.yml."""
    history = project.config.data.get("history") if isinstance(project.config.data, dict) else None
    try:
        return resolve_location(db, project_root=project.root, environ=environ, history=history)
    except LocationError as exc:
        if exc.key:
            raise LoadError([project.config.diagnostic(exc.key, str(exc))]) from None
        raise


class History:
    """One project's history store for one run, opened in the background; or none
    (``enabled=False``: nothing is read or written, nothing imported).

    Use inside a running event loop: :meth:`start` as the run begins, ``await
    history.store()`` where it is needed, :meth:`aclose` at the end.
    """

    def __init__(self, location: Location | None, *, enabled: bool = True) -> None:
        self.location = location if enabled else None
        self._opening: asyncio.Task[Store] | None = None

    @classmethod
    def for_project(
        cls,
        project: Project,
        db: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        enabled: bool = True,
    ) -> History:
        return cls(history_location(project, db, environ) if enabled else None, enabled=enabled)

    @property
    def enabled(self) -> bool:
        return self.location is not None

    def start(self) -> None:
        """Begin opening the store (import, connect, migrate) in a worker thread."""
        if self.location is None or self._opening is not None:
            return
        from ..store import open_store

        self._opening = asyncio.ensure_future(asyncio.to_thread(open_store, self.location))

    async def store(self) -> Store | None:
        """The open store (None when disabled); raises StoreError when it cannot open."""
        if self.location is None:
            return None
        self.start()
        assert self._opening is not None
        return await asyncio.shield(self._opening)

    async def aclose(self) -> None:
        opening, self._opening = self._opening, None
        if opening is None:
            return
        try:
            store = await opening
        except Exception:  # it never opened: nothing to close, the error was reported
            return
        await asyncio.to_thread(store.close)
