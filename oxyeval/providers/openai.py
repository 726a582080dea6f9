"""OpenAI Chat Completions, and every server that copies its wire format.

vLLM, llama.cpp, LM Studio and Ollama all speak ``/chat/completions``, so this
one class covers them; that is also why the key header is optional here.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._base import ChatMessage, Completion, GenerateParams, ModelAPI, Usage
from ._http import malformed, post_json, require_client, usage_from

__all__ = ["OpenAIAPI", "build_openai_body", "parse_openai_response"]


def build_openai_body(
    model_ref: str, messages: list[ChatMessage], params: GenerateParams
) -> dict[str, Any]:
    """Request body with only the params that are set, so servers keep their own defaults.

    Local servers reject or mis-handle fields they do not know; sending ``null``
    for an unset option is not the same as leaving it out.
    """
    body: dict[str, Any] = {
        "model": model_ref,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
    }
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


class OpenAIAPI(ModelAPI):
    """``POST {base}/chat/completions`` with a Bearer key when one is configured."""

    vendor: ClassVar[str] = "openai"
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
        text, finish, usage = parsed
        return Completion(text=text, usage=usage, finish_reason=finish)
