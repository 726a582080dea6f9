"""Streamed answers as each vendor sends them, timed, for the fake servers of tests.fakes.

Each ``*_events`` builder gives the server-sent events of one answer as ``(is_content,
bytes)``; :func:`timed` turns them into a :class:`~tests.fakes.FakeResponse` whose first
content event leaves the server ``first`` seconds after the headers and each later one
``gap`` seconds after the one before (events that carry no content, such as Anthropic's
``message_start`` or OpenAI's role chunk, go out at once). So a test knows the time to
first token it should measure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tests.fakes import FakeResponse, StreamBody

__all__ = [
    "Event",
    "anthropic_events",
    "gemini_events",
    "openai_events",
    "sse",
    "timed",
]

#: ``(is_content, the event's bytes)``
Event = tuple[bool, bytes]
#: A tool call to stream: ``(name, arguments as a JSON text, in the pieces it is sent in)``.
StreamedCall = tuple[str, Sequence[str]]


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; ``data`` a JSON value, or a str sent as it is."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return (head + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n").encode()


def timed(
    events: Sequence[Event],
    *,
    first: float = 0.0,
    gap: float = 0.0,
    cut_after: int | None = None,
    status: int = 200,
) -> FakeResponse:
    """The events as a streamed response; ``cut_after=k`` sends only the first k events
    and then drops the connection."""
    chunks: list[tuple[float, bytes]] = []
    seen_content = False
    shown = events if cut_after is None else events[:cut_after]
    for is_content, data in shown:
        delay = 0.0
        if is_content:
            delay = gap if seen_content else first
            seen_content = True
        chunks.append((delay, data))
    return FakeResponse(status, StreamBody(chunks, cut=cut_after is not None))


def openai_events(
    pieces: Sequence[str],
    *,
    calls: Sequence[StreamedCall] = (),
    finish: str | None = "stop",
    usage: tuple[int, int] | None = (7, 3),
    done: bool = True,
) -> list[Event]:
    """Chat Completions chunks: a role chunk, the text pieces, each call's pieces (id and
    name first, arguments after, by ``index``), the finish, a usage chunk, ``[DONE]``."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return sse({"object": "chat.completion.chunk", "choices": [choice]})

    out: list[Event] = [(False, chunk({"role": "assistant", "content": ""}))]
    out += [(True, chunk({"content": p})) for p in pieces]
    for index, (name, arguments) in enumerate(calls):
        head = {"index": index, "id": f"call_{index}", "type": "function"}
        out.append((False, chunk({"tool_calls": [{**head, "function": {"name": name}}]})))
        out += [
            (True, chunk({"tool_calls": [{"index": index, "function": {"arguments": a}}]}))
            for a in arguments
        ]
    if finish is not None:
        out.append((False, chunk({}, finish)))
    if usage is not None:
        numbers = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
        out.append((False, sse({"choices": [], "usage": numbers})))
    if done:
        out.append((False, sse("[DONE]")))
    return out


def anthropic_events(
    pieces: Sequence[str],
    *,
    calls: Sequence[StreamedCall] = (),
    stop: str | None = "end_turn",
    usage: tuple[int, int] = (7, 3),
    error: Mapping[str, Any] | None = None,
) -> list[Event]:
    """Messages events: message_start, a text block, a tool_use block per call
    (``input_json_delta`` pieces), message_delta, message_stop (left out when ``stop`` is
    None). ``error`` puts an error event right after message_start."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "role": "assistant",
            "content": [],
            "usage": {"input_tokens": usage[0], "output_tokens": 1},
        },
    }
    out: list[Event] = [(False, sse(start, "message_start"))]
    if error is not None:
        out.append((False, sse({"type": "error", "error": dict(error)}, "error")))
    out.append((False, sse({"type": "ping"}, "ping")))
    index = 0
    if pieces:
        block = {"type": "text", "text": ""}
        out.append(
            (
                False,
                sse(
                    {"type": "content_block_start", "index": 0, "content_block": block},
                    "content_block_start",
                ),
            )
        )
        for p in pieces:
            delta = {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": p},
            }
            out.append((True, sse(delta, "content_block_delta")))
        out.append((False, sse({"type": "content_block_stop", "index": 0}, "content_block_stop")))
        index = 1
    for n, (name, arguments) in enumerate(calls):
        block = {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": {}}
        out.append(
            (
                False,
                sse(
                    {"type": "content_block_start", "index": index, "content_block": block},
                    "content_block_start",
                ),
            )
        )
        for a in arguments:
            delta = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": a},
            }
            out.append((True, sse(delta, "content_block_delta")))
        out.append(
            (False, sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
        )
        index += 1
    if stop is not None:
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop},
            "usage": {"output_tokens": usage[1]},
        }
        out.append((False, sse(delta, "message_delta")))
        out.append((False, sse({"type": "message_stop"}, "message_stop")))
    return out


def gemini_events(
    pieces: Sequence[str],
    *,
    calls: Sequence[tuple[str, dict[str, Any]]] = (),
    finish: str | None = "STOP",
    usage: tuple[int, int] = (7, 3),
) -> list[Event]:
    """``GenerateContentResponse`` chunks: one per text piece, the function calls whole
    in one chunk, the finish reason and final usage on the last."""

    def chunk(parts: list[dict[str, Any]], finish_reason: str | None = None) -> bytes:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish_reason:
            candidate["finishReason"] = finish_reason
        body: dict[str, Any] = {"candidates": [candidate]}
        if finish_reason:
            body["usageMetadata"] = {
                "promptTokenCount": usage[0],
                "candidatesTokenCount": usage[1],
                "totalTokenCount": sum(usage),
            }
        return sse(body)

    out: list[Event] = [(True, chunk([{"text": p}])) for p in pieces]
    if calls:
        parts = [{"functionCall": {"name": n, "args": a}} for n, a in calls]
        out.append((True, chunk(parts)))
    out.append((False, chunk([], finish)))
    return out
