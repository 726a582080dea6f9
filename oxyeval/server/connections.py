"""The connections ``oxy serve`` holds: how many, and how long each may take to ask.

Before a request's headers are complete, the app (and its token check) has not seen it:
a client that opens sockets and then says nothing, or sends its headers a byte at a time,
holds the server's connections at no cost to itself. So, under uvicorn, its HTTP/1.1
protocol (h11's) with:

* a cap on the connections open at once, in all and per client address: one past it is
  answered 503 JSON and closed at once, before it can send anything;
* a deadline on each request's line and headers, counted from the connection (or the end
  of the previous response on a kept-alive one): a connection that said nothing by then
  is closed, one half-way through its headers is answered 408 JSON and closed. The body
  has its own deadline (``guard``), and an idle kept-alive connection uvicorn's;
* a request that is not HTTP answered 400 in JSON, as every refusal of this server.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .defaults import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_CLIENT_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS,
)
from .errors import BAD_USER_INPUT, SERVER_BUSY, error_body

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_MAX_CLIENT_CONNECTIONS",
    "DEFAULT_MAX_CONNECTIONS",
    "ConnectionLimits",
    "limited_protocol",
]


class ConnectionLimits:
    """The connections of one server, counted per client address."""

    def __init__(
        self,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_per_client: int = DEFAULT_MAX_CLIENT_CONNECTIONS,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    ) -> None:
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self.header_timeout = header_timeout
        self.open: Counter[str] = Counter()
        self.total = 0

    def admit(self, client: str) -> str | None:
        """Count a new connection in; why it is refused instead (None: it is not)."""
        if self.open[client] >= self.max_per_client:
            return (
                f"this client has {self.max_per_client} connections open, the most one client "
                "may; close some, or reuse them (keep-alive)"
            )
        if self.total >= self.max_connections:
            return (
                f"the server has {self.max_connections} connections open, the most it takes; "
                "try again in a moment"
            )
        self.open[client] += 1
        self.total += 1
        return None

    def release(self, client: str) -> None:
        self.total -= 1
        self.open[client] -= 1
        if self.open[client] <= 0:
            del self.open[client]


#: Seconds a refused connection is read (and dropped) before it is closed.
_LINGER_S = 1.0


def _raw_response(status: int, reason: str, body: dict[str, Any]) -> bytes:
    """A whole HTTP/1.1 response, written past h11: no request may have been read yet."""
    payload = json.dumps(body).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + payload


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol under :class:`ConnectionLimits` (see the module's docstring).
    :func:`limited_protocol` makes the subclass that carries one server's limits."""

    limits: ConnectionLimits

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._peer = self.client[0] if self.client else ""
        self._timer: asyncio.TimerHandle | None = None
        self._seen_cycle: Any = None
        self._asked = False  # a byte of the next request has arrived
        self._refused = False
        refusal = self.limits.admit(self._peer)
        self._admitted = refusal is None
        if refusal is not None:
            self._refuse(
                _raw_response(503, "Service Unavailable", error_body(refusal, SERVER_BUSY))
            )
            return
        self._await_request()

    def _refuse(self, response: bytes) -> None:
        """Answer and end the connection without reading a request. Its end is a FIN, not a
        close: a socket closed with unread bytes is reset, and the client would lose the
        answer; what it still sends is read and dropped, for a second at most."""
        self._refused = True
        self._stop_timer()
        self.transport.write(response)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(_LINGER_S, self.transport.close)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        if getattr(self, "_admitted", False):
            self._admitted = False
            self.limits.release(self._peer)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._timer is not None:
            self._asked = True
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and self.cycle is not self._seen_cycle:
            self._seen_cycle = self.cycle  # a request's headers are in: the app has it
            self._stop_timer()

    def on_response_complete(self) -> None:
        answered = self._seen_cycle
        super().on_response_complete()  # may start a pipelined request at once
        if not self.transport.is_closing() and self._seen_cycle is answered:
            self._await_request()

    def send_400_response(self, msg: str) -> None:
        # uvicorn's answer in plain text; every refusal of this server is JSON
        body = error_body("the request is not valid HTTP/1.1", BAD_USER_INPUT)
        self._refuse(_raw_response(400, "Bad Request", body))

    def _await_request(self) -> None:
        self._stop_timer()
        self._asked = False
        self._timer = self.loop.call_later(self.limits.header_timeout, self._headers_late)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _headers_late(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if not self._asked:
            self.transport.close()  # it said nothing: there is nobody to answer
            return
        message = f"the request's headers did not arrive within {self.limits.header_timeout:g} s"
        self._refuse(_raw_response(408, "Request Timeout", error_body(message, BAD_USER_INPUT)))


def limited_protocol(limits: ConnectionLimits) -> type[LimitedH11Protocol]:
    """The protocol class for ``uvicorn.Config(http=...)`` holding ``limits``."""
    return type("LimitedH11Protocol", (LimitedH11Protocol,), {"limits": limits})
