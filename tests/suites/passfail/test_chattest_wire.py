"""chattest end to end against fake servers on 127.0.0.1: one model on OpenAI's chat
wire, one on the legacy completions wire, a judge on the chat wire answering in
several PASS/FAIL spellings and sometimes garbage (a judge error, never a pass)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oxyeval.evaluation import decide_run
from oxyeval.suites.passfail import run_chattest
from tests.fakes import FakeServer, RecordedRequest, fake_openai

from ..ab.test_wire import _async_stack_loaded  # noqa: F401 (fixture: httpx warmed)

ANSWERS = iter(["Paris.", "It is Paris.", "Lyon, I think.", "Paris!"])


def _judge(request: RecordedRequest) -> str:
    """The verdict by what the answer says, in a different spelling each time."""
    # the whole conversation: a re-ask's last turn is the reminder alone
    prompt = " ".join(str(m.get("content")) for m in request.body["messages"])
    if "Lyon" in prompt:
        return "Wrong city.\n**Verdict:** FAIL"
    if "It is Paris" in prompt:
        return "Names it.\nverdict: pass"
    if "Paris!" in prompt:
        return "I am not sure what to say here."  # garbage, also when asked again
    return "Correct.\nVERDICT: PASS"


def _completions(request: RecordedRequest) -> tuple[int, dict[str, Any]]:
    assert request.route == "/v1/completions" and "capital of France" in request.body["prompt"]
    return 200, {
        "object": "text_completion",
        "choices": [{"index": 0, "text": next(ANSWERS), "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
    }


def test_both_wires_and_every_verdict_spelling(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("CT_JUDGE_KEY", "sk-judge-secret-77")
    with (
        fake_openai(lambda r: "Paris.") as chat,
        FakeServer(_completions, prefix="/v1") as legacy,
        fake_openai(_judge, api_key="sk-judge-secret-77") as judge,
    ):
        (tmp_path / "prompts").mkdir()
        (tmp_path / "models").mkdir()
        (tmp_path / "prompts" / "p.json").write_text(
            json.dumps(
                {
                    "key": "capital",
                    "prompt": "What is the capital of France?",
                    "models": ["chat", "legacy"],
                    "tests": ["the answer names Paris"],
                    "runVolume": 4,
                    "testModel": "judge",
                    "successThreshold": 0.6,
                }
            )
        )
        models = {
            "chat": {"key": "chat", "url": f"{chat.url}/chat/completions"},
            "legacy": {"key": "legacy", "url": f"{legacy.url}/completions"},
            "judge": {
                "key": "judge",
                "url": f"{judge.url}/chat/completions",
                "apiKey": "${CT_JUDGE_KEY}",
            },
        }
        for key, model in models.items():
            (tmp_path / "models" / f"{key}.json").write_text(json.dumps(model))
        run = run_chattest([str(tmp_path)])
        sent = [r.body["messages"][-1]["content"] for r in judge.requests]

    by_model = {s.name: s.results[0] for s in run.subjects}
    chat_rate = by_model["chat"].rate
    assert (chat_rate.passes, chat_rate.runs) == (4, 4)  # "Paris." judged once, PASS x4
    legacy_rate = by_model["legacy"].rate
    # Paris. PASS, It is Paris. pass, Lyon FAIL, Paris! garbage -> a judge error
    assert (legacy_rate.passes, legacy_rate.runs, legacy_rate.judge_errors) == (2, 3, 1)
    assert by_model["legacy"].passed is True  # 2/3 >= 0.6
    # identical answers were judged once: 1 (chat) + 4 distinct legacy answers + 1 re-ask
    assert run.judge_calls == 6 and len(sent) == 6
    assert decide_run(run).code == 0
