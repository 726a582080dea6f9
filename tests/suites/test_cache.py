"""The run cache end to end against a fake server that counts requests: a `--cache` rerun
makes none, a plain rerun pays only for the agent's answers, run k replays run k, nothing
broken is kept, entries expire, and a history that cannot be opened never fails a run."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from oxyeval.store import open_store
from oxyeval.suites.cases.run import run_cases
from oxyeval.suites.consistency import run_tests
from oxyeval.suites.consistency.results import ConsistencyRun
from oxyeval.suites.run_cache import CachePolicy, RunCache, Tally, counting

from ..conftest import MakeProject
from ..fakes import (
    FakeServer,
    RecordedRequest,
    fake_openai,
    last_tool_results,
    openai_chat_response,
    openai_tool_call_response,
)
from ._helpers import count_lookups

ANSWERS = ["The total is 42.", "Total: 42", "It is 42 in all."]


class Script:
    """Agent answers in turn (the test runs one run at a time, so run k gets answer k),
    a verdict for judge prompts; counts both."""

    def __init__(self, answers: list[Any] | None = None, verdict: str = "A") -> None:
        self.answers = list(answers or ANSWERS)
        self.verdict = verdict
        self.agent = self.judge = 0
        self._lock = threading.Lock()
        self._next = 0

    def reset(self, answers: list[Any] | None = None) -> None:
        with self._lock:
            self._next = 0
            if answers is not None:
                self.answers = list(answers)

    def __call__(self, request: RecordedRequest) -> Any:
        last = request.body["messages"][-1]["content"]
        with self._lock:
            if "[Submission 1]" in str(last):
                self.judge += 1
                return f"Same facts.\nAnswer: {self.verdict}"
            self.agent += 1
            answer = self.answers[self._next % len(self.answers)]
            self._next += 1
        return answer


def _project(make_project: MakeProject, url: str, n: int = 3, extra: str = "") -> Path:
    config = (
        f"models:\n  - name: local\n    vendor: openai\n    model_ref: m\n    api_url: {url}\n"
        "    max_retries: 0\n" + extra
    )
    agent = (
        "model: local\nsystem_instructions: Be brief.\ntests:\n"
        f"  - type: consistency\n    name: totals\n    n: {n}\n    concurrency: 1\n"
        "    task_description: What is the total?\n"
    )
    return make_project(config, {"a.agent.yml": agent})


def _run(root: Path, **kwargs: Any) -> ConsistencyRun:
    return run_tests([root / "a.agent.yml"], **kwargs)


def _texts(run: ConsistencyRun) -> list[str | None]:
    return [o.text for o in run.tests[0].outputs]


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(script: Script):
    with fake_openai(script) as s:
        yield s


def test_a_cache_rerun_makes_no_request(
    make_project: MakeProject, server: FakeServer, script: Script
) -> None:
    root = _project(make_project, server.url)
    first = _run(root, cache=True)
    assert len(server.requests) == 6  # 3 answers, 3 pairs of different texts judged
    assert first.cached_calls == 0 and first.tests[0].judge_calls == 3
    script.reset(["changed", "changed too", "and this"])  # a request would show it
    again = _run(root, cache=True)
    assert len(server.requests) == 6
    assert _texts(again) == _texts(first) == ANSWERS  # run k replays run k
    test = again.tests[0]
    assert test.accuracy == first.tests[0].accuracy == 1.0
    assert (test.judge_calls, test.cached_calls, again.cached_calls) == (0, 6, 6)
    assert [c["cached"] for c in test.to_dict()["comparisons"] if not c["identical"]] == [True] * 3
    assert [o.latency for o in test.outputs] == [0.0] * 3  # replayed, not waited for


def test_a_plain_rerun_makes_only_the_agent_calls(
    make_project: MakeProject, server: FakeServer, script: Script
) -> None:
    root = _project(make_project, server.url)
    first = _run(root)
    assert (script.agent, script.judge) == (3, 3) and first.cached_calls == 0
    script.reset()
    again = _run(root)
    assert (script.agent, script.judge) == (6, 3)  # the answers again, no judge call
    assert again.tests[0].judge_calls == 0
    assert again.cached_calls == again.tests[0].cached_calls == first.tests[0].judge_calls
    assert again.tests[0].accuracy == first.tests[0].accuracy
    assert (root / ".oxy" / "oxyeval.db").is_file()


def test_no_cache_makes_every_call_and_opens_no_history(
    make_project: MakeProject, server: FakeServer, script: Script
) -> None:
    root = _project(make_project, server.url)
    _run(root, cache=False, history=False)  # results are stored by default: not here
    assert not (root / ".oxy").exists()
    _run(root, cache=True)
    script.reset()
    before = len(server.requests)
    run = _run(root, cache=False)
    assert len(server.requests) - before == 6 and run.cached_calls == 0


def test_no_cache_does_not_read_the_verdicts_kept(
    make_project: MakeProject, server: FakeServer, script: Script
) -> None:
    root = _project(make_project, server.url, n=2)
    _run(root)
    assert script.judge == 1
    script.reset()
    _run(root, cache=False)  # the verdict is there, but not read
    assert script.judge == 2


def test_failed_and_empty_answers_are_asked_again(
    make_project: MakeProject, server: FakeServer, script: Script
) -> None:
    script.reset([ANSWERS[0], "", ANSWERS[2]])
    root = _project(make_project, server.url)
    first = _run(root, cache=True)
    assert first.tests[0].run_errors and script.agent == 3
    script.reset([ANSWERS[1]])  # run 2 is asked again and now answers
    again = _run(root, cache=True)
    assert script.agent == 4
    assert _texts(again) == [ANSWERS[0], ANSWERS[1], ANSWERS[2]]
    assert not again.tests[0].run_errors


def test_truncated_answers_are_kept_unless_told_not_to(make_project: MakeProject) -> None:
    cut = [openai_chat_response(f"The total is {k}", finish_reason="length") for k in (1, 2)]
    for extra, expected in (("", 0), ("cache: {truncated: false}\n", 2)):
        script = Script(cut, verdict="A")
        with fake_openai(script) as server:
            root = _project(make_project, server.url, n=2, extra=extra)
            _run(root, cache=True)
            script.reset()
            agent_before = script.agent
            _run(root, cache=True)
            assert script.agent - agent_before == expected, extra
        (root / ".oxy" / "oxyeval.db").unlink()


def test_expired_entries_are_ignored_and_purged(
    make_project: MakeProject, server: FakeServer, script: Script
) -> None:
    root = _project(make_project, server.url, extra="cache: {ttl_days: 1}\n")
    _run(root, cache=True)
    db = root / ".oxy" / "oxyeval.db"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE cache_entries SET created_at = '2000-01-01T00:00:00.000Z'")
    conn.commit()
    conn.close()
    script.reset()
    again = _run(root, cache=True)
    assert len(server.requests) == 12 and again.cached_calls == 0  # all asked again
    with open_store(db, read_only=True) as store:
        stats = store.cache.stats()
    assert stats.entries == 6  # the new ones; the expired ones were deleted
    assert stats.kind("answer").oldest > "2001"


def test_an_expired_entry_left_behind_is_purged_at_the_end_of_a_run(
    make_project: MakeProject, server: FakeServer
) -> None:
    root = _project(make_project, server.url, extra="cache: {ttl_days: 0.5}\n")
    _run(root)
    db = root / ".oxy" / "oxyeval.db"
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO cache_entries (key_hash, kind, model, value, size, created_at, hits) "
        "VALUES ('old', 'answer', 'x', '{}', 2, '2000-01-01T00:00:00.000Z', 0)"
    )
    conn.commit()
    conn.close()
    _run(root, cache=False)  # no cache: nothing read, nothing purged
    assert sqlite3.connect(db).execute(
        "SELECT count(*) FROM cache_entries WHERE key_hash = 'old'"
    ).fetchone() == (1,)
    _run(root)
    assert sqlite3.connect(db).execute(
        "SELECT count(*) FROM cache_entries WHERE key_hash = 'old'"
    ).fetchone() == (0,)


def test_a_history_that_cannot_open_disables_the_cache_with_one_warning(
    make_project: MakeProject,
    server: FakeServer,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    root = _project(make_project, server.url)
    blocked = tmp_path / "a-directory.db"
    blocked.mkdir()
    with caplog.at_level(logging.WARNING, logger="oxyeval"):
        run = _run(root, db=str(blocked))
    assert run.tests[0].accuracy == 1.0 and run.tests[0].judge_calls == 3
    warnings = [r.getMessage() for r in caplog.records if "cache" in r.getMessage()]
    assert len(warnings) == 1 and "disabled" in warnings[0] and str(blocked) in warnings[0]


SQL_AGENT = """\
model: local
system_instructions: Use the tool.
tools:
  - {name: query, type: execute_sql, database: shop}
