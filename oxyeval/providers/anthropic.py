"""Anthropic Messages API.

It differs from Chat Completions in three ways that matter here: the system
prompt is a top-level field, turns must alternate user/assistant, and
``max_tokens`` is required.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._base import ChatMessage, Completion, GenerateParams, ModelAPI, Usage
from ._http import malformed, post_json, require_client, usage_from

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicAPI", "build_anthropic_body", "parse_anthropic_response"]

ANTHROPIC_VERSION = "2023-06-01"
#: The API refuses a request without max_tokens; this is enough for any test answer
#: and below every current model's output limit.
DEFAULT_MAX_TOKENS = 4096


def _turns(messages: list[ChatMessage]) -> tuple[str | None, list[dict[str, str]]]:
    """Split out the system text and merge same-role neighbours.

    The API rejects two user (or two assistant) turns in a row, which a test's
    message list can easily contain; joining them keeps every word the author wrote.
    A ``tool`` message has no plain-text equivalent here, so it is sent as user text.
    """
    system = [m.content for m in messages if m.role == "system"]
    turns: list[dict[str, str]] = []
    for m in messages:
        if m.role == "system":
            continue
        role = "assistant" if m.role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + m.content
        else:
            turns.append({"role": role, "content": m.content})
    return ("\n\n".join(system) if system else None), turns


def build_anthropic_body(
    model_ref: str, messages: list[ChatMessage], params: GenerateParams
) -> dict[str, Any]:
    system, turns = _turns(messages)
    body: dict[str, Any] = {
        "model": model_ref,
        "max_tokens": params.max_tokens if params.max_tokens is not None else DEFAULT_MAX_TOKENS,
        "messages": turns,
    }
    if system is not None:
        body["system"] = system
    optional = {
        "temperature": params.temperature,
        "top_p": params.top_p,
        "stop_sequences": list(params.stop) if params.stop else None,
    }
    # The Messages API has no seed; sending one would be rejected as an unknown field.
    body.update({k: v for k, v in optional.items() if v is not None})
    return body


def parse_anthropic_response(data: dict[str, Any]) -> tuple[str, str | None, Usage] | str:
    """``(text, stop_reason, usage)``, or a description of what was missing.

    Only ``text`` blocks count: ``thinking`` and ``tool_use`` blocks are not the answer.
    """
    content = data.get("content")
    if not isinstance(content, list):
        return "a 'content' list of blocks"
    text = "".join(
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )
    stop = data.get("stop_reason")
    usage = usage_from(data.get("usage"), "input_tokens", "output_tokens")
    return text, stop if isinstance(stop, str) else None, usage


class AnthropicAPI(ModelAPI):
    """``POST {base}/messages`` with ``x-api-key`` and a pinned ``anthropic-version``."""

    vendor: ClassVar[str] = "anthropic"
    default_api_url: ClassVar[str | None] = "https://api.anthropic.com/v1"

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}
        if self.spec.api_key:
            headers["x-api-key"] = self.spec.api_key
        return headers

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        url = f"{self.base_url}/messages"
        body = build_anthropic_body(self.spec.model_ref, messages, params)
        data = await post_json(require_client(self), self.spec, url, body, self._headers())
        parsed = parse_anthropic_response(data)
        if isinstance(parsed, str):
            raise malformed(self.spec, url, parsed, data)
        text, stop, usage = parsed
        return Completion(text=text, usage=usage, finish_reason=stop)
