"""Rubrics: the judge's labels, prompt, re-ask, schema and cache key come from one
rubric; the consistency rubric is byte for byte what the judge always sent; a run's
judges share what they learn about structured output, and two runs share nothing."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from oxyeval.errors import ConfigError
from oxyeval.judge import (
    CONSISTENCY,
    PASS_FAIL,
    SCALE_1_5,
    Judge,
    JudgeResult,
    JudgeSession,
    Label,
    Rubric,
    key_labels,
    verdict_data,
    verdict_from_data,
)
from oxyeval.judge.judge import REASK_MESSAGE, VERDICT_SCHEMA
from oxyeval.project.templates import TemplateRef
from oxyeval.providers import Model, ModelPool, ModelSpec
from oxyeval.providers.mock import MockAPI
from oxyeval.store import content_hash
from tests.fakes import RecordedRequest, fake_openai

#: content_hash of the verdict key for the default judge on an OpenAI model at
#: http://127.0.0.1:9/v1 comparing "The total is 42." with "Total: 42" for "What is the
#: total?": rubrics left it as it was before them; only a new READING (3: cut-off replies
#: count only by a complete, final verdict) changes it, on purpose.
MAIN_KEY_HASH = "c6cbd71e91e0031273a80574f9559be354ba856777425d1e3d7d81f64353ecac"
#: sha256 of that rendered prompt on main: the default prompt renders byte for byte the same.
MAIN_PROMPT_HASH = "130e1a0f96ecd4a9730464357e7cb477a2f5e56fffaf1017a3194fbd73234da4"

#: VERDICT_SCHEMA as main wrote it out by hand.
MAIN_SCHEMA = {
    "type": "object",
    "properties": {
        "reasoning": {
            "type": "string",
            "description": "Brief reasoning about the facts each submission states.",
        },
        "verdict": {
            "type": "string",
            "enum": ["A", "B"],
            "description": "The verdict the instructions ask for: A or B.",
        },
    },
    "required": ["reasoning", "verdict"],
    "additionalProperties": False,
}


class Recording:
    """A verdict cache that records keys and answers every lookup with ``choice``."""

    def __init__(self, choice: str | None = None) -> None:
        self.choice = choice
        self.keys: list[dict[str, Any]] = []
        self.entries: dict[str, dict[str, Any]] = {}

    async def get(self, key: Mapping[str, Any]) -> JudgeResult | None:
        self.keys.append(dict(key))
        if self.choice is not None:
            return JudgeResult(self.choice, "kept", "kept", 0, cached_calls=1)
        data = self.entries.get(json.dumps(key, sort_keys=True))
        return verdict_from_data(data, key_labels(key)) if data is not None else None

    async def put(self, key: Mapping[str, Any], result: JudgeResult) -> None:
        self.entries[json.dumps(key, sort_keys=True)] = verdict_data(result)


def _openai(url: str) -> ModelSpec:
    return ModelSpec(
        name="judge",
        vendor="openai",
        model_ref="gpt-judge",
        api_url=url,
        key_var="K",
        max_retries=0,
    )


def _mock(rules: list[dict[str, Any]]) -> Model:
    return Model(MockAPI(ModelSpec(name="j", vendor="mock", options={"rules": rules})))


# -- the consistency rubric is today's judge ----------------------------------------------


def test_the_consistency_rubric_keeps_main_s_prompt_reask_and_schema() -> None:
    async def go() -> tuple[str, dict[str, Any]]:
        cache = Recording("A")
        async with ModelPool({"judge": _openai("http://127.0.0.1:9/v1")}, environ={"K": "k"}) as p:
            judge = Judge(p.get("judge"), cache=cache)
            prompt = judge.render("What is the total?", "The total is 42.", "Total: 42")
            result = await judge.compare("What is the total?", "The total is 42.", "Total: 42")
        assert result.choice == "A" and result.calls == 0  # served: no request was made
        return prompt, cache.keys[0]

    prompt, key = asyncio.run(go())
    import hashlib

    assert hashlib.sha256(prompt.encode()).hexdigest() == MAIN_PROMPT_HASH
    assert content_hash(key) == MAIN_KEY_HASH
    assert "rubric" not in key
    assert (
        REASK_MESSAGE
        == CONSISTENCY.reask
        == (
            "Your reply did not end with a verdict. Reply with exactly one line: "
            "'Answer: A' if the two submissions are consistent, or 'Answer: B' if they disagree."
        )
    )
    assert VERDICT_SCHEMA.schema == CONSISTENCY.schema.schema == MAIN_SCHEMA
    assert VERDICT_SCHEMA.name == "verdict"
    assert VERDICT_SCHEMA.description == (
        "Your verdict on the two submissions, as the instructions ask for it."
    )
    assert CONSISTENCY.values == {"A": 1.0, "B": 0.0}


def test_a_pass_fail_verdict_never_answers_an_a_b_question() -> None:
    model = _mock([{"match": ".", "output": "Verdict: PASS"}])
    cache = Recording()

    async def go() -> None:
        consistency = Judge(model, cache=cache)
        graded = Judge(model, cache=cache, rubric=PASS_FAIL)
        assert (await graded.judge({"output": "42", "criterion": "says 42"})).choice == "PASS"
        await consistency.compare("q", "42", "43")

    asyncio.run(go())
    graded_key, consistency_key = cache.keys
    assert graded_key["rubric"] == PASS_FAIL.identity()
    assert graded_key["rubric"]["labels"] == [
        ["PASS", "the answer meets the criterion"],
        ["FAIL", "it does not"],
    ]
    assert "rubric" not in consistency_key
    assert key_labels(graded_key) == ("PASS", "FAIL") and key_labels(consistency_key) == ("A", "B")
    # Same rendered prompt, other rubric: another key, so another entry.
    same_prompt = dict(graded_key, rubric=SCALE_1_5.identity())
    assert content_hash(same_prompt) != content_hash(graded_key)


def test_a_kept_label_of_another_rubric_is_a_miss() -> None:
    # A damaged or foreign entry served under a key is not taken for a verdict: asked afresh.
    model = _mock([{"match": ".", "output": "Verdict: FAIL"}])
    cache = Recording("A")  # every lookup answers "A"

    async def go() -> JudgeResult:
        return await Judge(model, cache=cache, rubric=PASS_FAIL).judge(
            {"output": "x", "criterion": "y"}
        )

    result = asyncio.run(go())
    assert (result.choice, result.calls) == ("FAIL", 1)
    assert verdict_from_data({"choice": "PASS", "calls": 1}, ("PASS", "FAIL")) is not None
    assert verdict_from_data({"choice": "PASS", "calls": 1}) is None  # A/B by default


def test_a_pass_fail_verdict_is_replayed_from_the_cache() -> None:
    model = _mock([{"match": ".", "output": "Fine.\nVerdict: FAIL"}])
    cache = Recording()

    async def go() -> list[JudgeResult]:
        judge = Judge(model, cache=cache, rubric=PASS_FAIL)
        variables = {"output": "x", "criterion": "y"}
        return [await judge.judge(variables), await judge.judge(variables)]

    first, again = asyncio.run(go())
    assert (first.choice, first.calls) == ("FAIL", 1)
    assert (again.choice, again.calls, again.cached_calls, again.reasoning) == (
        "FAIL",
        0,
        1,
        "Fine.",
    )


# -- rubric prompts, variables and the re-ask -------------------------------------------


def test_a_missing_variable_is_a_config_error_naming_it_before_any_call() -> None:
    model = _mock([{"match": ".", "error": "no call may be made"}])
    judge = Judge(model, rubric=PASS_FAIL)
    with pytest.raises(ConfigError, match=r"missing variable.*criterion"):
        asyncio.run(judge.judge({"output": "42"}))
    with pytest.raises(ConfigError, match="submission_2"):
        asyncio.run(Judge(model).judge({"task_description": "q", "submission_1": "x"}))


def test_the_pass_fail_prompt_renders_with_and_without_the_optional_input() -> None:
    judge = Judge(_mock([]), rubric=PASS_FAIL)
    bare = judge.render_variables({"output": "Paris", "criterion": "names the capital"})
    assert "[Answer]\nParis\n[End of answer]" in bare and "Criterion: names the capital" in bare
    assert "[Input]" not in bare
    full = judge.render_variables(
        {"output": "Paris", "criterion": "names the capital", "input": "Capital of France?"}
    )
    assert "[Input]\nCapital of France?\n[End of input]" in full
    assert full.rstrip().endswith("Verdict: PASS\nVerdict: FAIL")


def test_a_pass_fail_judge_reasks_with_its_own_labels() -> None:
    model = _mock(
        [
            {"match": "did not end with a verdict", "output": "Verdict: FAIL"},
            {"match": ".", "output": "It names Lyon, not Paris."},
        ]
    )
    result = asyncio.run(
        Judge(model, rubric=PASS_FAIL).judge({"output": "Lyon", "criterion": "names Paris"})
    )
    assert (result.choice, result.calls) == ("FAIL", 2)
    assert result.reasoning == "It names Lyon, not Paris."
    assert "'Verdict: PASS' if the answer meets the criterion" in PASS_FAIL.reask


def test_a_scale_judge_gives_a_label_and_its_value() -> None:
    model = _mock([{"match": ".", "output": "Mostly right, the year is missing.\nScore: 4/5"}])
    result = asyncio.run(
        Judge(model, rubric=SCALE_1_5).judge({"output": "Paris", "criterion": "capital and year"})
    )
    assert result.choice == "4"
    assert SCALE_1_5.values[result.choice] == 0.75
    assert list(SCALE_1_5.values.values()) == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_the_structured_schema_lists_the_rubric_s_labels() -> None:
    schema = PASS_FAIL.schema.schema
    assert schema["properties"]["verdict"]["enum"] == ["PASS", "FAIL"]
    assert (
        "PASS if the answer meets the criterion" in schema["properties"]["verdict"]["description"]
    )
    assert SCALE_1_5.schema.schema["properties"]["verdict"]["enum"] == ["1", "2", "3", "4", "5"]
    assert schema["required"] == ["reasoning", "verdict"]


def test_a_custom_prompt_must_show_the_rubric_s_subjects() -> None:
    with pytest.raises(ConfigError, match=r"never uses \{\{ output \}\}"):
        Judge(_mock([]), TemplateRef("Is it good? {{ criterion }}"), rubric=PASS_FAIL)
    Judge(_mock([]), TemplateRef("{{ output }} / {{ criterion }}"), rubric=PASS_FAIL)


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ((Label("A", 1.0, "yes"),), "at least two labels"),
        ((Label("A", 1.0, "yes"), Label("a", 0.0, "no")), "differ only in case"),
        ((Label("1", 1.0, "yes"), Label("NO", 0.0, "no")), "mix of number and word"),
        ((Label("N/A", 1.0, "yes"), Label("B", 0.0, "no")), "letters or digits only"),
    ],
)
def test_bad_rubrics_are_refused(labels: tuple[Label, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Rubric("bad", labels, "{{ output }}", ("output",))


# -- structured-output refusals belong to a run, not to the process ----------------------


def _asked_structured(request: RecordedRequest) -> bool:
    return "response_format" in request.body


def test_two_runs_in_one_process_do_not_share_a_structured_refusal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def reply(request: RecordedRequest) -> str:
        return "Same facts.\nAnswer: A"

    async def runs(url: str) -> None:
        # A server keeps one pool (one Model object) for every run it serves; each run
        # has its own session, shared by the run's judges (one per test).
        async with ModelPool({"judge": _openai(url)}, environ={"K": "k"}) as pool:
            for session, judges in ((JudgeSession(), 2), (JudgeSession(), 1)):
                for k in range(judges):
                    judge = Judge(pool.get("judge"), session=session)
                    assert (await judge.compare("q", "42", f"forty-two {k}")).choice == "A"

    with (
        caplog.at_level(logging.WARNING, logger="oxyeval.judge"),
        fake_openai(reply, structured=False) as server,
    ):
        asyncio.run(runs(server.url))
        asked = [_asked_structured(r) for r in server.requests]
    in_first, in_second = asked[:5], asked[5:]
    # First run: each structured form refused once, then text for its other judge too.
    assert in_first == [True, True, True, False, False]
    # Second run: its own session, so it asks for structured output again.
    assert in_second == [True, True, True, False]
    notes = [r for r in caplog.records if "refused the structured" in r.getMessage()]
    assert len(notes) == 2  # said once per run


def test_a_judge_without_a_session_has_its_own() -> None:
    model = _mock([])
    one, two = Judge(model), Judge(model)
    assert one.session is not two.session
    shared = JudgeSession()
    assert Judge(model, session=shared).session is shared
