"""Every result kept in its run's history as it is recorded, whatever its kind.

A run's results go under run rows: one per history database for the whole run (a
consistency run, a pass/fail run, an SDK evaluation), or one per part of it (a prompt
version's cases, an A/B case); several rows of one run share a group id. Each row is
started when the run starts and finished by the one status rule (:func:`final_status`).

Why here and not in each kind: the history is a by-product of a run, never a reason to
lose one, and every kind needs the same care. A store that cannot be opened or written
is noted on the run (:class:`StoredRun`, said once) and the run carries on; one that
can be read but not written still gives each result its previous one (from a read-only
store), so a drop can still be decided; writes leave the event loop in worker threads,
several results to a transaction when they finish together (a burst of 100 costs a few
commits, a lone one at once); a result cut short while written is kept in the report
too (it is in the history). A kind says only how its results become rows
(:class:`Storage`): the core's ``results`` rows, and its own detail rows if it has some.
"""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from .._tasks import finish_shielded
from ..evaluation import Previous, Result, result_kind
from .earlier import earlier_results
from .status import StoredRun, final_status

if TYPE_CHECKING:
    from ..project.config import Project
    from ..store import Location, Sent, Store
    from .history_store import Histories, History, RunStore

__all__ = [
    "Handle",
    "KeptThenCancelled",
    "Recorded",
    "Recorder",
    "RunRow",
    "Stamp",
    "Storage",
]

_SUBJECTS_SHOWN = 5  # parts named in a run row's subject before "and N more"
#: Results pending before a batch is queued behind the one being written (fewer wait for
#: that write to end: group commit, not a transaction per result).
_QUEUE_AT = 64
#: Results per transaction at most: a run's window of cases in flight holds a few such
#: batches, so its next cases run while one is written (one batch of the whole window
#: left the run idle until it was committed); fewer cost more commits for nothing.
_BATCH_AT_MOST = 256


@dataclass(frozen=True)
class RunRow:
    """Which run row a unit of work's results go under: ``key`` "" is the run's one row
    per history database; another key is a row of its own (a prompt version's cases)."""

    key: str = ""
    subject: str = ""
    prompt_id: str | None = None
    prompt_version: int | None = None


#: Stores ``items`` (each result and what its kind keeps beside it) under run ``run_id``,
#: in a worker thread; returns what each write gave back (a stored row), in order.
Writer = Callable[["RunStore", str, Sequence[tuple[Result, Any]]], Sequence[Any]]
#: The previous stored result of each item's subject outside run ``run_id`` (None: no
#: run row), in a worker thread; raises when the history cannot be read.
PreviousReader = Callable[
    ["RunStore", "str | None", Sequence[tuple[Result, Any]]], Sequence["Previous | None"]
]


def _core_rows(store: RunStore, run_id: str, items: Sequence[tuple[Result, Any]]) -> list[Any]:
    store.results.add(run_id, [result for result, _extra in items])
    return [None] * len(items)


@dataclass(frozen=True)
class Storage:
    """How a kind's results become history rows, and how each finds its previous result
    (the history's ``results`` by default). ``full``: the kind reads more than results
    (prompts, cases), so its history opens as the full store."""

    write: Writer = _core_rows
    previous: PreviousReader | None = earlier_results
    full: bool = False
    #: Whether a batch has a previous result left to read (None: always): a batch whose
    #: every previous result is known already is not handed to a thread for nothing.
    unread: Callable[[Sequence[tuple[Result, Any]]], bool] | None = None


class Stamp(NamedTuple):
    """What a stored execution is known by, where a kind's write chose both itself: its
    id and when it was recorded (what a report reads of it; nothing is read back)."""

    id: str
    created_at: str


@dataclass(eq=False)
class Recorded:
    """A result handed to the history, and what its write gave back once stored."""

    result: Result
    extra: Any = None
    stored: Any = None


