"""An interrupt while one test is judged and another still runs: each test once.

Review 2, M1: a test that was being judged when Ctrl-C/SIGTERM arrived was listed
twice (once as "interrupted before it finished", once with its partial score) in the
report, the JSON, the JUnit file and the history. The cause is an ordering, not a
timing: the test whose cancellation takes more steps to unwind (a judge call whose
HTTP client closes its connection) finished after the others, and the run had stopped
waiting for it. The fake model below makes that ordering certain: the judge call blocks
until cancelled, then takes a few more loop turns to clean up, as a real client does,
while the other test's runs stop at once. No sleeps, no timing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from oxyeval.providers.mock import MockAPI
from oxyeval.store import open_store
from oxyeval.suites.consistency import run_tests_async
from oxyeval.suites.consistency.results import ConsistencyRun

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: quick
    vendor: mock
    outputs: ["one", "two", "three"]
  - name: held
    vendor: mock
    outputs: ["never"]
  - name: judge
    vendor: mock
    rules:
      - match: "."
        output: "Same.\\nAnswer: A"
"""

AGENT_FAST = """\
model: quick
system_instructions: x
tests:
  - {type: consistency, name: fast, n: 3, task_description: q, model_ref: judge}
"""

AGENT_SLOW = """\
model: held
system_instructions: x
tests:
  - {type: consistency, name: slow, n: 4, task_description: q, model_ref: judge}
"""

CLEANUP_TURNS = 20  # loop turns a cancelled judge call takes to close its connection


class Gate:
    """Holds the calls of the 'held' model and the judge's calls after the first verdict."""

    def __init__(self) -> None:
        self.verdicts_given = 0
        self.held_verdicts = 0
        self.held_runs = 0
        self.judge_waiting = asyncio.Event()
        self.runs_waiting = asyncio.Event()
        self.judge_cleaned_up = False

    async def judge(self, original: Any) -> Any:
        if self.verdicts_given < 1:  # one verdict, so the cut test has a partial score
            self.verdicts_given += 1
            return await original()
        self.held_verdicts += 1
        if self.held_verdicts == 2:  # both other pairs are with the judge
            self.judge_waiting.set()
        try:
            await asyncio.Event().wait()  # held open until cancelled
        except asyncio.CancelledError:
            for _ in range(CLEANUP_TURNS):
                await asyncio.sleep(0)
            self.judge_cleaned_up = True
            raise

    async def held(self) -> Any:
        self.held_runs += 1
        if self.held_runs == 4:
            self.runs_waiting.set()
        await asyncio.Event().wait()  # stops at once when cancelled


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Gate:
    gate = Gate()
    generate = MockAPI.generate

    async def fake(self: MockAPI, messages: Any, params: Any) -> Any:
        name = self.spec.name
        if name == "judge":
            return await gate.judge(lambda: generate(self, messages, params))
        if name == "held":
            return await gate.held()
        return await generate(self, messages, params)

    monkeypatch.setattr(MockAPI, "generate", fake)
    return gate


def interrupt_while_judging(root: Path, gate: Gate, run: ConsistencyRun) -> None:
    """Run both tests; cancel once 'fast' has one verdict and waits for the other two,
    and all four runs of 'slow' wait for an answer; wait for the run to stop."""

    async def go() -> None:
        task = asyncio.ensure_future(
            run_tests_async([root / "a.agent.yml", root / "b.agent.yml"], into=run)
        )
        await gate.judge_waiting.wait()
        await gate.runs_waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # What the caller sees when the call raised is what it reports: nothing may
        # change afterwards (asyncio.run would still finish a task left behind).
        seen = [(t.name, t.error) for t in run.tests]
        await asyncio.sleep(0)
        for _ in range(CLEANUP_TURNS * 2):
            await asyncio.sleep(0)
        assert [(t.name, t.error) for t in run.tests] == seen

    asyncio.run(go())


def test_a_test_cut_short_while_judged_is_reported_and_stored_once(
    make_project: MakeProject, gate: Gate
) -> None:
    root = make_project(CONFIG, {"a.agent.yml": AGENT_FAST, "b.agent.yml": AGENT_SLOW})
    run = ConsistencyRun()
    interrupt_while_judging(root, gate, run)

    assert gate.judge_cleaned_up  # the judge call was under way and was cancelled
    assert [t.name for t in run.tests] == ["fast", "slow"]
    fast, slow = run.tests
    assert fast.interrupted and slow.interrupted
    # 'fast' keeps its partial state: all 3 runs and the one verdict it got.
    assert [o.text for o in fast.outputs] == ["one", "two", "three"]
    assert fast.judged_pairs == 1 and fast.accuracy == 1.0
    assert "3 of 3 run(s) finished, 1 of 3 pair(s) judged" in (fast.error or "")
    assert (
        slow.outputs == []
        and "0 of 4 run(s) finished; not scored (fewer than 2 runs had answered)"
        in (slow.error or "")
    )

    (note,) = run.history
    with open_store(root / ".oxy" / "oxyeval.db", read_only=True) as store:
        stored = store.runs.get(note.run_id or "")
        rows = store.tests.for_run(note.run_id or "")
    assert stored is not None and stored.status == "interrupted"
    assert sorted((r.name, r.status, r.accuracy) for r in rows) == [
        ("fast", "interrupted", 1.0),
        ("slow", "interrupted", None),
    ]


def test_the_json_and_junit_reports_list_each_test_once(
    make_project: MakeProject, gate: Gate
) -> None:
    import xml.etree.ElementTree as ET

    from oxyeval.report.json import to_json
    from oxyeval.report.junit import consistency_junit
    from oxyeval.report.verdict import Gates, decide

    root = make_project(CONFIG, {"a.agent.yml": AGENT_FAST, "b.agent.yml": AGENT_SLOW})
    run = ConsistencyRun()
    interrupt_while_judging(root, gate, run)
    run.interrupted = True

    doc = to_json(run)
    assert doc["summary"]["exitCode"] == 3
    assert [(t["name"], t["status"]) for t in doc["tests"]] == [
        ("fast", "interrupted"),
        ("slow", "interrupted"),
    ]
    suites = ET.fromstring(consistency_junit(run, decide(run, Gates())))
    names = [c.get("name") for c in suites.iter("testcase")]
    assert sorted(names) == ["fast", "slow"]
