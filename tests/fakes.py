"""Fake vendor servers on 127.0.0.1 for provider tests and benchmarks.

Real sockets instead of ``httpx.MockTransport`` so the whole path is exercised:
connection pooling, keep-alive, timeouts, status handling and header parsing.
Each server records every request and answers from a script (one scripted
response per request, in order) and then from a default responder, so one
server can both fail in a precise sequence and answer indefinitely.

Typical use::

    with fake_openai() as server:                 # echoes the last user message
        server.enqueue((429, openai_error("slow down"), {"Retry-After": "2"}))
        ...  # point ModelSpec.api_url at server.url
        assert len(server.requests) == 2

Tool calling: ``openai_tool_call_response``, ``anthropic_tool_use_response`` and
``gemini_function_call_response`` build the vendor's "call these tools" body, and
the ``text`` callable of the ready-made servers may return such a body instead
of a string, so one responder can script a whole conversation::

    def turn(request):
        if last_tool_results(request.body):        # the tool answered: finish
            return "It is sunny."
        return openai_tool_call_response([("weather", {"city": "Paris"})])

Structured output: the servers check a structured request (``response_format``,
forced ``tool_choice``, ``responseSchema``) as the real APIs do, or refuse any with a
400 when built with ``structured=False`` (an older or stricter server);
``judge_reply(choice, reasoning)`` answers a judge in whichever form it asked for.

The ready-made servers also refuse tool-use histories the real APIs refuse
(a result with no matching call, a call left unanswered, schema keys Gemini does
not know...), so a wrong encoding fails a test instead of passing silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Union
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from oxyeval.providers import ChatMessage, Completion, GenerateParams, ModelSpec, RetryPolicy

__all__ = [
    "LLAMA_CPP_FORMAT_REFUSAL",
    "FakeResponse",
    "FakeServer",
    "LlamaCppServer",
    "RecordedRequest",
    "Responder",
    "ResponseLike",
    "SleepRecorder",
    "StreamBody",
    "anthropic_error",
    "anthropic_message_response",
    "anthropic_tool_problem",
    "anthropic_tool_use_response",
    "fake_anthropic",
    "fake_gemini",
    "fake_gemini_embeddings",
    "fake_llama_cpp",
    "fake_openai",
    "fake_openai_embeddings",
    "fake_vector",
    "gemini_embeddings_response",
    "gemini_error",
    "gemini_function_call_response",
    "gemini_response",
    "gemini_tool_problem",
    "judge_reply",
    "last_tool_results",
    "last_user_text",
    "openai_chat_response",
    "openai_embeddings_response",
    "openai_error",
    "openai_tool_call_response",
    "openai_tool_problem",
    "run_model",
    "stall",
    "structured_problem",
]


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it."""

    method: str
    path: str  # as sent, including any query string
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None when the body was empty or not JSON
    raw: bytes = b""

    @property
    def route(self) -> str:
        """The path without its query string."""
        return urlsplit(self.path).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.path).query, keep_blank_values=True)


