"""judge_comparisons, cancelled: it raises only once every judge call has stopped, so the
verdicts its caller keeps (an interrupted test's partial score) are final."""

from __future__ import annotations

import asyncio

import pytest

from oxyeval.judge.consistency import Comparison, judge_comparisons, plan_comparisons
from oxyeval.judge.judge import JudgeResult


def test_a_cancelled_judging_returns_after_every_call_stopped() -> None:
    texts = {1: "a", 2: "b", 3: "c"}
    comps = plan_comparisons(texts, "all")
    assert len(comps) == 3
    waiting: list[str] = []
    stopped: list[str] = []
    done: list[Comparison] = []
    all_waiting = asyncio.Event()

    async def compare(a: str, b: str) -> JudgeResult:
        a, b = sorted((a, b))  # the judge sees a pair in canonical order, not run order
        if (a, b) == ("a", "b"):
            return JudgeResult("A", "same", "Answer: A", 1)
        waiting.append(a + b)
        if len(waiting) == 2:
            all_waiting.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            # The slower call is the one whose cleanup takes longer (a connection to close).
            for _ in range(10 if a + b == "ac" else 0):
                await asyncio.sleep(0)
            stopped.append(a + b)
            raise
        raise AssertionError("unreachable")

    async def go() -> None:
        task = asyncio.ensure_future(
            judge_comparisons(comps, texts, compare, concurrency=3, on_done=done.append)
        )
        await all_waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert sorted(stopped) == ["ac", "bc"]  # both held calls stopped before it raised

    asyncio.run(go())
    assert [c.runs for c in done] == [(1, 2)]
