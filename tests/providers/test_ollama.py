"""OllamaAPI is OpenAIAPI with Ollama's defaults; check the defaults and one real call."""

from __future__ import annotations

from oxyeval.providers import ChatMessage, ModelSpec, resolve_api_key, vendor_class
from oxyeval.providers.ollama import OllamaAPI
from oxyeval.providers.openai import OpenAIAPI
from tests.fakes import fake_openai, run_model


def test_registry_defaults_and_no_key_needed() -> None:
    cls = vendor_class("ollama")
    assert cls is OllamaAPI
    assert issubclass(cls, OpenAIAPI)
    assert cls.requires_key is False
    spec = ModelSpec(name="local", vendor="ollama", model_ref="llama3.2")
    assert OllamaAPI(spec, None).base_url == "http://localhost:11434/v1"
    # No key_var, no api_url, empty environment: still fine, and no key is attached.
    assert resolve_api_key(spec, {}).api_key is None


def test_call_goes_to_chat_completions_without_authorization() -> None:
    with fake_openai("pong") as server:
        spec = ModelSpec(name="local", vendor="ollama", model_ref="llama3.2", api_url=server.url)
        result = run_model(spec, [ChatMessage("user", "ping")], environ={})
        (request,) = server.requests
    assert result.text == "pong"
    assert request.route == "/v1/chat/completions"
    assert request.body["model"] == "llama3.2"
    assert "authorization" not in request.headers
