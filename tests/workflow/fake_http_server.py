"""A fake HTTP server on 127.0.0.1 for the warehouses no server can be run for here
(ClickHouse, BigQuery, Snowflake): a test's ``answer`` function plays the server from
recorded answers (the shapes the real APIs send, as their documentation records them),
and every request is kept for the test to check what oxyeval sent.

What these tests prove is what oxyeval sends and how it reads the answers; what the real
server enforces (its read-only mode, its timeout) the fake only simulates, and the tests
say so where it matters.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

__all__ = ["FakeServer", "Reply", "Request", "json_reply", "serve"]


@dataclass
class Request:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes

    @property
    def params(self) -> dict[str, str]:
        return dict(self.query)

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


@dataclass
class Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def json_reply(data: Any, status: int = 200) -> Reply:
    return Reply(status, json.dumps(data).encode(), {"Content-Type": "application/json"})


Answer = Callable[[Request], Reply]


class FakeServer:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[Request] = []
        self.cancelled = threading.Event()  # set by a fake when a cancel request arrives
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                parts = urlsplit(self.path)
                request = Request(
                    self.command,
                    parts.path,
                    parse_qsl(parts.query, keep_blank_values=True),
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(size) if size else b"",
                )
                fake.requests.append(request)
                reply = fake.answer(request)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = _serve

            def log_message(self, *_args: Any) -> None:
                return

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client that went away mid-reply (oxyeval cancelling a query past its
                # deadline) is expected here; socketserver would print a traceback into
                # the output under test.
                return

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        self.cancelled.set()  # a request held until a cancel lets go
        self.httpd.shutdown()
        self.httpd.server_close()


def serve(answer: Answer) -> Iterator[FakeServer]:
    """A fixture body: the server, stopped afterwards."""
    server = FakeServer(answer)
    try:
        yield server
    finally:
        server.stop()
