"""The SQL worker: a process that runs one database's DuckDB, and nothing else.

Why a process: a thread cannot be stopped, so a query that never ends kept the
command alive after SIGTERM; DuckDB resolves relative file names against the
process's working directory, which in ``oxy run`` is the user's; and a kernel
sandbox (Landlock) can only bind a whole process. Here the working directory is the
dataset folder (or a private empty one), the environment holds no secrets, the kernel
refuses writes outside the folders the database may write and any TCP connection,
and the parent can kill the process at a deadline.

Started as ``python -m oxyeval.workflow._sqlworker``. It speaks length-prefixed
pickles on stdin/stdout (see ``_sqlclient``): a setup message, then queries, each run
on its own cursor in its own thread, so concurrent tasks do not wait for each other.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import decimal
import os
import pickle
import struct
import sys
import threading
import uuid
from typing import Any, BinaryIO

__all__ = ["SAFE_CLASSES", "main", "read_frame", "write_frame"]

_HEADER = struct.Struct(">I")
MAX_FRAME = 1 << 30

#: The only classes a result may hold (the parent's unpickler allows nothing else).
SAFE_CLASSES = {
    ("datetime", "datetime"),
    ("datetime", "date"),
    ("datetime", "time"),
    ("datetime", "timedelta"),
    ("datetime", "timezone"),
    ("decimal", "Decimal"),
    ("uuid", "UUID"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "bytearray"),
}
_PLAIN = (str, int, float, bool, bytes, decimal.Decimal, uuid.UUID, _dt.date, _dt.timedelta)


def read_frame(stream: BinaryIO) -> bytes | None:
    """One message, or None at the end of the stream."""
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > MAX_FRAME:
        raise ValueError(f"a message of {size} bytes")
    return _read_exactly(stream, size)


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    parts: list[bytes] = []
    left = size
    while left > 0:
        part = stream.read(left)
        if not part:
            return None
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def write_frame(stream: BinaryIO, body: bytes) -> None:
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


# -- values -----------------------------------------------------------------------------


_MAX_DEPTH = 100  # lists, structs and maps inside each other in one value


class _OverBudget(Exception):
    """The rows so far hold more characters than a result may."""


class _Budget:
    """Characters a result may still hand over, spent as its values are converted: the
    size counted is the size sent, however deep a value nests."""

    __slots__ = ("left",)

    def __init__(self, chars: int) -> None:
        self.left = chars

    def spend(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise _OverBudget


def _portable(value: Any, budget: _Budget, depth: int = 0) -> Any:
    """``value`` made of :data:`SAFE_CLASSES` and plain containers only (a TIMESTAMPTZ's
    zone becomes its fixed offset, anything unexpected its text), its size spent from
    ``budget`` as it goes."""
    if value is None or isinstance(value, _PLAIN):
        budget.spend(len(value) + 8 if isinstance(value, (str, bytes)) else 8)
        zone = getattr(value, "tzinfo", None)
        if zone is not None and not isinstance(zone, _dt.timezone):
            if isinstance(value, _dt.datetime):
                offset = value.utcoffset() or _dt.timedelta(0)
                return value.replace(tzinfo=_dt.timezone(offset))
            return value.replace(tzinfo=None)
        return value
    budget.spend(8)
    if depth >= _MAX_DEPTH:
        raise _TooDeep
    if isinstance(value, (list, tuple)):
        return [_portable(v, budget, depth + 1) for v in value]
    if isinstance(value, dict):
        return {
            _portable(k, budget, depth + 1): _portable(v, budget, depth + 1)
            for k, v in value.items()
        }
    text = str(value)
    budget.spend(len(text))
    return text


# -- the worker -------------------------------------------------------------------------


class _Worker:
    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.write_lock = threading.Lock()
        self.cursors: dict[int, Any] = {}
        self.lock = threading.Lock()
        self.conn: Any = None
        self.setup: dict[str, Any] = {}

    def send(self, message: tuple[Any, ...]) -> None:
        body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        with self.write_lock:
            write_frame(self.out, body)

    def start(self, setup: dict[str, Any]) -> None:
        from ._landlock import restrict

        self.setup = setup
        _bound_memory(setup.get("address_space"))
        abi = restrict(setup["writable_dirs"])
        import duckdb

        from ._sqlsetup import connect

        os.chdir(setup["cwd"])  # relative names in SQL mean the dataset's files
        try:
            self.conn = connect(setup)
        except duckdb.Error as exc:
            self.send(("failed", _message(exc)))
            return
        self.send(("ready", abi))

    def query(self, qid: int, sql: str, params: list[Any], options: dict[str, Any]) -> None:
        import duckdb

        from ._sqlsetup import explain_error
        from ._sqlsyntax import Refused, statement_kind

        try:
            kind = statement_kind(sql)
        except Refused as exc:
            self.send(("error", qid, "refused", exc.worded(bool(options.get("select_only")))))
            return
        problem = permitted(kind, options)
        if problem:
            self.send(("error", qid, "refused", problem))
            return
        cursor = self.conn.cursor()
        with self.lock:
            self.cursors[qid] = cursor
        timed_out = threading.Event()

        def expire() -> None:
            timed_out.set()
            cursor.interrupt()

        timer = threading.Timer(options["timeout"], expire)
        timer.daemon = True
        timer.start()
        try:
            result = cursor.execute(sql, params or None)
            columns = [d[0] for d in result.description or []]
            rows, truncated = self._fetch(result, options) if columns else ([], False)
        except duckdb.InterruptException:
            if timed_out.is_set():
                self.send(("error", qid, "timeout", f"the query ran past {options['timeout']:g} s"))
            else:
                self.send(("error", qid, "cancelled", "the query was cancelled"))
            return
        except duckdb.Error as exc:
            self.send(("error", qid, "duckdb", explain_error(exc, self.setup)))
            return
        except MemoryError as exc:
            mine = isinstance(exc, (_TooLarge, _TooDeep))
            text = str(exc) if mine else "the result did not fit in the worker's memory"
            self.send(("error", qid, "too_large", text))
            return
        finally:
            timer.cancel()
            with self.lock:
                self.cursors.pop(qid, None)
            with contextlib.suppress(duckdb.Error):
                cursor.close()
        self.send(("rows", qid, columns, rows, truncated))

    @staticmethod
    def _fetch(result: Any, options: dict[str, Any]) -> tuple[list[Any], bool]:
        """Rows up to the caps: ``max_rows`` rows and ``max_chars`` characters."""
        wanted = options["max_rows"]
        budget = _Budget(options["max_chars"])
        rows: list[Any] = []
        while len(rows) <= wanted:
            chunk = result.fetchmany(min(2048, wanted + 1 - len(rows)))
            if not chunk:
                return rows, False
            for row in chunk:
                try:
                    rows.append(_portable(list(row), budget))
                except _OverBudget:
                    if not rows:
                        raise _TooLarge(options["max_chars"]) from None
                    return rows, True
        return rows[:wanted], True

    def cancel(self, qid: int) -> None:
        with self.lock:
            cursor = self.cursors.get(qid)
        if cursor is not None:
            cursor.interrupt()


class _TooLarge(MemoryError):
    def __init__(self, budget: int) -> None:
        super().__init__(f"one row is larger than {budget:,} characters")


class _TooDeep(MemoryError):
    def __init__(self) -> None:
        super().__init__(f"a value nests lists, structs or maps more than {_MAX_DEPTH} deep")


def _bound_memory(limit: int | None) -> None:
    """The kernel's cap on the worker's address space: DuckDB's memory_limit covers its
    buffer manager only (list functions, the parser and the Python objects of a result
    allocate outside it), so without this one query could take the machine's memory.
    Past the cap an allocation fails inside DuckDB, as one failed query."""
    if not limit:
        return
    try:
        import resource
    except ImportError:  # not on this platform: DuckDB's own limit is what is left
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft == resource.RLIM_INFINITY or soft > limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def permitted(kind: str, options: dict[str, Any]) -> str:
    """Why a statement of ``kind`` may not run with these options ('' when it may)."""
    from ._sqlsyntax import READ_KINDS, WRITE_KINDS

    if options.get("select_only") and kind != "SELECT":
        return f"only one read-only SELECT statement is allowed here (got {kind})"
    if kind in ("LOAD", "EXTENSION", "UPDATE_EXTENSIONS"):
        return (
            "installing or loading DuckDB extensions is not allowed "
            "(only the built-in ones are available: parquet, json, icu)"
        )
    if kind in ("SET", "VARIABLE_SET"):
        return "SET/USE/RESET statements are not allowed (the sandbox's configuration is locked)"
    if kind in WRITE_KINDS and not options.get("writable"):
        return (
            f"is read-only: {kind} statements need 'read_only: false' on the database in "
            "config.yml (writes then stay inside its dataset folder)"
        )
    if kind not in READ_KINDS and kind not in WRITE_KINDS:
        return f"{kind} statements are not allowed here"
    return ""


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return f"{type(exc).__name__}: {first}"


def main() -> None:
    """Serve until stdin closes (the parent is done, or gone)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a query stops
    stdin = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb")
    # Anything else that writes to stdout (a library's print) must not corrupt the frames.
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    worker = _Worker(out)
    try:
        first = read_frame(stdin)
        if first is None:
            return
        worker.start(pickle.loads(first)[1])
        if worker.conn is None:
            return
        while True:
            body = read_frame(stdin)
            if body is None:
                break
            message = pickle.loads(body)
            if message[0] == "query":
                _, qid, sql, params, options = message
                thread = threading.Thread(
                    target=_guarded, args=(worker, qid, sql, params, options), daemon=True
                )
                thread.start()
            elif message[0] == "cancel":
                worker.cancel(message[1])
    except BaseException as exc:  # never a silent death: the parent reports this line
        with contextlib.suppress(Exception):
            worker.send(("fatal", _message(exc)))
    finally:
        sys.stdout.flush()
        _empty(worker.setup.get("private"))
        os._exit(0)  # queries still running end with the process; nothing waits for them


def _empty(private: str | None) -> None:
    """Remove the spill files and folders of the private folder (the parent removes the
    folder itself, which the kernel sandbox keeps this process from doing): when the
    parent was killed, nobody else would, and spill files can be gigabytes."""
    if not private:
        return
    import shutil

    for name in ("spill", "extensions", "cwd"):
        shutil.rmtree(os.path.join(private, name), ignore_errors=True)


def _guarded(worker: _Worker, qid: int, sql: str, params: list[Any], opts: dict) -> None:
    try:
        worker.query(qid, sql, params, opts)
    except BaseException as exc:
        worker.send(("error", qid, "worker", _message(exc)))


if __name__ == "__main__":
    main()
