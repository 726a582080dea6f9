"""A model's ``timeout`` bounds the whole attempt, not each read.

The server here drips its answer a byte at a time, so no single read ever waits
long: httpx's per-read timeouts never fire, only a deadline on the attempt does.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import ChatMessage, ModelSpec
from oxyeval.providers.embeddings import EmbeddingPool

from ..fakes import SleepRecorder, openai_chat_response, run_model

DRIP_SECONDS = 12.0


class DripServer:
    """Answers every request slowly: one byte every ``interval`` seconds.

    ``part`` says what drips: ``"headers"`` (the status line and headers trickle
    in) or ``"body"`` (headers at once, then the body trickles). Stopping cuts
    every connection at once, so a test never waits for the drip to end.
    """

    def __init__(self, part: str, payload: dict[str, object]) -> None:
        self.part = part
        body = json.dumps(payload).encode()
        self.head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        self.body = body
        drip = self.head if part == "headers" else body
        self.interval = DRIP_SECONDS / len(drip)
        self.requests = 0
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def __enter__(self) -> DripServer:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._sock.close()
        for thread in self._threads:
            thread.join(timeout=2.0)

    def _accept(self) -> None:
        self._sock.settimeout(0.05)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            self.requests += 1
            head, body = self.head, self.body
            try:
                if self.part == "body":
                    conn.sendall(head)
                    slow = body
                else:
                    slow = head
                for byte in slow:
                    if self._stop.wait(self.interval):
                        return
                    conn.sendall(bytes([byte]))
                if self.part == "headers":
                    conn.sendall(body)
            except OSError:
                return


def _spec(url: str, **overrides: object) -> ModelSpec:
    fields: dict[str, object] = {
        "name": "slowpoke",
        "vendor": "openai",
        "model_ref": "m",
        "api_url": url,
        "timeout": 0.5,
        "max_retries": 0,
    }
    fields.update(overrides)
    return ModelSpec(**fields)  # type: ignore[arg-type]


@pytest.fixture(params=["headers", "body"])
def drip(request: pytest.FixtureRequest) -> Iterator[DripServer]:
    with DripServer(request.param, openai_chat_response("finally")) as server:
        yield server


def test_a_dripping_chat_answer_fails_at_the_timeout_not_after_the_drip(drip: DripServer) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        run_model(_spec(drip.url), [ChatMessage("user", "hi")])
    elapsed = time.monotonic() - started
    assert elapsed < DRIP_SECONDS / 2, f"held for {elapsed:.1f}s: timeout is still per read"
    message = str(info.value)
    assert "slowpoke" in message and "within 0.5s" in message
    assert "`timeout`" in message and "whole attempt" in message
    assert drip.requests == 1


def test_the_attempt_s_timeout_error_is_retryable(drip: DripServer) -> None:
    """One attempt, below the retry layer: the classification the retrier acts on."""
    import httpx

    from oxyeval.providers._http import post_json

    async def go() -> None:
        async with httpx.AsyncClient() as client:
            await post_json(client, _spec(drip.url), drip.url + "/chat/completions", {}, {})

    with pytest.raises(ProviderError) as info:
        asyncio.run(go())
    assert info.value.retryable is True
    assert "Raise `timeout`" in str(info.value)


def test_the_deadline_is_per_attempt_and_each_retry_gets_a_fresh_one() -> None:
    with DripServer("body", openai_chat_response("finally")) as server:
        started = time.monotonic()
        with pytest.raises(ProviderError) as info:
            run_model(
                _spec(server.url, max_retries=1),
                [ChatMessage("user", "hi")],
                sleep=SleepRecorder(),
            )
        elapsed = time.monotonic() - started
        requests = server.requests
    assert requests == 2  # a timed-out attempt is retried, and the retry times out too
    assert elapsed < DRIP_SECONDS / 2
    assert "within 0.5s" in str(info.value)


def test_a_fast_answer_within_the_deadline_still_succeeds() -> None:
    from ..fakes import fake_openai

    with fake_openai("quick") as server:
        result = run_model(_spec(server.url), [ChatMessage("user", "hi")])
    assert result.text == "quick"


def test_a_dripping_embeddings_answer_fails_at_the_timeout(drip: DripServer) -> None:
    spec = _spec(drip.url, name="emb")

    async def go() -> None:
        async with EmbeddingPool({"emb": spec}, sleep=SleepRecorder(), environ={}) as pool:
            await pool.get("emb").embed(["some text"])

    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        asyncio.run(go())
    assert time.monotonic() - started < DRIP_SECONDS / 2
    assert "'emb'" in str(info.value) and "within 0.5s" in str(info.value)
