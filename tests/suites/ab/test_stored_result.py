"""A stored A/B run ranked again: the same winner and ranks as the live run, and another
criterion re-ranks it without a model call."""

from __future__ import annotations

from pathlib import Path

import pytest

from oxyeval.store import NotFoundError, open_store
from oxyeval.suites import latest_ab_run, run_ab_tests, stored_ab_result

from ...conftest import MakeProject

CONFIG = """\
models:
  - name: slow-good
    vendor: mock
    latency_ms: 40
    outputs: ["positive"]
  - name: fast-bad
    vendor: mock
    outputs: ["negative, I think"]
"""
PROMPT = """\
name: sentiment
model: slow-good
template: "Feedback: {{ text }}"
similarity: lexical
branches:
  - {name: good, model: slow-good, control: true}
  - {name: quick, model: fast-bad}
cases:
  - {name: happy, input: {text: "I love it"}, expected_output: positive}
"""


@pytest.fixture
def project(make_project: MakeProject) -> Path:
    return make_project(CONFIG, {"s.prompt.yml": PROMPT})


def test_a_stored_run_ranks_as_it_ran_and_under_another_criterion(project: Path) -> None:
    # Five iterations: enough for the significance call that a winner needs.
    live = run_ab_tests([project / "s.prompt.yml"], iterations=5).results[0]
    with open_store(project / ".oxy" / "oxyeval.db") as store:
        run_id = latest_ab_run(store, "sentiment::happy")
        assert run_id == live.run_id
        again = stored_ab_result(store, run_id)
        assert again.criteria == "best_quality" and again.iterations == 5
        assert again.winner is not None and live.winner is not None
        assert again.winner.branch.name == live.winner.branch.name == "good"
        assert [(b.branch.name, b.rank) for b in again.branches] == [
            (b.branch.name, b.rank) for b in live.branches
        ]
        assert again.branches[0].quality_score == pytest.approx(live.branches[0].quality_score)
        fastest = stored_ab_result(store, run_id, "fastest")
        assert fastest.criteria == "fastest"
        assert fastest.winner is not None and fastest.winner.branch.name == "quick"
        with pytest.raises(NotFoundError):
            stored_ab_result(store, "nope")
        assert latest_ab_run(store, "sentiment::none") is None
