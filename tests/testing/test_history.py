"""The SDK's evaluations in the project's history: one run per evaluate() or
run_test_suite() call, a result per (test case, metric), a lower score than last time
flagged as a regression; outside a project nothing is kept."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from oxyeval.store import open_store
from oxyeval.testing import (
    BaseTestCase,
    ExactMatchMetric,
    HasAllSubstrings,
    LLMTestCase,
    evaluate,
    run_test_suite,
)


@dataclass
class Case(BaseTestCase):
    question: str

    def hash(self) -> str:
        return self.question


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "config.yml").write_text("models:\n  - {name: m, vendor: mock, outputs: [x]}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OXY_DB", raising=False)
    return tmp_path


def test_evaluations_are_kept_and_a_lower_score_is_a_regression(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = LLMTestCase(input="capital?", actual_output="Paris", expected_output="Paris")
    evaluate([good], [ExactMatchMetric()], identifier="capitals", print_results=False)
    bad = LLMTestCase(input="capital?", actual_output="Lyon", expected_output="Paris")
    evaluate([bad], [ExactMatchMetric()], identifier="capitals")
    assert (
        "regression: capital? / Exact Match: score fell from 1.000 to 0.000"
        in capsys.readouterr().out
    )
    with open_store(project / ".oxy" / "oxyeval.db", read_only=True) as store:
        runs = store.runs.list(5, kind="sdk")
        assert [r.subject for r in runs] == ["capitals", "capitals"]
        (latest,) = store.results.for_run(runs[0].id)
        assert latest.subject == "capitals::capital?::Exact Match" and latest.score == 0.0
        assert latest.passed is False and latest.details["regressions"]


def test_a_suite_keeps_each_case_and_evaluator(project: Path) -> None:
    evaluators = [HasAllSubstrings("subs", ["a", "b"])]
    run_test_suite(
        "suite-1", [Case("q1"), Case("q2")], lambda c: "a b", evaluators, print_results=False
    )
    result = run_test_suite(
        "suite-1", [Case("q1"), Case("q2")], lambda c: "a", evaluators, print_results=False
    )
    assert sorted(result.regressions) == [
        "q1 / subs: score fell from 1.000 to 0.500 against "
        + result.regressions[0].split(" against ")[1],
        "q2 / subs: score fell from 1.000 to 0.500 against "
        + result.regressions[1].split(" against ")[1],
    ]
    with open_store(project / ".oxy" / "oxyeval.db", read_only=True) as store:
        (latest, _first) = store.runs.list(5, kind="sdk")
        rows = store.results.for_run(latest.id)
        assert sorted(r.subject for r in rows) == ["suite-1::q1::subs", "suite-1::q2::subs"]
        assert {r.score for r in rows} == {0.5}


def test_outside_a_project_nothing_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    case = LLMTestCase(input="q", actual_output="a", expected_output="a")
    evaluate([case], [ExactMatchMetric()], print_results=False)
    assert not (tmp_path / ".oxy").exists()
