"""The history side of ``oxy test``: each test's result stored as it finishes, and the
previous result of the same test found for comparison.

One run row (kind ``consistency``) per history database per ``oxy test``; tests of
several projects with different histories get one row in each, sharing a group id.
A test is identified by its file (relative to its project) and its name.

The history is a by-product of a test run, never a reason to lose one: a store that
cannot be opened or written is noted on the run (:attr:`ConsistencyRun.history`) and the tests
carry on. Each database's store is the run's :class:`~oxyeval.suites.history.History`
(shared with the cache; the lean sqlite3 store once the project has a history), opened
in a worker thread while the models answer, and every write is off the event loop.

Reading the earlier results and storing this run's are kept apart: a history that can
be read but not written (a read-only file or folder, an archived copy) still gives each
test its ``previous`` result, from a read-only store when the store for writing cannot
open, so ``--fail-on-drop`` can still decide; only a history that cannot be read at all
leaves it unable to (:attr:`StoredRun.read_error`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .._tasks import finish_shielded
from ..project.config import Project
from .results import ConsistencyRun, ConsistencyTestResult, Previous, StoredRun
from .suite import final_status, interrupted_by

if TYPE_CHECKING:
    # Imported where used: with history off, ``oxy test`` never loads the store package.
    from ..store import Location, NewConsistencyResult, Store
    from .history import Histories, History, RunStore

__all__ = ["ConsistencyHistory", "new_result"]

_SUBJECT_FILES = 5  # files named in a run row's subject before "and N more"


def new_result(file: str, test: ConsistencyTestResult) -> NewConsistencyResult:
    """The row a test result becomes (``file`` relative to the project)."""
    from ..store import NewConsistencyResult

    selected = test.selected_output
    return NewConsistencyResult(
        file=file,
        name=test.name,
        status=test.status,
        test_index=test.index,
        accuracy=test.accuracy,
        n=test.n,
        runs_ok=sum(1 for o in test.outputs if o.error is None),
        pairing=test.pairing,
        model=test.agent_model,
        judge_model=test.judge_model,
        pairs_total=max(test.total_pairs, test.judged_pairs),
        pairs_judged=test.judged_pairs,
        identical_pairs=test.identical_pairs,
        judge_calls=test.judge_calls,
        selected_run=None if selected is None else selected.run,
        selected_output=None if selected is None else selected.text,
        run_errors=[{"run": o.run, "error": o.error or ""} for o in test.run_errors],
        error=test.error,
        duration_ms=round(test.duration * 1000, 3),
    )


def _why(exc: BaseException) -> str:
    from ..store import StoreError

    return str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"


@dataclass(eq=False)
class _Opened:
    """What a history gives this run: the store earlier results are read from (None: the
    history holds none yet) and the run row to store results under (None: they cannot
    be stored; the note says why)."""

    reader: RunStore | Store | None
    run_id: str | None


@dataclass(eq=False)
class _Book:
    """One history database of this run: its store, its run row, its tests."""

    history: History
    note: StoredRun
    files: list[str] = field(default_factory=list)
    total: int = 0
    #: None once resolved: the history cannot even be read.
    ready: asyncio.Future[_Opened | None] | None = None
    own_reader: Store | None = None  # a read-only store opened here, closed here

    def fail(self, exc: BaseException) -> None:
        """This run's results cannot (all) be stored."""
        if self.note.error is None:
            self.note.error = _why(exc)

    def unread(self, exc: BaseException) -> None:
        """The earlier results cannot be read: drops cannot be ruled out."""
        self.fail(exc)
        if self.note.read_error is None:
            self.note.read_error = _why(exc)


