"""Google Gemini API (``generateContent``).

The key goes in the ``x-goog-api-key`` header, never in ``?key=``: URLs end up
in error messages, logs and proxies, headers do not.
"""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import quote

from ..errors import ProviderError
from ._base import ChatMessage, Completion, GenerateParams, ModelAPI, Usage
from ._http import malformed, post_json, require_client, usage_from

__all__ = ["GoogleAPI", "build_gemini_body", "parse_gemini_response"]


def _contents(messages: list[ChatMessage]) -> tuple[str | None, list[dict[str, Any]]]:
    """System text apart, then turns with Gemini's role names ("model" for the assistant).

    Same-role neighbours are merged into one turn with several parts, because the
    API expects turns to alternate; ``tool`` text is sent as user text.
    """
    system = [m.content for m in messages if m.role == "system"]
    contents: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        role = "model" if m.role == "assistant" else "user"
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].append({"text": m.content})
        else:
            contents.append({"role": role, "parts": [{"text": m.content}]})
    return ("\n\n".join(system) if system else None), contents


def build_gemini_body(messages: list[ChatMessage], params: GenerateParams) -> dict[str, Any]:
    system, contents = _contents(messages)
    body: dict[str, Any] = {"contents": contents}
    if system is not None:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    config = {
        "temperature": params.temperature,
        "maxOutputTokens": params.max_tokens,
        "topP": params.top_p,
        "seed": params.seed,
        "stopSequences": list(params.stop) if params.stop else None,
    }
    config = {k: v for k, v in config.items() if v is not None}
    if config:
        body["generationConfig"] = config
    return body


def _usage(data: dict[str, Any]) -> Usage:
    return usage_from(data.get("usageMetadata"), "promptTokenCount", "candidatesTokenCount")


def parse_gemini_response(data: dict[str, Any]) -> tuple[str, str | None, Usage] | str:
    """``(text, finishReason, usage)``, or a description of what was missing.

    A candidate stopped for safety may have no ``content`` at all: that is an
    empty answer with its finish reason, not a malformed body. Thought-summary
    parts (``"thought": true``) are reasoning, not the answer, and are skipped.
    """
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        return "a 'candidates' list with at least one candidate"
    candidate = candidates[0]
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if content is not None and not isinstance(content, dict):
        return "'candidates[0].content' to be an object"
    if parts is not None and not isinstance(parts, list):
        return "'candidates[0].content.parts' to be a list"
    text = "".join(
        part["text"]
        for part in parts or []
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")
    )
    finish = candidate.get("finishReason")
    return text, finish if isinstance(finish, str) else None, _usage(data)


class GoogleAPI(ModelAPI):
    """``POST {base}/models/{model_ref}:generateContent`` with the key in a header."""

    vendor: ClassVar[str] = "google"
    default_api_url: ClassVar[str | None] = "https://generativelanguage.googleapis.com/v1beta"

    def _headers(self) -> dict[str, str]:
        if self.spec.api_key:
            return {"x-goog-api-key": self.spec.api_key}
        return {}

    def _url(self) -> str:
        # Accept "models/gemini-x" as well as "gemini-x", as Google's own tools do.
        ref = self.spec.model_ref.removeprefix("models/")
        return f"{self.base_url}/models/{quote(ref, safe='-._~')}:generateContent"

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        url = self._url()
        body = build_gemini_body(messages, params)
        data = await post_json(require_client(self), self.spec, url, body, self._headers())
        feedback = data.get("promptFeedback")
        block = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if block and not data.get("candidates"):
            why = feedback.get("blockReasonMessage") if isinstance(feedback, dict) else None
            detail = f": {why}" if isinstance(why, str) and why else ""
            raise ProviderError(
                f"model '{self.spec.name}' ({self.spec.vendor}): the prompt was blocked by "
                f"Gemini (blockReason {block}){detail}; no answer was generated and retrying "
                f"the same prompt will not help.",
                model=self.spec.name,
            )
        parsed = parse_gemini_response(data)
        if isinstance(parsed, str):
            raise malformed(self.spec, url, parsed, data)
        text, finish, usage = parsed
        return Completion(text=text, usage=usage, finish_reason=finish)
