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
"""

from __future__ import annotations

import asyncio
import contextlib
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
    "FakeResponse",
    "FakeServer",
    "RecordedRequest",
    "Responder",
    "ResponseLike",
    "SleepRecorder",
    "anthropic_error",
    "anthropic_message_response",
    "fake_anthropic",
    "fake_gemini",
    "fake_openai",
    "gemini_error",
    "gemini_response",
    "last_user_text",
    "openai_chat_response",
    "openai_error",
    "run_model",
    "stall",
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


def openai_error(message: str, type: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": None, "code": None}}


def anthropic_error(message: str, type: str = "invalid_request_error") -> dict[str, Any]:
    return {"type": "error", "error": {"type": type, "message": message}}


def gemini_error(
    code: int, message: str, status: str = "INVALID_ARGUMENT", details: Iterable[Any] = ()
) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, "details": list(details)}}


def last_user_text(body: Any) -> str:
    """Text of the last user turn in an OpenAI, Anthropic or Gemini request body."""
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
            return "".join(
                part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content
            )
    return ""


# --------------------------------------------------------------------------- ready-made servers

TextSource = Union[str, Callable[[RecordedRequest], str], None]  # noqa: UP007


def _text_for(text: TextSource, request: RecordedRequest) -> str:
    if text is None:
        return last_user_text(request.body)
    if callable(text):
        return text(request)
    return text


def fake_openai(
    text: TextSource = None,
    *,
    latency: float = 0.0,
    api_key: str | None = None,
    prefix: str = "/v1",
) -> FakeServer:
    """An OpenAI-compatible server (also stands in for vLLM/llama.cpp/Ollama ``/v1``).

    Default answer: ``text`` (a string, or a function of the request), else an echo
    of the last user message. Wrong path -> 404, no model/messages -> 400, and with
    ``api_key`` set a missing or wrong Bearer token -> 401, as the real API does.
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
        return FakeResponse(
            200, openai_chat_response(_text_for(text, request), model=body["model"])
        )

    return FakeServer(respond, prefix=prefix, latency=latency)


def fake_anthropic(
    text: TextSource = None,
    *,
    latency: float = 0.0,
    api_key: str | None = None,
    prefix: str = "/v1",
) -> FakeServer:
    """An Anthropic Messages server; enforces ``anthropic-version`` and ``max_tokens`` like the API."""
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
        return FakeResponse(
            200, anthropic_message_response(_text_for(text, request), model=body.get("model", ""))
        )

    return FakeServer(respond, prefix=prefix, latency=latency)


_GEMINI_ROUTE = re.compile(r"/models/(?P<model>[^/:]+):generateContent$")


def fake_gemini(
    text: TextSource = None,
    *,
    latency: float = 0.0,
    api_key: str | None = None,
    prefix: str = "/v1beta",
) -> FakeServer:
    """A Gemini ``generateContent`` server; roles other than user/model -> 400, like the API."""
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
        return FakeResponse(
            200, gemini_response(_text_for(text, request), model=match.group("model"))
        )

    return FakeServer(respond, prefix=prefix, latency=latency)


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