class KeptThenCancelled(asyncio.CancelledError):
    """A cancellation that arrived while a result was being written: it is in the
    history, so ``recorded`` goes in the report too before the cancellation goes on."""

    def __init__(self, recorded: Recorded) -> None:
        super().__init__()
        self.recorded = recorded


@dataclass(eq=False)
class _Row:
    spec: RunRow
    parts: list[str] = field(default_factory=list)
    total: int = 0
    run_id: str | None = None
    failed: bool = False  # a result of it could not be produced

    def subject(self) -> str:
        if self.spec.subject:
            return self.spec.subject
        shown = list(dict.fromkeys(self.parts))
        more = len(shown) - _SUBJECTS_SHOWN
        return ", ".join(shown[:_SUBJECTS_SHOWN] + ([f"and {more} more"] if more > 0 else []))


@dataclass(eq=False)
class _Opened:
    """What a history gives this run: the store earlier results are read from (None:
    it holds none yet), and whether this run's results can be written to it."""

    reader: RunStore | Store | None
    writable: bool


@dataclass(eq=False)
class _Database:
    """One history database of this run: its store, its run rows, its pending writes."""

    history: History
    note: StoredRun
    rows: dict[str, _Row] = field(default_factory=dict)
    ready: asyncio.Future[_Opened | None] | None = None
    own_reader: Store | None = None  # a read-only store opened here, closed here
    pending: list[tuple[_Row, Recorded, asyncio.Future[Recorded]]] = field(default_factory=list)
    flushing: asyncio.Future[None] | None = None
    # The one thread this history's writes run in, in order: the batch queued behind
    # the one being written starts as soon as it is committed, not once the event loop
    # (busy running the next cases) gets round to it. ``broken``: the write that failed,
    # seen by every batch after it in that thread.
    writer: ThreadPoolExecutor | None = None
    broken: BaseException | None = None
    chain: str = field(default_factory=lambda: uuid.uuid4().hex)  # its writes, to the process
    wake: asyncio.Future[None] | None = None  # set once enough is pending to queue

    def fail(self, exc: BaseException) -> None:
        """This run's results cannot (all) be stored; said once."""
        if self.note.error is None:
            self.note.error = _why(exc)

    def unread(self, exc: BaseException) -> None:
        """The earlier results cannot be read: drops cannot be ruled out."""
        self.fail(exc)
        if self.note.read_error is None:
            self.note.read_error = _why(exc)


def _why(exc: BaseException) -> str:
    from ..store import StoreError

    return str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Handle:
    """Where one unit's results go: its history (None: none is kept) and its row."""

    database: _Database | None
    row: _Row | None


