"""Anthropic Messages API.

It differs from Chat Completions in three ways that matter here: the system
prompt is a top-level field, turns must alternate user/assistant, and
``max_tokens`` is required.

Tool calling, on the wire:

* offered tools: ``tools: [{name, description?, input_schema}]``, no key when none;
* the answer: ``tool_use`` content blocks ``{id, name, input}`` (text blocks may
  come with them) and ``stop_reason: "tool_use"``;
* structured output (``GenerateParams.response_schema``): forced tool use, a tool
  whose ``input_schema`` is the schema and ``tool_choice: {type: "tool", name}``; the
  model answers with that one ``tool_use`` block, whose ``input`` becomes
  ``Completion.structured`` (it is not a tool call for the agent loop);
* history: the assistant turn is a list of blocks (its text, if any, then its
  ``tool_use`` blocks); results go back in a *user* turn as ``tool_result``
  blocks ``{tool_use_id, content}``. All results for one assistant turn share one
  user turn, and they must open it: any user text in that turn comes after them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ._base import (
    ChatMessage,
    Completion,
    Deltas,
    GenerateParams,
    ModelAPI,
    ModelSpec,
    ToolCall,
    ToolSpec,
    Usage,
    with_extra,
)
from ._http import malformed, post_json, require_client, usage_from
from ._streams import AnthropicStream, streamed_answer
from .openai import decode_tool_arguments, synthetic_call_id

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "AnthropicAPI",
    "build_anthropic_body",
    "parse_anthropic_response",
    "parse_anthropic_tool_calls",
]

ANTHROPIC_VERSION = "2023-06-01"
#: The API refuses a request without max_tokens; this is enough for any test answer
#: and below every current model's output limit.
DEFAULT_MAX_TOKENS = 4096


@dataclass
class _Turn:
    role: str
    texts: list[str] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)  # tool_result blocks
    uses: list[dict[str, Any]] = field(default_factory=list)  # tool_use blocks
    images: list[dict[str, Any]] = field(default_factory=list)  # image blocks

    def content(self) -> str | list[dict[str, Any]]:
        """Plain text when that is all there is (the simplest form the API takes)."""
        if not self.results and not self.uses and not self.images:
            return "\n\n".join(self.texts)
        # Empty text blocks are rejected; tool_result blocks must open a user turn.
        text_blocks = [{"type": "text", "text": t} for t in self.texts if t]
        return [*self.results, *text_blocks, *self.images, *self.uses]


def _image(url: str) -> dict[str, Any]:
    """An image block: inline base64 for a ``data:`` URI, else the URL for the API to
    fetch."""
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[len("data:") :].split(";base64,", 1)
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


def _turns(messages: list[ChatMessage]) -> tuple[str | None, list[dict[str, Any]]]:
    """Split out the system text and merge same-role neighbours.

    The API rejects two user (or two assistant) turns in a row, which a test's
    message list can easily contain; joining them keeps every word the author wrote.
    That also puts consecutive tool results into the one user turn the API wants.
    A ``tool`` message with no ``tool_call_id`` has nothing to pair with, so it is
    sent as user text.
    """
    system = [m.content for m in messages if m.role == "system"]
    turns: list[_Turn] = []
    for m in messages:
        if m.role == "system":
            continue
        role = "assistant" if m.role == "assistant" else "user"
        if not turns or turns[-1].role != role:
            turns.append(_Turn(role))
        turn = turns[-1]
        if m.role == "tool" and m.tool_call_id is not None:
            turn.results.append(
                {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            )
            continue
        if m.content or not (m.role == "assistant" and m.tool_calls):
            turn.texts.append(m.content)
        turn.images.extend(_image(url) for url in m.images)
        if m.role == "assistant":
            turn.uses.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in m.tool_calls
            )
    messages_out = [{"role": t.role, "content": t.content()} for t in turns]
    return ("\n\n".join(system) if system else None), messages_out


def _tool(spec: ToolSpec) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": spec.name}
    if spec.description:
        tool["description"] = spec.description
    tool["input_schema"] = spec.parameters
    return tool


def build_anthropic_body(
    model_ref: str, messages: list[ChatMessage], params: GenerateParams
) -> dict[str, Any]:
    system, turns = _turns(messages)
    body: dict[str, Any] = {
        "model": model_ref,
        "max_tokens": AnthropicAPI.effective_max_tokens(params),
        "messages": turns,
    }
    if system is not None:
        body["system"] = system
    if params.tools:
        body["tools"] = [_tool(t) for t in params.tools]
    if params.response_schema is not None:
        wanted = params.response_schema
        forced = ToolSpec(wanted.name, wanted.description or "Give your answer.", wanted.schema)
        body["tools"] = [*body.get("tools", []), _tool(forced)]
        body["tool_choice"] = {"type": "tool", "name": wanted.name}
    optional = {
        "temperature": params.temperature,
        "top_p": params.top_p,
        "stop_sequences": list(params.stop) if params.stop else None,
    }
    # The Messages API has no seed; sending one would be rejected as an unknown field.
    body.update({k: v for k, v in optional.items() if v is not None})
    return with_extra(body, params.extra)


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


def parse_anthropic_tool_calls(data: dict[str, Any]) -> list[ToolCall] | str:
    """The ``tool_use`` blocks of a body :func:`parse_anthropic_response` accepted."""
    calls: list[ToolCall] = []
    for index, block in enumerate(data["content"]):
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        name = block.get("name")
        if not isinstance(name, str) or not name:
            return f"'content[{index}].name' of a tool_use block to be a string"
        call_id = block.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = synthetic_call_id(len(calls), name)
        calls.append(ToolCall(call_id, name, decode_tool_arguments(block.get("input"))))
    return calls


class AnthropicAPI(ModelAPI):
    """``POST {base}/messages`` with ``x-api-key`` and a pinned ``anthropic-version``."""

    vendor: ClassVar[str] = "anthropic"
    structured_output: ClassVar[bool] = True
    vision: ClassVar[bool] = True
    default_max_tokens: ClassVar[int | None] = DEFAULT_MAX_TOKENS  # the API requires one
    default_api_path: ClassVar[str] = "/v1"
    default_api_url: ClassVar[str | None] = "https://api.anthropic.com/v1"

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None) -> None:
        super().__init__(spec, client)
        self._headers = {"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}
        if spec.api_key:
            self._headers["x-api-key"] = spec.api_key

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        url = f"{self.base_url}/messages"
        body = build_anthropic_body(self.spec.model_ref, messages, params)
        data = await post_json(require_client(self), self.spec, url, body, self._headers)
        return self._completion(data, url, params)

    async def stream(
        self, messages: list[ChatMessage], params: GenerateParams, deltas: Deltas
    ) -> Completion:
        """``stream: true``: Messages events; tool input (and the forced tool of structured
        output) arrives as ``input_json_delta`` pieces and is decoded at the end."""
        url = f"{self.base_url}/messages"
        body = {**build_anthropic_body(self.spec.model_ref, messages, params), "stream": True}
        events = AnthropicStream(self.spec, url, deltas)
        return await streamed_answer(
            require_client(self),
            url,
            body,
            self._headers,
            events,
            lambda data: self._completion(data, url, params),
        )

    def _completion(self, data: dict[str, Any], url: str, params: GenerateParams) -> Completion:
        parsed = parse_anthropic_response(data)
        if isinstance(parsed, str):
            raise malformed(self.spec, url, parsed, data)
        calls = parse_anthropic_tool_calls(data)
        if isinstance(calls, str):
            raise malformed(self.spec, url, calls, data)
        text, stop, usage = parsed
        structured = None
        if params.response_schema is not None:
            name = params.response_schema.name
            answer = next((c for c in calls if c.name == name), None)
            calls = [c for c in calls if c.name != name]
            if answer is not None and "_raw" not in answer.arguments:
                structured = answer.arguments
        return Completion(
            text=text, usage=usage, finish_reason=stop, tool_calls=calls, structured=structured
        )
