"""The ASGI application of ``oxy serve``: GraphQL at ``/graphql``, the dashboard at ``/``,
its files at ``/assets/``, the live event stream at ``/events``; and :func:`serve`, which
runs it under uvicorn.

Everything is served by this one process from files inside the package: no CDN, no
network beyond the configured model endpoints, so the dashboard works on an air-gapped
CI runner. The GraphQL explorer (which loads from a CDN) is off.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
import mimetypes
import os
from collections.abc import AsyncIterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from ariadne.asgi import GraphQL
from ariadne.explorer import ExplorerHttp405
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Route

from ..redact import redact
from .connections import (
    DEFAULT_MAX_CLIENT_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS,
    ConnectionLimits,
    limited_protocol,
)
from .errors import error_body, format_error
from .execution import FastExecutor
from .guard import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY,
    Guard,
    check_cors_origin,
    is_loopback,
)
from .handler import JsonHTTPHandler
from .limits import (
    BUDGET_KEY,
    DEFAULT_MAX_COST,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_VALUES,
    DEFAULT_QUERY_TIMEOUT,
    POOL_FACTOR,
    Pool,
    parse_query,
    query_limits,
    validate_limits_first,
)
from .resolvers import build_schema
from .service import TestingService

__all__ = ["ServeError", "create_app", "serve"]

log = logging.getLogger("oxyeval.server")

_ASSETS = ("index.html", "app.js", "charts.js", "style.css")
_SECURITY_HEADERS = {
    # the dashboard loads only its own files and talks only to this origin
    "content-security-policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


class ServeError(Exception):
    """A server that must not start as asked (bad host/token combination, port in use)."""


def _asset(name: str) -> bytes | None:
    if name not in _ASSETS:
        return None
    path = resources.files("oxyeval.server").joinpath("dashboard", name)
    try:
        return path.read_bytes()
    except (FileNotFoundError, OSError):
        return None


def _quiet_logger() -> logging.Logger:
    """Ariadne logs every resolver error with its traceback; an expected error (a wrong id,
    a refused input) is the client's answer, not a server event, and an unexpected one
    is logged by :func:`oxyeval.server.errors.classify` without the stack."""
    quiet = logging.getLogger("oxyeval.server.graphql")
    quiet.propagate = False
    quiet.addHandler(logging.NullHandler())
    return quiet


def _json_error(status: int, code: str, message: str) -> Response:
    return Response(json.dumps(error_body(message, code)), status, media_type="application/json")


def _refused(status: int, code: str, message: str | None = None) -> Any:
    """A JSON answer for an exception a request raised outside GraphQL's own handling (a
    body too large or too deeply nested, our bug), never Starlette's plain-text 500."""

    async def handler(_request: Request, exc: Exception) -> Response:
        if status == 500:
            log.error("internal error: %s: %s", type(exc).__name__, redact(str(exc)))
        return _json_error(status, code, message or str(exc))

    return handler


def _lifespan(service: TestingService) -> Any:
    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        try:
            yield
        finally:  # runs whose clients left are finished and stored before the store closes
            await service.drain()
            service.close()

    return lifespan


