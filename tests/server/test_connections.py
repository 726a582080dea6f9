"""What a client can hold of the server before its request is read: connections (a cap
per client address and in all) and time (a deadline on a request's headers, another on
its body). On a real socket, against uvicorn with the server's own protocol, with low
caps and short deadlines: a few held sockets stand for the hundreds of an attack."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from oxyeval.server import TestingService, create_app
from oxyeval.server.connections import ConnectionLimits, limited_protocol
from oxyeval.server.events import MAX_CLIENT_LISTENERS, EventHub

from .conftest import live, write_project

pytestmark = pytest.mark.anyio

HEADERS_S = 0.3


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[str, int]]:
    """The app under uvicorn with 2 connections per client, 3 in all, headers within
    0.3 s and a body within 0.3 s: its (host, port)."""
    service = TestingService(write_project(tmp_path / "proj"))
    app = create_app(service, body_timeout=HEADERS_S)
    limits = ConnectionLimits(max_connections=3, max_per_client=2, header_timeout=HEADERS_S)
    try:
        async with live(app, http=limited_protocol(limits), ws="none") as base:
            host, port = base.removeprefix("http://").split(":")
            yield host, int(port)
    finally:
        service.close()


async def _connect(where: tuple[str, int], source: str = "127.0.0.1") -> socket.socket:
    """A socket to the server from ``source`` (any 127.x address is this machine)."""
    sock = socket.socket()
    sock.setblocking(False)
    sock.bind((source, 0))
    await asyncio.get_running_loop().sock_connect(sock, where)
    return sock


async def _answer(sock: socket.socket) -> bytes:
    """All the server sends until it closes the connection."""
    loop = asyncio.get_running_loop()
    chunks = []
    while chunk := await asyncio.wait_for(loop.sock_recv(sock, 65536), 10):
        chunks.append(chunk)
    return b"".join(chunks)


def _json(answer: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


async def _get(where: tuple[str, int], path: str, source: str = "127.0.0.1") -> bytes:
    sock = await _connect(where, source)
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    await asyncio.get_running_loop().sock_sendall(sock, request.encode())
    try:
        return await _answer(sock)
    finally:
        sock.close()


async def test_a_silent_connection_is_closed(server: tuple[str, int]) -> None:
    sock = await _connect(server)
    try:
        assert await _answer(sock) == b""  # closed, nothing said: it asked nothing
    finally:
        sock.close()


@pytest.mark.parametrize(
    "partial",
    [
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n",  # the blank line never comes
        b"GET /healthz HT",
    ],
)
async def test_headers_that_never_end_get_a_408(server: tuple[str, int], partial: bytes) -> None:
    sock = await _connect(server)
    try:
        await asyncio.get_running_loop().sock_sendall(sock, partial)
        status, body = _json(await _answer(sock))
    finally:
        sock.close()
    assert status == 408 and body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert "headers did not arrive" in body["errors"][0]["message"]


async def test_a_body_that_never_ends_gets_a_408(server: tuple[str, int]) -> None:
    sock = await _connect(server)
    request = (
        b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100\r\n\r\n{"query":'
    )
    try:
        await asyncio.get_running_loop().sock_sendall(sock, request)
        answer = await _answer(sock)  # and the connection is closed
    finally:
        sock.close()
    status, body = _json(answer)
    assert status == 408 and "body did not arrive" in body["errors"][0]["message"]


async def test_held_sockets_lock_out_neither_other_clients_nor_the_holder_for_long(
    server: tuple[str, int],
) -> None:
    held = [await _connect(server), await _connect(server)]  # client 127.0.0.1: its cap
    try:
        status, body = _json(await _get(server, "/healthz"))
        assert status == 503 and body["errors"][0]["extensions"]["code"] == "SERVER_BUSY"
        assert "this client has 2 connections" in body["errors"][0]["message"]
        # another client is served meanwhile: one address cannot take the server
        assert (await _get(server, "/healthz", source="127.0.0.2")).startswith(b"HTTP/1.1 200")
        other = await _connect(server, "127.0.0.2")  # 3 in all now: the server's cap
        try:
            status, body = _json(await _get(server, "/healthz", source="127.0.0.3"))
            assert status == 503 and "the server has 3 connections" in body["errors"][0]["message"]
        finally:
            other.close()
        # the held sockets said nothing: closed at the header deadline, their room given back
        assert [await _answer(sock) for sock in held] == [b"", b""]
    finally:
        for sock in held:
            sock.close()
    assert (await _get(server, "/healthz")).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize(
    ("request_bytes", "status", "words"),
    [
        (b"GET /healthz HTTP/1.1\r\nHost: [::1\r\n\r\n", 400, "Host header is malformed"),
        (b"NOT HTTP AT ALL\r\n\r\n", 400, "not valid HTTP"),
    ],
)
async def test_malformed_requests_get_json_not_text(
    server: tuple[str, int], request_bytes: bytes, status: int, words: str, caplog: Any
) -> None:
    sock = await _connect(server)
    try:
        await asyncio.get_running_loop().sock_sendall(sock, request_bytes)
        got, body = _json(await _answer(sock))
    finally:
        sock.close()
    assert got == status and words in body["errors"][0]["message"]
    assert "Traceback" not in caplog.text


async def test_one_client_cannot_take_every_event_stream() -> None:
    hub = EventHub()
    streams = [hub.stream("10.0.0.1") for _ in range(MAX_CLIENT_LISTENERS)]
    for stream in streams:
        assert await anext(stream) == ": connected\n\n"
    refusal = hub.refusal("10.0.0.1")
    assert refusal is not None and "this client has" in refusal
    assert hub.refusal("10.0.0.2") is None  # another dashboard still gets one
    for stream in streams:
        await stream.aclose()
    assert hub.refusal("10.0.0.1") is None and hub.listeners == 0
