"""What each vendor's streamed events mean, gathered into the body a whole answer has.

Each class below takes one vendor's events (via :func:`~oxyeval.providers._sse.stream_events`),
reports content to :class:`~oxyeval.providers._base.Deltas` as it arrives, and at the end
builds the JSON object the same request without streaming would have answered, so the
vendor's own parser (tool calls, structured output, finish reason, usage, its checks
for malformed answers) reads streamed and whole answers alike:

* OpenAI Chat Completions (and Ollama, vLLM, llama.cpp): ``choices[0].delta`` with
  ``content`` pieces and ``tool_calls`` pieces gathered by their ``index`` (the id and
  name come first, the arguments' JSON in pieces); ``finish_reason`` in the last choice
  chunk; ``usage`` in a last chunk without choices (``stream_options.include_usage``);
  ``data: [DONE]`` at the end.
* Anthropic Messages: ``message_start`` (input tokens), ``content_block_start`` /
  ``content_block_delta`` (``text_delta``, ``input_json_delta`` for a tool's input) /
  ``content_block_stop``, ``message_delta`` (stop reason, output tokens),
  ``message_stop``; ``ping`` and thinking deltas are not content.
* Gemini ``streamGenerateContent?alt=sse``: each event is a whole
  ``GenerateContentResponse`` holding the next parts (text pieces, whole
  ``functionCall`` parts); the finish reason and the final usage come last.

A stream that ends before its vendor's closing event (a finish reason, ``message_stop``)
was cut: a retryable ProviderError, like a connection dropped mid-body.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ._http import count, malformed, shown_url
from ._sse import stream_error, stream_events

if TYPE_CHECKING:
    from collections.abc import Callable

    import httpx

    from ._base import Completion, Deltas, ModelSpec

__all__ = ["AnthropicStream", "GeminiStream", "OpenAIStream", "cut_short", "streamed_answer"]


def cut_short(spec: ModelSpec, url: str, missing: str) -> ProviderError:
    """A stream that ended cleanly but before the answer did."""
    return ProviderError(
        f"model '{spec.name}' ({spec.vendor}): the stream from {shown_url(url)} ended before "
        f"the answer was complete (no {missing})",
        model=spec.name,
        retryable=True,
    )


async def streamed_answer(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    events: _Stream,
    completion: Callable[[dict[str, Any]], Completion],
) -> Completion:
    """One streamed attempt of any vendor: its events gathered into the body a whole
    answer would have had, read by the vendor's own parser (``completion``). A server
    that ignored ``stream`` and sent the whole body is read as it is, its text reported
    as one piece."""
    whole = await stream_events(client, events.spec, url, body, headers, events.feed)
    if whole is not None:
        done = completion(whole)
        events.deltas.text(done.text)
        return done
    return completion(events.body())


class _Stream:
    def __init__(self, spec: ModelSpec, url: str, deltas: Deltas) -> None:
        self.spec, self.url, self.deltas = spec, url, deltas

    def bad(self, expected: str, data: Any = None) -> ProviderError:
        return malformed(self.spec, self.url, expected, data)

    def feed(self, event: str, data: dict[str, Any] | None) -> bool:
        """Take one event; True when it ends the stream."""
        raise NotImplementedError

    def body(self) -> dict[str, Any]:
        """The whole answer the events add up to, in the vendor's non-streamed shape."""
        raise NotImplementedError