class Recorder:
    """The run rows and result writes of one run of one kind, in the run's histories
    (shared with its cache, closed by the run; disabled: nothing is opened or written).

    Use: :meth:`add` each unit of work before the run starts (a bad history location is
    bad input, said then), :meth:`start`, :meth:`record` each result as it finishes, and
    always :meth:`close`.
    """

    def __init__(self, kind: str, histories: Histories, storage: Storage | None = None) -> None:
        self.kind = kind
        self.storage = storage or Storage()
        self.notes: list[StoredRun] = []
        self._histories = histories
        self._databases: dict[Location, _Database] = {}
        self._group = uuid.uuid4().hex
        self._started_at = ""

    def add(
        self, project: Project, row: RunRow = RunRow(), *, part: str = "", count: int = 0
    ) -> Handle:
        """A unit of work of ``project`` whose ``count`` results go under ``row``;
        ``part`` names it in a shared row's subject (a file). A collecting pass of
        ``--batch`` records nothing: its last pass is the run."""
        from ..providers import in_collecting_pass

        if in_collecting_pass():
            return Handle(None, None)
        history = self._histories.for_project(project, full=self.storage.full)
        if history is None or history.location is None:
            return Handle(None, None)
        database = self._databases.get(history.location)
        if database is None:
            database = self._databases[history.location] = _Database(
                history, StoredRun(history.location.display)
            )
        found = database.rows.get(row.key)
        if found is None:
            found = database.rows[row.key] = _Row(row)
        if part:
            found.parts.append(part)
        found.total += count
        return Handle(database, found)

    @property
    def run_ids(self) -> dict[str, str]:
        """Each started row's id by its key (the first database's, for a shared key)."""
        found: dict[str, str] = {}
        for database in self._databases.values():
            for key, row in database.rows.items():
                if row.run_id is not None:
                    found.setdefault(key, row.run_id)
        return found

    def start(self) -> None:
        """Open every history and start its run rows, in the background."""
        from ..store import utc_timestamp

        self._started_at = self._started_at or utc_timestamp()
        for database in self._databases.values():
            if database.ready is None:
                self.notes.append(database.note)
                database.ready = asyncio.ensure_future(self._begin(database))

    async def run_id(self, handle: Handle) -> str | None:
        """The id of the run row ``handle``'s results go under (None: none could start)."""
        if handle.database is None or handle.row is None:
            return None
        if handle.database.ready is None:
            self.start()
        assert handle.database.ready is not None
        await asyncio.shield(handle.database.ready)
        return handle.row.run_id

    async def reader(self, handle: Handle) -> RunStore | Store | None:
        """The store ``handle``'s earlier results are read from (None: none yet or none
        readable, noted)."""
        if handle.database is None:
            return None
        if handle.database.ready is None:
            self.start()
        assert handle.database.ready is not None
        opened = await asyncio.shield(handle.database.ready)
        return None if opened is None else opened.reader

    async def _begin(self, database: _Database) -> _Opened | None:
        """Open the history and start this run's rows in it; when it cannot be written,
        what it can still be read through (None: nothing)."""
        try:
            store = await database.history.store()
            assert store is not None
        except Exception as exc:
            if getattr(exc, "unreachable", False):  # a read-only open would wait again
                database.unread(exc)
                return None
            database.fail(exc)
            return await self._read_only(database)
        rows = sum(len(d.rows) for d in self._databases.values())
        try:
            for row in database.rows.values():
                prompt: dict[str, Any] = {}
                if row.spec.prompt_id is not None:  # the full store's rows only
                    prompt = {"prompt_id": row.spec.prompt_id}
                    prompt["prompt_version"] = row.spec.prompt_version
                row.run_id = await asyncio.to_thread(
                    store.runs.start,
                    self.kind,
                    total=row.total,
                    group_id=self._group if rows > 1 else None,
                    subject=row.subject(),
                    started_at=self._started_at,
                    **prompt,
                )
                if database.note.run_id is None:
                    database.note.run_id = row.run_id
        except Exception as exc:  # open but not writable (a read-only file): still read
            database.fail(exc)
            return _Opened(store, False)
        return _Opened(store, True)

    async def _read_only(self, database: _Database) -> _Opened | None:
        """The history opened only to read, when it cannot be opened to write."""
        from ..store import EmptyHistoryError, open_store

        location = database.history.location
        assert location is not None
        try:
            reader = await asyncio.to_thread(open_store, location, read_only=True)
        except EmptyHistoryError:
            return _Opened(None, False)  # no history yet: no earlier result to compare with
        except Exception as exc:
            database.unread(exc)
            return None
        database.own_reader = reader
        return _Opened(reader, False)

    async def record(self, handle: Handle, result: Result, extra: Any = None) -> Recorded:
        """Keep ``result`` (and ``extra``, what its kind stores beside it) under its row;
        returns once it is written (or could not be), ``result.previous`` filled. A
        cancellation meanwhile waits for the write, then is raised again: what is in
        the history is in the report too (the caller keeps the result before it goes
        on)."""
        recorded, cancelled = await finish_shielded(self.submit(handle, result, extra))
        if cancelled:
            raise KeptThenCancelled(recorded)
        return recorded

    def submit(self, handle: Handle, result: Result, extra: Any = None) -> asyncio.Future[Recorded]:
        """:meth:`record` without waiting: for what an interruption cut short, written
        before :meth:`close` finishes the rows."""
        recorded = Recorded(result, extra)
        future: asyncio.Future[Recorded] = asyncio.get_running_loop().create_future()
        unknown = result_kind(result.kind).unknown - {"interrupted"}
        if handle.row is not None and result.status in unknown:
            handle.row.failed = True
        if handle.database is None or handle.row is None:
            future.set_result(recorded)
            return future
        database, row = handle.database, handle.row
        if database.ready is None:
            self.start()
        database.pending.append((row, recorded, future))
        wake = database.wake
        if wake is not None and not wake.done() and len(database.pending) >= _QUEUE_AT:
            wake.set_result(None)
        if database.flushing is None or database.flushing.done():
            database.flushing = asyncio.ensure_future(self._flush(database))
        return future

    async def _flush(self, database: _Database) -> None:
        """Write what is pending, a batch per transaction, until nothing is (group
        commit: results that finish while one batch is written go in the next). One
        batch's earlier results are read while the batch before it is being written, and
        the writes keep their order."""
        assert database.ready is not None
        opened = await asyncio.shield(database.ready)
        # At most one batch waits behind the one being written: what finishes meanwhile
        # gathers into the next batch (group commit) rather than into many small ones.
        writing: deque[asyncio.Future[None]] = deque()
        left: list[list[_Entry]] = []
        try:
            while True:
                if database.pending:
                    batch = database.pending[:_BATCH_AT_MOST]
                    database.pending = database.pending[_BATCH_AT_MOST:]
                    by_row: dict[int, list[_Entry]] = {}
                    for entry in batch:
                        by_row.setdefault(id(entry[0]), []).append(entry)
                    left = list(by_row.values())  # not yet handed to a write
                    while left:
                        read = await self._read(database, opened, left[0])
                        while len(writing) > 1:  # room for one behind the one written
                            await self._next(database, writing)
                        entries = left.pop(0)  # its write settles them once stored
                        writing.append(
                            asyncio.ensure_future(self._write(database, opened, entries, read))
                        )
                elif writing:
                    await self._next(database, writing)
                else:
                    return
        except BaseException:
            # Cut short (cancelled, or a bug): what was taken and not yet handed to a write,
            # or is pending, is settled, so nobody waits on it for ever; writes under way
            # still finish and settle theirs as stored (below).
            pending, database.pending = database.pending, []
            _settle([entry for entries in left for entry in entries] + pending)
            raise
        finally:
            for write in writing:
                await asyncio.shield(write)

    async def _next(self, database: _Database, writing: deque[asyncio.Future[None]]) -> None:
        """Wait for the oldest write; with only that one under way, also for enough
        results to queue the next batch behind it (:data:`_QUEUE_AT`)."""
        if len(writing) == 1:
            database.wake = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait((writing[0], database.wake), return_when=asyncio.FIRST_COMPLETED)
            finally:
                database.wake = None
        else:
            await asyncio.shield(writing[0])
        if writing[0].done():
            writing.popleft()

    async def _read(
        self, database: _Database, opened: _Opened | None, entries: list[_Entry]
    ) -> bool:
        """Each entry's previous result filled in (False: none could be read, the history
        is noted, and the entries are settled unwritten)."""
        if opened is None or database.note.read_error is not None:
            _settle(entries)
            return False
        reader = self.storage.previous
        if reader is None or opened.reader is None:
            return True
        items = [(r.result, r.extra) for _row, r, _f in entries]
        unread = self.storage.unread
        if unread is not None and not unread(items):
            return True
        try:
            previous = await asyncio.to_thread(reader, opened.reader, entries[0][0].run_id, items)
        except Exception as exc:  # the earlier results could not be read
            database.unread(exc)
            _settle(entries)
            return False
        for (_row, recorded, _f), prev in zip(entries, previous, strict=False):
            if prev is not None:
                recorded.result.previous = prev
        return True

    async def _write(
        self, database: _Database, opened: _Opened | None, entries: list[_Entry], read: bool
    ) -> None:
        """Store the entries whose previous results were read (a write that fails is
        noted, and none is tried after it), then settle them."""
        try:
            row = entries[0][0]
            if not read or opened is None or opened.reader is None:
                return
            if not (opened.writable and row.run_id is not None and database.note.error is None):
                return
            items = [(r.result, r.extra) for _row, r, _f in entries]
            if database.writer is None:
                database.writer = ThreadPoolExecutor(1, thread_name_prefix="oxy-history")
            job = (self._commit, database, opened.reader, row.run_id, items)
            try:
                stored, sent = await asyncio.get_running_loop().run_in_executor(
                    database.writer, contextvars.copy_context().run, *job
                )
                for batch in sent:  # a writer process's answer, while the next batch is sent
                    await asyncio.to_thread(batch.wait)
            except Exception as exc:
                database.broken = database.broken or exc
                database.fail(exc)
                return
            database.note.stored += len(stored)
            for (_row, recorded, _f), kept in zip(entries, stored, strict=True):
                recorded.stored = kept
        finally:
            _settle(entries)

    def _commit(
        self,
        database: _Database,
        store: RunStore | Store,
        run_id: str,
        items: list[tuple[Result, Any]],
    ) -> tuple[list[Any], list[Sent]]:
        """One batch written, in the history's writer thread, or sent to its writer
        process (the batches to wait on); none is tried after a failed one (the batch
        queued behind it raises the same error, in the process too)."""
        from ..store import deferred_writes

        if database.broken is not None:
            raise database.broken
        try:
            with deferred_writes(database.chain) as sent:
                return list(self.storage.write(store, run_id, items)), sent  # type: ignore[arg-type]
        except BaseException as exc:
            database.broken = exc
            raise

    async def close(self, *, interrupted: bool = False, failed: bool = False) -> None:
        """Write what is pending, finish every run row by the one status rule and close
        what was opened here. A cancellation arriving meanwhile does not cut this short:
        it is raised again once the history has its final word (every wait is bounded,
        and shortened once the command is asked to stop)."""
        if not self._databases:
            return
        _, cancelled = await finish_shielded(self._close(interrupted, failed))
        if cancelled:
            raise asyncio.CancelledError

    async def _close(self, interrupted: bool, failed: bool) -> None:
        for database in self._databases.values():
            # Results kept while a cut-short flush finished its last write found it still
            # running and started none: they are written now.
            while database.pending or (
                database.flushing is not None and not database.flushing.done()
            ):
                if database.flushing is None or database.flushing.done():
                    database.flushing = asyncio.ensure_future(self._flush(database))
                await asyncio.wait((database.flushing,))  # its cancellation is not ours
        for database in self._databases.values():
            opened = None if database.ready is None else await asyncio.shield(database.ready)
            if opened is not None and opened.reader is not None and opened.writable:
                for row in database.rows.values():
                    if row.run_id is None:
                        continue
                    status = final_status(interrupted=interrupted, failed=failed or row.failed)
                    try:
                        await asyncio.to_thread(opened.reader.runs.finish, row.run_id, status)
                    except Exception as exc:
                        database.fail(exc)
            if database.own_reader is not None:
                reader, database.own_reader = database.own_reader, None
                await asyncio.to_thread(reader.close)
            if database.writer is not None:  # idle: every write was awaited above
                database.writer.shutdown(wait=False)
        self._databases.clear()


_Entry = tuple[_Row, Recorded, "asyncio.Future[Recorded]"]


def _settle(entries: list[_Entry]) -> None:
    for _row, recorded, future in entries:
        if not future.done():
            future.set_result(recorded)
