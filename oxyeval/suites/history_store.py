"""Where a suite keeps its history, and the one store of a run, opened without holding it up.

Every suite records what it ran (test-case executions, consistency results, workflow
runs) and reads what it ran before (baselines, the previous accuracy, cached answers
and verdicts). :class:`History` is the one place every suite opens "the store for this
run": it opens in a worker thread as the run begins, so it overlaps the first model
calls instead of adding to the wall time, and hands the same store to everyone who asks
(the cache, the recorder of results, the test cases' run). A run starts it only once its
checks have passed (files loaded, every model key found): a run that stops on bad input
creates no database.

Which store: an SQLite history already at the current schema (every run after a
project's first) opens as the store's lean sqlite3 store (``open_results``: results and
the cache, without SQLAlchemy, whose import alone costs a quarter of a second of CPU
that, under the GIL, lengthens a run by as much); anything else (no file yet, an older
schema, PostgreSQL) opens the full store, which creates or migrates it.

:class:`Histories` holds one :class:`History` per database for one run, so the cache and
the recorder of a run share one store per database, closed once at the end.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LoadError
from ..project.config import Project
from ..store import Location, LocationError, resolve_location

if TYPE_CHECKING:
    from ..store import LiteStore, Store

    #: What a run's history opens as: the full store, or the lean one.
    RunStore = Store | LiteStore

__all__ = [
    "Histories",
    "History",
    "history_location",
    "open_history",
    "open_named_history",
    "read_before_writing",
]


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


def open_for_run(location: Location) -> RunStore:
    """The lean store when the history allows it, else the full store (which creates or
    migrates it); raises StoreError when it cannot open. Blocking: call it in a thread."""
    from ..store import open_results, open_store

    lean = open_results(location)
    return lean if lean is not None else open_store(location)


class History:
    """One history database's store for one run, opened in the background; or none
    (``enabled=False``: nothing is read or written, nothing imported).

    Use inside a running event loop: :meth:`start` as the run begins, ``await
    history.store()`` where it is needed, :meth:`aclose` at the end (by whoever made it:
    in a :class:`Histories`, the run).
    """

    def __init__(
        self, location: Location | None, *, enabled: bool = True, full: bool = False
    ) -> None:
        self.location = location if enabled else None
        #: Open the full store even where the lean one would do (test cases need prompts
        #: and cases, which the lean store does not have).
        self.full = full
        self._opening: asyncio.Future[RunStore] | None = None

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
        """Begin opening the store (import, connect, maybe migrate) in a worker thread."""
        if self.location is None or self._opening is not None:
            return
        if self.full:
            from ..store import open_store

            opener = asyncio.to_thread(open_store, self.location)
        else:
            opener = asyncio.to_thread(open_for_run, self.location)
        self._opening = asyncio.ensure_future(opener)

    async def store(self) -> RunStore | None:
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


class Histories:
    """The histories of one run (``db``: ``--db``; ``enabled=False``: ``--no-history``,
    none at all): one :class:`History` per database, whatever part of the run asks
    (each project's cache, the recorder of its results), closed by :meth:`aclose`."""

    def __init__(
        self,
        db: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        enabled: bool = True,
    ) -> None:
        self.db, self.environ, self.enabled = db, environ, enabled
        self._where: dict[Path, Location] = {}  # project root -> its history's location
        self._checked: set[Path] = set()  # roots whose history: entry was checked (disabled)
        self._open: dict[Location, History] = {}

    def location(self, project: Project) -> Location | None:
        """Where ``project`` keeps its history this run (None: disabled); resolved once per
        project, a bad location is bad input (:func:`history_location`)."""
        if not self.enabled:
            if project.root not in self._checked:
                # Not opened, but config.yml's history: entry is still checked: a file
                # oxy validate rejects is rejected with --no-history too.
                env = os.environ if self.environ is None else self.environ
                history_location(project, None, {k: v for k, v in env.items() if k != "OXY_DB"})
                self._checked.add(project.root)
            return None
        where = self._where.get(project.root)
        if where is None:
            where = self._where[project.root] = history_location(project, self.db, self.environ)
        return where

    def start(self) -> None:
        """Begin opening every history handed out so far, in worker threads. A run calls
        it once its checks have passed (files loaded, every model key found): a run that
        cannot start must not create (or change) a database."""
        for history in self._open.values():
            history.start()

    def for_project(self, project: Project, *, full: bool = False) -> History | None:
        """The history ``project`` shares with the rest of the run (None: disabled);
        not opened until the run starts it (:meth:`start`) or something needs it.
        ``full``: the full store, not the lean one (asked before it starts opening)."""
        location = self.location(project)
        if location is None:
            return None
        history = self._open.get(location)
        if history is None:
            history = self._open[location] = History(location, full=full)
        elif full and not history.full:
            if history._opening is not None:
                raise RuntimeError("the full store was asked for after the lean one opened")
            history.full = True
        return history

    async def aclose(self) -> None:
        """Close every store opened this run (each History closes once)."""
        histories, self._open = list(self._open.values()), {}
        for history in histories:
            await history.aclose()

    async def __aenter__(self) -> Histories:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def read_before_writing(location: Location) -> Store | None:
    """The history opened to read by a command that is about to write it (its stored
    cases, say, looked at before the run's store opens); None: no history yet. An older
    schema that cannot be read as it is (PostgreSQL's; an SQLite file with no room for a
    private copy) is upgraded in place now, as the command's own open would a moment
    later: refusing it would stop the command that upgrades it."""
    from ..store import EmptyHistoryError, OldSchemaError, open_store

    try:
        return open_store(location, read_only=True)
    except EmptyHistoryError:
        return None
    except OldSchemaError:
        return open_store(location)


def open_history(
    project_dir: str | Path | None = None, db: str | Path | None = None, *, write: bool = False
) -> tuple[Project, Location, Store | None]:
    """A project's history for reading (or, ``write``, writing) outside a run: what ``oxy
    history``, ``oxy cases show`` and ``oxy cache`` open, and what a server or the SDK
    opens the same way. Reading never creates one: no history yet gives ``None``, unless
    ``db`` names a file that does not exist (an error: a typo must not read as empty)."""
    from ..project.config import load_project
    from ..store import open_store

    project = load_project(project_dir=str(project_dir)) if project_dir else load_project()
    location = history_location(project, db)
    if write:
        return project, location, open_store(location)
    return project, location, _read_existing(location)


def open_named_history(
    project_dir: str | Path | None = None, db: str | Path | None = None
) -> tuple[Location, Store | None]:
    """:func:`open_history` for reading, where a history named by ``--db`` or ``OXY_DB``
    needs no project around it: a CI gate job that only decides on what the shards kept
    may have no checkout. A project found (or given) still says where, and still has its
    config.yml checked."""
    from ..project import find_config

    named = (db is not None and str(db).strip()) or os.environ.get("OXY_DB", "").strip()
    if project_dir or not named or find_config(Path.cwd()) is not None:
        return open_history(project_dir, db)[1:]
    location = resolve_location(db)
    return location, _read_existing(location)


def _read_existing(location: Location) -> Store | None:
    """The history at ``location`` opened to read; None when there is none yet, unless it
    was named as a file that does not exist (a typo must not read as empty)."""
    from ..store import EmptyHistoryError, open_store

    if location.explicit and location.path is not None and not location.path.exists():
        raise LocationError(
            f"history database {location.display} does not exist", path=location.display
        )
    try:
        return open_store(location, read_only=True)
    except EmptyHistoryError:
        return None
