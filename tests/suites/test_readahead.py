"""A ``--cache`` replay reads the answers ahead in the order they were written."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from oxyeval.store import open_store
from oxyeval.suites import readahead
from oxyeval.suites.run_cache import CachePolicy, RunCache

from ._helpers import count_lookups


def _replay(path: Path, order: list[int], size: int = 1) -> tuple[list[Any], list[int], int]:
    """Write answers 0..n-1 in a first run, then look them up in ``order`` in a second:
    the values, the size of each history lookup, and the most text held ahead."""

    async def go() -> tuple[list[Any], list[int], int]:
        with open_store(path) as store:
            first = RunCache(CachePolicy(answers=True), store=store)
            for k in range(len(order)):
                first.remember("answer", {"k": k}, {"text": f"n{k}", "pad": "x" * size}, "x/y")
            await first.aclose()
            asked = count_lookups(store)
            again = RunCache(CachePolicy(answers=True), store=store)
            found, most = [], 0
            for k in order:
                found.append(await again.lookup("answer", {"k": k}))
                await asyncio.sleep(0)  # a page being read lands
                assert again._ahead is not None
                most = max(most, again._ahead._bytes)
            await again.aclose()
            return found, asked, most

    return asyncio.run(go())


def test_a_replay_in_the_order_written_asks_the_history_a_few_times(tmp_path: Path) -> None:
    n = 3000
    found, asked, _ = _replay(tmp_path / "h.db", list(range(n)))
    assert found == [{"text": f"n{k}", "pad": "x"} for k in range(n)]
    # the first lookup finds its answer; the rest are read ahead, but for the few asked
    # while a page is on its way
    assert sum(asked) < n // 10


def test_a_replay_in_another_order_gets_every_answer(tmp_path: Path) -> None:
    n = 1500
    order = list(range(n))
    random.Random(7).shuffle(order)
    found, asked, _ = _replay(tmp_path / "h.db", order)
    assert found == [{"text": f"n{k}", "pad": "x"} for k in order]
    assert asked  # what was not held ahead was asked of the history


def test_what_is_held_ahead_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readahead, "_PAGE_BYTES", 200_000)
    monkeypatch.setattr(readahead, "_HELD_BYTES", 400_000)
    found, _, most = _replay(tmp_path / "h.db", list(range(60)), size=50_000)
    assert [f["text"] for f in found] == [f"n{k}" for k in range(60)]
    assert most <= 400_000 + 200_000 + 60_000  # the cap, a page, the entry that crossed it
