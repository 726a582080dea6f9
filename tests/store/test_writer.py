"""The writer process: a large batch of executions (and cache entries) written by a child
process gives the same rows as the thread, scrubs the same secrets, raises the same
errors, and a child that is gone never loses a batch."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from oxyeval.redact import register_secret, secret_scope
from oxyeval.store import (
    NewCacheEntry,
    NotFoundError,
    Store,
    StoreError,
    deferred_writes,
    open_store,
)
from oxyeval.store._writer import START_AT
from oxyeval.suites.cases.histories import _READ_CHUNK  # the name a run's reads go by

from ._helpers import make_case, new

pytestmark = pytest.mark.skipif(
    __import__("os").name != "posix", reason="the writer process is used on POSIX systems only"
)


def _ready(store: Store) -> Any:
    """The store's writer process, once it has opened the file (started if need be)."""
    store.expect_executions(START_AT)
    writer = store._process
    assert writer is not None, "a large batch on an SQLite file starts a writer process"
    deadline = time.monotonic() + 30
    while not writer.ready():
        assert not writer.broken and time.monotonic() < deadline, "the writer never started"
        time.sleep(0.02)
    return writer


def _batch(n: int = START_AT, output: str = "positive") -> list[Any]:
    return [
        new(
            "a" if i % 3 else "b",
            passed=i % 2 == 0,
            score=None if i % 5 == 0 else i / n,
            actual_output=f"{output} {i}",
            created_at=f"2026-02-{1 + i % 3:02d}T{i % 24:02d}:00:00Z",
            id=f"{i:032x}",
        )
        for i in range(n)
    ]


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Store, Store]]:
    """Two new SQLite histories with the same two cases: one written by the process,
    one by the thread."""
    monkeypatch.delenv("OXY_HISTORY_WRITER", raising=False)
    by_process = open_store(tmp_path / "process.db")
    by_thread = open_store(tmp_path / "thread.db")
    by_thread._process = None  # never started for this one: see test_thread_when_asked
    for store in (by_process, by_thread):
        make_case(store, "a")
        make_case(store, "b")
    yield by_process, by_thread
    by_process.close()
    by_thread.close()


def _table(path: str, table: str, order: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})") if r[1] != "seq"]
        query = f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}"
        return db.execute(query).fetchall()


