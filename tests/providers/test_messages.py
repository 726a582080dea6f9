"""The words of a provider timeout: the advice is given once."""

from __future__ import annotations

import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import ChatMessage

from ..fakes import openai_chat_response, run_model
from .test_deadlines import DripServer, _spec


def test_a_timeout_gives_its_advice_once() -> None:
    with (
        DripServer("body", openai_chat_response("finally")) as server,
        pytest.raises(ProviderError) as info,
    ):
        url = server.url
        run_model(_spec(url), [ChatMessage("user", "hi")])
    assert str(info.value) == (
        f"model 'slowpoke' (openai): no complete answer from {url}/chat/completions "
        "within 0.5s (the model's `timeout` bounds each whole attempt: connecting, waiting in "
        "the server's queue and reading). Raise `timeout` for this model in config.yml, lower "
        "its `concurrency` (a local server often answers one request at a time), or set "
        "`max_tokens` to shorten answers (gave up after 1 attempt)"
    )
