"""The history side of ``oxy test``: each test's result stored as it finishes, and the
previous result of the same test found for comparison.

One run row (kind ``consistency``) per history database per ``oxy test``; tests of
several projects with different histories get one row in each, sharing a group id.
A test is identified by its file (relative to its project) and its name.

The history is a by-product of a test run, never a reason to lose one: a store that
cannot be opened or written is noted on the run (:attr:`TestRun.history`) and the tests
carry on. Stores open in worker threads while the models answer, and every write is off
the event loop. An SQLite history at the current schema (every run after a project's
first) is written through the store's lean sqlite3 writer (``open_results``), without
importing SQLAlchemy; anything else opens the full store (see
:class:`~oxyeval.suites.history.History`), which creates or migrates it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..project.config import Project
from .results import Previous, StoredRun, TestResult, TestRun

if TYPE_CHECKING:
    # Imported where used: with history off, ``oxy test`` never loads the store package.
    from ..store import LiteStore, Location, NewConsistencyResult, Store
    from .history import History

__all__ = ["ConsistencyHistory", "new_result"]

_SUBJECT_FILES = 5  # files named in a run row's subject before "and N more"


def new_result(file: str, test: TestResult) -> NewConsistencyResult:
    """The row a test result becomes (``file`` relative to the project)."""
    from ..store import NewConsistencyResult

    status = "interrupted" if test.interrupted else ("scored" if test.ok else "error")
    selected = test.selected_output
    return NewConsistencyResult(
        file=file,
        name=test.name,
        status=status,
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
class _Book:
    """One history database of this run: its store, its run row, its tests."""

    history: History
    note: StoredRun
    owned: bool = True  # opened here (else shared with the caller, who closes it)
    files: list[str] = field(default_factory=list)
    total: int = 0
    ready: asyncio.Future[tuple[Store | LiteStore, str] | None] | None = None
    lite: LiteStore | None = None

    def fail(self, exc: BaseException) -> None:
        if self.note.error is None:
            self.note.error = _why(exc)


class ConsistencyHistory:
    """Records one ``oxy test`` run. ``enabled=False``: nothing is opened, read or written.

    Use: :meth:`add` each tested file before any model call (a bad history location is
    bad input, reported then), :meth:`start` when the tests start, :meth:`finished` as
    each test ends, and always :meth:`close`.

    ``shared``: histories another part of the run already opens (say, a response cache
    in the same database), by location; they are used, not opened twice, and left for
    their owner to close.
    """

    def __init__(
        self,
        run: TestRun,
        *,
        db: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
        enabled: bool = True,
        shared: Mapping[Location, History] | None = None,
    ) -> None:
        self.run = run
        self.db = db
        self.environ = environ
        self.enabled = enabled
        self._shared = dict(shared or {})
        self._books: dict[Location, _Book] = {}
        # A test (its file as displayed, its index) -> its history and project-relative file.
        self._tests: dict[tuple[str, int], tuple[_Book, str]] = {}
        self._seen: set[int] = set()  # ids of results handed to a writer
        self._writes: list[asyncio.Future[None]] = []
        self._group = uuid.uuid4().hex
        self._started_at = ""

    def add(self, project: Project, file: Path, tests: Sequence[tuple[str, int, int]]) -> None:
        """A file whose tests will run: ``tests`` as (display, index, results it yields)."""
        if not self.enabled:
            return
        from .history import History, history_location

        location = history_location(project, self.db, self.environ)
        book = self._books.get(location)
        if book is None:
            given = self._shared.get(location)
            history = given if given is not None else History(location)
            book = _Book(history, StoredRun(location.display), owned=given is None)
            self._books[location] = book
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

    async def _begin(self, book: _Book) -> tuple[Store | LiteStore, str] | None:
        from ..store import open_results

        try:
            store: Store | LiteStore | None = None
            if book.owned and book.history.location is not None:
                # An SQLite history at the current schema: written without SQLAlchemy,
                # whose import alone would cost more CPU than the whole write (see _lite).
                store = book.lite = await asyncio.to_thread(open_results, book.history.location)
            if store is None:
                store = await book.history.store()  # creates or migrates it
            assert store is not None
            files = book.files[:_SUBJECT_FILES]
            if len(book.files) > _SUBJECT_FILES:
                files.append(f"and {len(book.files) - _SUBJECT_FILES} more")
            run_id = await asyncio.to_thread(
                store.runs.start,
                "consistency",
                total=book.total,
                group_id=self._group if len(self._books) > 1 else None,
                subject=", ".join(files),
                started_at=self._started_at,
            )
        except Exception as exc:
            book.fail(exc)
            return None
        book.note.run_id = run_id
        return store, run_id

    def finished(self, results: Sequence[TestResult]) -> None:
        """Store these results (one test's metrics) in the background, and find each
        one's previous result."""
        by_book: dict[_Book, list[tuple[str, TestResult]]] = {}
        for result in results:
            where = self._tests.get((result.file, result.index))
            if where is None or id(result) in self._seen:
                continue
            self._seen.add(id(result))
            by_book.setdefault(where[0], []).append((where[1], result))
        for book, items in by_book.items():
            self._writes.append(asyncio.ensure_future(self._write(book, items)))

    async def _write(self, book: _Book, items: list[tuple[str, TestResult]]) -> None:
        if book.ready is None:
            return
        opened = await asyncio.shield(book.ready)
        if opened is None or book.note.error is not None:
            return  # the history failed earlier: said once, not once per test
        store, run_id = opened
        try:
            previous = await asyncio.to_thread(_record, store, run_id, items)
        except Exception as exc:
            book.fail(exc)
            return
        book.note.stored += len(items)
        for (_file, result), prev in zip(items, previous, strict=True):
            result.previous = prev

    async def close(self, *, interrupted: bool = False, failed: bool = False) -> None:
        """Store what is left (tests an interruption cut short or never started), finish
        the run rows and close the stores."""
        if not self._books:
            return
        self.finished(self.run.tests)
        while self._writes:
            writes, self._writes = self._writes, []
            await asyncio.gather(*writes)
        errors = any(not t.ok for t in self.run.tests)
        status = (
            "interrupted"
            if interrupted or self.run.interrupted
            else ("failed" if failed or errors else "completed")
        )
        for book in self._books.values():
            opened = None if book.ready is None else await asyncio.shield(book.ready)
            if opened is not None:
                store, run_id = opened
                try:
                    await asyncio.to_thread(store.runs.finish, run_id, status)
                except Exception as exc:
                    book.fail(exc)
            if book.lite is not None:
                await asyncio.to_thread(book.lite.close)
            if book.owned:
                await book.history.aclose()
        self._books.clear()


def _record(
    store: Store | LiteStore, run_id: str, items: list[tuple[str, TestResult]]
) -> list[Previous | None]:
    """In a worker thread: each result's previous scored result, then the result itself."""
    out: list[Previous | None] = []
    for file, result in items:
        prev = store.tests.previous(file, result.name, before_run=run_id)
        out.append(
            None
            if prev is None or prev.accuracy is None
            else Previous(prev.accuracy, prev.created_at, prev.run_id)
        )
        store.tests.record(run_id, new_result(file, result))
    return out
