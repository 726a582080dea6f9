"""A small project and the Testing API over it, driven in process through HTTP.

The app is ``create_app(TestingService(project))`` behind ``httpx.ASGITransport``: real
requests and responses (status, headers, JSON) without a socket. ASGITransport does not
run the lifespan, so the fixture drains the service's runs and closes its store itself.

The project: two offline mock models (``quick`` answers "positive" at once, ``steady``
a longer sentence after 10 ms), one ``sentiment.prompt.yml`` with two cases (``praise``
expects "positive" and passes, ``plain`` expects "neutral" and fails) and two YAML
branches. ``seed`` runs its cases once through the library (as ``oxy cases run`` does),
which is what records a YAML prompt and its cases in the history today.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import textwrap
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

CONFIG = """\
models:
  - {name: quick, vendor: mock, model_ref: mock-small, outputs: [positive]}
  - {name: steady, vendor: mock, model_ref: mock-large, latency_ms: 10,
     outputs: ["The sentiment is clearly positive."]}
pricing:
  mock-small: {input: 0.1, output: 0.4}
  mock-large: {input: 3.0, output: 15.0}
"""

PROMPT = """\
name: sentiment
model: quick
system: Label the sentiment.
template: "Feedback: {{ text }}"
similarity: lexical
branches:
  - {name: Quick, model: quick}
  - {name: Steady, model: steady, control: true}
cases:
  - name: praise
    description: Clear praise
    input: {text: "I love it"}
    expected_output: positive
  - name: plain
    input: {text: "It came on Tuesday"}
    expected_output: neutral
"""

PRAISE = "sentiment::praise"
PLAIN = "sentiment::plain"

GqlResult = tuple[int, dict[str, Any]]


def write_project(root: Path, config: str = CONFIG, prompt: str | None = PROMPT) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.yml").write_text(textwrap.dedent(config), encoding="utf-8")
    if prompt is not None:
        (root / "sentiment.prompt.yml").write_text(textwrap.dedent(prompt), encoding="utf-8")
    return root


def seed(root: Path) -> None:
    """Run the project's cases once (records the YAML prompt, its version and cases)."""
    from oxyeval.suites import run_cases

    run_cases(project_dir=str(root))


async def aseed(root: Path) -> None:
    """:func:`seed` inside a running event loop."""
    from oxyeval.suites import run_cases_async

    await run_cases_async(project_dir=str(root))


def parse_time(value: str) -> dt.datetime:
    """A DateTime of the API: ISO 8601 in UTC (fails on anything else)."""
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert parsed.tzinfo is not None and parsed.utcoffset() == dt.timedelta(0), value
    return parsed


def codes(body: dict[str, Any]) -> list[str]:
    return [e["extensions"]["code"] for e in body.get("errors") or []]


def assert_clean(body: Any, *secrets: str) -> None:
    """No traceback and no secret anywhere in a response."""
    text = json.dumps(body)
    assert "Traceback" not in text and 'File "' not in text, text[:2000]
    for secret in secrets:
        assert secret not in text


class Api:
    """An ASGI app and a client to it: ``await api.gql(query, variables)``."""

    def __init__(self, app: Any, service: Any, root: Path) -> None:
        self.app = app
        self.service = service
        self.root = root
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", timeout=30
        )

    async def gql(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> GqlResult:
        payload: dict[str, Any] = {"query": query}
        if variables is not None:
            payload["variables"] = variables
        response = await self.client.post("/graphql", json=payload, headers=headers)
        return response.status_code, response.json()

    async def data(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``data`` of a query that must succeed."""
        status, body = await self.gql(query, variables)
        assert status == 200 and not body.get("errors"), body
        return body["data"]

    async def error(
        self, query: str, variables: dict[str, Any] | None = None, code: str | None = None
    ) -> dict[str, Any]:
        """The first error of a query that must fail (with ``code``, when given)."""
        _, body = await self.gql(query, variables)
        assert body.get("errors"), body
        assert_clean(body)
        first = body["errors"][0]
        assert first["message"] and "extensions" in first
        if code is not None:
            assert first["extensions"]["code"] == code, body
        return first

    async def close(self) -> None:
        await self.client.aclose()
        await self.service.drain()
        self.service.close()


MakeApi = Callable[..., Any]


@contextlib.asynccontextmanager
async def live(app: Any, **config: Any) -> AsyncIterator[str]:
    """The app on a real 127.0.0.1 socket (uvicorn, no lifespan; ``config``: more of
    uvicorn.Config's options): its base URL. For what ASGITransport cannot do: it buffers
    a whole response, so an endless stream hangs; and what happens on the socket itself."""
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1, **config
        )
    )
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if serving.done():
                serving.result()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, 10)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = write_project(tmp_path / "proj")
    seed(root)
    return root


@pytest.fixture
async def make_api() -> AsyncIterator[MakeApi]:
    """``await make_api(root, token=..., environ=..., **create_app options)``."""
    from oxyeval.server import TestingService, create_app

    made: list[Api] = []

    async def make(root: Path, *, environ: dict[str, str] | None = None, **options: Any) -> Api:
        service = TestingService(root, environ=environ)
        api = Api(create_app(service, **options), service, root)
        made.append(api)
        return api

    yield make
    for api in made:
        await api.close()


@pytest.fixture
async def api(project: Path, make_api: MakeApi) -> Api:
    return await make_api(project)


@pytest.fixture
def no_env_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OXY_SERVE_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    yield
