"""A plain rerun of a consistency test whose runs answer in the other order asks the judge
nothing: each pair is judged in a canonical order, so the same
two outputs make the same judge prompt, and the kept verdict is replayed.

The agent answers in turn (one run at a time, so run k gets answer k); the second run
gets the answers reversed: every pair of texts arrives in the opposite run order.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest

from oxyeval.suites.consistency import run_tests
from oxyeval.suites.consistency.results import ConsistencyRun

from ..conftest import MakeProject
from ..fakes import RecordedRequest, fake_openai

ANSWERS = ["The total is 42.", "Total: 42", "It is 43.", "Forty-two in all (42)."]
_SUBMISSION = re.compile(r"\[Submission (\d)\]\n(.*?)\n\[End of submission \1\]", re.S)


class Script:
    """Agent answers in turn; a judge that says A when both submissions name 42, whatever
    their order; every judge prompt is recorded as (submission 1, submission 2)."""

    def __init__(self) -> None:
        self.answers = list(ANSWERS)
        self.asked: list[tuple[str, str]] = []
        self.agent = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Any:
        last = str(request.body["messages"][-1]["content"])
        with self._lock:
            found = dict(_SUBMISSION.findall(last))
            if found:
                one, two = found["1"], found["2"]
                self.asked.append((one, two))
                verdict = "A" if "42" in one and "42" in two else "B"
                return f"Compared the totals.\nAnswer: {verdict}"
            answer = self.answers[self.agent % len(self.answers)]
            self.agent += 1
            return answer


def _project(make_project: MakeProject, url: str, pairing: str) -> Path:
    config = (
        f"models:\n  - name: local\n    vendor: openai\n    model_ref: m\n    api_url: {url}\n"
        "    max_retries: 0\n"
    )
    agent = (
        "model: local\nsystem_instructions: Be brief.\ntests:\n"
        f"  - type: consistency\n    name: totals\n    n: {len(ANSWERS)}\n    concurrency: 1\n"
        f"    pairing: {pairing}\n    task_description: What is the total?\n"
    )
    return make_project(config, {"a.agent.yml": agent})


def _by_text(run: ConsistencyRun) -> dict[str, float | None]:
    return {o.text or "": o.consistency for o in run.tests[0].outputs}


@pytest.mark.parametrize("pairing", ["all", "ring"])
def test_a_rerun_in_the_opposite_order_makes_no_judge_request(
    make_project: MakeProject, pairing: str
) -> None:
    script = Script()
    with fake_openai(script) as server:
        root = _project(make_project, server.url, pairing)
        first = run_tests([root / "a.agent.yml"])
        asked_first = list(script.asked)
        assert [o.text for o in first.tests[0].outputs] == ANSWERS
        script.answers = list(reversed(ANSWERS))
        script.agent = 0
        requests_before = len(server.requests)
        again = run_tests([root / "a.agent.yml"])  # a plain rerun: verdicts are kept
        new_requests = server.requests[requests_before:]
    assert [o.text for o in again.tests[0].outputs] == list(reversed(ANSWERS))
    # The answers were asked again (4 requests); the judge was not.
    assert len(new_requests) == len(ANSWERS)
    assert script.asked == asked_first and len(asked_first) == first.tests[0].judge_calls > 0
    test, before = again.tests[0], first.tests[0]
    assert test.judge_calls == 0 and test.cached_calls == before.judge_calls
    assert test.accuracy == before.accuracy is not None
    assert 0 < before.accuracy < 1  # a score both verdicts shape, not a trivial one
    # Each output keeps its consistency, whichever run produced it.
    assert _by_text(again) == _by_text(first)


def test_the_canonical_order_is_what_the_judge_sees(make_project: MakeProject) -> None:
    # Whichever run gave a text, a pair of texts is sent in one order only.
    script = Script()
    with fake_openai(script) as server:
        root = _project(make_project, server.url, "all")
        run_tests([root / "a.agent.yml"], cache=False)
        script.answers, script.agent = list(reversed(ANSWERS)), 0
        run_tests([root / "a.agent.yml"], cache=False)  # no cache: the judge is asked again
    half = len(script.asked) // 2
    assert half == 6
    assert sorted(script.asked[:half]) == sorted(script.asked[half:])
