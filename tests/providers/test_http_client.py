"""The one HTTP client policy, the same for chat and embedding models: https is always
verified (the CA bundle loaded at the first handshake only), redirects are never followed."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import certifi
import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import ChatMessage, EmbeddingPool, ModelPool, ModelSpec
from tests.fakes import (
    FakeResponse,
    FakeServer,
    SleepRecorder,
    fake_gemini_embeddings,
    fake_openai,
    openai_embeddings_response,
    run_model,
)

VECTOR = [0.25, 0.5, 0.75]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1: (cert, key)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip(
            "openssl is not installed (it makes the test certificate): apt-get install openssl"
        )
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            *ec,
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            *subject,
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@asynccontextmanager
async def tls_embeddings_server(cert: Path, key: Path) -> AsyncIterator[str]:
    """An https ``/embeddings`` server on 127.0.0.1 (in this event loop); yields its API URL."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?i)content-length: *(\d+)", head)
            await reader.readexactly(int(length.group(1)) if length else 0)
            body = json.dumps(openai_embeddings_response([VECTOR])).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + b"content-length: %d\r\n\r\n" % len(body)
                + body
            )
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"https://127.0.0.1:{port}/v1"
    finally:
        server.close()
        await server.wait_closed()


def _local_models() -> ModelPool:
    """A pool whose only model is a plain-http local server (it is never called)."""
    spec = ModelSpec("local", "openai", "m", api_url="http://127.0.0.1:9/v1")
    return ModelPool({"local": spec}, environ={}, sleep=SleepRecorder())


async def _embed_through_shared_client(url: str) -> list[list[float]]:
    """An https embedding model on the client a plain-http chat pool made, as a case run
    shares it."""
    async with _local_models() as models:
        spec = ModelSpec("e", "openai", "m", api_url=url, max_retries=0, timeout=10.0)
        embeddings = EmbeddingPool(
            {"e": spec}, client=models.client, limiters=models.limiters, environ={}
        )
        async with embeddings:
            return await embeddings.get("e").embed(["a text"])


def test_https_is_verified_even_on_a_client_made_for_plain_http_models(
    certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)

    async def go() -> None:
        async with tls_embeddings_server(*certificate) as url:
            await _embed_through_shared_client(url)

    with pytest.raises(ProviderError) as info:
        asyncio.run(go())
    assert "CERTIFICATE_VERIFY_FAILED" in str(info.value)


def test_a_trusted_certificate_is_accepted_from_ssl_cert_file(
    certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))  # as httpx reads it

    async def go() -> list[list[float]]:
        async with tls_embeddings_server(*certificate) as url:
            return await _embed_through_shared_client(url)

    assert asyncio.run(go()) == [VECTOR]


def test_the_ca_bundle_is_loaded_at_the_first_tls_handshake_only(
    certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    loads: list[str] = []

    def where() -> str:  # certifi's bundle, here the test certificate
        loads.append("ca")
        return str(certificate[0])

    monkeypatch.setattr(certifi, "where", where)

    with fake_openai() as server:  # plain http: never needs the bundle
        spec = ModelSpec("m", "openai", "gpt-x", api_url=server.url)
        completion = run_model(spec, [ChatMessage("user", "hi")])
    assert completion.text and loads == []

    async def go() -> list[list[float]]:
        async with tls_embeddings_server(*certificate) as url:
            return await _embed_through_shared_client(url)

    assert asyncio.run(go()) == [VECTOR]
    assert loads == ["ca"]


# ------------------------------------------------------------------------------ redirects


def _redirecting(target: FakeServer, path: str) -> FakeServer:
    origin = FakeServer(prefix="/v1")
    origin.enqueue(FakeResponse(307, {}, headers={"Location": target.url + path}))
    return origin


def _chat(url: str) -> Any:
    spec = ModelSpec("claude", "anthropic", "claude-x", api_url=url, api_key="sk-ant-secret-1")
    return run_model(spec, [ChatMessage("user", "hi")])


def _embedding(url: str) -> Any:
    spec = ModelSpec("gem", "google", "gemini-embedding-001", api_url=url, api_key="AIza-secret-2")

    async def go() -> list[list[float]]:
        async with EmbeddingPool({"gem": spec}, environ={}, sleep=SleepRecorder()) as pool:
            return await pool.get("gem").embed(["x"])

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("call", "path"), [(_chat, "/messages"), (_embedding, "/models/x:batchEmbedContents")]
)
def test_a_redirect_is_reported_not_followed_so_the_key_stays_home(call: Any, path: str) -> None:
    with fake_gemini_embeddings(prefix="/elsewhere") as target:
        elsewhere = target.url + path
        with _redirecting(target, path) as origin:
            with pytest.raises(ProviderError) as info:
                call(origin.url)
            sent = origin.requests
        received = target.requests
    message = str(info.value)
    assert "HTTP 307" in message and f"redirects to {elsewhere}" in message
    assert "set api_url" in message
    assert len(sent) == 1  # not retried either: the next attempt would be redirected too
    assert received == []  # the key headers never reached the other address


def test_a_run_of_many_connections_spreads_its_calls_over_several_small_pools() -> None:
    """httpcore scans every connection of a pool on each request: a run allowed 200 at
    once gets pools of at most 32, used in turn, each call answered as before."""
    import httpx

    from oxyeval.providers._http import new_client

    async def go(url: str) -> tuple[int, list[int], list[str]]:
        client = new_client(keepalive=200)
        shards = getattr(client, "shards", [])
        try:
            pools = [client, *shards]
            answers = []
            for i in range(len(pools) * 2):
                body = {"model": "m", "messages": [{"role": "user", "content": f"hi {i}"}]}
                async with client.stream("POST", f"{url}/chat/completions", json=body) as r:
                    await r.aread()
                    answers.append(r.json()["choices"][0]["message"]["content"])
            used = [len(p._transport._pool.connections) for p in pools]  # type: ignore[attr-defined]
        finally:
            await client.aclose()
        assert client.is_closed and all(s.is_closed for s in shards)
        assert isinstance(client, httpx.AsyncClient)
        return len(pools), used, answers

    with fake_openai() as server:
        count, used, answers = asyncio.run(go(server.url))
    assert count == 7  # 200 connections in pools of at most 32
    assert used == [1] * count  # each pool took its turn, keeping its one connection
    assert answers == [f"hi {i}" for i in range(count * 2)]
    small = new_client(keepalive=10)
    assert not hasattr(small, "shards")  # a small run: one pool
    asyncio.run(small.aclose())
