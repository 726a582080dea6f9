"""SIGTERM/SIGINT while one test is judged and another still runs: each test once.

Review 2, M1, with a real subprocess and a real signal. The fake judge server answers
the first verdict of test 'fast' and holds the other two open; test 'slow' waits on a
mock model that answers after a minute. The signal is sent once the server holds both
judge requests, so the moment is fixed by what the server has seen, not by a sleep.
The judge's HTTP calls take more loop turns to unwind than the mock's sleep, which is
the order that used to list 'fast' twice (JSON, JUnit 'fast #2', three history rows).
"""

from __future__ import annotations

import json
import signal
import xml.etree.ElementTree as ET
from collections.abc import Callable

import pytest

from oxyeval.store import open_store

from ..conftest import MakeProject
from ..fakes import FakeServer, RecordedRequest, ResponseLike, openai_chat_response, stall
from .test_interrupts import signal_when, start

CONFIG = """\
models:
  - name: quick
    vendor: mock
    outputs: ["one", "two", "three"]
  - name: held
    vendor: mock
    latency_ms: 60000
    outputs: ["never"]
  - name: judge
    vendor: openai
    model_ref: j
    api_url: {url}
    timeout: 60
    max_retries: 0
    concurrency: 4  # stands in for a hosted judge: a local endpoint would start at 1
"""

FAST = """\
model: quick
system_instructions: x
tests:
  - {type: consistency, name: fast, n: 3, task_description: q, model_ref: judge}
"""

SLOW = """\
model: held
system_instructions: x
tests:
  - {type: consistency, name: slow, n: 8, task_description: q, model_ref: judge}
"""


def verdict_then_hold() -> Callable[[RecordedRequest], ResponseLike]:
    """The first judge call gets a verdict; every later one is held open."""
    seen: list[int] = []

    def respond(_request: RecordedRequest) -> ResponseLike:
        seen.append(1)
        if len(seen) > 1:
            return stall(60.0)
        return (200, openai_chat_response("Same.\nAnswer: A"))

    return respond


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_while_judging_reports_and_stores_each_test_once(
    make_project: MakeProject, sig: signal.Signals
) -> None:
    with FakeServer(verdict_then_hold()) as server:
        root = make_project(
            CONFIG.format(url=server.url), {"a.agent.yml": FAST, "b.agent.yml": SLOW}
        )
        args = ["test", "a.agent.yml", "b.agent.yml", "--format", "json"]
        proc = start([*args, "--junit", "report.xml"], root)
        code, out, err = signal_when(proc, lambda: len(server.requests) >= 3, sig)

    assert code == 3, err
    doc = json.loads(out)
    tests = [(t["name"], t["status"], t["accuracy"]) for t in doc["tests"]]
    assert tests == [("fast", "interrupted", 1.0), ("slow", "interrupted", None)]
    fast, slow = doc["tests"]
    assert "3 of 3 run(s) finished, 1 of 3 pair(s) judged" in fast["error"]
    assert (slow["successfulRuns"], slow["unfinishedRuns"]) == (0, 8)
    assert "reporting 0 test(s) that finished and 2 cut short" in err

    junit = ET.parse(root / "report.xml").getroot()
    names = sorted(c.get("name") or "" for c in junit.iter("testcase"))
    assert names == ["fast", "slow"]
    assert sum(int(suite.get("tests") or 0) for suite in junit.iter("testsuite")) == 2
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert props["slow.unfinished_runs"] == "8" and props["fast.unfinished_runs"] == "0"

    with open_store(root / ".oxy" / "oxyeval.db", read_only=True) as store:
        (run,) = store.runs.list(5)
        rows = store.tests.for_run(run.id)
    assert run.status == "interrupted"
    assert sorted((r.name, r.status, r.accuracy) for r in rows) == [
        ("fast", "interrupted", 1.0),
        ("slow", "interrupted", None),
    ]