class ConsistencyHistory:
    """Records one ``oxy test`` run in the run's ``histories`` (the stores it shares with
    its cache, closed by the run; disabled: nothing is opened, read or written).

    Use: :meth:`add` each tested file before any model call (a bad history location is
    bad input, reported then), :meth:`start` when the tests start, :meth:`finished` as
    each test ends, and always :meth:`close`.
    """

    def __init__(self, run: ConsistencyRun, histories: Histories) -> None:
        self.run = run
        self._histories = histories
        self._books: dict[Location, _Book] = {}
        # A test (its file as displayed, its index) -> its history and project-relative file.
        self._tests: dict[tuple[str, int], tuple[_Book, str]] = {}
        self._seen: set[int] = set()  # ids of results handed to a writer
        self._writes: list[asyncio.Future[None]] = []
        self._group = uuid.uuid4().hex
        self._started_at = ""

    def add(self, project: Project, file: Path, tests: Sequence[tuple[str, int, int]]) -> None:
        """A file whose tests will run: ``tests`` as (display, index, results it yields)."""
        history = self._histories.for_project(project)
        if history is None or history.location is None:
            return
        book = self._books.get(history.location)
        if book is None:
            book = self._books[history.location] = _Book(
                history, StoredRun(history.location.display)
            )
        relative = project.relative(file)
        book.files.append(relative)
        for display, index, count in tests:
            self._tests[(display, index)] = (book, relative)
            book.total += count

    def start(self) -> None:
        """Open every history and start its run row, in the background."""
        if not self._books:
            return
        from ..store import utc_timestamp

        self._started_at = utc_timestamp()
        for book in self._books.values():
            if book.ready is None:
                self.run.history.append(book.note)
                book.ready = asyncio.ensure_future(self._begin(book))

    async def _begin(self, book: _Book) -> _Opened | None:
        """Open the history and start this run's row in it; when it cannot be written,
        what it can still be read through (None: nothing)."""
        try:
            store = await book.history.store()
            assert store is not None
        except Exception as exc:
            if getattr(exc, "unreachable", False):  # a read-only open would wait again
                book.unread(exc)
                return None
            book.fail(exc)
            return await self._read_only(book)
        files = book.files[:_SUBJECT_FILES]
        if len(book.files) > _SUBJECT_FILES:
            files.append(f"and {len(book.files) - _SUBJECT_FILES} more")
        try:
            run_id = await asyncio.to_thread(
                store.runs.start,
                "consistency",
                total=book.total,
                group_id=self._group if len(self._books) > 1 else None,
                subject=", ".join(files),
                started_at=self._started_at,
            )
        except Exception as exc:  # open but not writable (a read-only file): still read
            book.fail(exc)
            return _Opened(store, None)
        book.note.run_id = run_id
        return _Opened(store, run_id)

    async def _read_only(self, book: _Book) -> _Opened | None:
        """The history opened only to read, when it cannot be opened to write."""
        from ..store import EmptyHistoryError, open_store

        location = book.history.location
        assert location is not None
        try:
            reader = await asyncio.to_thread(open_store, location, read_only=True)
        except EmptyHistoryError:
            return _Opened(None, None)  # no history yet: no earlier result to compare with
        except Exception as exc:
            book.unread(exc)
            return None
        book.own_reader = reader
        return _Opened(reader, None)

    def finished(self, results: Sequence[ConsistencyTestResult]) -> None:
        """Store these results (one test's metrics) in the background, and find each
        one's previous result."""
        by_book: dict[_Book, list[tuple[str, ConsistencyTestResult]]] = {}
        for result in results:
            where = self._tests.get((result.file, result.index))
            if where is None or id(result) in self._seen:
                continue
            self._seen.add(id(result))
            by_book.setdefault(where[0], []).append((where[1], result))
        for book, items in by_book.items():
            self._writes.append(asyncio.ensure_future(self._write(book, items)))

    async def _write(self, book: _Book, items: list[tuple[str, ConsistencyTestResult]]) -> None:
        if book.ready is None:
            return
        opened = await asyncio.shield(book.ready)
        if opened is None or book.note.read_error is not None:
            return  # the history cannot be read: said once, not once per test
        write = opened.run_id is not None and book.note.error is None  # a failure said once
        try:
            previous, stored, error = await asyncio.to_thread(
                _record, opened.reader, opened.run_id, items, write
            )
        except Exception as exc:
            book.unread(exc)
            return
        book.note.stored += stored
        if error is not None:
            book.fail(error)
        for (_file, result), prev in zip(items, previous, strict=True):
            result.previous = prev

    async def close(self, *, interrupted: bool = False, failed: bool = False) -> None:
        """Store what is left (tests an interruption cut short or never started), finish
        the run rows and close the stores.

        A cancellation (Ctrl-C, SIGTERM) arriving meanwhile does not cut this short: it
        is re-raised once the history has its final word, so the report says what was
        stored and why not (every history wait is bounded, and shortened once the
        command is asked to stop: ``store.hurry_history``). Cut short, an opening that
        failed would be forgotten and the report would claim a history it never had.
        """
        if not self._books:
            return
        _, cancelled = await finish_shielded(self._close(interrupted=interrupted, failed=failed))
        if cancelled:
            raise asyncio.CancelledError

    async def __aenter__(self) -> ConsistencyHistory:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        """:meth:`close`, the run marked interrupted or failed by what ended it."""
        stopped = interrupted_by(exc_type)
        await self.close(interrupted=stopped, failed=exc_type is not None and not stopped)

    async def _close(self, *, interrupted: bool, failed: bool) -> None:
        self.finished(self.run.tests)
        while self._writes:
            writes, self._writes = self._writes, []
            await asyncio.gather(*writes)
        errors = any(not t.ok for t in self.run.tests)
        status = final_status(
            interrupted=interrupted or self.run.interrupted, failed=failed or errors
        )
        for book in self._books.values():
            opened = None if book.ready is None else await asyncio.shield(book.ready)
            if opened is not None and opened.reader is not None and opened.run_id is not None:
                try:
                    await asyncio.to_thread(opened.reader.runs.finish, opened.run_id, status)
                except Exception as exc:
                    book.fail(exc)
            if book.own_reader is not None:
                reader, book.own_reader = book.own_reader, None
                await asyncio.to_thread(reader.close)
        self._books.clear()


def _record(
    store: RunStore | Store | None,
    run_id: str | None,
    items: list[tuple[str, ConsistencyTestResult]],
    write: bool,
) -> tuple[list[Previous | None], int, Exception | None]:
    """In a worker thread: each result's previous scored result outside run ``run_id``
    (raises when the history cannot be read), then, if ``write``, the results stored
    under ``run_id``; returns the previous results, how many were stored and why not all
    (a failed write never hides a drop: the earlier results were read first)."""
    out: list[Previous | None] = []
    for file, result in items:
        prev = None if store is None else store.tests.previous(file, result.name, before_run=run_id)
        out.append(
            None
            if prev is None or prev.accuracy is None
            else Previous(prev.accuracy, prev.created_at, prev.run_id)
        )
    if store is None or run_id is None or not write:
        return out, 0, None
    stored = 0
    try:
        for file, result in items:
            store.tests.record(run_id, new_result(file, result))
            stored += 1
    except Exception as exc:
        return out, stored, exc
    return out, stored, None