def _text_of(content: Any) -> str | None:
    """A content delta as text: a string, or a list of text parts; None if neither."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p if isinstance(p, str) else p.get("text", "")
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))
        )
    return None


class OpenAIStream(_Stream):
    """Chat Completions chunks (``chat.completion.chunk``)."""

    def __init__(self, spec: ModelSpec, url: str, deltas: Deltas) -> None:
        super().__init__(spec, url, deltas)
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None
        self.done = False

    def feed(self, event: str, data: dict[str, Any] | None) -> bool:
        if data is None:  # [DONE]
            self.done = True
            return True
        if data.get("error") is not None and not data.get("choices"):
            raise stream_error(self.spec, self.url, data["error"])
        if isinstance(data.get("usage"), dict):
            self.usage = data["usage"]
        choices = data.get("choices")
        if choices is None:
            return False
        if not isinstance(choices, list):
            raise self.bad("'choices' to be a list in every chunk", data)
        for choice in choices:
            if not isinstance(choice, dict):
                raise self.bad("each of 'choices' to be an object", data)
            if choice.get("index", 0) != 0:
                continue
            self._choice(choice, data)
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                self.finish = finish
        return False

    def _choice(self, choice: dict[str, Any], data: dict[str, Any]) -> None:
        """What one chunk's first choice adds: a chat ``delta`` here; the legacy
        completions stream reads ``text`` instead (same chunks otherwise)."""
        self._delta(choice.get("delta"), data)

    def _delta(self, delta: Any, data: dict[str, Any]) -> None:
        if delta is None:
            return
        if not isinstance(delta, dict):
            raise self.bad("'choices[0].delta' to be an object", data)
        content = delta.get("content")
        if content is not None:
            text = _text_of(content)
            if text is None:
                raise self.bad("'choices[0].delta.content' to be a string or parts", data)
            self.text.append(text)
            self.deltas.text(text)
        pieces = delta.get("tool_calls")
        if pieces is None:
            return
        if not isinstance(pieces, list):
            raise self.bad("'choices[0].delta.tool_calls' to be a list", data)
        for position, piece in enumerate(pieces):
            if not isinstance(piece, dict):
                raise self.bad("each tool call piece to be an object", data)
            index = count(piece.get("index", position))
            if index is None:
                raise self.bad("a tool call piece's 'index' to be a count", data)
            call = self.calls.setdefault(
                index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            )
            if isinstance(piece.get("id"), str) and piece["id"]:
                call["id"] = piece["id"]
            if isinstance(piece.get("type"), str):
                call["type"] = piece["type"]
            function = piece.get("function")
            if not isinstance(function, dict):
                continue
            if isinstance(function.get("name"), str):
                call["function"]["name"] += function["name"]
            arguments = function.get("arguments")
            if isinstance(arguments, dict):  # sent whole as an object (some local servers)
                arguments = json.dumps(arguments, ensure_ascii=False)
            if isinstance(arguments, str) and arguments:
                call["function"]["arguments"] += arguments
                self.deltas.content()

    def body(self) -> dict[str, Any]:
        """The ``chat.completion`` object these chunks add up to."""
        if self.finish is None and not self.done:
            raise cut_short(self.spec, self.url, "finish_reason and no [DONE]")
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text)}
        if self.calls:
            message["tool_calls"] = [call for _, call in sorted(self.calls.items())]
        out: dict[str, Any] = {"choices": [{"message": message, "finish_reason": self.finish}]}
        if self.usage is not None:
            out["usage"] = self.usage
        return out


class AnthropicStream(_Stream):
    """Messages API events."""

    def __init__(self, spec: ModelSpec, url: str, deltas: Deltas) -> None:
        super().__init__(spec, url, deltas)
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stop: str | None = None
        self.usage: dict[str, Any] = {}
        self.started = self.done = False

    def feed(self, event: str, data: dict[str, Any] | None) -> bool:
        if data is None:
            return False
        kind = data.get("type", event)
        if kind == "error":
            raise stream_error(self.spec, self.url, data.get("error"))
        if kind == "message_start":
            message = data.get("message")
            if not isinstance(message, dict):
                raise self.bad("'message' to be an object in message_start", data)
            self.started = True
            self._usage(message.get("usage"))
        elif kind == "content_block_start":
            block = data.get("content_block")
            if not isinstance(block, dict):
                raise self.bad("'content_block' to be an object in content_block_start", data)
            entry = {**block, "_json": ""}
            self.blocks[self._index(data)] = entry
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                self.deltas.text(block["text"])
        elif kind == "content_block_delta":
            self._delta(data)
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self.stop = delta["stop_reason"]
            self._usage(data.get("usage"))
        elif kind == "message_stop":
            self.done = True
            return True
        return False  # ping, content_block_stop, events added later

    def _index(self, data: dict[str, Any]) -> int:
        index = count(data.get("index"))
        if index is None:
            raise self.bad("'index' to be a count", data)
        return index

    def _usage(self, usage: Any) -> None:
        if isinstance(usage, dict):  # message_delta's counts are running totals
            self.usage.update({k: v for k, v in usage.items() if v is not None})

    def _delta(self, data: dict[str, Any]) -> None:
        block = self.blocks.get(self._index(data))
        delta = data.get("delta")
        if block is None or not isinstance(delta, dict):
            raise self.bad("a content_block_delta for a started block, with a 'delta' object", data)
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            if not isinstance(text, str):
                raise self.bad("'delta.text' to be a string", data)
            block["text"] = block.get("text", "") + text
            self.deltas.text(text)
        elif kind == "input_json_delta":
            piece = delta.get("partial_json")
            if not isinstance(piece, str):
                raise self.bad("'delta.partial_json' to be a string", data)
            block["_json"] += piece
            if piece:
                self.deltas.content()

    def body(self) -> dict[str, Any]:
        """The ``message`` object these events add up to."""
        if not self.done:
            raise cut_short(self.spec, self.url, "message_stop event")
        content = []
        for _, block in sorted(self.blocks.items()):
            pieces = block.pop("_json")
            if block.get("type") == "tool_use" and pieces:
                block["input"] = pieces  # a JSON string: decoded like any tool input
            content.append(block)
        return {"content": content, "stop_reason": self.stop, "usage": self.usage}


class GeminiStream(_Stream):
    """``GenerateContentResponse`` chunks."""

    def __init__(self, spec: ModelSpec, url: str, deltas: Deltas) -> None:
        super().__init__(spec, url, deltas)
        self.parts: list[Any] = []
        self.finish: str | None = None
        self.usage: Any = None
        self.feedback: Any = None
        self.candidates = False

    def feed(self, event: str, data: dict[str, Any] | None) -> bool:
        if data is None:
            return True
        if data.get("error") is not None:
            raise stream_error(self.spec, self.url, data["error"])
        if data.get("usageMetadata") is not None:
            self.usage = data["usageMetadata"]
        if data.get("promptFeedback") is not None:
            self.feedback = data["promptFeedback"]
        candidates = data.get("candidates")
        if candidates is None:
            return False
        if not isinstance(candidates, list) or not all(isinstance(c, dict) for c in candidates):
            raise self.bad("'candidates' to be a list of objects in every chunk", data)
        if not candidates:
            return False
        self.candidates = True
        candidate = candidates[0]
        content = candidate.get("content")
        if content is not None and not isinstance(content, dict):
            raise self.bad("'candidates[0].content' to be an object", data)
        parts = (content or {}).get("parts")
        if parts is not None and not isinstance(parts, list):
            raise self.bad("'candidates[0].content.parts' to be a list", data)
        for part in parts or []:
            self.parts.append(part)
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str) and not part.get("thought"):
                self.deltas.text(part["text"])
            elif part.get("functionCall") is not None:
                self.deltas.content()
        finish = candidate.get("finishReason")
        if isinstance(finish, str) and finish:
            self.finish = finish
        return False

    def body(self) -> dict[str, Any]:
        """The ``GenerateContentResponse`` these chunks add up to."""
        out: dict[str, Any] = {}
        if self.feedback is not None:
            out["promptFeedback"] = self.feedback
        if self.usage is not None:
            out["usageMetadata"] = self.usage
        if not self.candidates and self.feedback is not None:
            return out  # a blocked prompt: GoogleAPI says so
        if self.finish is None:
            raise cut_short(self.spec, self.url, "finishReason")
        content = {"role": "model", "parts": self.parts}
        out["candidates"] = [{"content": content, "finishReason": self.finish}]
        return out
