"""Reading a streamed answer: server-sent events, under the same rules as a whole one.

Every vendor streams as server-sent events (OpenAI and Ollama ``stream: true``,
Anthropic's Messages events, Gemini ``streamGenerateContent?alt=sse``), so one reader
serves them all and each vendor only says what its events mean
(:mod:`oxyeval.providers._streams`). The reader keeps the rules of
:func:`~oxyeval.providers._http.post_json`: the model's ``timeout`` bounds the whole
attempt, the body is capped at :data:`~oxyeval.providers._http.MAX_ANSWER_BYTES`,
redirects and error statuses become the same classified errors, and a connection
that drops mid-stream is a retryable error (whether it is retried is the caller's
call: :class:`~oxyeval.providers.Model` retries only before content arrived).

An event whose data is not a JSON object is a malformed answer naming the model and
the URL. A server that ignores ``stream: true`` and answers one JSON body is
accepted: the body is handed back for the vendor's ordinary parser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..inputs import JSONProblem, loads
from ..redact import clip
from ._http import (
    MAX_ANSWER_BYTES,
    TooLarge,
    error_response,
    json_body,
    malformed,
    read_response,
    shown_url,
    within_deadline,
)

if TYPE_CHECKING:
    import httpx

    from ._base import ModelSpec

__all__ = ["OnEvent", "stream_error", "stream_events"]

#: Called with each event's name (``message`` when it has none) and its data decoded;
#: data None is OpenAI's ``[DONE]``. Returns True to stop reading.
OnEvent = Callable[[str, "dict[str, Any] | None"], "bool | None"]


async def stream_events(
    client: httpx.AsyncClient,
    spec: ModelSpec,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    on_event: OnEvent,
    *,
    max_bytes: int = MAX_ANSWER_BYTES,
) -> dict[str, Any] | None:
    """POST ``body`` and feed each server-sent event to ``on_event`` until the stream ends.

    Returns None after a stream, or the JSON object a server sent instead of one.
    Raises a classified ProviderError as :func:`~oxyeval.providers._http.post_json` does.
    """
    read = _read(client, spec, url, body, {**headers, **spec.headers}, on_event, max_bytes)
    return await within_deadline(spec, url, read, max_bytes)


async def _read(
    client: httpx.AsyncClient,
    spec: ModelSpec,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    on_event: OnEvent,
    max_bytes: int,
) -> dict[str, Any] | None:
    headers = {**headers, "accept": "text/event-stream"}
    async with client.stream("POST", url, json=body, headers=headers, timeout=spec.timeout) as r:
        kind = r.headers.get("content-type", "").lower()
        if r.status_code >= 300 or "text/event-stream" not in kind:
            # An error status, or a server that ignored stream (some local servers) and
            # sent the whole answer as one JSON body: the vendor's ordinary parser reads it.
            response = await read_response(r, max_bytes)
            failed = error_response(spec, url, response)
            if failed is not None:
                raise failed
            expected = "an event stream (text/event-stream) or a JSON body"
            return json_body(spec, url, response.content, expected)
        events = _Events(spec, url, on_event)
        size = 0
        pending = ""
        async for chunk in r.aiter_text():
            size += len(chunk)
            if size > max_bytes:
                raise TooLarge
            pending += chunk
            if "\n" not in chunk:
                continue
            *lines, pending = pending.split("\n")
            for line in lines:
                if events.line(line.removesuffix("\r")):
                    return None
        if pending:
            events.line(pending.removesuffix("\r"))
        events.line("")  # a last event without its blank line still counts
    return None


class _Events:
    """The server-sent events grammar: ``event:`` and ``data:`` lines, a blank line ends
    an event, ``:`` starts a comment; other fields (``id``, ``retry``) are not used."""

    def __init__(self, spec: ModelSpec, url: str, on_event: OnEvent) -> None:
        self.spec, self.url, self.on_event = spec, url, on_event
        self.name = ""
        self.data: list[str] = []

    def line(self, line: str) -> bool:
        """Take one line; True when the stream is over."""
        if not line:
            if not self.data:
                self.name = ""
                return False
            text, name = "\n".join(self.data), self.name or "message"
            self.data, self.name = [], ""
            return self._dispatch(name, text)
        if line.startswith(":"):
            return False
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self.data.append(value)
        elif field == "event":
            self.name = value
        return False

    def _dispatch(self, name: str, text: str) -> bool:
        if text.strip() == "[DONE]":
            self.on_event(name, None)
            return True
        try:
            data = loads(text, f"an event of model '{self.spec.name}' ({self.spec.vendor})")
        except JSONProblem as exc:
            raise malformed(
                self.spec, self.url, f"JSON data in every server-sent event ({exc})", text
            ) from None
        if not isinstance(data, dict):
            raise malformed(self.spec, self.url, "a JSON object in every server-sent event", data)
        return bool(self.on_event(name, data))


#: Error types a vendor sends mid-stream that a retry will not change.
_FINAL_ERRORS = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "INVALID_ARGUMENT",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "UNAUTHENTICATED",
    }
)


def stream_error(spec: ModelSpec, url: str, error: Any) -> ProviderError:
    """The ProviderError for an error object a server sent inside the stream (an overload
    after the answer began, say): retryable unless its type says the request is wrong."""
    message, kind, code = "", "", None
    if isinstance(error, dict):
        message = str(error.get("message") or "")
        kind = str(error.get("type") or error.get("status") or "")
        code = error.get("code") if isinstance(error.get("code"), int) else None
    elif isinstance(error, str):
        message = error
    final = kind in _FINAL_ERRORS or (code is not None and 400 <= code < 500 and code != 429)
    detail = clip(message or kind or "no message", 300)  # clip scrubs secrets first
    return ProviderError(
        f"model '{spec.name}' ({spec.vendor}): the stream from {shown_url(url)} reported an "
        f"error{f' ({kind})' if kind else ''}: {detail}",
        model=spec.name,
        status=code,
        retryable=not final,
    )
