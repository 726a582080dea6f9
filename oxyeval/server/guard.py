"""What stands between the network and the API: the token, the hosts a browser may reach
it under, the requests a page on another site may send, the content type and size of a
body and the time it may take to arrive; and a request whose client has left is stopped.

Why each: a server bound to another interface than loopback is reachable by anyone on
that network, so it needs a token (compared in constant time, so its bytes cannot be
guessed one by one from response times). Bound to loopback without a token, the Host
header must name loopback too: a DNS-rebinding page cannot then reach it by name. A page
on any site can make the browser send a "simple" request (a form post, an ``<img>``'s
GET) without asking the server first: POST must be JSON, and a GET query must carry a
content type a page cannot send that way. A body is read whole before the app sees it,
capped and within a deadline, so a slow or endless one holds nothing for long. And the
work of a request whose client has disconnected is for nobody: it is stopped.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

from ..redact import redact
from .defaults import DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_BODY
from .errors import error_body
from .limits import BUDGET_KEY

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BODY",
    "LOOPBACK_HOSTS",
    "BodyTooLarge",
    "Guard",
    "check_cors_origin",
    "is_loopback",
    "token_matches",
]

log = logging.getLogger("oxyeval.server")

#: Content types a page may send cross-site without a preflight (none is no header at all).
_SIMPLE_TYPES = frozenset(
    {b"", b"application/x-www-form-urlencoded", b"multipart/form-data", b"text/plain"}
)
_CLOSE = (b"connection", b"close")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP literal; a DNS name that merely starts with ``127.``
    (``127.0.0.1.attacker.example``, a rebinding name) is not."""
    name = host.strip().rstrip(".").lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def parse_host(raw: str) -> tuple[str, int | None] | None:
    """A Host header's (host, port): a name or IPv4 literal, or an IPv6 literal in brackets,
    with an optional numeric port; None when it is none of these (``[::1`` without its
    closing bracket, ``a:b:c``, a user or a path in it)."""
    if raw.startswith("["):
        end = raw.find("]")
        if end < 0:
            return None
        host, rest = raw[1:end], raw[end + 1 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
    else:
        host, colon, port = raw.partition(":")
        rest = colon + port
        if not host or not _HOST_NAME.fullmatch(host):
            return None
    if not rest:
        return host, None
    port_text = rest[1:]
    if not rest.startswith(":") or not port_text.isdigit() or not port_text.isascii():
        return None
    port = int(port_text)
    return (host, port) if port <= 65535 else None


#: What a name or an IPv4 literal may hold in a Host header (RFC 3986's reg-name, less
#: percent-encoding and the sub-delimiters no DNS name uses).
_HOST_NAME = re.compile(r"[A-Za-z0-9._~-]+")


def _loopback_host(raw: str) -> bool:
    """A Host header naming loopback, with an optional numeric port, and nothing else."""
    parsed = parse_host(raw)
    return parsed is not None and is_loopback(parsed[0])


def check_cors_origin(origin: str, token: str | None) -> str:
    """The origin ``--cors-origin`` names, as a browser sends it in ``Origin``; ValueError
    when it is malformed, or when it lets any page call the API and no token guards it.

    ``*`` is every web site and ``null`` the origin of every sandboxed iframe and local
    file (any page can get it): without a token, either lets any page run mutations that
    rewrite the project's files. An origin is ``scheme://host[:port]`` and nothing more: a
    path, a trailing slash or a user never matches what a browser sends."""
    text = origin.strip()
    if text in ("*", "null"):
        if token is None:
            who = "every web site" if text == "*" else "any page (sandboxed iframes, local files)"
            raise ValueError(
                f"--cors-origin {text} would let {who} call the API, mutations included; "
                "name one origin (--cors-origin https://app.example), or give a token "
                "(--token or OXY_SERVE_TOKEN) that such pages must send"
            )
        return text
    scheme, sep, rest = text.partition("://")
    parsed = parse_host(rest) if sep else None
    if scheme.lower() not in ("http", "https") or parsed is None:
        raise ValueError(
            f"--cors-origin {origin!r} is not an origin: give scheme://host[:port] as a browser "
            "sends it (https://app.example, http://localhost:3000), without a path or a "
            "trailing slash"
        )
    host, port = parsed
    default = 443 if scheme.lower() == "https" else 80
    shown = (f"[{host}]" if ":" in host else host).lower()
    suffix = f":{port}" if port not in (None, default) else ""
    return f"{scheme.lower()}://{shown}{suffix}"


def token_matches(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


async def _reply(send: Send, status: int, body: dict[str, Any], headers: list[Any] = ()) -> None:  # type: ignore[assignment]
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class Guard:
    """ASGI middleware in front of the whole app (see the module's docstring)."""

    def __init__(
        self,
        app: App,
        *,
        token: str | None,
        max_body: int = DEFAULT_MAX_BODY,
        loopback_only: bool = True,
        open_paths: tuple[str, ...] = ("/assets/", "/favicon"),
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
    ) -> None:
        self.app = app
        self.token = token
        self.max_body = max_body
        self.loopback_only = loopback_only and token is None
        self.open_paths = open_paths
        self.body_timeout = body_timeout

    def _authorised(self, scope: Scope) -> bool:
        if self.token is None:
            return True
        headers = dict(scope.get("headers") or ())
        auth = headers.get(b"authorization", b"").decode("latin-1")
        if auth[:7].lower() == "bearer " and token_matches(auth[7:].strip(), self.token):
            return True
        # EventSource and a first visit of the page cannot set a header: ?token=
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        return token_matches((query.get("token") or [None])[0], self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            refusal = self._refusal(scope)
        except Exception as exc:  # our bug: a JSON answer, one log line, no traceback
            log.error("internal error: %s: %s", type(exc).__name__, redact(str(exc)))
            refusal = 500, error_body("internal error", "INTERNAL_SERVER_ERROR"), []
        if refusal is not None:
            await _reply(send, *refusal)
            return
        try:
            body = await asyncio.wait_for(self._body(receive), self.body_timeout)
        except BodyTooLarge as exc:
            await _reply(send, 413, error_body(str(exc), "BAD_USER_INPUT"), [_CLOSE])
            return
        except asyncio.TimeoutError:
            message = f"the request body did not arrive within {self.body_timeout:g} s"
            await _reply(send, 408, error_body(message, "BAD_USER_INPUT"), [_CLOSE])
            return
        if body is None:  # the client left while sending it
            return
        await self._run(scope, body, receive, send)

    async def _body(self, receive: Receive) -> bytes | None:
        """The whole body (None: the client left first), counted as it arrives: a chunked
        body has no length to refuse it by up front."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_body:
                raise BodyTooLarge(self.max_body)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _run(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        """The app on a received request, stopped when its client leaves: a query's work
        is for nobody then (a run it started goes on: the runner shields it)."""
        left = asyncio.Event()
        given = False
        started = completed = False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            await left.wait()
            return {"type": "http.disconnect"}

        async def tracked(message: MutableMapping[str, Any]) -> None:
            nonlocal started, completed
            started = True
            if message["type"] == "http.response.body" and not message.get("more_body"):
                completed = True
            await send(message)

        work = asyncio.ensure_future(self.app(scope, replay, tracked))

        async def watch() -> None:
            # the server answers receive() with a disconnect when the client goes (or once
            # the response is complete: nothing to stop then)
            while (await receive())["type"] != "http.disconnect":
                pass
            left.set()
            if completed:
                return
            budget = scope.get(BUDGET_KEY)
            if budget is not None:
                budget.stop("left")  # GraphQL's own stop: each resolver in flight cancelled
            else:
                work.cancel()

        watcher = asyncio.ensure_future(watch())
        try:
            await asyncio.wait({work})
        except asyncio.CancelledError:  # the server itself stops this request
            work.cancel()
            raise
        finally:
            watcher.cancel()
        if work.cancelled():
            return
        exc = work.exception()
        # Starlette has answered it (JSON, see app.py) and raises it again for the server
        # to log with its traceback: it is logged without one instead
        if exc is not None and not started:
            log.error("internal error: %s: %s", type(exc).__name__, redact(str(exc)))
            await _reply(send, 500, error_body("internal error", "INTERNAL_SERVER_ERROR"))

    def _refusal(self, scope: Scope) -> tuple[int, dict[str, Any], list[Any]] | None:
        """Why a request is refused before the app sees it (None: it is not): status, body,
        extra headers."""
        path: str = scope.get("path", "")
        method = scope.get("method")
        headers = dict(scope.get("headers") or ())
        host = headers.get(b"host", b"").decode("latin-1")
        if host and parse_host(host) is None:
            message = f"the Host header is malformed: {host[:100]!r}"
            return 400, error_body(message, "BAD_USER_INPUT"), []
        if self.loopback_only and not _loopback_host(host):
            return 421, error_body("this server answers only on localhost", "FORBIDDEN"), []
        if not path.startswith(self.open_paths) and not self._authorised(scope):
            message = (
                "a token is required: send 'Authorization: Bearer <token>' (or open the "
                "dashboard as /?token=<token>)"
            )
            return 401, error_body(message, "UNAUTHENTICATED"), [(b"www-authenticate", b"Bearer")]
        kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        # an <img src>, a link or a form can send a GET from any site; what they cannot send
        # without the browser asking this server first (a CORS preflight, refused unless
        # --cors-origin allows that site) is another content type or a header
        cross_site = kind in _SIMPLE_TYPES and b"authorization" not in headers
        if path == "/graphql" and method in ("GET", "HEAD") and self.token is None and cross_site:
            message = (
                "a query sent as GET must carry 'Content-Type: application/json' (what a page "
                "on another site cannot send without asking first); or POST it"
            )
            return 403, error_body(message, "FORBIDDEN"), []
        if method == "POST":
            if kind != b"application/json":
                message = "POST a JSON body (Content-Type: application/json)"
                return 415, error_body(message, "BAD_USER_INPUT"), []
            length = headers.get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body):
                message = f"the body is larger than {self.max_body:,} bytes"
                return 413, error_body(message, "BAD_USER_INPUT"), [_CLOSE]
        return None


class BodyTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the body is larger than {limit:,} bytes")
