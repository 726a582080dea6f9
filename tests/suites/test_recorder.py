"""The recorder's writes: one thread per history, in order, the next batch queued behind
the one being written (so it starts when that one commits, however busy the event loop
is), and none written after one that failed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from oxyeval.evaluation import Result, ResultKind, register_kind
from oxyeval.project.config import load_project
from oxyeval.suites.history_store import Histories
from oxyeval.suites.recorder import _BATCH_AT_MOST, _QUEUE_AT, Recorder, RunRow, Storage

from ..conftest import MakeProject


@pytest.fixture(autouse=True)
def _kind() -> None:
    register_kind(ResultKind("toy-recorded", ("passed", "error", "interrupted")), replace=True)


class _Writes:
    """A kind's writer that notes each batch (its subjects, its thread, when it began),
    holds the first batch until let go, and fails the batch whose subject is ``fail``."""

    def __init__(self, fail: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.threads: set[int] = set()
        self.began: list[float] = []
        self.first_held = threading.Event()
        self.let_go = threading.Event()
        self.fail = fail

    def write(self, _store: Any, _run_id: str, items: Sequence[tuple[Result, Any]]) -> list[Any]:
        subjects = [result.subject for result, _extra in items]
        self.began.append(time.monotonic())
        self.batches.append(subjects)
        self.threads.add(threading.get_ident())
        if len(self.batches) == 1:
            self.first_held.set()
            assert self.let_go.wait(10)
        if self.fail in subjects:
            raise RuntimeError(f"disk full at {self.fail}")
        return list(subjects)


#: What finishes while ``a`` is written: enough to queue a batch behind it.
_LATER = ["b", "c", *(f"more {n}" for n in range(_QUEUE_AT))]


def _result(subject: str) -> Result:
    return Result(kind="toy-recorded", subject=subject, status="passed", passed=True, score=1.0)


async def _record(
    make_project: MakeProject, writes: _Writes, busy: float, later: list[str] | None = None
) -> tuple[Recorder, list[Any], float]:
    """Record ``a``, then ``later`` (by default ``b``, ``c`` and enough more to be
    queued) while ``a`` is being written; once ``a`` is let go, keep the event loop busy for ``busy`` seconds.
    Returns the recorder, what each record gave back and when the loop was free again."""
    project = load_project(make_project())
    histories = Histories()
    recorder = Recorder("toy-recorded", histories, Storage(write=writes.write, previous=None))
    later = _LATER if later is None else later
    handle = recorder.add(project, RunRow(), count=1 + len(later))
    recorder.start()
    first = asyncio.ensure_future(recorder.record(handle, _result("a")))
    await asyncio.to_thread(writes.first_held.wait, 10)
    waiting = [asyncio.ensure_future(recorder.record(handle, _result(s))) for s in later]
    for _ in range(20):  # the flush takes b and c, reads them, and queues their batch
        await asyncio.sleep(0.01)
    writes.let_go.set()
    time.sleep(busy)  # the event loop is busy running other cases
    free = time.monotonic()
    recorded = await asyncio.gather(first, *waiting)
    await recorder.close()
    await histories.aclose()
    return recorder, list(recorded), free


def test_a_queued_batch_is_written_as_soon_as_the_one_before_commits(
    make_project: MakeProject,
) -> None:
    writes = _Writes()
    _recorder, recorded, free = asyncio.run(_record(make_project, writes, busy=0.5))
    assert writes.batches == [["a"], _LATER]  # in order, the rest in one transaction
    assert len(writes.threads) == 1  # one thread: the order is the thread's
    # b and c began while the event loop was still busy, not once it came back
    assert writes.began[1] < free
    assert [r.stored for r in recorded] == ["a", *_LATER]


def test_no_batch_is_written_after_one_that_failed(make_project: MakeProject) -> None:
    writes = _Writes(fail="a")
    recorder, recorded, _free = asyncio.run(_record(make_project, writes, busy=0.0))
    # the rest was queued behind a: it is not written once a failed
    assert writes.batches == [["a"]]
    assert [r.stored for r in recorded] == [None] * (1 + len(_LATER))
    (note,) = recorder.notes
    assert note.error is not None and "disk full at a" in note.error
    assert note.stored == 0


def test_what_finished_meanwhile_is_written_a_few_hundred_to_a_transaction(
    make_project: MakeProject,
) -> None:
    writes = _Writes()
    later = [f"case {n}" for n in range(2 * _BATCH_AT_MOST + 10)]
    _recorder, recorded, _free = asyncio.run(_record(make_project, writes, 0.0, later))
    assert writes.batches[0] == ["a"]
    # in order, none larger than the most a transaction takes, so the run's next cases
    # go on while one is written
    assert [s for batch in writes.batches[1:] for s in batch] == later
    assert max(len(batch) for batch in writes.batches[1:]) == _BATCH_AT_MOST
    assert [r.stored for r in recorded] == ["a", *later]


def test_a_run_cut_short_settles_what_it_wrote_as_stored_and_writes_what_came_after(
    make_project: MakeProject,
) -> None:
    """Cancelled while a batch is written: that batch's results are settled once it is
    committed (stored: they are in the history), what was pending is settled unwritten,
    and a result kept while the flush finished is written when the recorder closes."""
    writes = _Writes()

    async def go() -> tuple[Any, list[Any], Any]:
        project = load_project(make_project())
        histories = Histories()
        recorder = Recorder("toy-recorded", histories, Storage(write=writes.write, previous=None))
        handle = recorder.add(project, RunRow(), count=5)
        recorder.start()
        first = recorder.submit(handle, _result("a"))
        await asyncio.to_thread(writes.first_held.wait, 10)
        waiting = [recorder.submit(handle, _result(s)) for s in ("b", "c")]
        for _ in range(10):
            await asyncio.sleep(0.01)
        (database,) = recorder._databases.values()
        assert database.flushing is not None
        database.flushing.cancel()  # the run is stopped while a is being written
        await asyncio.sleep(0.02)
        assert not first.done()  # a's write goes on: it is not reported unwritten
        late = recorder.submit(handle, _result("late"))  # kept by the stopping run
        writes.let_go.set()
        await asyncio.wait_for(recorder.close(interrupted=True), 10)
        await histories.aclose()
        return await first, [await f for f in waiting], await asyncio.wait_for(late, 1)

    first, waiting, late = asyncio.run(go())
    assert first.stored == "a"  # in the history, so in the report
    assert [r.stored for r in waiting] == [None, None]  # pending when cut short: unwritten
    assert late.stored == "late" and writes.batches == [["a"], ["late"]]


def test_a_batch_sent_to_the_writer_process_counts_once_it_is_answered(
    make_project: MakeProject,
) -> None:
    """A batch handed to the writer process (sent, its answer waited for apart) is stored
    only once the answer says so: a failed answer leaves it unwritten, as it does the
    batch sent behind it (which the process refuses: see the store's tests)."""
    from oxyeval.store._deferred import deferring

    failed: list[Exception] = []

    class _Answer:
        def __init__(self, subjects: list[str]) -> None:
            self.subjects = subjects

        def wait(self) -> int:
            if "a" in self.subjects:
                failed.append(RuntimeError("the writer process refused a"))
            if failed:
                raise failed[0]
            return len(self.subjects)

    class _Sending(_Writes):
        def write(self, store: Any, run_id: str, items: Sequence[tuple[Result, Any]]) -> list[Any]:
            stored = super().write(store, run_id, items)
            deferral = deferring()
            assert deferral is not None  # the recorder's writes are sent, not waited on
            deferral.sent.append(_Answer(stored))
            return stored

    writes = _Sending()
    recorder, recorded, _free = asyncio.run(_record(make_project, writes, busy=0.0))
    assert writes.batches[0] == ["a"]
    assert [r.stored for r in recorded] == [None] * (1 + len(_LATER))
    (note,) = recorder.notes
    assert note.error is not None and "refused a" in note.error and note.stored == 0
