"""OpenAI's legacy Completions API (``POST {base}/completions``), and the servers that copy it.

Some endpoints only serve plain text completion: OpenAI's instruct models, vLLM and
llama.cpp serving a base model, chattest model files whose URL ends in
``/v1/completions``. The wire format has no messages, so the chat turns are flattened
into one ``prompt`` (:func:`flatten_messages`): every system message first, then the
other turns in order, each one's text separated by a blank line, with no role labels
(a base model would continue a label it was shown). Tools and structured output do not
exist here: a request that offers tools is refused (a non-retryable ProviderError) rather
than answered as if none were offered; ``response_schema`` is ignored, as the
:class:`~oxyeval.providers.ModelAPI` contract allows for a class whose
``structured_output`` is False.

Request: ``{model, prompt, max_tokens, temperature?, top_p?, seed?, stop?, stream?}``;
``max_tokens`` is always sent (:attr:`OpenAICompletionsAPI.default_max_tokens` when neither
the call nor the model sets it) because the API's own default is 16 tokens, which would
cut nearly every answer. Answer: ``choices[0].text``, ``choices[0].finish_reason``,
``usage.prompt_tokens`` / ``usage.completion_tokens``. Streamed: server-sent ``data:``
chunks each with ``choices[0].text``, the finish reason in the last choice chunk, usage in
a chunk of its own (``stream_options.include_usage``), then ``data: [DONE]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ProviderError
from ._base import (
    ChatMessage,
    Completion,
    Deltas,
    GenerateParams,
    ModelAPI,
    ModelSpec,
    with_extra,
)
from ._http import malformed, post_json, require_client, usage_from
from ._streams import OpenAIStream, cut_short, streamed_answer
from .openai import bearer_headers

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_COMPLETION_TOKENS",
    "OpenAICompletionsAPI",
    "build_completions_body",
    "flatten_messages",
    "parse_completions_response",
]

#: ``max_tokens`` sent when nothing else sets one: the API's own default (16) cuts answers.
DEFAULT_COMPLETION_TOKENS = 1024


def flatten_messages(messages: list[ChatMessage]) -> str:
    """The one ``prompt`` the chat turns become: system texts first, then the others in
    order, separated by blank lines (empty texts skipped)."""
    system = [m.content for m in messages if m.role == "system" and m.content]
    rest = [m.content for m in messages if m.role != "system" and m.content]
    return "\n\n".join(system + rest)


def build_completions_body(
    model_ref: str, messages: list[ChatMessage], params: GenerateParams, max_tokens: int
) -> dict[str, Any]:
    """The request body; unset sampling settings are left out so servers keep theirs.
    ``extra`` fields are merged first, so they can never replace the model or the prompt."""
    body: dict[str, Any] = with_extra({}, params.extra)
    body.update({"model": model_ref, "prompt": flatten_messages(messages)})
    optional = {
        "max_tokens": max_tokens,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "seed": params.seed,
        "stop": list(params.stop) if params.stop else None,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    return body


def parse_completions_response(data: dict[str, Any]) -> Completion | str:
    """The answer in a ``text_completion`` body, or a description of what was missing."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "a 'choices' list with at least one choice"
    text = choices[0].get("text")
    if text is None:
        text = ""
    if not isinstance(text, str):
        return "'choices[0].text' to be a string"
    finish = choices[0].get("finish_reason")
    usage = usage_from(data.get("usage"), "prompt_tokens", "completion_tokens")
    return Completion(
        text=text, usage=usage, finish_reason=finish if isinstance(finish, str) else None
    )


class _CompletionsStream(OpenAIStream):
    """``text_completion`` chunks: as chat chunks (errors, usage, finish, [DONE]), with
    the text piece in ``choices[0].text`` instead of a delta."""

    def _choice(self, choice: dict[str, Any], data: dict[str, Any]) -> None:
        text = choice.get("text")
        if text is not None and not isinstance(text, str):
            raise self.bad("'choices[0].text' to be a string", data)
        if text:
            self.text.append(text)
            self.deltas.text(text)

    def body(self) -> dict[str, Any]:
        if self.finish is None and not self.done:
            raise cut_short(self.spec, self.url, "finish_reason and no [DONE]")
        out: dict[str, Any] = {
            "choices": [{"text": "".join(self.text), "finish_reason": self.finish}]
        }
        if self.usage is not None:
            out["usage"] = self.usage
        return out


class OpenAICompletionsAPI(ModelAPI):
    """``POST {base}/completions`` with a Bearer key when one is configured (local
    servers take none, as with :class:`~oxyeval.providers.openai.OpenAIAPI`)."""

    vendor: ClassVar[str] = "openai-completions"
    default_api_url: ClassVar[str | None] = "https://api.openai.com/v1"
    default_max_tokens: ClassVar[int | None] = DEFAULT_COMPLETION_TOKENS

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None) -> None:
        super().__init__(spec, client)
        self._headers = bearer_headers(spec)

    def _body(self, messages: list[ChatMessage], params: GenerateParams) -> dict[str, Any]:
        if params.tools:
            raise ProviderError(
                f"model '{self.spec.name}' ({self.vendor}): the completions API cannot offer "
                "tools; use a chat endpoint (/v1/chat/completions) for a model that calls tools",
                model=self.spec.name,
            )
        limit = self.effective_max_tokens(params) or DEFAULT_COMPLETION_TOKENS
        return build_completions_body(self.spec.model_ref, messages, params, limit)

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        url = f"{self.base_url}/completions"
        body = self._body(messages, params)
        data = await post_json(require_client(self), self.spec, url, body, self._headers)
        return self._completion(data, url)

    async def stream(
        self, messages: list[ChatMessage], params: GenerateParams, deltas: Deltas
    ) -> Completion:
        """``stream: true`` with ``stream_options.include_usage`` (token counts last)."""
        url = f"{self.base_url}/completions"
        body = self._body(messages, params)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        events = _CompletionsStream(self.spec, url, deltas)
        return await streamed_answer(
            require_client(self),
            url,
            body,
            self._headers,
            events,
            lambda data: self._completion(data, url),
        )

    def _completion(self, data: dict[str, Any], url: str) -> Completion:
        parsed = parse_completions_response(data)
        if isinstance(parsed, str):
            raise malformed(self.spec, url, parsed, data)
        return parsed
