"""A server's answer is read up to a bound: a 9 MB chat reply is an error, not a MemoryError."""

from __future__ import annotations

import gzip

import pytest

from oxyeval.errors import ProviderError
from tests.fakes import FakeResponse, fake_openai, openai_chat_response, run_model

from .test_openai import ENV, MESSAGES, spec_for


def test_a_chat_answer_over_the_limit_is_refused_once() -> None:
    with fake_openai("x" * 9_000_000) as server:
        with pytest.raises(ProviderError) as info:
            run_model(spec_for(server.url), MESSAGES, environ=ENV)
        assert len(server.requests) == 1  # a server that does this will do it again
    assert "larger than 8 MB" in str(info.value) and not info.value.retryable


def test_a_compressed_bomb_is_measured_decoded() -> None:
    body = gzip.compress(b'{"choices": [{"message": {"content": "' + b"y" * 9_000_000 + b'"}}]}')
    with fake_openai() as server:
        server.enqueue(
            FakeResponse(
                200, body, {"content-encoding": "gzip", "content-type": "application/json"}
            )
        )
        with pytest.raises(ProviderError, match="larger than 8 MB"):
            run_model(spec_for(server.url), MESSAGES, environ=ENV)


def test_an_ordinary_answer_reads_as_before() -> None:
    with fake_openai(lambda _r: openai_chat_response("fine")) as server:
        assert run_model(spec_for(server.url), MESSAGES, environ=ENV).text == "fine"