tests:
  - type: consistency
    n: 2
    concurrency: 1
    task_description: Which region sells most?
"""


def test_an_agents_tool_loop_is_cached_call_by_call(make_project: MakeProject) -> None:
    turns: list[str] = []

    def answer(request: RecordedRequest) -> Any:
        if "[Submission 1]" in str(request.body["messages"][-1]["content"]):
            return "Same.\nAnswer: A"
        results = last_tool_results(request.body)
        turns.append("answer" if results else "tool")
        if not results:
            return openai_tool_call_response(
                [("query", {"sql": "SELECT max(amount) AS m FROM sales.csv"})]
            )
        return f"Max is {results[0][1].splitlines()[2]} (turn {len(turns)})"

    with fake_openai(answer) as server:
        config = (
            f"models:\n  - name: local\n    vendor: openai\n    model_ref: m\n    api_url: {server.url}\n"
            "databases:\n  - {name: shop, type: duckdb, dataset: data}\n"
        )
        root = make_project(
            config,
            {"a.agent.yml": SQL_AGENT, "data/sales.csv": "region,amount\nNorth,15\nSouth,25\n"},
        )
        first = _run(root, cache=True)
        made = len(server.requests)
        again = _run(root, cache=True)
        assert len(server.requests) == made
    assert turns == ["tool", "answer", "tool", "answer"]
    assert made == 5  # two calls per run, and one judge call (the turn numbers differ)
    assert _texts(again) == _texts(first)
    assert again.tests[0].cached_calls == 5


WORKFLOW = """\
tasks:
  - {name: say, type: agent, agent_ref: a.agent.yml, prompt: "What is the total?"}
