"""PostgreSQL servers that stop answering, on 127.0.0.1, for the history's deadline tests.

:class:`SilentPostgres` speaks just enough of the protocol: it answers SSL/GSS requests
with "no", completes the startup handshake (AuthenticationOk, ParameterStatus,
BackendKeyData, ReadyForQuery) and then reads every query and answers none, which is
what pgbouncer does in front of a dead database. With ``handshake=False`` it reads the
startup packet and never answers it. It records what it was sent, so a test can tell
which phase the client reached.

:class:`FreezingProxy` forwards to a real server until the client sends a given piece of
SQL (``pg_advisory_xact_lock``, ``COMMIT``...), then forwards nothing more either way: a
server that stops answering at exactly that round trip.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from types import TracebackType

__all__ = ["FreezingProxy", "SilentPostgres"]

_SSL_REQUEST, _GSS_REQUEST, _CANCEL_REQUEST = 80877103, 80877104, 80877102


class _Listener:
    """A TCP server on 127.0.0.1 handling each connection in a daemon thread."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port: int = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> _Listener:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(timeout=5)
        with self._lock:
            for held in self._held:
                with contextlib.suppress(OSError):
                    held.close()

    def _accept(self) -> None:
        self._sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            with self._lock:
                self._held.append(conn)
            threading.Thread(target=self._serve_quietly, args=(conn,), daemon=True).start()

    def _serve_quietly(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError, struct.error):
            self.serve(conn)

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError


def _read_exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def _message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!I", len(body) + 4) + body


class SilentPostgres(_Listener):
    """Completes the startup handshake (or, ``handshake=False``, never answers it), then
    never answers a query. ``queries``: the messages received after ReadyForQuery (their
    type bytes); ``cancels``: cancel requests received (psycopg's, on Ctrl-C)."""

    def __init__(self, *, handshake: bool = True) -> None:
        super().__init__()
        self.handshake = handshake
        self.startups = 0
        self.cancels = 0
        self.queries: list[bytes] = []
        self.query_seen = threading.Event()

    def url(self, user: str = "oxy", db: str = "db") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{db}?sslmode=disable"

    def serve(self, conn: socket.socket) -> None:
        while True:  # SSLRequest / GSSENCRequest first, answered "no", then the startup
            (length,) = struct.unpack("!I", _read_exactly(conn, 4))
            body = _read_exactly(conn, length - 4)
            (code,) = struct.unpack("!I", body[:4])
            if code in (_SSL_REQUEST, _GSS_REQUEST):
                conn.sendall(b"N")
                continue
            break
        if code == _CANCEL_REQUEST:
            self.cancels += 1
            return  # and hold the connection open: a server too busy to act on it
        self.startups += 1
        if not self.handshake:
            while conn.recv(65536):
                pass
            return
        reply = _message(b"R", struct.pack("!I", 0))  # AuthenticationOk
        for name, value in (
            (b"server_version", b"16.0"),
            (b"server_encoding", b"UTF8"),
            (b"client_encoding", b"UTF8"),
            (b"integer_datetimes", b"on"),
            (b"standard_conforming_strings", b"on"),
            (b"DateStyle", b"ISO, MDY"),
        ):
            reply += _message(b"S", name + b"\0" + value + b"\0")
        reply += _message(b"K", struct.pack("!II", 1234, 5678))
        reply += _message(b"Z", b"I")  # ReadyForQuery, idle
        conn.sendall(reply)
        while True:
            data = conn.recv(65536)
            if not data:
                return
            self.queries.append(data[:1])
            self.query_seen.set()


class FreezingProxy(_Listener):
    """Forwards to ``127.0.0.1:port`` until a client sends ``trigger`` (bytes of SQL),
    then forwards nothing more, either way, on that connection; ``frozen`` is set then."""

    def __init__(self, port: int, trigger: bytes) -> None:
        super().__init__()
        self.target = port
        self.trigger = trigger
        self.frozen = threading.Event()

    def url(self, url: str) -> str:
        """``url`` (of the real server) with this proxy's port instead."""
        return url.replace(f":{self.target}/", f":{self.port}/")

    def serve(self, conn: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.target))
        with self._lock:
            self._held.append(upstream)
        stuck = threading.Event()
        back = threading.Thread(target=self._pump, args=(upstream, conn, stuck), daemon=True)
        back.start()
        seen = b""
        while True:
            data = conn.recv(65536)
            if not data:
                upstream.close()
                return
            seen = (seen + data)[-(len(self.trigger) + 65536) :]
            if not stuck.is_set() and self.trigger in seen:
                stuck.set()
                self.frozen.set()
            if not stuck.is_set():
                upstream.sendall(data)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, stuck: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while True:
                data = src.recv(65536)
                if not data:
                    return
                if not stuck.is_set():
                    dst.sendall(data)
