"""OpenAI Chat Completions, and every server that copies its wire format.

vLLM, llama.cpp, LM Studio and Ollama all speak ``/chat/completions``, so this
one class covers them; that is also why the key header is optional here.

Tool calling, on the wire:

* offered tools: ``tools: [{"type": "function", "function": {name, description?,
  parameters}}]``, and no ``tools`` key at all when none are offered;
* the answer: ``choices[0].message.tool_calls: [{id, type: "function", function:
  {name, arguments}}]`` where ``arguments`` is a JSON *string* the model wrote;
* structured output (``GenerateParams.response_schema``): ``response_format: {type:
  "json_schema", json_schema: {name, strict: true, schema}}``; the JSON comes back as
  the message content and is decoded into ``Completion.structured``;
* history: an assistant turn that called tools is ``{"role": "assistant",
  "content": text-or-"", "tool_calls": [...]}`` and each result is
  ``{"role": "tool", "tool_call_id": id, "content": text}``.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from ._base import (
    ChatMessage,
    Completion,
    GenerateParams,
    ModelAPI,
    ToolCall,
    ToolSpec,
    Usage,
    json_object,
)
from ._http import malformed, post_json, require_client, usage_from

__all__ = [
    "OpenAIAPI",
    "build_openai_body",
    "decode_tool_arguments",
    "encode_tool_arguments",
    "parse_openai_response",
    "parse_openai_tool_calls",
    "synthetic_call_id",
]


def synthetic_call_id(index: int, name: str) -> str:
    """An id for a call the server sent without one: stable for the same answer."""
    return f"call_{index}_{name}"


def decode_tool_arguments(value: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict, never raising.

    Models do write broken JSON now and then; the call is kept with the text
    under ``"_raw"`` so the agent loop can tell the model what went wrong instead
    of the whole run failing. An empty or missing value means "no arguments".
    """
    if isinstance(value, dict):
        return dict(value)
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            decoded = json.loads(value)
        except ValueError:
            return {"_raw": value}
        return decoded if isinstance(decoded, dict) else {"_raw": value}
    return {"_raw": json.dumps(value, ensure_ascii=False, default=str)}


def encode_tool_arguments(arguments: dict[str, Any]) -> str:
    """The JSON string Chat Completions expects for ``function.arguments``."""
    return json.dumps(arguments, ensure_ascii=False, default=str)


def _tool(spec: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": spec.name}
    if spec.description:
        function["description"] = spec.description
    function["parameters"] = spec.parameters
    return {"type": "function", "function": function}


def _message(m: ChatMessage) -> dict[str, Any]:
    if m.role == "assistant" and m.tool_calls:
        return {
            "role": "assistant",
            # "", not null: the API answers a calls-only turn with null, but llama.cpp's
            # server (llama-cpp-python) rejects null with HTTP 500; OpenAI, vLLM and
            # Ollama all accept "".
            "content": m.content or "",
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": encode_tool_arguments(call.arguments),
                    },
                }
                for call in m.tool_calls
            ],
        }
    if m.role == "tool" and m.tool_call_id is not None:
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    return {"role": m.role, "content": m.content}


def build_openai_body(
    model_ref: str, messages: list[ChatMessage], params: GenerateParams
) -> dict[str, Any]:
    """Request body with only the params that are set, so servers keep their own defaults.

    Local servers reject or mis-handle fields they do not know; sending ``null``
    for an unset option is not the same as leaving it out.
    """
    body: dict[str, Any] = {
        "model": model_ref,
        "messages": [_message(m) for m in messages],
    }
    if params.tools:
        body["tools"] = [_tool(t) for t in params.tools]
    if params.response_schema is not None:
        wanted = params.response_schema
        json_schema: dict[str, Any] = {"name": wanted.name, "strict": True}
        if wanted.description:
            json_schema["description"] = wanted.description
        json_schema["schema"] = wanted.schema
        body["response_format"] = {"type": "json_schema", "json_schema": json_schema}
    optional = {
        "temperature": params.temperature,
        "max_tokens": params.max_tokens,
        "top_p": params.top_p,
        "seed": params.seed,
        "stop": list(params.stop) if params.stop else None,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    return body


def _content_text(content: Any) -> str | None:
    """Message content as text: a string, null (tool calls only), or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif (
                isinstance(part, dict)
                and isinstance(part.get("text"), str)
                and part.get("type", "text") in ("text", "output_text")
            ):
                texts.append(part["text"])
        return "".join(texts)
    return None


def parse_openai_response(data: dict[str, Any]) -> tuple[str, str | None, Usage] | str:
    """``(text, finish_reason, usage)``, or a description of what was missing."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "a 'choices' list with at least one choice"
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        return "'choices[0].message' to be an object"
    text = _content_text(message.get("content"))
    if text is None:
        return "'choices[0].message.content' to be a string, null or a list of parts"
    finish = choice.get("finish_reason")
    usage = usage_from(data.get("usage"), "prompt_tokens", "completion_tokens")
    return text, finish if isinstance(finish, str) else None, usage


def parse_openai_tool_calls(data: dict[str, Any]) -> list[ToolCall] | str:
    """The calls in ``choices[0].message.tool_calls``, or a description of what was wrong.

    Call this on a body :func:`parse_openai_response` accepted. Entries of another
    ``type`` than ``function`` are skipped: only function tools are ever offered.
    A call without an id (some local servers) gets one from :func:`synthetic_call_id`.
    """
    message = data["choices"][0]["message"]
    raw = message.get("tool_calls")
    if raw is None:
        return []
    if not isinstance(raw, list):
        return "'choices[0].message.tool_calls' to be a list"
    calls: list[ToolCall] = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or item.get("type", "function") != "function":
            continue
        function = item.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            return f"'choices[0].message.tool_calls[{index}].function.name' to be a string"
        call_id = item.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = synthetic_call_id(index, name)
        calls.append(ToolCall(call_id, name, decode_tool_arguments(function.get("arguments"))))
    return calls


class OpenAIAPI(ModelAPI):
    """``POST {base}/chat/completions`` with a Bearer key when one is configured."""

    vendor: ClassVar[str] = "openai"
    structured_output: ClassVar[bool] = True
    default_api_url: ClassVar[str | None] = "https://api.openai.com/v1"

    def _headers(self) -> dict[str, str]:
        if self.spec.api_key:
            return {"Authorization": f"Bearer {self.spec.api_key}"}
        return {}

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        url = f"{self.base_url}/chat/completions"
        body = build_openai_body(self.spec.model_ref, messages, params)
        data = await post_json(require_client(self), self.spec, url, body, self._headers())
        parsed = parse_openai_response(data)
        if isinstance(parsed, str):
            raise malformed(self.spec, url, parsed, data)
        calls = parse_openai_tool_calls(data)
        if isinstance(calls, str):
            raise malformed(self.spec, url, calls, data)
        text, finish, usage = parsed
        structured = json_object(text) if params.response_schema is not None else None
        return Completion(
            text=text, usage=usage, finish_reason=finish, tool_calls=calls, structured=structured
        )
