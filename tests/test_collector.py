"""The collector relaxed for a run: what a run changes is put back, nested and side by
side entries change it once, and a process that turned the collector off keeps it off."""

from __future__ import annotations

import gc

from oxyeval._collector import relaxed


def test_a_run_collects_rarely_and_puts_the_collector_back() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    with relaxed():
        inside = gc.get_threshold()
        assert inside[0] >= 50_000 and inside[0] > before[0]
        assert gc.get_freeze_count() >= frozen  # what existed is frozen
        with relaxed():  # a run inside a run: nothing changes again
            assert gc.get_threshold() == inside
        assert gc.get_threshold() == inside  # the inner one leaving restores nothing
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_runs_side_by_side_restore_the_collector_when_the_last_one_leaves() -> None:
    before = gc.get_threshold()
    first, second = relaxed(), relaxed()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first to start ends first
    assert gc.get_threshold() != before  # the other run still goes on
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before


def test_a_collector_turned_off_stays_as_it_was() -> None:
    before = gc.get_threshold()
    gc.disable()
    try:
        with relaxed():
            assert gc.get_threshold() == before and not gc.isenabled()
    finally:
        gc.enable()