tests:
  - type: consistency
    task_ref: say
    n: 3
    concurrency: 1
"""


def test_runs_of_a_workflow_test_stay_separate_runs(
    make_project: MakeProject, server: FakeServer, script: Script
) -> None:
    root = _project(make_project, server.url)
    (root / "w.workflow.yml").write_text(WORKFLOW)
    (root / "a.agent.yml").write_text("model: local\nsystem_instructions: Be brief.\n")
    first = run_tests([root / "w.workflow.yml"], cache=True)
    assert _texts(first) == ANSWERS and script.agent == 3
    script.reset(["x", "y", "z"])
    again = run_tests([root / "w.workflow.yml"], cache=True)
    assert script.agent == 3 and _texts(again) == ANSWERS  # run k of the workflow replays run k
    assert again.cached_calls == 6


PROMPT = """\
name: totals
model: local
template: "Question: {{ q }}"
similarity: lexical
cases:
  - {name: one, input: {q: "one?"}, expected_output: "The total is 42."}
  - {name: two, input: {q: "two?"}, expected_output: "Total: 42"}
"""


def test_test_cases_replay_answers_with_cache(
    make_project: MakeProject, server: FakeServer, script: Script
) -> None:
    root = _project(make_project, server.url)
    (root / "p.prompt.yml").write_text(PROMPT)
    first = run_cases([root / "p.prompt.yml"], cache=True, concurrency=1)
    assert len(server.requests) == 2 and first.cached_calls == 0
    assert not any(r.cached for r in first.results)
    script.reset(["other", "other"])
    again = run_cases([root / "p.prompt.yml"], cache=True)
    assert len(server.requests) == 2 and again.cached_calls == 2
    assert all(r.cached for r in again.results)
    assert {r.name: r.actual_output for r in again.results} == {
        r.name: r.actual_output for r in first.results
    }
    plain = run_cases([root / "p.prompt.yml"])  # by default cases call the model
    assert len(server.requests) == 4 and plain.cached_calls == 0


def test_policy_from_flags_and_config(make_project: MakeProject) -> None:
    from oxyeval.project.config import load_project

    root = make_project(
        "models:\n  - {name: m, vendor: mock, outputs: [x]}\ncache: {ttl_days: 7, truncated: true}\n"
    )
    project = load_project(root)
    assert CachePolicy.for_project(project) == CachePolicy(False, True, 7.0, True)
    assert CachePolicy.for_project(project, True).answers
    off = CachePolicy.for_project(project, False)
    assert not off.enabled and not off.verdicts
    cutoff = CachePolicy(ttl_days=7).cutoff()
    assert cutoff is not None and cutoff < CachePolicy(ttl_days=1).cutoff()  # type: ignore[operator]
    assert CachePolicy().cutoff() is None


def test_lookups_that_arrive_together_share_one_query(tmp_path: Path) -> None:
    calls: list[int] = []

    async def go() -> tuple[list[Any], Tally, int]:
        with open_store(tmp_path / "h.db") as store:
            asked = count_lookups(store)
            cache = RunCache(CachePolicy(answers=True), store=store)
            cache.remember("answer", {"k": 1}, {"text": "one"}, "x/y")
            await cache.aclose()
            cache = RunCache(CachePolicy(answers=True), store=store)
            with counting() as tally:
                found = await asyncio.gather(*(cache.lookup("answer", {"k": k}) for k in range(50)))
                assert cache.answers is not None
                hit = await cache.answers.get({"k": 1})
            await cache.aclose()
            calls.extend(asked)  # not the check's own read below
            hits = store.cache.get(_hash({"k": 1}))
            return [found, hit], tally, hits.hits if hits else -1

    (found, hit), tally, hits = asyncio.run(go())
    # one query for fifty lookups; the later one is asked again, or served from what is
    # read ahead of a replay if that page has landed (tests/suites/test_readahead.py)
    assert calls in ([50], [50, 1])
    assert found[1] == {"text": "one"} and found.count(None) == 49
    assert hit is not None and hit.text == "one"
    assert tally.calls == 1  # only what the contract served is counted
    assert hits == 2


def test_a_long_run_holds_its_latest_answers_and_asks_the_history_for_older_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of 100,000 calls held every answer it wrote, to serve a key asked twice;
    the older ones are in the history by then."""
    from oxyeval.suites import run_cache

    monkeypatch.setattr(run_cache, "_WRITTEN_KEPT", 5)
    monkeypatch.setattr(run_cache, "_FLUSH_EVERY", 2)

    async def go() -> tuple[list[Any], int]:
        with open_store(tmp_path / "h.db") as store:
            cache = RunCache(CachePolicy(answers=True), store=store)
            for k in range(12):
                cache.remember("answer", {"k": k}, {"text": f"n{k}"}, "x/y")
                await asyncio.sleep(0)  # the background writes run
            held = len(cache._written)
            found = [await cache.lookup("answer", {"k": k}) for k in (0, 5, 11, 99)]
            await cache.aclose()
            monkeypatch.setattr(run_cache, "_FLUSH_EVERY", 1_000)  # none written yet
            cache = RunCache(CachePolicy(answers=True), store=store)
            for k in range(20, 30):
                cache.remember("answer", {"k": k}, {"text": f"n{k}"}, "x/y")
            found.append(await cache.lookup("answer", {"k": 20}))  # left memory, not written
            await cache.aclose()
            return found, held

    found, held = asyncio.run(go())
    assert held == 5
    assert found == [{"text": "n0"}, {"text": "n5"}, {"text": "n11"}, None, {"text": "n20"}]


