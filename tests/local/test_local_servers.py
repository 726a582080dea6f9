"""Local model servers out of the box: what llama.cpp's server (llama-cpp-python 0.3.36
serving Gemma 3 270M) broke, against a fake that behaves as it did (:func:`fake_llama_cpp`).

Recorded behaviours, each named where a test relies on it: ``json_schema`` refused with
HTTP 500 and pydantic's "Input should be 'text' or 'json_object'"; ``json_object`` with a
``schema`` taken; generation until the context is full without ``max_tokens``; one
request at a time at a slow token rate; ``finish_reason: length`` on a cut answer;
``system`` messages dropped by the ``gemma`` chat format.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from oxyeval.judge import Judge, JudgeSession
from oxyeval.providers import ChatMessage, ModelPool, ModelSpec

from ..fakes import SleepRecorder, fake_llama_cpp, judge_reply


def local_spec(url: str, **fields: Any) -> ModelSpec:
    return ModelSpec(name="gemma", vendor="openai", model_ref="gemma3-270m", api_url=url, **fields)


def formats(server: Any) -> list[str | None]:
    """The response_format type each request asked for (None: plain text), with the
    llama-cpp-python ``schema`` key shown as ``json_object+schema``."""
    out: list[str | None] = []
    for request in server.requests:
        wanted = request.body.get("response_format")
        if wanted is None:
            out.append(None)
        else:
            out.append(wanted["type"] + ("+schema" if "schema" in wanted else ""))
    return out


def test_the_judge_learns_json_object_with_a_schema_once_before_its_calls_fan_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Recorded: json_schema -> HTTP 500 "Input should be 'text' or 'json_object'";
    # {"type": "json_object", "schema": ...} -> a valid verdict object.
    async def go(url: str) -> list[Any]:
        async with ModelPool({"gemma": local_spec(url)}, sleep=SleepRecorder()) as pool:
            session = JudgeSession()
            judges = [Judge(pool.get("gemma"), session=session) for _ in range(4)]
            return await asyncio.gather(
                *(j.compare("q", "42", f"forty-two {k}") for k, j in enumerate(judges))
            )

    with (
        caplog.at_level(logging.WARNING, logger="oxyeval.judge"),
        fake_llama_cpp(judge_reply("A")) as server,
    ):
        results = asyncio.run(go(server.url))
        asked = formats(server)
    assert [r.choice for r in results] == ["A"] * 4
    assert all(r.error is None for r in results)
    # The refused form is sent by the first call only (its one retry confirms the 500 is
    # the server's answer to the request), then every call asks in the form it took.
    assert asked == ["json_schema", "json_schema"] + ["json_object+schema"] * 4
    notes = [r.getMessage() for r in caplog.records if r.name == "oxyeval.judge"]
    assert len(notes) == 1
    assert '"json_object", "schema"' in notes[0] and "HTTP 500" in notes[0]
    assert "Input should be 'text' or 'json_object'" in notes[0]


def test_a_refusal_is_recognised_by_its_message_whatever_the_status() -> None:
    from oxyeval.errors import ProviderError
    from oxyeval.judge.structured import is_refusal

    assert is_refusal(
        ProviderError("HTTP 500: Input should be 'text' or 'json_object'", status=500)
    )
    assert is_refusal(ProviderError("unknown variant `json_schema`", status=422))
    assert is_refusal(ProviderError("'response_format.type' must be 'json_schema'", status=400))
    assert not is_refusal(ProviderError("HTTP 500: The server had an error", status=500))
    assert not is_refusal(ProviderError("connection refused (response_format)", status=None))


def test_text_sees_no_system_message_on_the_gemma_chat_format() -> None:
    # Recorded: the gemma chat format drops system messages; the fake does too.
    seen: list[Any] = []

    def reply(request: Any) -> str:
        seen.append([m["role"] for m in request.body["messages"]])
        return "ok"

    async def go(url: str) -> None:
        async with ModelPool({"gemma": local_spec(url)}, sleep=SleepRecorder()) as pool:
            await pool.get("gemma").generate(
                [ChatMessage("system", "Be brief."), ChatMessage("user", "Hi")]
            )

    with fake_llama_cpp(reply) as server:
        asyncio.run(go(server.url))
    assert seen == [["user"]]