def test_the_process_writes_the_rows_the_thread_writes(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    by_process, by_thread = stores
    writer = _ready(by_process)
    assert by_process.executions.record_many(_batch()) == START_AT
    monkeypatch.setenv("OXY_HISTORY_WRITER", "thread")
    assert by_thread.executions.record_many(_batch()) == START_AT
    assert by_thread._process is None
    assert not writer.broken
    for table, order in (
        ("executions", "id"),
        ("results", "id"),
        ("case_daily", "test_case_id, day"),
        ("case_baselines", "test_case_id, baseline_key"),
        ("result_daily", "kind, subject, day"),
    ):
        written = _table(str(by_process.location.path), table, order)
        assert written, table
        assert written == _table(str(by_thread.location.path), table, order), table
    for case in ("a", "b"):
        mine, theirs = by_process.cases.get(case), by_thread.cases.get(case)
        assert mine is not None and theirs is not None
        assert (mine.total_runs, mine.pass_count, mine.last_run) == (
            theirs.total_runs,
            theirs.pass_count,
            theirs.last_run,
        )
        assert mine.total_runs > 0


def test_the_process_scrubs_the_secrets_registered_here(stores: tuple[Store, Store]) -> None:
    by_process, _ = stores
    _ready(by_process)
    secret = "sk-writer-process-0123456789"
    with secret_scope():
        register_secret(secret)
        by_process.executions.record_many(_batch(output=f"the key is {secret}"))
    text = Path(by_process.location.path).read_bytes()
    for name in ("executions", "results"):
        outputs = [r[0] for r in _table(str(by_process.location.path), name, "id")]
        assert outputs, name
    assert secret.encode() not in text
    stored = by_process.executions.latest("a")
    assert stored is not None and stored.actual_output is not None
    assert "***" in stored.actual_output and secret not in stored.actual_output


def test_an_error_in_the_process_is_raised_here(stores: tuple[Store, Store]) -> None:
    by_process, _ = stores
    writer = _ready(by_process)
    batch = [*_batch(), new("ghost")]
    with pytest.raises(NotFoundError, match="ghost"):
        by_process.executions.record_many(batch)
    assert not writer.broken  # a refused batch is not a broken writer
    assert by_process.cases.get("a").total_runs == 0  # type: ignore[union-attr]


def test_a_writer_gone_leaves_the_batch_to_the_thread(stores: tuple[Store, Store]) -> None:
    by_process, _ = stores
    writer = _ready(by_process)
    writer._proc.kill()
    writer._proc.wait()
    assert by_process.executions.record_many(_batch()) == START_AT
    assert writer.broken
    assert len(_table(str(by_process.location.path), "executions", "id")) == START_AT
    # and it is never asked again
    assert by_process.executions.record_many([new("a")]) == 1


def test_cache_entries_go_through_the_process(stores: tuple[Store, Store]) -> None:
    by_process, _ = stores
    _ready(by_process)
    entries = [NewCacheEntry(f"k{i}", "answer", {"text": f"v{i}"}, "m") for i in range(50)]
    assert by_process.cache.put_many(entries) == 50
    found = by_process.cache.get_many([f"k{i}" for i in range(50)])
    assert len(found) == 50 and found["k7"].value == {"text": "v7"}


def test_thread_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OXY_HISTORY_WRITER", "thread")
    with open_store(tmp_path / "h.db") as store:
        make_case(store, "a")
        make_case(store, "b")
        store.expect_executions(START_AT * 10)
        assert store.executions.record_many(_batch()) == START_AT
        assert store._process is None


def test_small_runs_and_memory_stores_start_no_process(tmp_path: Path) -> None:
    with open_store(tmp_path / "h.db") as store:
        store.expect_executions(START_AT - 1)
        assert store._process is None
    with open_store(":memory:") as store:
        store.expect_executions(START_AT * 10)
        assert store._process is None


def test_close_ends_the_process(tmp_path: Path) -> None:
    store = open_store(tmp_path / "h.db")
    writer = _ready(store)
    proc = writer._proc
    store.close()
    assert proc.returncode is not None


def test_a_stopping_command_waits_for_the_process_no_longer_than_for_the_lock(
    tmp_path: Path,
) -> None:
    """The file's write lock held elsewhere, the command asked to stop: the child is told,
    gives up on the lock as the command would, and the batch fails in seconds, not after
    the store's 30 s busy timeout."""
    from oxyeval.store import StoreError, hurry_history

    store = open_store(tmp_path / "h.db", timeout=30)
    try:
        make_case(store, "a")
        make_case(store, "b")
        writer = _ready(store)
        holder = sqlite3.connect(tmp_path / "h.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            hurry_history()
            started = time.monotonic()
            with pytest.raises(StoreError):
                store.executions.record_many(_batch())
            assert time.monotonic() - started < 10
            assert not writer.broken  # the child answered: it gave up on the lock itself
        finally:
            hurry_history(None)
            holder.rollback()
            holder.close()
        assert store.executions.record_many(_batch()) == START_AT  # the child still writes
    finally:
        store.close()


def test_a_child_running_another_copy_of_oxyeval_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.store import _writer

    with open_store(tmp_path / "h.db") as store:
        make_case(store, "a")
        make_case(store, "b")
        store.expect_executions(START_AT)
        writer = store._process
        assert writer is not None
        monkeypatch.setattr(_writer, "_PACKAGES", "/somewhere/else")  # what this side expects
        deadline = time.monotonic() + 30
        while not writer.broken and time.monotonic() < deadline:
            assert not writer.ready()
            time.sleep(0.02)
        assert writer.broken
        assert store.executions.record_many(_batch()) == START_AT  # written here instead


def _lose_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every answer of the writer process read, then lost (as if it came too late): the
    child has committed what it was sent."""
    from oxyeval.store import _writer

    real = _writer.ProcessWriter._receive

    def answered_then_lost(self: Any, wait: float) -> Any:
        real(self, wait)
        raise StoreError("no answer in time")

    monkeypatch.setattr(_writer.ProcessWriter, "_receive", answered_then_lost)


def test_a_batch_the_process_stored_but_never_answered_is_not_written_twice(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child commits, then its answer is lost: the thread finds the batch stored."""
    by_process, _ = stores
    writer = _ready(by_process)
    _lose_answers(monkeypatch)
    batch = [new("a", passed=True, actual_output=f"a{i}") for i in range(START_AT)]  # no ids
    assert by_process.executions.record_many(batch) == START_AT
    assert writer.broken
    assert len(_table(str(by_process.location.path), "executions", "id")) == START_AT
    assert by_process.cases.get("a").total_runs == START_AT  # type: ignore[union-attr]


def test_an_interrupt_while_waiting_gives_the_process_up(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while a batch is written: the pipe may hold an answer nobody read, so the
    child is not asked again, and the next batch is written here."""
    from oxyeval.store import _writer

    by_process, _ = stores
    writer = _ready(by_process)

    def interrupted(self: Any, wait: float) -> Any:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(_writer.ProcessWriter, "_receive", interrupted)
        with pytest.raises(KeyboardInterrupt):
            by_process.executions.record_many(_batch())
    assert writer.broken
    more = [new("a", passed=True, id=f"{i:032x}".replace("0", "f", 1)) for i in range(3)]
    assert by_process.executions.record_many(more) == 3


def test_the_process_waits_as_usual_once_a_stop_is_undone(tmp_path: Path) -> None:
    """A stop asked and undone (a library caller's next run): the child waits for the
    lock again, as the thread would, instead of giving up at once."""
    import threading

    from oxyeval.store import hurry_history

    store = open_store(tmp_path / "h.db", timeout=30)
    try:
        make_case(store, "a")
        make_case(store, "b")
        _ready(store)
        hurry_history()
        try:
            store.executions.record_many(_batch()[: START_AT // 2])  # the child is hurried
        finally:
            hurry_history(None)
        holder = sqlite3.connect(tmp_path / "h.db", isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        release = threading.Timer(1.0, holder.rollback)
        release.start()
        try:
            later = [new("a", passed=True, id=f"{i:032x}".replace("0", "e", 1)) for i in range(5)]
            assert store.executions.record_many(later) == 5  # waited for the lock
        finally:
            release.join()
            holder.close()
    finally:
        store.close()


def test_a_child_that_never_says_it_is_ready_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.store import _writer

    monkeypatch.setattr(_writer, "_LAUNCH", "import time; time.sleep(60)")
    monkeypatch.setattr(_writer, "_START_WITHIN", 0.2)
    with open_store(tmp_path / "h.db") as store:
        store.expect_executions(START_AT)
        writer = store._process
        assert writer is not None
        deadline = time.monotonic() + 10
        while not writer.broken and time.monotonic() < deadline:
            assert not writer.ready()
            time.sleep(0.05)
        assert writer.broken


def _nth(k: int, n: int = START_AT, output: str = "positive") -> list[Any]:
    """A batch of its own: ids no other batch has."""
    return [replace(e, id=f"{k:02x}{i:030x}") for i, e in enumerate(_batch(n, output))]


def _count(store: Store) -> int:
    return len(_table(str(store.location.path), "executions", "id"))


def test_deferred_batches_wait_in_the_pipe_and_each_hears_its_own_answer(
    stores: tuple[Store, Store],
) -> None:
    """Batches sent one behind the other, before any answer is read: the child takes
    the next the moment it is done with one, and each sender gets its batch's count."""
    by_process, _ = stores
    writer = _ready(by_process)
    with deferred_writes("run-1") as sent:
        for k, n in enumerate((START_AT, START_AT + 1, START_AT + 2)):
            assert by_process.executions.record_many(_nth(k, n)) == n
    assert len(sent) == 3 and len(writer._waiting) == 3  # all sent, none answered yet
    assert [s.wait() for s in reversed(sent)] == [START_AT + 2, START_AT + 1, START_AT]
    assert _count(by_process) == 3 * START_AT + 3
    assert not writer.broken and not writer._waiting


def test_a_failed_batch_stops_the_rest_of_its_chain_in_the_process(
    stores: tuple[Store, Store],
) -> None:
    """A batch sent behind one that fails is not written (it gets the same error), while
    another chain's batch is: a run's writes stop at their first failure, even with the
    next batch already in the pipe."""
    by_process, _ = stores
    writer = _ready(by_process)
    with deferred_writes("run-1") as first:
        by_process.executions.record_many(_nth(1))
        by_process.executions.record_many([*_nth(2), new("ghost")])
        by_process.executions.record_many(_nth(3))
    with deferred_writes("run-2") as other:
        by_process.executions.record_many(_nth(4))
    assert first[0].wait() == START_AT
    for refused in first[1:]:
        with pytest.raises(NotFoundError, match="ghost"):
            refused.wait()
    assert other[0].wait() == START_AT
    ids = {row[0][:2] for row in _table(str(by_process.location.path), "executions", "id")}
    assert ids == {"01", "04"} and not writer.broken


def test_deferred_batches_lost_with_the_process_are_written_here_once(
    stores: tuple[Store, Store],
) -> None:
    """The child killed with two batches in the pipe (written or not, nobody knows): each
    batch's wait writes it here unless it is stored already, never twice."""
    by_process, _ = stores
    writer = _ready(by_process)
    with deferred_writes("run-1") as sent:
        by_process.executions.record_many(_nth(1))
        by_process.executions.record_many(_nth(2))
    writer._proc.kill()
    assert [s.wait() for s in sent] == [START_AT, START_AT]
    assert writer.broken and _count(by_process) == 2 * START_AT
    assert by_process.cases.get("a").total_runs + by_process.cases.get("b").total_runs == (  # type: ignore[union-attr]
        2 * START_AT
    )


def test_a_write_in_this_process_waits_for_the_batches_sent(stores: tuple[Store, Store]) -> None:
    """This process's own writes queue behind what the child was sent, here rather than
    in SQLite's busy wait."""
    by_process, _ = stores
    writer = _ready(by_process)
    with deferred_writes("run-1") as sent:
        by_process.executions.record_many(_nth(1))
    assert writer._waiting
    by_process.executions.record(new("a", id="f" * 32))  # written here: a batch of one
    assert not writer._waiting  # the batch sent was answered first
    assert sent[0].wait() == START_AT and _count(by_process) == START_AT + 1


def test_a_read_runs_in_the_process_and_answers_as_if_read_here(
    stores: tuple[Store, Store],
) -> None:
    """A large run's case histories are read by the child (on its core), and give what
    reading them here gives; what the child raises is raised here."""
    from oxyeval.suites.cases.histories import read_chunk

    by_process, _ = stores
    _ready(by_process)
    by_process.executions.record_many(_batch())
    asked = [("a", "positive"), ("b", "positive"), ("nobody", "positive")]
    done, there = by_process.read_elsewhere(_READ_CHUNK, asked, "", 5)
    assert done and there == read_chunk(by_process, asked, "", 5)
    assert there["a"].history.total_runs > 0 and there["nobody"].history.total_runs == 0
    with pytest.raises(StoreError, match="only oxyeval's functions"):
        by_process.read_elsewhere("os:getcwd")
    with pytest.raises(TypeError):  # the function's own error, as itself
        by_process.read_elsewhere(_READ_CHUNK, asked)


def test_a_read_without_a_process_is_left_to_the_caller(
    stores: tuple[Store, Store],
) -> None:
    by_process, by_thread = stores
    assert by_thread.read_elsewhere(_READ_CHUNK, [], "", 5) == (False, None)  # none started
    writer = _ready(by_process)
    writer._proc.kill()
    assert by_process.read_elsewhere(_READ_CHUNK, [], "", 5) == (False, None)  # lost
    assert writer.broken


def test_large_answers_are_read_while_batches_are_being_sent(stores: tuple[Store, Store]) -> None:
    """Reads with large answers from one thread, large batches from another: the reader
    goes on reading answers while the sender waits for room in the pipe (a child blocked
    on an answer nobody read would otherwise never take the rest of what it was sent)."""
    import threading

    by_process, _ = stores
    _ready(by_process)
    asked = [(f"case {n}", "x" * 40) for n in range(4000)]  # an answer of a few hundred KB
    sent: list[Any] = []
    answers: list[int] = []

    def send() -> None:
        with deferred_writes("run-1") as batches:
            for k in range(12):
                by_process.executions.record_many(_nth(k, output="y" * 2000))
        sent.extend(batches)

    def read() -> None:
        for _ in range(6):
            done, found = by_process.read_elsewhere(_READ_CHUNK, asked, "", 5)
            answers.append(len(found) if done else -1)

    threads = [threading.Thread(target=send), *(threading.Thread(target=read) for _ in range(2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "the pipe is stuck"
    assert answers == [4000] * 12
    assert [s.wait() for s in sent] == [START_AT] * 12
    assert _count(by_process) == 12 * START_AT


def test_case_histories_cross_to_the_run_whole() -> None:
    """What the writer process reads for a run arrives with every field in its place
    (they are sent as their values, in field order; every value here differs from the
    others of its type, so two swapped fields would not compare equal)."""
    import pickle

    from oxyeval.store import CaseHistory
    from oxyeval.store._rows import HistoryPoint

    point = HistoryPoint("e1", "failed", 0.25, 12, -3, False, 0.5, True, 7, "2026-01-02")
    history = CaseHistory(4, 0.75, 0.625, 11.5, (point, replace(point, id="e2", score=None)))
    assert pickle.loads(pickle.dumps(history, protocol=pickle.HIGHEST_PROTOCOL)) == history


def _branch_batch(store: Store) -> list[Any]:
    from oxyeval.store import NewBranchExecution

    for name in ("Fast", "Slow"):
        store.branches.create("a", name, model="m")
    return [
        NewBranchExecution(
            branch_id="a@Fast" if i % 2 else "a@Slow",
            test_case_id="a",
            status="success",
            iteration=i // 2,
            passed=i % 3 != 0,
            quality_score=i / START_AT,
            output=f"answer {i % 7}",
        )
        for i in range(START_AT)
    ]


def test_branch_executions_go_through_the_process_as_the_thread_writes_them(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.store._branches import Branches

    by_process, by_thread = stores
    writer = _ready(by_process)
    here: list[int] = []
    real = Branches.write_batch

    def counted(self: Any, batch: Any, **kwargs: Any) -> int:
        here.append(len(batch))
        return real(self, batch, **kwargs)

    monkeypatch.setattr(Branches, "write_batch", counted)
    stamps = by_process.branches.record_many(None, _branch_batch(by_process))
    assert here == [] and not writer.broken  # the process wrote them
    monkeypatch.setenv("OXY_HISTORY_WRITER", "thread")
    assert len(by_thread.branches.record_many(None, _branch_batch(by_thread))) == START_AT
    assert here == [START_AT]
    # the ids and times given back are the stored rows'
    stored = {e.id: e for e in by_process.branches.executions("a@Fast", limit=1000)}
    assert len(stored) == START_AT // 2 and {i for i, _at in stamps} >= set(stored)
    assert all(stored[i].created_at == at for i, at in stamps if i in stored)
    for branch in ("a@Fast", "a@Slow"):
        mine, theirs = by_process.branches.get(branch), by_thread.branches.get(branch)
        assert mine is not None and theirs is not None
        assert mine.total_runs == theirs.total_runs == START_AT // 2
        counts = ("passes", "quality_n", "quality_sum", "hashed_runs", "top_hash_runs")
        assert [getattr(mine, c) for c in counts] == [getattr(theirs, c) for c in counts]


def test_a_branch_batch_stored_but_never_answered_is_not_written_twice(
    stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    by_process, _ = stores
    writer = _ready(by_process)
    _lose_answers(monkeypatch)
    assert len(by_process.branches.record_many(None, _branch_batch(by_process))) == START_AT
    assert writer.broken
    assert len(_table(str(by_process.location.path), "results", "id")) == START_AT
    fast = by_process.branches.get("a@Fast")
    assert fast is not None and fast.total_runs == START_AT // 2
