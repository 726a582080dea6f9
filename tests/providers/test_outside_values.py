"""What servers send that Python's json takes but the program cannot hold:
lone surrogates, NaN and overflowing numbers, JSON nested 100,000 deep."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import ChatMessage, GenerateParams, ModelSpec, ToolSpec
from oxyeval.providers._base import EmbeddingAPI, EmbeddingResult, json_object
from oxyeval.providers._http import count
from oxyeval.providers._registry import MissingCredential, resolve_api_key
from oxyeval.providers.embeddings import Embedder
from oxyeval.providers.openai import decode_tool_arguments
from tests.fakes import FakeResponse, FakeServer, fake_openai, openai_tool_call_response, run_model

MESSAGES = [ChatMessage("user", "Hello")]


def spec_for(url: str) -> ModelSpec:
    return ModelSpec(name="m", vendor="openai", model_ref="gpt-test", api_url=url, max_retries=0)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"q": "rose \\ud83d"}', {"q": "rose \ufffd"}),
        ("[" * 100_000 + "]" * 100_000, {"_raw": "[" * 100_000 + "]" * 100_000}),
        ('{"n": NaN}', {"_raw": '{"n": NaN}'}),
        ('{"n": 1e999}', {"_raw": '{"n": 1e999}'}),
    ],
)
def test_tool_call_arguments_are_bounded_and_valid(raw: str, expected: dict[str, Any]) -> None:
    """A RecursionError escaped the ValueError handler; NaN reached the tools."""
    assert decode_tool_arguments(raw) == expected


def test_tool_call_arguments_with_a_surrogate_through_the_wire() -> None:
    body = openai_tool_call_response([("lookup", '{"city": "Par\\udcffis"}')])
    with fake_openai(lambda _r: body) as server:
        params = GenerateParams(tools=(ToolSpec("lookup", "find", {"type": "object"}),))
        result = run_model(spec_for(server.url), MESSAGES, params=params)
    assert result.tool_calls[0].arguments == {"city": "Par\ufffdis"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 100_000, None),  # None: the caller reads the text instead
        ('{"a": NaN}', None),
        ('{"a": "\\ud800"}', {"a": "\ufffd"}),
    ],
)
def test_a_structured_answer_out_of_bounds_is_read_as_text(
    text: str, expected: dict[str, str] | None
) -> None:
    assert json_object(text) == expected


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested more than 100 levels"),
        (b'{"choices": [], "usage": {"prompt_tokens": NaN}}', "NaN is not a number"),
        (b'{"id": ' + b"9" * 5000 + b"}", "an integer of 5000 digits"),
    ],
)
def test_an_answer_out_of_bounds_is_one_failed_call(body: bytes, why: str) -> None:
    answer = FakeResponse(200, body, {"Content-Type": "application/json"})
    with FakeServer(lambda _r: answer) as s, pytest.raises(ProviderError) as caught:
        run_model(spec_for(s.url), MESSAGES)
    assert "malformed response" in str(caught.value)
    assert why in str(caught.value)


def test_an_error_body_nested_100000_deep_is_shown_as_text() -> None:
    deep = b'{"error": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    answer = FakeResponse(400, deep, {"Content-Type": "application/json"})
    with FakeServer(lambda _r: answer) as s, pytest.raises(ProviderError) as caught:
        run_model(spec_for(s.url), MESSAGES)
    assert "HTTP 400" in str(caught.value) and '{"error": [[[' in str(caught.value)


@pytest.mark.parametrize(
    ("value", "kept"),
    [(12, 12), (0, 0), (True, None), (-5, None), (10**30, None), (2**53, 2**53), (1.5, None)],
)
def test_token_counts_fit_the_history(value: Any, kept: int | None) -> None:
    assert count(value) == kept


class _Vectors(EmbeddingAPI):
    """An embedding class (one a plugin could register) answering fixed vectors."""

    vendor: ClassVar[str] = "fixed"
    requires_key: ClassVar[bool] = False
    uses_http: ClassVar[bool] = False
    vectors: ClassVar[list[list[float]]] = []

    async def embed(self, texts: list[str]) -> EmbeddingResult:
        return EmbeddingResult([self.vectors[i % len(self.vectors)] for i in range(len(texts))])


@pytest.mark.parametrize(
    ("vectors", "why"),
    [
        ([[float("nan"), 1.0]], "not a finite number"),
        ([[float("inf"), 1.0]], "not a finite number"),
        ([[0.0, 0.0]], "all zeros"),
    ],
)
def test_an_embedding_that_cannot_be_compared_is_a_failed_call(
    monkeypatch: pytest.MonkeyPatch, vectors: list[list[float]], why: str
) -> None:
    monkeypatch.setattr(_Vectors, "vectors", vectors)
    embedder = Embedder(_Vectors(ModelSpec(name="e", vendor="fixed"), None))
    with pytest.raises(ProviderError, match=f"model 'e' \\(fixed\\): embedding 1 of 2 .*{why}"):
        asyncio.run(embedder.similarity("a", "b"))


@pytest.mark.parametrize("value", ["caf\udcff", "clé"])
def test_a_header_value_from_the_environment_that_http_cannot_carry(value: str) -> None:
    """httpx sends header values as ASCII: a UnicodeEncodeError in the middle of a call."""
    spec = ModelSpec(name="m", vendor="openai", model_ref="x", key_var="K")
    with pytest.raises(
        MissingCredential, match=r"K holds the non-ASCII character U\+.*HTTP header cannot carry"
    ):
        resolve_api_key(spec, {"K": value})
    spec = ModelSpec(
        name="m", vendor="openai", model_ref="x", api_url="http://h", header_vars={"X-T": "T"}
    )
    with pytest.raises(MissingCredential, match=r"T holds the non-ASCII character U\+"):
        resolve_api_key(spec, {"T": value})


def test_a_literal_header_that_is_not_ascii_is_one_failed_call() -> None:
    """httpx raised UnicodeEncodeError while building the request: an internal error."""
    with fake_openai("ok") as server:
        spec = ModelSpec(
            name="m", vendor="openai", model_ref="x", api_url=server.url, headers={"X-T": "équipe"}
        )
        with pytest.raises(ProviderError, match="a header value is not ASCII"):
            run_model(spec, MESSAGES)
        assert server.requests == []
