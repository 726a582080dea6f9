"""How a case run's results go into the history: previous results are read only for the
cases the history had judged before, and each execution is stored under the id and time
the run chose."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from oxyeval.evaluation import Previous
from oxyeval.suites.cases import storage
from oxyeval.suites.cases.results import CaseResult


def _case(name: str, *, seen: bool) -> tuple[Any, CaseResult]:
    result = CaseResult(
        case_id=f"p::{name}", name=name, prompt_id="p", prompt_version=1, previous_unread=seen
    )
    return result.as_result(slim=True), result


def test_only_cases_the_history_judged_before_are_asked_for_their_previous_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[list[str]] = []
    earlier = Previous(accuracy=0.9, at="2026-01-01T00:00:00.000Z", run_id="run-0")

    def read(_store: Any, _run_id: Any, items: Any) -> list[Previous | None]:
        asked.append([case.name for _result, case in items])
        return [earlier for _ in items]

    monkeypatch.setattr(storage, "earlier_results", read)
    items = [_case("new", seen=False), _case("old", seen=True), _case("new2", seen=False)]
    assert storage.earlier_cases(object(), "run-1", items) == [None, earlier, None]  # type: ignore[arg-type]
    assert asked == [["old"]]
    asked.clear()
    fresh = [_case("a", seen=False), _case("b", seen=False)]
    assert storage.earlier_cases(object(), "run-1", fresh) == [None, None]  # type: ignore[arg-type]
    assert asked == []  # a first run reads nothing


def test_executions_are_stored_under_the_ids_and_time_the_run_chose() -> None:
    stored: list[Any] = []

    class Executions:
        def record_many(self, batch: list[Any]) -> int:
            stored.extend(batch)
            return len(batch)

    class Store:
        executions = Executions()

    items = [_case("a", seen=False), _case("b", seen=True)]
    stamps = storage.execution_rows(Store(), "run-1", items)  # type: ignore[arg-type]
    assert [(e.id, e.created_at, e.run_id) for e in stored] == [
        (s.id, s.created_at, "run-1") for s in stamps
    ]
    assert len({s.id for s in stamps}) == 2 and all(len(s.id) == 32 for s in stamps)


def _stored_case(name: str, runs: int) -> Any:
    """A stored case of prompt ``p`` with ``runs`` judged executions."""
    from oxyeval.store import TestCase

    at = "2026-01-01T00:00:00.000Z"
    return TestCase(
        id=f"p::{name}", prompt_id="p", name=name, description=None, input={},
        expected_output="yes", threshold=None, source_file=None, created_at=at,
        updated_at=at, total_runs=runs,
    )  # fmt: skip


class _History:
    """A stand-in for the store a run's case histories are read from: ``stats`` answers
    with ``answer`` (each request's history, noted in ``read``), ``results`` with no
    earlier result unless ``earlier`` names one (subject -> its latest result row)."""

    def __init__(self, answer: Any, earlier: dict[str, Any] | None = None) -> None:
        self.answer = answer
        self.read: list[list[str]] = []
        self.earlier = earlier or {}
        self.stats, self.results = self, self

    def baselines(self, requests: Any, recent: int) -> list[Any]:
        self.read.append([case_id for case_id, _baseline in requests])
        return [self.answer(case_id) for case_id, _baseline in requests]

    def recent(self, kind: str, subjects: Any, limit: int) -> dict[str, Any]:
        return {s: [self.earlier[s]] for s in subjects if s in self.earlier}

    def tally_rows(self, kind: str, pairs: Any) -> dict[Any, Any]:
        return {}

    def read_elsewhere(self, function: str, *args: Any) -> tuple[bool, Any]:
        return False, None  # no writer process: read here


def test_only_cases_judged_before_have_their_history_read() -> None:
    from oxyeval.store import CaseHistory
    from oxyeval.suites.cases.histories import CaseHistories

    old = CaseHistory(3, 1.0, 0.9, 8.0, ())
    store = _History(lambda _case_id: old)
    case = _stored_case
    cases = [case("new", 0), case("old", 3), case("new2", 0)]
    histories = CaseHistories(store, cases, "lexical", 10)  # type: ignore[arg-type]

    async def ask() -> list[Any]:
        return [await histories.get(c, "yes") for c in cases]

    got = asyncio.run(ask())
    assert got[1].history is old and store.read == [["p::old"]]  # of the case judged before
    for fresh in (got[0].history, got[2].history):  # what a read finds for a case never judged
        assert (fresh.total_runs, fresh.historical_pass_rate, fresh.recent) == (0, None, ())
    # none has a previous result to read when it is written: known to be none, or read
    assert all(e.read and e.previous is None for e in got)
    store.read.clear()
    first_run = CaseHistories(store, [case("a", 0), case("b", 0)], "lexical", 10)  # type: ignore[arg-type]
    asyncio.run(first_run.get(case("a", 0), "yes"))
    assert store.read == []  # a first run reads nothing


def test_a_case_s_previous_result_comes_with_its_history_and_its_write_reads_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The previous scored result is read with the chunk's histories, ahead of the cases,
    so the batch that stores them waits on no read (a replay of 10,000 cases waited
    about a second on them)."""
    from oxyeval.store import CaseHistory
    from oxyeval.suites.cases.histories import CaseHistories

    at = "2026-01-01T00:00:00.000Z"
    store = _History(
        lambda _case_id: CaseHistory(1, 1.0, 1.0, 3.0, ()),
        earlier={
            "p::old": ("run-0", "passed", 0.75, at),
            "p::errored": ("run-0", "error", None, at),
        },
    )
    cases = [_stored_case("old", 1), _stored_case("errored", 1)]
    histories = CaseHistories(store, cases, "lexical", 10)  # type: ignore[arg-type]
    old, errored = (
        asyncio.run(histories.get(cases[0], "yes")),
        asyncio.run(histories.get(cases[1], "yes")),
    )
    assert old.read and old.previous == Previous(0.75, at, "run-0", None)
    assert errored.read and errored.previous is None  # an error is no previous score
    asked: list[str] = []
    monkeypatch.setattr(storage, "earlier_results", lambda *a: asked.append("read") or [])
    result = CaseResult(
        case_id="p::old", name="old", prompt_id="p", prompt_version=1, previous=old.previous,
        previous_unread=False,
    )  # fmt: skip
    assert storage.earlier_cases(object(), "run-1", [(result.as_result(), result)]) == [None]  # type: ignore[arg-type]
    assert asked == [] and result.as_result().previous == old.previous


def test_the_next_chunk_of_histories_is_read_while_a_chunk_s_cases_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from oxyeval.store import CaseHistory
    from oxyeval.suites.cases import histories as module

    monkeypatch.setattr(module, "HISTORY_CHUNK", 2)
    store = _History(lambda case_id: CaseHistory(int(case_id[-1]), 1.0, 1.0, 1.0, ()))
    read = store.read
    cases = [_stored_case(f"c{n}", n) for n in range(1, 6)]
    histories = module.CaseHistories(store, cases, "lexical", 10)  # type: ignore[arg-type]

    async def ask() -> list[int]:
        first = await histories.get(cases[0], "yes")
        for _ in range(200):  # the next chunk's read began with the first: it ends alone
            if len(read) == 2:
                break
            await asyncio.sleep(0.01)
        assert read == [["p::c1", "p::c2"], ["p::c3", "p::c4"]]
        rest = [await histories.get(c, "yes") for c in cases[1:]]
        return [e.history.total_runs for e in (first, *rest)]

    assert asyncio.run(ask()) == [1, 2, 3, 4, 5]  # each case its own history
    assert read == [["p::c1", "p::c2"], ["p::c3", "p::c4"], ["p::c5"]]  # each read once


def test_a_failed_read_ahead_the_run_never_reaches_is_not_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gc

    from oxyeval.store import CaseHistory
    from oxyeval.suites.cases import histories as module

    monkeypatch.setattr(module, "HISTORY_CHUNK", 2)

    def answer(case_id: str) -> CaseHistory:
        if case_id == "p::c3":
            raise RuntimeError("the history went away")
        return CaseHistory(1, 1.0, 1.0, 1.0, ())

    unretrieved: list[object] = []

    async def run_first_chunk_only() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
        cases = [_stored_case(f"c{n}", 1) for n in range(1, 5)]
        histories = module.CaseHistories(_History(answer), cases, "lexical", 10)  # type: ignore[arg-type]
        await histories.get(cases[0], "yes")  # reads chunk 0, and chunk 1 ahead (it fails)
        await asyncio.sleep(0.1)
        del histories
        gc.collect()

    asyncio.run(run_first_chunk_only())
    assert unretrieved == []