def create_app(
    service: TestingService,
    *,
    token: str | None = None,
    cors_origin: str | None = None,
    loopback_only: bool = True,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_body: int = DEFAULT_MAX_BODY,
    max_cost: int = DEFAULT_MAX_COST,
    max_values: int = DEFAULT_MAX_VALUES,
    query_timeout: float = DEFAULT_QUERY_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
) -> Any:
    """The whole server as one ASGI app (tests drive it in process, ``serve`` runs it).
    ServeError: ``cors_origin`` is malformed, or lets any page in without a token."""
    if cors_origin:
        try:
            cors_origin = check_cors_origin(cors_origin, token)
        except ValueError as exc:
            raise ServeError(str(exc)) from None
    service.max_depth, service.max_body, service.max_cost = max_depth, max_body, max_cost
    service.max_values, service.query_timeout = max_values, query_timeout
    service.answers = Pool(POOL_FACTOR * max_values)

    def rules(_context: Any, _document: Any, data: Any) -> list[Any]:
        # per request: a list's limit may be one of its variables
        variables = data.get("variables") if isinstance(data, dict) else None
        return [query_limits(max_depth, max_cost, variables)]

    graphql = GraphQL(
        build_schema(),
        context_value=lambda request, _data=None: {
            "request": request,
            "service": service,
            "budget": request.scope.get(BUDGET_KEY),
        },
        query_parser=parse_query,
        query_validator=validate_limits_first,
        validation_rules=rules,
        execute_get_queries=True,
        debug=False,
        explorer=ExplorerHttp405(),
        error_formatter=lambda error, debug=False: format_error(
            error, debug, root=str(service.project_root)
        ),
        logger=_quiet_logger(),
        execution_context_class=FastExecutor,
        http_handler=JsonHTTPHandler(
            max_values=max_values, timeout=query_timeout, pool=service.answers
        ),
    )

    async def index(request: Request) -> Response:
        body = _asset("index.html")
        if body is None:
            return HTMLResponse("<h1>oxyeval</h1><p>The dashboard is not installed.</p>", 404)
        given = request.query_params.get("token") if token else None
        text = body.decode("utf-8").replace(
            'name="oxy-token" content=""',
            f'name="oxy-token" content="{html.escape(given or "", quote=True)}"',
        )
        return HTMLResponse(text, headers=_SECURITY_HEADERS)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        body = _asset(name)
        if body is None:
            return Response("not found", 404, media_type="text/plain")
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if name.endswith(".js"):
            kind = "text/javascript"
        return Response(
            body,
            media_type=kind,
            headers={**_SECURITY_HEADERS, "cache-control": "no-cache"},
        )

    async def events(request: Request) -> Response:
        client = request.client.host if request.client else ""
        refusal = service.hub.refusal(client)
        if refusal is not None:
            return _json_error(503, "SERVER_BUSY", refusal)
        return StreamingResponse(
            service.hub.stream(client),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def health(request: Request) -> Response:
        return Response('{"ok":true}', media_type="application/json")

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/assets/{name}", asset),
            Route("/events", events),
            Route("/healthz", health),
            Route("/graphql", graphql, methods=["GET", "POST"]),
        ],
        lifespan=_lifespan(service),
        exception_handlers={
            RecursionError: _refused(400, "BAD_USER_INPUT", "the JSON body is nested too deeply"),
            Exception: _refused(500, "INTERNAL_SERVER_ERROR", "internal error"),
        },
    )
    guarded = Guard(
        app,
        token=token,
        max_body=max_body,
        loopback_only=loopback_only,
        body_timeout=body_timeout,
    )
    if cors_origin:
        # the preflight (OPTIONS) carries no token: answer it before the guard asks
        cors = CORSMiddleware(
            guarded,
            allow_origins=[cors_origin],
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type"],
        )
        return cors
    return guarded


def serve(
    project_dir: str | Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 4000,
    db: str | None = None,
    token: str | None = None,
    cors_origin: str | None = None,
    environ: Mapping[str, str] | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_body: int = DEFAULT_MAX_BODY,
    max_cost: int = DEFAULT_MAX_COST,
    max_values: int = DEFAULT_MAX_VALUES,
    query_timeout: float = DEFAULT_QUERY_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    max_client_connections: int = DEFAULT_MAX_CLIENT_CONNECTIONS,
    on_ready: Any = None,
) -> None:
    """Run the server until SIGINT/SIGTERM (finishing the runs it has going; the queries
    it has going are stopped). ``on_ready(service, port)`` once it listens, with the
    port it got (the one the OS chose when ``port`` is 0)."""
    import uvicorn

    token = token or (environ or os.environ).get("OXY_SERVE_TOKEN") or None
    if not is_loopback(host) and not token:
        raise ServeError(
            f"--host {host} makes the server reachable from other machines; give a token "
            "(--token or OXY_SERVE_TOKEN) that clients send as 'Authorization: Bearer ...', "
            "or keep the default --host 127.0.0.1"
        )
    if token is not None and len(token) < 16:
        raise ServeError("the token is shorter than 16 characters; use a long random one")
    if cors_origin:
        try:
            check_cors_origin(cors_origin, token)
        except ValueError as exc:
            raise ServeError(str(exc)) from None
    service = TestingService(project_dir, db=db, environ=environ)
    app = create_app(
        service,
        token=token,
        cors_origin=cors_origin,
        loopback_only=is_loopback(host),
        max_depth=max_depth,
        max_body=max_body,
        max_cost=max_cost,
        max_values=max_values,
        query_timeout=query_timeout,
    )
    limits = ConnectionLimits(max_connections, max_client_connections)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=limited_protocol(limits),
        ws="none",  # no WebSocket route: an upgrade is an ordinary request
        log_level="warning",
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=30,
    )

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            # open event streams never end by themselves: end them, or uvicorn waits
            # the whole graceful timeout for an idle dashboard tab
            loop = getattr(self, "_oxy_loop", None)
            if loop is not None:
                loop.call_soon_threadsafe(service.hub.close)
                # a query's client will not get its answer now; mutations wait for their runs
                loop.call_soon_threadsafe(service.answers.stop_all)
            super().handle_exit(sig, frame)

        async def startup(self, sockets: Any = None) -> None:
            import asyncio

            self._oxy_loop = asyncio.get_running_loop()
            await super().startup(sockets)
            if on_ready is not None and self.started:
                on_ready(service, _bound_port(self, port))

    server = _Server(config)
    server.run()


def _bound_port(server: Any, asked: int) -> int:
    """The port the server listens on: ``asked``, or the one the OS chose for port 0."""
    for listener in getattr(server, "servers", []):
        for sock in getattr(listener, "sockets", []) or []:
            name = sock.getsockname()
            if isinstance(name, tuple) and len(name) >= 2:
                return int(name[1])
    return asked