def _hash(key: dict[str, Any]) -> str:
    from oxyeval.store import content_hash

    return content_hash(key)


def test_counting_scopes_nest() -> None:
    outer, inner = Tally(), Tally()
    cache = RunCache(CachePolicy())
    with counting(outer):
        cache.served("verdict", 2)
        with counting(inner):  # a workflow task inside a test's run: both count it
            cache.served("answer", 1)
            with counting(outer):  # a scope entered again counts once
                cache.served("answer", 1)
    cache.served("answer", 5)  # outside any scope: the run's total only
    assert (outer.calls, inner.calls, cache.total_served) == (4, 2, 9)


CONSISTENCY_RUN = """\
tasks:
  - {name: say, type: agent, agent_ref: a.agent.yml, prompt: "What is the total?", consistency_run: 3}
"""


def test_a_workflow_consistency_run_replays_its_verdicts(
    make_project: MakeProject, server: FakeServer, script: Script
) -> None:
    from oxyeval.suites.run_cache import cache_factory
    from oxyeval.workflow.engine import execute_workflow

    root = _project(make_project, server.url)
    (root / "w.workflow.yml").write_text(CONSISTENCY_RUN)
    (root / "a.agent.yml").write_text("model: local\nsystem_instructions: Be brief.\n")

    def run(flag: bool | None) -> Any:
        script.reset()
        return asyncio.run(
            execute_workflow(root / "w.workflow.yml", concurrency=1, cache=cache_factory(flag))
        )

    first = run(None)
    assert (script.agent, script.judge) == (3, 3)
    details = first.records[0].details["consistency"]
    assert details["judge_calls"] == 3
    again = run(None)  # verdicts replayed, answers asked
    assert (script.agent, script.judge) == (6, 3)
    assert again.records[0].details["consistency"]["judge_calls"] == 0
    assert str(again.output) == str(first.output) == "The total is 42."
    run(True)  # the plain runs kept the answers: replayed at once
    assert (script.agent, script.judge) == (6, 3)
    run(False)
    assert (script.agent, script.judge) == (9, 6)


def test_plain_runs_keep_answers_so_the_first_cache_run_makes_no_request(
    make_project: MakeProject, server: FakeServer, script: Script
) -> None:
    """A plain run keeps agent and prompt answers without replaying them; the first
    --cache run after it replays them all."""
    root = _project(make_project, server.url)
    first = _run(root)
    assert (script.agent, script.judge) == (3, 3) and first.cached_calls == 0
    script.reset(["changed", "changed too", "and this"])  # a request would show it
    before = len(server.requests)
    cached = _run(root, cache=True)
    assert len(server.requests) == before  # nothing asked at all
    assert _texts(cached) == _texts(first) == ANSWERS
    assert cached.cached_calls == 3 + first.tests[0].judge_calls
    (root / "p.prompt.yml").write_text(PROMPT)
    plain = run_cases([root / "p.prompt.yml"], concurrency=1)
    assert plain.cached_calls == 0
    script.reset(["other", "other"])
    before = len(server.requests)
    again = run_cases([root / "p.prompt.yml"], cache=True)
    assert len(server.requests) == before and again.cached_calls == 2
    assert {r.name: r.actual_output for r in again.results} == {
        r.name: r.actual_output for r in plain.results
    }
