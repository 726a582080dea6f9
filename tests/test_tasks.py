"""gather_settled and finish_shielded: no child outlives the call, no committed write is lost.

Each test orders events with asyncio.Event and loop turns (``sleep(0)``), never with
time: a child "with cleanup" takes a few loop turns to stop once cancelled, as an HTTP
client closing its connection does, which is what plain asyncio.gather does not wait for.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from oxyeval._tasks import finish_shielded, gather_settled, settle_windowed

TURNS = 10


class Child:
    """A coroutine that waits until cancelled, then cleans up for a few loop turns."""

    def __init__(self, cleanup_turns: int = 0) -> None:
        self.cleanup_turns = cleanup_turns
        self.started = asyncio.Event()
        self.cancels = 0
        self.stopped = False

    async def __call__(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancels += 1
            for _ in range(self.cleanup_turns):
                await asyncio.sleep(0)  # a second cancel here would cut the cleanup short
            self.stopped = True
            raise


def test_results_come_in_order() -> None:
    async def value(v: int, turns: int) -> int:
        for _ in range(turns):
            await asyncio.sleep(0)
        return v

    assert asyncio.run(gather_settled(value(1, 3), value(2, 0), value(3, 1))) == [1, 2, 3]
    assert asyncio.run(gather_settled()) == []


def test_a_cancelled_call_raises_only_after_every_child_stopped() -> None:
    quick, slow = Child(), Child(cleanup_turns=TURNS)

    async def go() -> list[bool]:
        task = asyncio.ensure_future(gather_settled(slow(), quick()))
        await quick.started.wait()
        await slow.started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return [quick.stopped, slow.stopped]

    # With asyncio.gather this is [True, False]: it raises when the quick child stops.
    assert asyncio.run(go()) == [True, True]
    assert (quick.cancels, slow.cancels) == (1, 1)  # each cancelled once: cleanup not cut


def test_a_failing_child_stops_its_siblings_and_its_error_is_raised() -> None:
    sibling = Child(cleanup_turns=TURNS)

    async def fail() -> None:
        await sibling.started.wait()
        raise ValueError("boom")

    async def go() -> None:
        with pytest.raises(ValueError, match="boom"):
            await gather_settled(sibling(), fail())  # the sibling comes first: not its error

    asyncio.run(go())
    assert sibling.stopped and sibling.cancels == 1


def test_cancelling_again_while_children_clean_up_still_waits_for_them() -> None:
    slow = Child(cleanup_turns=TURNS)

    async def go() -> None:
        task = asyncio.ensure_future(gather_settled(slow()))
        await slow.started.wait()
        task.cancel()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        task.cancel()  # a second cancellation during the child's cleanup
        with pytest.raises(asyncio.CancelledError):
            await task
        assert slow.stopped

    asyncio.run(go())
    assert slow.cancels == 1


def test_finish_shielded_completes_a_write_the_caller_was_cancelled_during() -> None:
    release = threading.Event()
    writing = threading.Event()

    def write() -> str:
        writing.set()
        release.wait(30)
        return "row 1"

    async def commit() -> tuple[str, bool]:
        return await finish_shielded(asyncio.to_thread(write))

    async def go() -> tuple[str, bool]:
        task = asyncio.ensure_future(commit())
        while not writing.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0)  # the cancellation reaches the task while the write holds
        assert not task.done()
        release.set()
        return await task

    try:
        assert asyncio.run(go()) == ("row 1", True)
    finally:
        release.set()
    assert asyncio.run(finish_shielded(asyncio.sleep(0, "x"))) == ("x", False)


def test_the_sync_entry_points_name_their_coroutine_inside_a_running_loop() -> None:
    import inspect
    import warnings

    import oxyeval

    for sync, name in (
        (oxyeval.run_tests, "run_tests_async"),
        (oxyeval.run_cases, "run_cases_async"),
    ):
        params = inspect.signature(sync).parameters.values()
        assert not any(p.kind is p.VAR_KEYWORD for p in params)  # every option visible
        async_params = inspect.signature(getattr(oxyeval, name)).parameters
        assert list(inspect.signature(sync).parameters) == list(async_params)  # in step

        async def inside(sync=sync) -> str:  # type: ignore[no-untyped-def]
            try:
                sync(["nowhere"])
            except RuntimeError as exc:
                return str(exc)
            return "no error"

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a coroutine never awaited would warn
            message = asyncio.run(inside())
        assert f"use `await {name}(...)` instead" in message


def test_a_window_runs_every_item_never_more_than_its_size_at_once() -> None:
    alive: list[int] = []
    most = [0]
    seen: list[int] = []

    async def work(item: int) -> None:
        alive.append(item)
        most[0] = max(most[0], len(alive))
        await asyncio.sleep(0)
        seen.append(item)
        alive.remove(item)

    asyncio.run(settle_windowed(range(50), work, 7))
    assert sorted(seen) == list(range(50)) and most[0] == 7


def test_a_window_stops_at_the_first_error_and_starts_nothing_after() -> None:
    started: list[int] = []
    stopped: list[int] = []

    async def work(item: int) -> None:
        started.append(item)
        if item == 3:
            raise ValueError("three")
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            stopped.append(item)
            raise

    with pytest.raises(ValueError, match="three"):
        asyncio.run(settle_windowed(range(100), work, 5))
    assert started == [0, 1, 2, 3, 4] and sorted(stopped) == [0, 1, 2, 4]


def test_a_limit_serves_waiters_in_order_skips_the_cancelled_and_passes_a_slot_on() -> None:
    from oxyeval._tasks import Limit

    async def go() -> list[str]:
        limit = Limit(1)
        order: list[str] = []
        await limit.acquire()  # held: everyone below waits

        async def take(name: str) -> None:
            async with limit:
                order.append(name)
                await asyncio.sleep(0)

        first = asyncio.ensure_future(take("first"))
        gone = asyncio.ensure_future(take("gone"))
        last = asyncio.ensure_future(take("last"))
        await asyncio.sleep(0)
        assert limit.locked()
        gone.cancel()  # cancelled while waiting: skipped when its turn comes
        await asyncio.sleep(0)
        limit.release()
        await asyncio.gather(first, last)
        # Given the slot, then cancelled before it ran: the slot goes to the next.
        await limit.acquire()
        handed = asyncio.ensure_future(take("handed"))
        after = asyncio.ensure_future(take("after"))
        await asyncio.sleep(0)
        limit.release()  # the slot is handed to "handed" ...
        handed.cancel()  # ... which is cancelled before it resumes
        await after
        assert not limit.locked()  # every slot came back
        return order

    assert asyncio.run(go()) == ["first", "last", "after"]
