"""Where a ported DeepEval test's judge comes from: the environment with no config.yml
(OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL_NAME or DeepEval's default), a model id
as ``model=``, a judge object the test wrote, config.yml's judge when there is one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oxyeval.testing import GEval, LLMTestCase, LLMTestCaseParams, MetricError
from oxyeval.testing._judge import DEFAULT_JUDGE_MODEL
from oxyeval.testing.models import DeepEvalBaseLLM, GPTModel
from tests.fakes import fake_openai
from tests.testing.judge_server import KEY, by_prompt, env_judge

CASE = LLMTestCase(input="What is 2+2?", actual_output="4")
GOOD = {"reason": "Correct.", "score": 9}


def correctness(**kw: Any) -> GEval:
    return GEval(
        name="Correctness",
        criteria="The actual output answers the input correctly.",
        evaluation_params=[LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT],
        **kw,
    )


def test_no_project_judge_from_environment(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with env_judge(monkeypatch, by_prompt(default=GOOD)) as server:
        metric = correctness()
        assert metric.measure(CASE) == 0.9
    assert metric.success is True and metric.evaluation_model is None
    (request,) = server.requests
    assert request.body["model"] == DEFAULT_JUDGE_MODEL == "gpt-4.1"
    assert request.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("model", "env_name", "sent"),
    [
        ("gpt-4o-mini", None, "gpt-4o-mini"),
        ("openai/gpt-4.1-mini", None, "gpt-4.1-mini"),
        (None, "gpt-5-nano", "gpt-5-nano"),
    ],
)
def test_model_names(
    here: Path, monkeypatch: pytest.MonkeyPatch, model: str | None, env_name: str | None, sent: str
) -> None:
    with env_judge(monkeypatch, by_prompt(default=GOOD)) as server:
        if env_name:
            monkeypatch.setenv("OPENAI_MODEL_NAME", env_name)
        correctness(model=model).measure(CASE)
    assert [r.body["model"] for r in server.requests] == [sent]


def test_missing_key_names_the_variable(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    metric = correctness()
    with pytest.raises(MetricError, match="OPENAI_API_KEY"):
        metric.measure(CASE)
    assert metric.error and "OPENAI_API_KEY" in metric.error and metric.success is False


class Scripted(DeepEvalBaseLLM):
    """A custom judge as DeepEval's docs write one."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.prompts: list[str] = []
        super().__init__()

    def load_model(self) -> Any:
        return self

    def generate(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.replies.pop(0)

    async def a_generate(self, prompt: str) -> str:
        return self.generate(prompt)

    def get_model_name(self) -> str:
        return "scripted judge"


def test_custom_judge_object(here: Path) -> None:
    judge = Scripted(["no json here", 'Sure: {"reason": "Right.", "score": 6}'])
    metric = correctness(model=judge)
    assert metric.measure(CASE) == 0.6
    assert metric.evaluation_model == "scripted judge" and metric.reason == "Right."
    assert len(judge.prompts) == 2 and "could not be used" in judge.prompts[1]


def test_custom_judge_that_never_answers_json(here: Path) -> None:
    metric = correctness(model=Scripted(["nope", "still nope"]))
    with pytest.raises(MetricError, match="scripted judge"):
        metric.measure(CASE)


def test_gpt_model_object_goes_through_the_openai_client(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with fake_openai(by_prompt(default=GOOD), api_key="sk-given") as server:
        judge = GPTModel(
            model="gpt-4.1-mini", api_key="sk-given", base_url=server.url, temperature=0
        )
        correctness(model=judge).measure(CASE)
    (request,) = server.requests
    assert request.body["model"] == "gpt-4.1-mini" and request.body["temperature"] == 0
    assert "sk-given" not in repr(judge)


def test_config_judge_wins_over_environment(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with (
        env_judge(monkeypatch, by_prompt(default=GOOD)) as env_server,
        fake_openai(by_prompt(default={"reason": "ok", "score": 3})) as project_server,
    ):
        (here / "config.yml").write_text(
            "models:\n  - name: judge\n    vendor: openai\n    model_ref: local-judge\n"
            f"    api_url: {project_server.url}\n    max_retries: 0\n",
            encoding="utf-8",
        )
        assert correctness().measure(CASE) == 0.3
    assert env_server.requests == []
    assert [r.body["model"] for r in project_server.requests] == ["local-judge"]


def test_init_project_judge_answers_the_metrics_offline(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.project.scaffold import write_scaffold
    from oxyeval.testing import (
        AnswerRelevancyMetric,
        ConversationalTestCase,
        ConversationRelevancyMetric,
        FaithfulnessMetric,
        evaluate,
    )

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    write_scaffold(here)
    rag = LLMTestCase(
        input="When is support open?",
        actual_output="Weekdays 9 to 5.",
        retrieval_context=["Support is open weekdays 9 to 5."],
    )
    chat = ConversationalTestCase(turns=[rag, LLMTestCase(input="Thanks", actual_output="Welcome")])
    strict = GEval(name="Strict", criteria="Right?", strict_mode=True)
    result = evaluate(
        [rag],
        [correctness(), strict, AnswerRelevancyMetric(), FaithfulnessMetric()],
        print_results=False,
    )
    scores = {d.name: (d.score, d.error) for d in result.test_results[0].metrics_data}
    assert scores == {
        "Correctness [GEval]": (0.8, None),
        "Strict [GEval]": (1.0, None),
        "Answer Relevancy": (1.0, None),
        "Faithfulness": (1.0, None),
    }
    assert ConversationRelevancyMetric().measure(chat) == 1.0


def test_a_changed_environment_is_read_again(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    async def both() -> list[float]:
        scores = []
        for score in (2, 4):
            with env_judge(monkeypatch, by_prompt(default={"reason": "r", "score": score})):
                scores.append(await correctness().a_measure(CASE))  # one loop, two servers
        return scores

    assert asyncio.run(both()) == [0.2, 0.4]
