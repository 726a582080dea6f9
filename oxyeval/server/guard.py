"""What stands between the network and the API: the token, the body size, the content
type, the hosts a browser may reach it under, and the depth of a query.

Why each: a server bound to another interface than loopback is reachable by anyone on
that network, so it needs a token (compared in constant time, so its bytes cannot be
guessed one by one from response times). A body is capped before it is parsed, and a
query's nesting before it is executed, so one request cannot take the memory or the CPU.
POST must be JSON: a form or multipart post is a "simple" request a hostile web page can
send cross-site without a preflight, JSON is not. Bound to loopback without a token, the
Host header must name loopback too: a DNS-rebinding page cannot then reach it by name.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
)

__all__ = [
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_DEPTH",
    "LOOPBACK_HOSTS",
    "Guard",
    "depth_limit",
    "is_loopback",
    "token_matches",
]

DEFAULT_MAX_DEPTH = 10
DEFAULT_MAX_BODY = 1_000_000
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def token_matches(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def _depth(
    node: SelectionSetNode | None,
    fragments: Mapping[str, Any],
    seen: frozenset[str],
) -> int:
    if node is None:
        return 0
    deepest = 0
    for selection in node.selections:
        if isinstance(selection, FieldNode):
            if selection.name.value.startswith("__"):
                continue  # introspection is bounded by the schema itself
            deepest = max(deepest, 1 + _depth(selection.selection_set, fragments, seen))
        elif isinstance(selection, InlineFragmentNode):
            deepest = max(deepest, _depth(selection.selection_set, fragments, seen))
        elif isinstance(selection, FragmentSpreadNode):
            name = selection.name.value
            fragment = fragments.get(name)
            if fragment is not None and name not in seen:  # a cycle is the spec's error
                deepest = max(deepest, _depth(fragment.selection_set, fragments, seen | {name}))
    return deepest


def depth_limit(max_depth: int) -> type[ValidationRule]:
    """A validation rule refusing operations nested deeper than ``max_depth`` fields."""

    class DepthLimit(ValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)

        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
            fragments = {
                d.name.value: d
                for d in self.context.document.definitions
                if d.kind == "fragment_definition"
            }
            depth = _depth(node.selection_set, fragments, frozenset())
            if depth > max_depth:
                name = node.name.value if node.name else "anonymous"
                self.report_error(
                    GraphQLError(
                        f"operation '{name}' is nested {depth} fields deep; this server "
                        f"allows at most {max_depth}",
                        node,
                    )
                )

    return DepthLimit


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


def _error(message: str, code: str) -> dict[str, Any]:
    return {"errors": [{"message": message, "extensions": {"code": code}}]}


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
    ) -> None:
        self.app = app
        self.token = token
        self.max_body = max_body
        self.loopback_only = loopback_only and token is None
        self.open_paths = open_paths

    def _authorised(self, scope: Scope) -> bool:
        if self.token is None:
            return True
        headers = dict(scope.get("headers") or ())
        auth = headers.get(b"authorization", b"").decode("latin-1")
        if auth[:7].lower() == "bearer " and token_matches(auth[7:].strip(), self.token):
            return True
        # EventSource and a first visit of the page cannot set a header: ?token=
        from urllib.parse import parse_qs

        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        return token_matches((query.get("token") or [None])[0], self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        headers = dict(scope.get("headers") or ())
        if self.loopback_only:
            raw = headers.get(b"host", b"").decode("latin-1")
            if raw.startswith("[") and "]" in raw:
                host = raw[1 : raw.index("]")]
            else:
                host = raw.rsplit(":", 1)[0] if raw.count(":") == 1 else raw
            if raw and not is_loopback(host):
                await _reply(
                    send, 421, _error("this server answers only on localhost", "FORBIDDEN")
                )
                return
        if not path.startswith(self.open_paths) and not self._authorised(scope):
            await _reply(
                send,
                401,
                _error(
                    "a token is required: send 'Authorization: Bearer <token>' (or open the "
                    "dashboard as /?token=<token>)",
                    "UNAUTHENTICATED",
                ),
                [(b"www-authenticate", b"Bearer")],
            )
            return
        if scope.get("method") == "POST":
            kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if kind != b"application/json":
                await _reply(
                    send,
                    415,
                    _error("POST a JSON body (Content-Type: application/json)", "BAD_USER_INPUT"),
                )
                return
            length = headers.get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body):
                await _reply(
                    send,
                    413,
                    _error(f"the body is larger than {self.max_body:,} bytes", "BAD_USER_INPUT"),
                )
                return
            receive = self._capped(receive)
        await self.app(scope, receive, send)

    def _capped(self, receive: Receive) -> Receive:
        """A chunked body without a length is counted as it arrives."""
        seen = 0
        limit = self.max_body

        async def capped() -> MutableMapping[str, Any]:
            nonlocal seen
            message = await receive()
            if message.get("type") == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        return capped


class BodyTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the body is larger than {limit:,} bytes")
