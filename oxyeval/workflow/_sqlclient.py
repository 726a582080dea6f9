"""The parent's side of the SQL worker (``_sqlworker``): start it, send queries, enforce
the deadline, and stop it.

One worker per database configuration in the process, shared by every ``Databases``
that uses it (reference counted): a writable DuckDB file can be open in one process
only, as DuckDB shares one instance per file within a process. Replies come back on a
reader thread and complete ``concurrent.futures`` futures, so any event loop (or
thread) can wait for them, and nothing the process waits for at exit is ever a
thread stuck in DuckDB: the worker is a process, and it is killed when a query runs
past its deadline by more than a grace period.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import itertools
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from ._sqlworker import MAX_FRAME, SAFE_CLASSES, read_frame, write_frame

__all__ = ["SqlWorker", "WorkerError", "acquire", "release", "run_query", "run_query_sync"]

#: How long past its own deadline a query may take before its worker is killed (DuckDB
#: checks for interrupts between steps; one long step must not hold the command).
GRACE_SECONDS = 3.0
_START_SECONDS = 60.0
# What the worker's environment keeps: what Python and the C library need to start and
# print; never the parent's API keys or database passwords.
_ENV_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")


_PREFIX = "oxyeval-sql-"  # then the parent's pid: oxyeval-sql-1234-abcd


def _sweep() -> None:
    """Remove private folders left by processes that were killed (SIGKILL, the OOM
    killer): their workers emptied them on the way out, but could not remove them."""
    root = Path(tempfile.gettempdir())
    try:
        entries = list(root.glob(f"{_PREFIX}*-*"))
    except OSError:
        return
    for folder in entries:
        pid = folder.name[len(_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        try:
            if folder.stat().st_uid == getattr(os, "getuid", lambda: -1)():
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive, and not our folder anyway
        return True
    return True


class WorkerError(Exception):
    """A query the worker did not answer with rows: ``code`` says why (``refused``,
    ``duckdb``, ``timeout``, ``cancelled``, ``too_large``, ``stopped``...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Unpickler(pickle.Unpickler):
    """Replies hold plain data only: the worker runs SQL a model wrote, under a stricter
    sandbox than ours, so its bytes must never be able to name a callable here."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in SAFE_CLASSES:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"the SQL worker sent a {module}.{name}")


def _loads(body: bytes) -> Any:
    return _Unpickler(io.BytesIO(body)).load()


def _import_roots() -> list[str]:
    """Where oxyeval and DuckDB are imported from: the worker runs isolated (no working
    directory, no PYTHONPATH on its path), so it is told exactly these."""
    import duckdb

    roots = [str(Path(__file__).resolve().parents[2])]
    duck = Path(duckdb.__file__).resolve().parent.parent
    if str(duck) not in roots:
        roots.append(str(duck))
    return roots


_BOOT = "import sys; sys.path[:0] = {roots!r}; from oxyeval.workflow._sqlworker import main; main()"


class SqlWorker:
    """One worker process and the queries in flight on it; restarted after a kill."""

    def __init__(self, setup: dict[str, Any]) -> None:
        self.setup = setup
        self.users = 0
        self.abi: int | None = None  # the Landlock ABI it runs under, once started
        self._proc: subprocess.Popen[bytes] | None = None
        self._private: Path | None = None
        self._pending: dict[int, concurrent.futures.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # the process, its pipe and the pending map
        self._killed: str | None = None  # why we killed the current process, if we did

    # -- the process ---------------------------------------------------------------

    def _start(self) -> subprocess.Popen[bytes]:
        """Start the worker and wait for its 'ready' (under ``_lock``)."""
        _sweep()
        private = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-"))
        for sub in ("spill", "extensions", "cwd"):
            (private / sub).mkdir()
        setup = {**self.setup, "private": str(private)}
        writable_dirs = [str(private)]
        if setup["writable"]:
            writable_dirs += [d for d in (setup.get("dataset"), setup.get("path_dir")) if d]
        setup["writable_dirs"] = writable_dirs
        setup["cwd"] = setup.get("dataset") or str(private / "cwd")
        env = {k: os.environ[k] for k in _ENV_KEEP if k in os.environ}
        env["MALLOC_ARENA_MAX"] = "2"  # glibc's per-thread arenas would spend the address space
        boot = _BOOT.format(roots=_import_roots())
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-c", boot],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=private,  # never the user's folder, not even while it imports
                env=env,
                start_new_session=True,  # a terminal's Ctrl-C reaches us; we cancel it
            )
        except OSError as exc:
            shutil.rmtree(private, ignore_errors=True)
            raise WorkerError("stopped", f"cannot start the SQL worker: {exc}") from None
        assert proc.stdin is not None and proc.stdout is not None
        try:
            write_frame(proc.stdin, pickle.dumps(("setup", setup)))
            reply = self._first_reply(proc)
        except BaseException:
            proc.kill()
            proc.wait()
            shutil.rmtree(private, ignore_errors=True)
            raise
        if reply[0] != "ready":
            proc.wait()
            shutil.rmtree(private, ignore_errors=True)
            raise WorkerError("failed", str(reply[1]))
        self.abi = int(reply[1])
        self._proc, self._private = proc, private
        reader = threading.Thread(target=self._read, args=(proc, private), daemon=True)
        reader.start()
        return proc

    @staticmethod
    def _first_reply(proc: subprocess.Popen[bytes]) -> tuple[Any, ...]:
        assert proc.stdout is not None
        box: list[Any] = []
        reader = threading.Thread(target=lambda: box.append(read_frame(proc.stdout)))
        reader.daemon = True
        reader.start()
        reader.join(_START_SECONDS)
        if not box or box[0] is None:
            proc.kill()
            code = proc.wait()
            raise WorkerError("stopped", f"the SQL worker did not start (exit code {code})")
        return tuple(_loads(box[0]))

    def _read(self, proc: subprocess.Popen[bytes], private: Path) -> None:
        """Complete futures as replies arrive; fail the rest when the worker ends."""
        assert proc.stdout is not None
        why = ""
        try:
            while True:
                body = read_frame(proc.stdout)
                if body is None:
                    break
                reply = _loads(body)
                if reply[0] == "fatal":
                    why = str(reply[1])
                    continue
                with self._lock:
                    future = self._pending.pop(reply[1], None)
                if future is None or future.done():
                    continue
                if reply[0] == "rows":
                    future.set_result(reply[2:])
                else:
                    future.set_exception(WorkerError(reply[2], reply[3]))
        except (OSError, ValueError, pickle.UnpicklingError, EOFError) as exc:
            why = why or f"{type(exc).__name__}: {exc}"
        code = proc.wait()
        shutil.rmtree(private, ignore_errors=True)
        with self._lock:
            if self._proc is proc:
                self._proc = None
            pending = list(self._pending.values())
            self._pending.clear()
        killed, self._killed = self._killed, None
        if killed:
            error = WorkerError("killed", killed)
        else:
            reason = why or f"exit code {code}" + (
                " (killed: out of memory?)" if code == -9 else ""
            )
            error = WorkerError("stopped", f"the SQL worker stopped ({reason})")
        for future in pending:
            if not future.done():
                future.set_exception(error)

    # -- queries -------------------------------------------------------------------

    def submit(
        self, sql: str, params: list[Any], options: dict[str, Any]
    ) -> tuple[int, concurrent.futures.Future[Any]]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            proc = self._proc if self._proc is not None else self._start()
            qid = next(self._ids)
            self._pending[qid] = future
            body = pickle.dumps(("query", qid, sql, params, options))
            if len(body) > MAX_FRAME:
                self._pending.pop(qid)
                raise WorkerError("too_large", "the query and its values are over 1 GB")
            try:
                assert proc.stdin is not None
                write_frame(proc.stdin, body)
            except OSError:
                self._pending.pop(qid, None)
                raise WorkerError("stopped", "the SQL worker stopped") from None
        return qid, future

    def cancel(self, qid: int) -> None:
        with self._lock:
            proc = self._proc
            if proc is None or proc.stdin is None:
                return
            with contextlib.suppress(OSError):
                write_frame(proc.stdin, pickle.dumps(("cancel", qid)))

    def kill(self, reason: str = "") -> None:
        """Stop the process now (a query past its grace); the reader fails what is left
        with ``reason`` (what the queries cut short with it are told)."""
        with self._lock:
            proc = self._proc
            if proc is not None and reason:
                self._killed = reason
        if proc is not None:
            proc.kill()

    def close(self) -> None:
        """End the worker: closing its stdin ends its loop, and its queries with it."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()


_workers: dict[tuple[Any, ...], SqlWorker] = {}
_registry = threading.Lock()


def _key(setup: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted((k, str(v)) for k, v in setup.items()))


def acquire(setup: dict[str, Any]) -> SqlWorker:
    """The worker for this configuration, shared; :func:`release` it when done."""
    with _registry:
        worker = _workers.get(_key(setup))
        if worker is None:
            worker = _workers[_key(setup)] = SqlWorker(setup)
        worker.users += 1
        return worker


def release(worker: SqlWorker) -> None:
    with _registry:
        worker.users -= 1
        if worker.users > 0:
            return
        _workers.pop(_key(worker.setup), None)
    worker.close()


async def run_query(
    worker: SqlWorker, sql: str, params: list[Any], options: dict[str, Any]
) -> tuple[Any, ...]:
    """``(columns, rows, truncated)`` of one query, or a :class:`WorkerError`.

    Cancelled (SIGINT, SIGTERM): the worker is told to interrupt the query and this
    returns at once. Past its deadline and the grace: the worker is killed."""
    loop = asyncio.get_running_loop()
    if worker._proc is None:  # starting takes ~0.1 s: not on the event loop
        qid, future = await loop.run_in_executor(None, worker.submit, sql, params, options)
    else:
        qid, future = worker.submit(sql, params, options)
    try:
        return await asyncio.wait_for(
            asyncio.wrap_future(future), options["timeout"] + GRACE_SECONDS
        )
    except asyncio.TimeoutError:
        worker.kill(
            f"another query on this database ran past its {options['timeout']:g} s and did "
            "not stop, so its worker was stopped, cutting this one short"
        )
        raise WorkerError(
            "timeout", f"the query ran past {options['timeout']:g} s and did not stop"
        ) from None
    except asyncio.CancelledError:
        worker.cancel(qid)
        raise


def run_query_sync(
    worker: SqlWorker, sql: str, params: list[Any], options: dict[str, Any]
) -> tuple[Any, ...]:
    """:func:`run_query` for a caller that is not a coroutine (rendering a template,
    which reads a database's description): it waits in this thread; past the deadline
    and the grace, the worker is killed."""
    _, future = worker.submit(sql, params, options)
    try:
        return future.result(options["timeout"] + GRACE_SECONDS)
    except concurrent.futures.TimeoutError:
        worker.kill(
            f"another query on this database ran past its {options['timeout']:g} s and did "
            "not stop, so its worker was stopped, cutting this one short"
        )
        raise WorkerError(
            "timeout", f"the query ran past {options['timeout']:g} s and did not stop"
        ) from None
