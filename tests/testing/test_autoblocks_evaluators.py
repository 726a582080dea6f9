"""Autoblocks' evaluators and module layout: the mapper evaluators give the scores,
verdicts and metadata autoblocksai 0.0.137 gives on the same inputs (its answers are the
table below), the judged ones ask oxyeval's judge (a fake OpenAI server on 127.0.0.1),
and every name of Autoblocks' testing modules imports from oxyeval.testing.autoblocks."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from oxyeval.testing.autoblocks.evaluators import (
    BaseAccuracy,
    BaseAssertions,
    BaseAutomaticBattle,
    BaseHasAllSubstrings,
    BaseIsEquals,
    BaseIsValidJSON,
    BaseLLMJudge,
    BaseRagasFaithfulness,
    BaseToxicity,
)
from oxyeval.testing.autoblocks.models import Assertion, BaseTestCase, ScoreChoice, Threshold
from oxyeval.testing.autoblocks.run import run_test_suite
from tests.fakes import fake_openai, last_user_text


class Case(BaseTestCase):
    def __init__(self, x: str) -> None:
        self.x = x

    def hash(self) -> str:
        return self.x or "empty"


class Has(BaseHasAllSubstrings[Case, str]):
    id = "has"

    def test_case_mapper(self, test_case: Case) -> list[str]:
        return test_case.x.split(",") if test_case.x else []

    def output_mapper(self, output: str) -> str:
        return output


class Equals(BaseIsEquals[Case, str]):
    id = "equals"

    def test_case_mapper(self, test_case: Case) -> str:
        return test_case.x

    def output_mapper(self, output: str) -> str:
        return output


class Json(BaseIsValidJSON[Case, str]):
    id = "json"

    def output_mapper(self, output: str) -> str:
        return output


# (evaluator, test case field, output) -> autoblocksai 0.0.137's (score, passed, metadata)
PEER = [
    (Has, "a,b", "a b", 1, True, {"missing_substrings": []}),
    (Has, "a,b", "a", 0, False, {"missing_substrings": ["b"]}),
    (Has, "", "anything", 1, True, {"missing_substrings": []}),
    (Has, "A", "a", 0, False, {"missing_substrings": ["A"]}),
    (Equals, "Paris", "Paris", 1, True, None),
    (Equals, "Paris", "paris", 0, False, {"expected_output": "Paris", "actual_output": "paris"}),
    (Json, "x", '{"a": 1}', 1, True, None),
    (
        Json,
        "x",
        "{a: 1}",
        0,
        False,
        {"error": "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"},
    ),
    (Json, "x", "", 0, False, {"error": "Expecting value: line 1 column 1 (char 0)"}),
]


@pytest.mark.parametrize(("cls", "field", "output", "score", "passed", "metadata"), PEER)
def test_mapper_evaluators_give_autoblocks_verdicts(
    cls: type, field: str, output: str, score: int, passed: bool, metadata: Any
) -> None:
    evaluation = cls().evaluate_test_case(Case(field), output)
    assert (evaluation.score, evaluation.passed(), evaluation.metadata) == (
        score,
        passed,
        metadata,
    )


def test_assertions_decide_by_the_required_ones_and_skip_when_there_are_none(
    here: Path,
) -> None:
    class Checks(BaseAssertions[Case, str]):
        id = "checks"

        def evaluate_assertions(self, test_case: Case, output: str) -> list[Assertion]:
            if not output:
                return []
            return [
                Assertion("says yes", output == "yes", required=True),
                Assertion("is long", len(output) > 10, required=False),
            ]

    result = run_test_suite(
        "assertions",
        [Case("yes"), Case("no"), Case("")],
        lambda c: c.x,
        [Checks()],
        print_results=False,
    )
    yes, no, empty = result.outcomes  # type: ignore[union-attr]
    assert yes.evaluations["checks"].score == 1 and yes.evaluations["checks"].passed()  # type: ignore[union-attr]
    assert no.evaluations["checks"].passed() is False  # type: ignore[union-attr]
    assert [a.criterion for a in no.evaluations["checks"].assertions] == ["says yes", "is long"]  # type: ignore[union-attr]
    assert empty.evaluations["checks"] is None  # skipped, as Autoblocks does


def _project(root: Path, url: str) -> None:
    (root / "config.yml").write_text(
        "models:\n  - name: judge\n    vendor: openai\n    model_ref: j\n"
        f"    api_url: {url}\n    max_retries: 0\n",
        encoding="utf-8",
    )


def test_llm_judges_ask_the_projects_judge_and_score_its_pick(here: Path) -> None:
    prompts: list[str] = []

    def judge(request) -> str:  # type: ignore[no-untyped-def]
        prompt = last_user_text(request.body)
        prompts.append(prompt)
        if "Is this output considered Toxic?" in prompt:
            toxic = "idiot" in prompt
            return json.dumps(
                {
                    "reason": "insult" if toxic else "polite",
                    "answer": "Toxic" if toxic else "Not Toxic",
                }
            )
        if "accurate based on the expected output" in prompt:
            near = "Rome" not in prompt
            return json.dumps(
                {"reason": "r", "answer": "Somewhat accurate" if near else "Not accurate"}
            )
        return json.dumps({"reason": "short", "answer": "Short"})

    class Toxic(BaseToxicity[Case, str]):
        id = "toxicity"

        def output_mapper(self, output: str) -> str:
            return output

    class Accurate(BaseAccuracy[Case, str]):
        id = "accuracy"

        def output_mapper(self, output: str) -> str:
            return output

        def expected_output_mapper(self, test_case: Case) -> str:
            return "Paris"

    class Length(BaseLLMJudge[Case, str]):
        id = "length"
        score_choices = (ScoreChoice(1, "Short"), ScoreChoice(0, "Long"))
        threshold = Threshold(gte=1)  # type: ignore[assignment]

        def make_prompt(self, test_case: Case, output: str, recent_overrides: list) -> str:
            assert recent_overrides == []
            return f"Is this short? {output}"

    with fake_openai(judge) as server:
        _project(here, server.url)
        result = run_test_suite(
            "judged",
            [Case("Paris is lovely"), Case("Rome, you idiot")],
            lambda c: c.x,
            [Toxic(), Accurate(), Length()],
            print_results=False,
        )
    polite, rude = result.outcomes  # type: ignore[union-attr]
    assert polite.evaluations["toxicity"].passed() is True  # type: ignore[union-attr]
    assert rude.evaluations["toxicity"].score == 0  # type: ignore[union-attr]
    assert rude.evaluations["toxicity"].metadata["reason"] == "insult"  # type: ignore[union-attr]
    assert polite.evaluations["accuracy"].score == 0.5  # type: ignore[union-attr]
    assert polite.evaluations["accuracy"].passed() is False  # 0.5 < Autoblocks' gte 1  # type: ignore[union-attr]
    assert polite.evaluations["length"].metadata["prompt"] == "Is this short? Paris is lovely"  # type: ignore[union-attr]
    assert any("[Output]\nRome, you idiot" in p for p in prompts)


def test_an_automatic_battle_keeps_the_winner_as_the_baseline(here: Path) -> None:
    def judge(request) -> str:  # type: ignore[no-untyped-def]
        prompt = last_user_text(request.body)
        # the longer answer wins; "2" is the challenger
        baseline = prompt.split("[Baseline]\n")[1].split("\n")[0]
        challenger = prompt.split("[Challenger]\n")[1].split("\n")[0]
        won = len(challenger) > len(baseline)
        return json.dumps({"reason": "longer", "result": "2" if won else "1"})

    class Battle(BaseAutomaticBattle[Case, str]):
        id = "battle"
        criteria = "The more detailed answer is better."

        def output_mapper(self, output: str) -> str:
            return output

    def run(answer: str) -> Any:
        result = run_test_suite(
            "battle", [Case("q")], lambda c: answer, [Battle()], print_results=False
        )
        return result.outcomes[0].evaluations["battle"]  # type: ignore[union-attr]

    with fake_openai(judge) as server:
        _project(here, server.url)
        assert run("short") is None  # the first output becomes the baseline, unjudged
        first = run("a longer answer")
        assert first.score == 1 and first.metadata["baseline"] == "short"
        second = run("mid answer")
        assert second.score == 0 and second.metadata["baseline"] == "a longer answer"
    saved = json.loads((here / ".oxy" / "battle-baselines.json").read_text())
    assert list(saved.values()) == ["a longer answer"]


def test_a_ragas_evaluator_without_ragas_is_its_evaluators_error(here: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("ragas") is not None:  # no dependency: its absence is tested
        pytest.skip("ragas is installed here")

    class Faithful(BaseRagasFaithfulness[Case, str]):
        id = "faithful"
        llm = None

    result = run_test_suite("ragas", [Case("q")], lambda c: "a", [Faithful()], print_results=False)
    error = result.outcomes[0].evaluator_errors["faithful"]  # type: ignore[union-attr]
    assert "requires ragas version 0.2.x" in error and "pip install ragas==0.2.*" in error


# What each of Autoblocks' testing modules exports (autoblocksai 0.0.137's __all__).
PEER_MODULES = {
    "models": [
        "Assertion", "BaseEvaluator", "BaseEventEvaluator", "BaseTestCase", "BaseTestEvaluator",
        "Evaluation", "EvaluationWithId", "EvaluationOverride", "EvaluationOverrideComment",
        "EvaluationOverrideField", "HumanReviewField", "HumanReviewFieldContentType",
        "TestCaseConfig", "Threshold", "TracerEvent", "ScoreChoice", "CreateHumanReviewJob",
    ],
    "evaluators": [
        "BaseAssertions", "BaseIsEquals", "BaseIsValidJSON", "BaseHasAllSubstrings",
        "BaseAutomaticBattle", "BaseManualBattle", "BaseRagasFactualCorrectness",
        "BaseRagasResponseRelevancy", "BaseRagasSemanticSimilarity",
        "BaseRagasContextEntitiesRecall", "BaseRagasLLMContextRecall",
        "BaseRagasLLMContextPrecisionWithReference",
        "BaseRagasNonLLMContextPrecisionWithReference", "BaseRagasFaithfulness",
        "BaseRagasNoiseSensitivity", "BaseRagasNonLLMContextRecall", "BaseLLMJudge",
        "BaseAccuracy", "BaseNSFW", "BaseToxicity", "HasAllSubstrings", "AutomaticBattle",
        "ManualBattle",
    ],
    "util": ["md5"],
    "run": ["run_test_suite", "grid_search_ctx"],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(PEER_MODULES))
def test_only_the_import_prefix_changes(module: str) -> None:
    mirror = importlib.import_module(f"oxyeval.testing.autoblocks.{module}")
    missing = [name for name in PEER_MODULES[module] if not hasattr(mirror, name)]
    assert missing == []
    assert set(PEER_MODULES[module]) <= set(mirror.__all__)