@dataclass
class FakeResponse:
    """What to answer: a dict/list body is sent as JSON, str/bytes as-is, None as empty."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering


@dataclass
class StreamBody:
    """A body sent piece by piece (HTTP chunked encoding), each piece after its own delay
    (seconds after the previous one): server-sent events for streaming tests. ``cut``
    drops the connection after the last piece instead of ending the body properly."""

    chunks: Iterable[tuple[float, bytes]]
    content_type: str = "text/event-stream"
    cut: bool = False


#: A FakeResponse or a tuple ``(status, body[, headers[, delay]])``.
ResponseLike = Union[FakeResponse, tuple[Any, ...]]  # noqa: UP007 - runtime alias on 3.10
Responder = Callable[[RecordedRequest], ResponseLike]


def _as_response(value: ResponseLike) -> FakeResponse:
    if isinstance(value, FakeResponse):
        return value
    if isinstance(value, tuple) and 1 <= len(value) <= 4:
        status, body, headers, delay = value + (200, None, {}, 0.0)[len(value) :]
        return FakeResponse(int(status), body, dict(headers or {}), float(delay or 0.0))
    raise TypeError(
        f"not a response: {value!r}; use FakeResponse or (status, body, headers, delay)"
    )


def stall(seconds: float = 30.0) -> FakeResponse:
    """A response that arrives only after ``seconds``: for client-timeout tests.

    The wait is cut short when the server stops, so a stalled handler never
    delays the end of a test.
    """
    return FakeResponse(200, {"stalled": True}, {}, seconds)


def _no_default(request: RecordedRequest) -> FakeResponse:
    # 418 is neither retryable nor an auth error, so a test that ran out of script fails
    # loudly on its first extra request instead of being retried into a confusing result.
    return FakeResponse(
        418,
        {"error": {"message": f"fake server: no scripted response left for {request.path}"}},
    )


# --------------------------------------------------------------------------- server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default of 5 drops bursts of concurrent connects

    def __init__(self, owner: FakeServer) -> None:
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (timeout test, stop()) is expected; keep stderr quiet.
        import sys

        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, OSError)):
            self.owner.errors.append(repr(exc))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like every real vendor endpoint
    disable_nagle_algorithm = True  # headers and body are two writes; avoid 40 ms stalls
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self._serve()

    do_GET = do_PUT = do_DELETE = do_PATCH = do_POST

    def _serve(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
        )
        owner._begin(request)
        try:
            response = owner._next_response(request)
            if response.delay > 0 and owner._stopping.wait(response.delay):
                self.close_connection = True  # stopping: drop the answer
                return
            self._write(response)
        except (ConnectionError, OSError):
            self.close_connection = True
        finally:
            owner._end()

    def _write(self, response: FakeResponse) -> None:
        body = response.body
        if isinstance(body, StreamBody):
            self._write_stream(response.status, body, response.headers)
            return
        if body is None:
            data, ctype = b"", None
        elif isinstance(body, bytes):
            data, ctype = body, "application/octet-stream"
        elif isinstance(body, str):
            data, ctype = body.encode(), "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(body).encode(), "application/json"
        given = {k.lower() for k in response.headers}
        self.send_response(response.status)
        if ctype and "content-type" not in given:
            self.send_header("Content-Type", ctype)
        if "content-length" not in given:
            self.send_header("Content-Length", str(len(data)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _write_stream(self, status: int, body: StreamBody, headers: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", body.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        stopping = self.server.owner._stopping
        for delay, data in body.chunks:
            if delay > 0 and stopping.wait(delay):
                self.close_connection = True
                return
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        if body.cut:
            self.close_connection = True  # no terminating chunk: the client sees a cut body
            return
        self.wfile.write(b"0\r\n\r\n")


class FakeServer:
    """A scriptable HTTP server on an ephemeral 127.0.0.1 port.

    ``responder`` answers whenever the script is empty; ``latency`` is added to
    those default answers (not to scripted ones, which carry their own delay).
    ``prefix`` is the API base path that :attr:`url` ends with.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        prefix: str = "/v1",
        latency: float = 0.0,
    ) -> None:
        self.responder: Responder = responder or _no_default
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self.latency = latency
        self.errors: list[str] = []  # unexpected handler exceptions, for debugging
        self._script: deque[FakeResponse] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self._max_in_flight = 0
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> FakeServer:
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FakeServer:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop promptly: wake sleeping handlers, cut idle keep-alive connections."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        with server.connections_lock:
            open_connections = list(server.connections)
        for conn in open_connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + 2.0
        while server.connections and time.monotonic() < deadline:
            time.sleep(0.005)
        server.server_close()
        if thread is not None:
            thread.join(timeout=2.0)
        self._server = self._thread = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeServer is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` without the API prefix."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The API base URL to put in ``ModelSpec.api_url``, e.g. ``http://127.0.0.1:PORT/v1``."""
        return self.base_url + self.prefix

    # -- scripting and inspection

    def enqueue(self, *responses: ResponseLike) -> FakeServer:
        """Answer the next requests with these, in order, before the default responder."""
        converted = [_as_response(r) for r in responses]
        with self._lock:
            self._script.extend(converted)
        return self

    def enqueue_many(self, response: ResponseLike, count: int) -> FakeServer:
        return self.enqueue(*([response] * count))

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def pending_script(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def max_in_flight(self) -> int:
        """Most requests this server was handling at the same moment."""
        with self._lock:
            return self._max_in_flight

    def clear(self) -> None:
        """Forget recorded requests, the remaining script and the in-flight maximum."""
        with self._lock:
            self._requests.clear()
            self._script.clear()
            self._max_in_flight = self._in_flight

    # -- called from handler threads

    def _begin(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _next_response(self, request: RecordedRequest) -> FakeResponse:
        with self._lock:
            scripted = self._script.popleft() if self._script else None
        if scripted is not None:
            return scripted
        try:
            response = _as_response(self.responder(request))
        except Exception as exc:  # a broken responder must show up in the test, not hang it
            self.errors.append(repr(exc))
            return FakeResponse(500, {"error": {"message": f"fake responder failed: {exc!r}"}})
        if self.latency:
            response = FakeResponse(
                response.status, response.body, response.headers, response.delay + self.latency
            )
        return response


# --------------------------------------------------------------------------- wire formats


def _count_words(text: str) -> int:
    return max(1, len(text.split()))


def openai_chat_response(
    text: str | None,
    *,
    finish_reason: str | None = "stop",
    prompt_tokens: int = 10,
    completion_tokens: int | None = None,
    model: str = "fake-model",
    usage: bool = True,
) -> dict[str, Any]:
    """A Chat Completions success body; ``text=None`` gives ``content: null``."""
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage:
        out = completion_tokens if completion_tokens is not None else _count_words(text or "")
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": out,
            "total_tokens": prompt_tokens + out,
        }
    return body


def anthropic_message_response(
    text: str,
    *,
    stop_reason: str | None = "end_turn",
    input_tokens: int = 10,
    output_tokens: int | None = None,
    model: str = "fake-model",
    extra_blocks: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """A Messages API success body; ``extra_blocks`` are prepended (e.g. thinking blocks)."""
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [*extra_blocks, {"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens if output_tokens is not None else _count_words(text),
        },
    }


def gemini_response(
    text: str,
    *,
    finish_reason: str | None = "STOP",
    prompt_tokens: int = 10,
    candidates_tokens: int | None = None,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A ``generateContent`` success body."""
    out = candidates_tokens if candidates_tokens is not None else _count_words(text)
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"text": text}]},
        "index": 0,
    }
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": out,
            "totalTokenCount": prompt_tokens + out,
        },
        "modelVersion": model,
    }


#: One tool call to script: ``(name, arguments)``. For OpenAI a ``str`` is sent as the
#: ``arguments`` string verbatim (e.g. broken JSON); elsewhere arguments are objects.
ScriptedCall = tuple[str, Union[Mapping[str, Any], str]]  # noqa: UP007


def _call_ids(calls: Sequence[ScriptedCall], ids: Sequence[str] | None, prefix: str) -> list[str]:
    if ids is not None:
        if len(ids) != len(calls):
            raise ValueError(f"{len(calls)} calls but {len(ids)} ids")
        return list(ids)
    return [f"{prefix}{i}" for i in range(len(calls))]


def openai_tool_call_response(
    calls: Sequence[ScriptedCall],
    *,
    text: str | None = None,
    ids: Sequence[str] | None = None,
    finish_reason: str | None = "tool_calls",
    prompt_tokens: int = 10,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A Chat Completions body whose message asks for ``calls`` (ids ``call_fake_<i>``).

    ``content`` is ``text`` or null, as the API sends it for a calls-only answer.
    """
    body = openai_chat_response(
        text, finish_reason=finish_reason, prompt_tokens=prompt_tokens, model=model
    )
    body["choices"][0]["message"]["tool_calls"] = [
        {
            "id": call_id,
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(dict(args)),
            },
        }
        for call_id, (name, args) in zip(_call_ids(calls, ids, "call_fake_"), calls, strict=True)
    ]
    return body


def anthropic_tool_use_response(
    calls: Sequence[ScriptedCall],
    *,
    text: str | None = None,
    ids: Sequence[str] | None = None,
    stop_reason: str | None = "tool_use",
    input_tokens: int = 10,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A Messages API body with ``tool_use`` blocks (ids ``toolu_fake_<i>``), after ``text``."""
    body = anthropic_message_response(
        text or "", stop_reason=stop_reason, input_tokens=input_tokens, model=model
    )
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [
        {"type": "tool_use", "id": call_id, "name": name, "input": _object_args(args)}
        for call_id, (name, args) in zip(_call_ids(calls, ids, "toolu_fake_"), calls, strict=True)
    ]
    body["content"] = blocks
    return body


def gemini_function_call_response(
    calls: Sequence[ScriptedCall],
    *,
    text: str | None = None,
    ids: Sequence[str] | None = None,
    signatures: Sequence[str | None] | None = None,
    finish_reason: str | None = "STOP",
    prompt_tokens: int = 10,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A ``generateContent`` body with ``functionCall`` parts, after ``text``.

    Like the real API: no ids unless ``ids`` is given, and ``finishReason`` stays
    ``STOP``. ``signatures`` adds Gemini 3's ``thoughtSignature`` to the parts.
    """
    body = gemini_response(
        text or "", finish_reason=finish_reason, prompt_tokens=prompt_tokens, model=model
    )
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    for i, (name, args) in enumerate(calls):
        function_call: dict[str, Any] = {"name": name, "args": _object_args(args)}
        if ids is not None:
            function_call["id"] = ids[i]
        part: dict[str, Any] = {"functionCall": function_call}
        if signatures is not None and signatures[i] is not None:
            part["thoughtSignature"] = signatures[i]
        parts.append(part)
    body["candidates"][0]["content"]["parts"] = parts
    return body


def _object_args(args: Mapping[str, Any] | str) -> Any:
    if isinstance(args, str):
        return json.loads(args)
    return dict(args)


def openai_error(message: str, type: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": None, "code": None}}


def anthropic_error(message: str, type: str = "invalid_request_error") -> dict[str, Any]:
    return {"type": "error", "error": {"type": type, "message": message}}


def gemini_error(
    code: int, message: str, status: str = "INVALID_ARGUMENT", details: Iterable[Any] = ()
) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, "details": list(details)}}


def last_user_text(body: Any) -> str:
    """Text of the last user turn in an OpenAI, Anthropic or Gemini request body.

    A turn that holds only tool results (Anthropic ``tool_result`` blocks, Gemini
    ``functionResponse`` parts) is not the user speaking and is passed over, as
    OpenAI's ``tool`` messages are, so the answer is the same for every vendor.
    """
    if not isinstance(body, Mapping):
        return ""
    turns = body.get("messages") or body.get("contents") or []
    for turn in reversed(turns if isinstance(turns, list) else []):
        if not isinstance(turn, Mapping) or turn.get("role") != "user":
            continue
        content = turn.get("content", turn.get("parts"))
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            if content and all(_is_tool_result(part) for part in content):
                continue
            return "".join(
                part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content
            )
    return ""


def _is_tool_result(part: Any) -> bool:
    return isinstance(part, Mapping) and (
        part.get("type") == "tool_result" or "functionResponse" in part
    )


def last_tool_results(body: Any) -> list[tuple[str, str]]:
    """The tool results the request ends with, as ``(call id or name, text)`` pairs.

    OpenAI: the trailing ``tool`` messages (by ``tool_call_id``); Anthropic: the
    ``tool_result`` blocks of the last user turn (by ``tool_use_id``); Gemini: the
    ``functionResponse`` parts of the last user turn (by ``id``, else ``name``,
    text from ``response.content``). Empty when the model is not being handed
    tool output, i.e. when it is the first request of a conversation.
    """
    if not isinstance(body, Mapping):
        return []
    turns = body.get("messages") or body.get("contents") or []
    if not isinstance(turns, list) or not turns:
        return []
    if not isinstance(turns[-1], Mapping):
        return []
    if body.get("messages") is not None and turns[-1].get("role") == "tool":
        results = []
        for message in reversed(turns):
            if not isinstance(message, Mapping) or message.get("role") != "tool":
                break
            results.append((str(message.get("tool_call_id")), str(message.get("content"))))
        return results[::-1]
    last = turns[-1]
    if not isinstance(last, Mapping) or last.get("role") != "user":
        return []
    content = last.get("content", last.get("parts"))
    results = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "tool_result":
            results.append((str(part.get("tool_use_id")), _result_text(part.get("content"))))
        elif isinstance(part.get("functionResponse"), Mapping):
            response = part["functionResponse"]
            key = response.get("id") or response.get("name")
            payload = response.get("response")
            text = payload.get("content") if isinstance(payload, Mapping) else payload
            results.append((str(key), _result_text(text)))
    return results


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # Anthropic also takes a list of text blocks
        return "".join(b.get("text", "") for b in content if isinstance(b, Mapping))
    return json.dumps(content)


# --------------------------------------------------------------------------- ready-made servers

#: What a ready-made server answers: a fixed text, or a function of the request that
#: returns a text or a whole success body (e.g. ``openai_tool_call_response(...)``).
#: ``None`` echoes the last user message.
TextSource = Union[  # noqa: UP007
    str, Callable[[RecordedRequest], Union[str, Mapping[str, Any]]], None  # noqa: UP007
]


def _text_for(text: TextSource, request: RecordedRequest) -> str | Mapping[str, Any]:
    if text is None:
        return last_user_text(request.body)
    if callable(text):
        return text(request)
    return text


def _answer(
    text: TextSource, request: RecordedRequest, build: Callable[[str], dict[str, Any]]
) -> FakeResponse:
    result = _text_for(text, request)
    if isinstance(result, Mapping):
        return FakeResponse(200, dict(result))
    return FakeResponse(200, build(result))


# -- what the real APIs refuse in tool-use requests (messages as the vendors word them)


def openai_tool_problem(body: Mapping[str, Any]) -> str | None:
    """Why Chat Completions would refuse this body's tools or tool history, or None."""
    if "tools" in body:
        tools = body["tools"]
        if not isinstance(tools, list) or not tools:
            return "Invalid 'tools': empty array. Expected an array with minimum length 1."
        for i, tool in enumerate(tools):
            function = tool.get("function") if isinstance(tool, dict) else None
            if (
                tool.get("type") != "function"
                or not isinstance(function, dict)
                or not isinstance(function.get("name"), str)
                or not isinstance(function.get("parameters", {}), dict)
            ):
                return f"Invalid value for 'tools[{i}]': expected a function tool with a name."
    pending: list[str] = []  # ids of the last assistant turn's calls not yet answered
    for i, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            return f"Invalid type for 'messages[{i}]': expected an object."
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                return f"Missing required parameter: 'messages[{i}].tool_call_id'."
            if call_id not in pending:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            pending.remove(call_id)
            continue
        if pending:
            break
        calls = message.get("tool_calls")
        if role != "assistant" or calls is None:
            continue
        if not isinstance(calls, list) or not calls:
            return f"Invalid 'messages[{i}].tool_calls': empty array."
        for j, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            if (
                not isinstance(call.get("id"), str)
                or call.get("type") != "function"
                or not isinstance(function, dict)
                or not isinstance(function.get("name"), str)
                or not isinstance(function.get("arguments"), str)
            ):
                return (
                    f"Invalid 'messages[{i}].tool_calls[{j}]': expected {{id, type: function, "
                    "function: {name, arguments: string}}."
                )
            pending.append(call["id"])
    if pending:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(pending)}"
        )
    return None


def anthropic_tool_problem(body: Mapping[str, Any]) -> str | None:
    """Why the Messages API would refuse this body's tools or tool history, or None."""
    if "tools" in body:
        tools = body["tools"]
        if not isinstance(tools, list):
            return "tools: Input should be a valid list"
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                return f"tools.{i}.name: Field required"
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                return f"tools.{i}.input_schema: Input should be an object schema"
    called: list[str] = []  # tool_use ids of the previous assistant turn
    for i, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            return f"messages.{i}: Input should be a valid dictionary"
        role, content = message.get("role"), message.get("content")
        blocks = content if isinstance(content, list) else []
        if not isinstance(content, (str, list)):
            return f"messages.{i}.content: Input should be a valid string or list"
        for j, block in enumerate(blocks):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and not block.get("text"):
                return f"messages.{i}.content.{j}: text content blocks must be non-empty"
            if kind == "tool_use" and role != "assistant":
                return f"messages.{i}.content.{j}: tool_use blocks are only for assistant turns"
            if kind == "tool_result" and role != "user":
                return f"messages.{i}.content.{j}: tool_result blocks are only for user turns"
        leading = []
        for block in blocks:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                break
            leading.append(block.get("tool_use_id"))
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if len(results) != len(leading):
            return (
                f"messages.{i}: tool_result blocks must come first in the content, before any text"
            )
        for j, result_id in enumerate(results):
            if result_id not in called:
                return (
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {result_id}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message."
                )
        missing = [c for c in called if c not in results]
        if missing:
            return (
                f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
        called = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
    if called:
        return (
            "`tool_use` ids were found without `tool_result` blocks immediately after: "
            + ", ".join(str(c) for c in called)
        )
    return None


_GEMINI_SCHEMA_FIELDS = frozenset(
    [
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "items",
        "minItems",
        "maxItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "anyOf",
        "propertyOrdering",
        "default",
        "example",
    ]
)


def _gemini_schema_problem(schema: Any, where: str) -> str | None:
    if not isinstance(schema, dict):
        return f"Invalid value at '{where}': expected a Schema object"
    for key, value in schema.items():
        if key not in _GEMINI_SCHEMA_FIELDS:
            return f"Invalid JSON payload received. Unknown name \"{key}\" at '{where}': Cannot find field."
        if key == "properties":
            for name, sub in (value or {}).items():
                problem = _gemini_schema_problem(sub, f"{where}.properties[{name}].value")
                if problem:
                    return problem
        elif key == "items":
            problem = _gemini_schema_problem(value, f"{where}.items")
            if problem:
                return problem
        elif key == "anyOf":
            for k, sub in enumerate(value or []):
                problem = _gemini_schema_problem(sub, f"{where}.any_of[{k}]")
                if problem:
                    return problem
        elif key == "enum" and not all(isinstance(v, str) for v in value or []):
            return f"Invalid value at '{where}.enum': expected strings"
    return None


def gemini_tool_problem(body: Mapping[str, Any]) -> str | None:
    """Why ``generateContent`` would refuse this body's tools or function history, or None."""
    for i, tool in enumerate(body.get("tools") or []):
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        if not isinstance(declarations, list):
            return f"Invalid JSON payload received. tools[{i}]: expected functionDeclarations"
        for j, declaration in enumerate(declarations):
            where = f"tools[{i}].function_declarations[{j}]"
            if not isinstance(declaration, dict) or not declaration.get("name"):
                return f"* GenerateContentRequest.{where}.name: Name cannot be empty."
            if "parameters" not in declaration:
                continue
            parameters = declaration["parameters"]
            problem = _gemini_schema_problem(parameters, f"{where}.parameters")
            if problem:
                return problem
            if str(parameters.get("type", "")).lower() == "object" and not parameters.get(
                "properties"
            ):
                return (
                    f"* GenerateContentRequest.{where}.parameters.properties: should be "
                    "non-empty for OBJECT type"
                )
    called: list[str] = []  # function names called by the previous model turn
    for i, turn in enumerate(body.get("contents") or []):
        parts = turn.get("parts") if isinstance(turn, dict) else None
        if not isinstance(parts, list) or not parts:
            return (
                f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
            )
        answered = [
            p["functionResponse"].get("name")
            for p in parts
            if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
        ]
        if called and sorted(answered) != sorted(called):
            return (
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn."
            )
        if answered and not called:
            return (
                f"* GenerateContentRequest.contents[{i}]: a function response turn must come "
                "right after a function call turn."
            )
        for part in parts:
            if isinstance(part, dict) and "functionCall" in part and turn.get("role") != "model":
                return (
                    f"* GenerateContentRequest.contents[{i}]: functionCall parts are model parts."
                )
        called = [
            p["functionCall"].get("name")
            for p in parts
            if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)
        ]
    return None


# -- structured output: what the real APIs refuse, and a judge answering in either form


def _strict_schema_problem(schema: Any, where: str) -> str | None:
    """OpenAI's strict mode: every object closed and every property required."""
    if not isinstance(schema, dict):
        return f"In context={where}, schema must be an object."
    if schema.get("type") == "object":
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return (
                f"In context={where}, 'additionalProperties' is required to be supplied "
                "and to be false."
            )
        missing = [k for k in properties if k not in (schema.get("required") or [])]
        if missing:
            return (
                f"In context={where}, 'required' is required to be supplied and to be an "
                f"array including every key in properties. Missing '{missing[0]}'."
            )
        for name, sub in properties.items():
            problem = _strict_schema_problem(sub, f"{where} + ('properties', '{name}')")
            if problem:
                return problem
    return None


def _openai_structured_problem(body: Mapping[str, Any]) -> str | None:
    rf = body.get("response_format")
    if rf is None:
        return None
    if not isinstance(rf, dict) or rf.get("type") not in ("text", "json_object", "json_schema"):
        return "Invalid value for 'response_format.type'."
    if rf["type"] != "json_schema":
        return None
    spec = rf.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
        return "Missing required parameter: 'response_format.json_schema'."
    if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", str(spec.get("name", ""))):
        return (
            "Invalid 'response_format.json_schema.name': string does not match pattern. "
            "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        )
    if spec.get("strict"):
        problem = _strict_schema_problem(spec["schema"], "()")
        if problem:
            return f"Invalid schema for response_format '{spec['name']}': {problem}"
    return None


def _anthropic_structured_problem(body: Mapping[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    if choice is None:
        return None
    if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
        return "tool_choice: Input tag does not match any of the expected tags"
    if not body.get("tools"):
        return "tool_choice may only be specified while providing tools."
    names = [t.get("name") for t in body["tools"] if isinstance(t, dict)]
    if choice["type"] == "tool" and choice.get("name") not in names:
        return f"tool_choice.name: Tool '{choice.get('name')}' not found in tools"
    return None


def _gemini_structured_problem(body: Mapping[str, Any]) -> str | None:
    config = body.get("generationConfig")
    if not isinstance(config, dict) or "responseSchema" not in config:
        return None
    if config.get("responseMimeType") not in ("application/json", "text/x.enum"):
        return (
            "* GenerateContentRequest.generation_config.response_schema: only supported "
            "with response_mime_type application/json or text/x.enum"
        )
    return _gemini_schema_problem(config["responseSchema"], "generation_config.response_schema")


def _asks_structured(body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    config = body.get("generationConfig")
    return (
        "response_format" in body
        or (isinstance(body.get("tool_choice"), dict) and body["tool_choice"].get("type") == "tool")
        or (isinstance(config, dict) and "responseSchema" in config)
    )


def structured_problem(body: Mapping[str, Any]) -> str | None:
    """Why the vendor whose fields ``body`` uses would refuse its structured request, or None."""
    return (
        _openai_structured_problem(body)
        or _anthropic_structured_problem(body)
        or _gemini_structured_problem(body)
    )


def judge_reply(
    choice: str, reasoning: str = "Both state the same facts."
) -> Callable[[RecordedRequest], str | Mapping[str, Any]]:
    """A judge answering ``choice``: as JSON (or Anthropic's forced tool call) when the
    request asked for structured output, else as text ending in ``Answer: <choice>``."""

    def reply(request: RecordedRequest) -> str | Mapping[str, Any]:
        body = request.body
        if not _asks_structured(body):
            return f"{reasoning}\nAnswer: {choice}"
        answer = {"reasoning": reasoning, "verdict": choice}
        if isinstance(body.get("tool_choice"), dict):
            return anthropic_tool_use_response([(body["tool_choice"]["name"], answer)])
        return json.dumps(answer)

    return reply


def _refuse_structured(body: Any, structured: bool) -> str | None:
    if not structured and _asks_structured(body):
        return "structured output (response_format / tool_choice / responseSchema) is not supported"
    return structured_problem(body) if isinstance(body, dict) else None


def fake_openai(
    text: TextSource = None,
    *,
    latency: float = 0.0,
    api_key: str | None = None,
    prefix: str = "/v1",
    structured: bool = True,
) -> FakeServer:
    """An OpenAI-compatible server (also stands in for vLLM/llama.cpp/Ollama ``/v1``).

    Default answer: ``text`` (a string, a function of the request returning a text
    or a whole body), else an echo of the last user message. Wrong path -> 404, no
    model/messages or a bad tool history -> 400, and with ``api_key`` set a missing
    or wrong Bearer token -> 401, as the real API does.
    """
    route = "/" + prefix.strip("/") + "/chat/completions"

    def respond(request: RecordedRequest) -> FakeResponse:
        if request.method != "POST" or request.route != route:
            return FakeResponse(404, openai_error(f"Unknown request URL: {request.path}"))
        if api_key is not None and request.headers.get("authorization") != f"Bearer {api_key}":
            return FakeResponse(401, openai_error("Incorrect API key provided", "invalid_api_key"))
        body = request.body
        if not isinstance(body, dict) or not body.get("model") or not body.get("messages"):
            return FakeResponse(400, openai_error("'model' and 'messages' are required"))
        problem = openai_tool_problem(body) or _refuse_structured(body, structured)
        if problem:
            return FakeResponse(400, openai_error(problem))
        return _answer(text, request, lambda t: openai_chat_response(t, model=body["model"]))

    return FakeServer(respond, prefix=prefix, latency=latency)


def fake_anthropic(
    text: TextSource = None,
    *,
    latency: float = 0.0,
    api_key: str | None = None,
    prefix: str = "/v1",
    structured: bool = True,
) -> FakeServer:
    """An Anthropic Messages server; enforces ``anthropic-version``, ``max_tokens`` and
    the tool_use/tool_result pairing like the API."""
    route = "/" + prefix.strip("/") + "/messages"

    def respond(request: RecordedRequest) -> FakeResponse:
        if request.method != "POST" or request.route != route:
            return FakeResponse(404, anthropic_error("Not found", "not_found_error"))
        if api_key is not None and request.headers.get("x-api-key") != api_key:
            return FakeResponse(401, anthropic_error("invalid x-api-key", "authentication_error"))
        if not request.headers.get("anthropic-version"):
            return FakeResponse(400, anthropic_error("anthropic-version: header is required"))
        body = request.body
        if not isinstance(body, dict) or not isinstance(body.get("max_tokens"), int):
            return FakeResponse(400, anthropic_error("max_tokens: Field required"))
        if any(m.get("role") == "system" for m in body.get("messages", [])):
            return FakeResponse(400, anthropic_error("messages: unexpected role 'system'"))
        problem = anthropic_tool_problem(body) or _refuse_structured(body, structured)
        if problem:
            return FakeResponse(400, anthropic_error(problem))
        model = body.get("model", "")
        return _answer(text, request, lambda t: anthropic_message_response(t, model=model))

    return FakeServer(respond, prefix=prefix, latency=latency)


_GEMINI_ROUTE = re.compile(r"/models/(?P<model>[^/:]+):generateContent$")


def fake_gemini(
    text: TextSource = None,
    *,
    latency: float = 0.0,
    api_key: str | None = None,
    prefix: str = "/v1beta",
    structured: bool = True,
) -> FakeServer:
    """A Gemini ``generateContent`` server; roles other than user/model, schema keys
    outside Gemini's subset and unanswered function calls -> 400, like the API."""
    base = "/" + prefix.strip("/")

    def respond(request: RecordedRequest) -> FakeResponse:
        match = _GEMINI_ROUTE.search(request.route)
        if request.method != "POST" or not request.route.startswith(base) or not match:
            return FakeResponse(404, gemini_error(404, "Not found", "NOT_FOUND"))
        if api_key is not None and request.headers.get("x-goog-api-key") != api_key:
            return FakeResponse(
                400, gemini_error(400, "API key not valid. Please pass a valid API key.")
            )
        body = request.body
        contents = body.get("contents") if isinstance(body, dict) else None
        if not contents:
            return FakeResponse(400, gemini_error(400, "* contents: must not be empty"))
        if any(c.get("role") not in ("user", "model") for c in contents):
            return FakeResponse(400, gemini_error(400, "Please use a valid role: user, model."))
        problem = gemini_tool_problem(body) or _refuse_structured(body, structured)
        if problem:
            return FakeResponse(400, gemini_error(400, problem))
        model = match.group("model")
        return _answer(text, request, lambda t: gemini_response(t, model=model))

    return FakeServer(respond, prefix=prefix, latency=latency)


# --------------------------------------------------------------------------- embedding servers


def fake_vector(text: str, dims: int = 8) -> list[float]:
    """The vector the fake embedding servers give ``text``: deterministic, not normalised.

    Derived from a hash of the whole text, so tests can compute the exact vectors
    (and cosines) they should get back; JSON round-trips these floats exactly.
    """
    digest = hashlib.shake_256(text.encode()).digest(dims)
    return [(byte - 127.5) / 127.5 for byte in digest]


def openai_embeddings_response(
    vectors: Sequence[Sequence[float]],
    *,
    prompt_tokens: int | None = 10,
    model: str = "fake-embedding",
    order: Sequence[int] | None = None,
) -> dict[str, Any]:
    """An ``/embeddings`` success body; ``order`` lists the indexes in the order sent."""
    indexes = list(order) if order is not None else list(range(len(vectors)))
    body: dict[str, Any] = {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": list(vectors[i])} for i in indexes
        ],
        "model": model,
    }
    if prompt_tokens is not None:
        body["usage"] = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}
    return body


def gemini_embeddings_response(vectors: Sequence[Sequence[float]]) -> dict[str, Any]:
    """A ``batchEmbedContents`` success body (vectors in request order, as the API sends)."""
    return {"embeddings": [{"values": list(v)} for v in vectors]}


def fake_openai_embeddings(
    latency: float = 0.0,
    api_key: str | None = None,
    dims: int = 8,
    *,
    prefix: str = "/v1",
    shuffle: bool = False,
) -> FakeServer:
    """An OpenAI-compatible ``/embeddings`` server answering :func:`fake_vector` vectors.

    Like the API: wrong path -> 404, a wrong or missing Bearer token (with
    ``api_key`` set) -> 401, no ``model``, no ``input``, an empty string in it,
    more than 2048 inputs or a ``dimensions`` that is not a positive integer -> 400.
    ``dimensions`` sets the vectors' size (``fake_vector(text, dimensions)``).
    ``prompt_tokens`` is the number of words sent. ``shuffle`` sends ``data`` in
    reverse order (the ``index`` fields stay right).
    """
    route = "/" + prefix.strip("/") + "/embeddings"

    def respond(request: RecordedRequest) -> FakeResponse:
        if request.method != "POST" or request.route != route:
            return FakeResponse(404, openai_error(f"Unknown request URL: {request.path}"))
        if api_key is not None and request.headers.get("authorization") != f"Bearer {api_key}":
            return FakeResponse(401, openai_error("Incorrect API key provided", "invalid_api_key"))
        body = request.body
        texts = body.get("input") if isinstance(body, dict) else None
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(body, dict) or not body.get("model"):
            return FakeResponse(400, openai_error("you must provide a model parameter"))
        if not isinstance(texts, list) or not texts or len(texts) > 2048:
            return FakeResponse(400, openai_error("'input' must be 1 to 2048 strings"))
        if not all(isinstance(t, str) and t for t in texts):
            return FakeResponse(400, openai_error("'$.input' is invalid."))
        size = body.get("dimensions", dims)
        if not _positive_int(size):
            return FakeResponse(400, openai_error(f"Invalid 'dimensions': {size!r}"))
        order = range(len(texts) - 1, -1, -1) if shuffle else None
        return FakeResponse(
            200,
            openai_embeddings_response(
                [fake_vector(t, size) for t in texts],
                prompt_tokens=sum(_count_words(t) for t in texts),
                model=body["model"],
                order=order,
            ),
        )

    return FakeServer(respond, prefix=prefix, latency=latency)


_GEMINI_EMBED_ROUTE = re.compile(r"/models/(?P<model>[^/:]+):batchEmbedContents$")
#: EmbedContentRequest.taskType values the Gemini API accepts.
GEMINI_TASK_TYPES = frozenset(
    {
        "TASK_TYPE_UNSPECIFIED",
        "RETRIEVAL_QUERY",
        "RETRIEVAL_DOCUMENT",
        "SEMANTIC_SIMILARITY",
        "CLASSIFICATION",
        "CLUSTERING",
        "QUESTION_ANSWERING",
        "FACT_VERIFICATION",
        "CODE_RETRIEVAL_QUERY",
    }
)


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def fake_gemini_embeddings(
    latency: float = 0.0,
    api_key: str | None = None,
    dims: int = 8,
    *,
    prefix: str = "/v1beta",
) -> FakeServer:
    """A Gemini ``batchEmbedContents`` server answering :func:`fake_vector` vectors.

    Like the API: a wrong ``x-goog-api-key`` (with ``api_key`` set) -> 400
    ``API_KEY_INVALID``; no requests, more than 100, a request whose ``model`` is
    not ``models/<the model in the URL>``, with no text, an unknown ``taskType`` or
    an ``outputDimensionality`` that is not a positive integer -> 400. Each
    request's ``outputDimensionality`` sets its vector's size.
    """
    base = "/" + prefix.strip("/")

    def respond(request: RecordedRequest) -> FakeResponse:
        match = _GEMINI_EMBED_ROUTE.search(request.route)
        if request.method != "POST" or not request.route.startswith(base) or not match:
            return FakeResponse(404, gemini_error(404, "Not found", "NOT_FOUND"))
        if api_key is not None and request.headers.get("x-goog-api-key") != api_key:
            return FakeResponse(
                400, gemini_error(400, "API key not valid. Please pass a valid API key.")
            )
        body = request.body
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return FakeResponse(400, gemini_error(400, "* requests: must not be empty"))
        if len(requests) > 100:
            return FakeResponse(
                400, gemini_error(400, "* BatchEmbedContentsRequest.requests: at most 100")
            )
        model = f"models/{match.group('model')}"
        texts = []
        sizes = []
        for i, item in enumerate(requests):
            if not isinstance(item, dict) or item.get("model") != model:
                return FakeResponse(
                    400,
                    gemini_error(400, f"* requests[{i}].model: must be {model}, as in the URL"),
                )
            parts = (item.get("content") or {}).get("parts")
            text = "".join(p.get("text", "") for p in parts or [] if isinstance(p, dict))
            if not text:
                return FakeResponse(
                    400, gemini_error(400, f"* requests[{i}].content: must have text")
                )
            task = item.get("taskType", "TASK_TYPE_UNSPECIFIED")
            if task not in GEMINI_TASK_TYPES:
                return FakeResponse(
                    400, gemini_error(400, f"Invalid value at 'requests[{i}].task_type': {task!r}")
                )
            size = item.get("outputDimensionality", dims)
            if not _positive_int(size):
                return FakeResponse(
                    400,
                    gemini_error(400, f"* requests[{i}].output_dimensionality: invalid {size!r}"),
                )
            texts.append(text)
            sizes.append(size)
        vectors = [fake_vector(t, size) for t, size in zip(texts, sizes, strict=True)]
        return FakeResponse(200, gemini_embeddings_response(vectors))

    return FakeServer(respond, prefix=prefix, latency=latency)


# --------------------------------------------------------------------------- a local server

#: What llama-cpp-python 0.3.36's server answers, with HTTP 500, to ``response_format:
#: {"type": "json_schema", ...}`` (its pydantic report, as recorded on the real server).
LLAMA_CPP_FORMAT_REFUSAL = (
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input "
    "should be 'text' or 'json_object' [type=literal_error, input_value='json_schema', "
    "input_type=str]\n    For further information visit "
    "https://errors.pydantic.dev/2.10/v/literal_error"
)


class LlamaCppServer(FakeServer):
    """:func:`fake_llama_cpp`'s server, with what it generated."""

    def __init__(self, responder: Responder) -> None:
        super().__init__(responder)
        #: Tokens generated per request, in the order generation ended: a streamed
        #: request whose client left stops short; a whole one never does.
        self.generated: list[int] = []
        self.slot = threading.Lock()  # one request generates at a time
        self.ended = threading.Condition(self._lock)

    def note(self, tokens: int) -> None:
        with self.ended:
            self.generated.append(tokens)
            self.ended.notify_all()

    def wait_generated(self, count: int, timeout: float = 5.0) -> list[int]:
        """The tokens of the first ``count`` generations, once they have ended."""
        with self.ended:
            self.ended.wait_for(lambda: len(self.generated) >= count, timeout)
            return list(self.generated)


def fake_llama_cpp(
    text: TextSource = None,
    *,
    n_ctx: int = 4096,
    tokens_per_second: float = 4000.0,
    prompt_tokens: int = 50,
) -> LlamaCppServer:
    """An OpenAI-compatible server that behaves as llama-cpp-python 0.3.36 serving a tiny
    model did (``real-llm-server.md``), at a token rate a test can afford:

    * ``response_format`` ``json_schema`` is refused with HTTP 500
      (:data:`LLAMA_CPP_FORMAT_REFUSAL`); ``{"type": "json_object", "schema": ...}`` is
      taken, and ``text`` then answers as for any structured request;
    * the ``gemma`` chat format drops ``system`` messages: ``text`` sees the body without
      them;
    * without ``max_tokens`` the model writes until the context is full (``n_ctx`` less
      the prompt), then stops with ``finish_reason: length``; with it, the answer is cut
      at that many tokens (one token a word) and ``length`` said when it was cut;
    * one request generates at a time, ``tokens_per_second`` fast; a whole (not streamed)
      request is generated to its end even when its client left; a streamed one stops
      when its client goes (see :attr:`LlamaCppServer.generated`).
    """
    server: LlamaCppServer

    def respond(request: RecordedRequest) -> FakeResponse:
        body = request.body
        if request.method != "POST" or request.route != "/v1/chat/completions":
            return FakeResponse(404, {"detail": "Not Found"})
        if not isinstance(body, dict) or not body.get("messages"):
            return FakeResponse(
                500, openai_error("messages: Field required", "internal_server_error")
            )
        wanted = body.get("response_format")
        if isinstance(wanted, dict) and wanted.get("type") not in ("text", "json_object"):
            return FakeResponse(
                500, openai_error(LLAMA_CPP_FORMAT_REFUSAL, "internal_server_error")
            )
        kept = [m for m in body["messages"] if m.get("role") != "system"]
        seen = RecordedRequest(
            request.method, request.path, request.headers, {**body, "messages": kept}
        )
        answer = _text_for(text, seen)
        if isinstance(answer, Mapping):
            answer = answer["choices"][0]["message"]["content"] or ""
        words = answer.split()
        cap = body.get("max_tokens")
        room = max(1, n_ctx - prompt_tokens)
        if cap is None:  # a base model rambles on until the context is full
            words = (words + ["and"] * room)[:room]
            finish = "length"
        else:
            finish = "length" if len(words) > cap else "stop"
            words = words[: int(cap)]
        if body.get("stream"):
            return FakeResponse(
                200,
                StreamBody(_LlamaStream(server, body["model"], words, finish, tokens_per_second)),
            )
        with server.slot:  # generated whole, whoever is still listening
            server._stopping.wait(len(words) / tokens_per_second)
            server.note(len(words))
        reply = openai_chat_response(
            " ".join(words),
            finish_reason=finish,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(words),
            model=body["model"],
        )
        return FakeResponse(200, reply)

    server = LlamaCppServer(respond)
    return server


class _LlamaStream:
    """Server-sent chunks, one token each, generated only while the client reads."""

    def __init__(
        self, server: LlamaCppServer, model: str, words: list[str], finish: str, rate: float
    ) -> None:
        self.server, self.model, self.words, self.finish, self.rate = (
            server,
            model,
            words,
            finish,
            rate,
        )

    def __iter__(self) -> Any:
        sent = 0
        with self.server.slot:
            try:
                for index, word in enumerate(self.words):
                    chunk = {
                        "object": "chat.completion.chunk",
                        "model": self.model,
                        "choices": [
                            {
                                "index": 0,
                                "delta": {"content": (" " if index else "") + word},
                                "finish_reason": None,
                            }
                        ],
                    }
                    yield (1.0 / self.rate, f"data: {json.dumps(chunk)}\n\n".encode())
                    sent += 1
                last = {
                    "object": "chat.completion.chunk",
                    "model": self.model,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": self.finish}],
                    "usage": {
                        "prompt_tokens": 50,
                        "completion_tokens": sent,
                        "total_tokens": 50 + sent,
                    },
                }
                yield (0.0, f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode())
            finally:
                self.server.note(sent)


# --------------------------------------------------------------------------- driving models


class SleepRecorder:
    """An injectable ``sleep`` for Model/ModelPool that records delays and does not wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


def run_model(
    spec: ModelSpec,
    messages: Sequence[ChatMessage],
    *,
    params: GenerateParams | None = None,
    environ: Mapping[str, str] | None = None,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    retry: RetryPolicy | None = None,
) -> Completion:
    """One call through a fresh ModelPool in its own event loop (for sync tests).

    Using the pool, not the vendor class, is the point: it is the path a real run
    takes (key resolution, shared client, retries, redaction).
    """
    from oxyeval.providers import ModelPool

    async def go() -> Completion:
        pool = ModelPool(
            {spec.name: spec},
            retry=retry,
            sleep=sleep or SleepRecorder(),
            environ=environ or {},
        )
        async with pool:
            return await pool.get(spec.name).generate(messages, params)

    return asyncio.run(go())
