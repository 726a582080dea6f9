"""The history side of ``oxy test``: each test's result stored as it finishes, and the
previous result of the same test found for comparison.

One run row (kind ``consistency``) per history database per ``oxy test``; tests of
several projects with different histories get one row in each, sharing a group id.
A test is identified by its file (relative to its project) and its name.

The history is a by-product of a test run, never a reason to lose one: a store that
cannot be opened or written is noted on the run (:attr:`TestRun.history`) and the tests
carry on. Each database's store is the run's :class:`~oxyeval.suites.history.History`
(shared with the cache; the lean sqlite3 store once the project has a history), opened
in a worker thread while the models answer, and every write is off the event loop.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..project.config import Project
from .results import Previous, StoredRun, TestResult, TestRun

if TYPE_CHECKING:
    # Imported where used: with history off, ``oxy test`` never loads the store package.
    from ..store import Location, NewConsistencyResult
    from .history import Histories, History, RunStore

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
    files: list[str] = field(default_factory=list)
    total: int = 0
    ready: asyncio.Future[tuple[RunStore, str] | None] | None = None

    def fail(self, exc: BaseException) -> None:
        if self.note.error is None:
            self.note.error = _why(exc)


class ConsistencyHistory:
    """Records one ``oxy test`` run in the run's ``histories`` (the stores it shares with
    its cache, closed by the run; disabled: nothing is opened, read or written).

    Use: :meth:`add` each tested file before any model call (a bad history location is
    bad input, reported then), :meth:`start` when the tests start, :meth:`finished` as
    each test ends, and always :meth:`close`.
    """

    def __init__(self, run: TestRun, histories: Histories) -> None:
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

    async def _begin(self, book: _Book) -> tuple[RunStore, str] | None:
        try:
            store = await book.history.store()
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
        self._books.clear()


def _record(
    store: RunStore, run_id: str, items: list[tuple[str, TestResult]]
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
