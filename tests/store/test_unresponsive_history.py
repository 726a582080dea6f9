"""A PostgreSQL history that stops answering never hangs a command.

A stopped server (every postgres process under SIGSTOP: its kernel still acknowledges
what we send, so nothing on the network side ever fails) or a port that accepts and
never answers used to hold ``oxy test`` past 100 s, through SIGTERM, with no JSON.
Now the connection has a connect timeout, every statement a deadline (the server's
statement_timeout, and a client-side cut a second later), and a command asked to stop
gives its history a couple of seconds only. These run real ``oxy`` processes with
short timeouts from config.yml.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from oxyeval.store import hurry_history
from oxyeval.store._watchdog import _WATCHDOG, _Tripped

from ..pgcluster import PASSWORD, PgCluster, PgUnavailable
from .test_silent_history import _finish as finish_timed

AGENT = (
    "model: agent_model\nsystem_instructions: hi\ntests:\n"
    "  - {type: consistency, n: 2, task_description: q, model_ref: judge}\n"
)


def _config(url: str, latency_ms: int) -> str:
    return (
        "models:\n"
        f"  - {{name: agent_model, vendor: mock, outputs: [same], latency_ms: {latency_ms}}}\n"
        "  - {name: judge, vendor: mock, outputs: ['Answer: A']}\n"
        f"history:\n  url: {url}\n  password_var: HIST_PW\n"
        "  connect_timeout: 1\n  statement_timeout: 1\n"
    )


def _project(root: Path, url: str, latency_ms: int = 0) -> Path:
    (root / "config.yml").write_text(_config(url, latency_ms), encoding="utf-8")
    (root / "a.agent.yml").write_text(AGENT, encoding="utf-8")
    return root


def _start(root: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "OXY_DB"}
    return subprocess.Popen(
        [sys.executable, "-m", "oxyeval", "test", "a.agent.yml", "--format", "json"],
        cwd=root,
        env={**env, "HIST_PW": PASSWORD},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str], within: float) -> tuple[int, dict, str]:
    """Exit code, JSON document and stderr of a command that must end ``within`` seconds."""
    code, document, err, _took = finish_timed(proc, within)
    return code, document, err


# ----------------------------------------------------------------- the watchdog itself


def test_a_statement_past_its_deadline_has_its_socket_cut() -> None:
    mine, server = socket.socketpair()

    class Raw:  # what the watchdog needs of a psycopg connection
        closed = False

        def fileno(self) -> int:
            return mine.fileno()

    raw, state = Raw(), _Tripped()
    try:
        started = time.monotonic()
        _WATCHDOG.arm(raw, 0.3, state)
        assert mine.recv(1) == b""  # blocked until the watchdog shut the socket down
        assert 0.25 < time.monotonic() - started < 3
        assert state.when is not None  # the engine is tripped: no new connections
    finally:
        mine.close()
        server.close()


def test_a_disarmed_deadline_cuts_nothing_and_hurry_shortens_armed_ones() -> None:
    mine, server = socket.socketpair()

    class Raw:
        closed = False

        def fileno(self) -> int:
            return mine.fileno()

    raw, state = Raw(), _Tripped()
    try:
        _WATCHDOG.arm(raw, 0.2, state)
        _WATCHDOG.disarm(raw)
        time.sleep(0.4)
        server.sendall(b"x")
        assert mine.recv(1) == b"x" and state.when is None
        _WATCHDOG.arm(raw, 60, state)  # a minute, until the command is asked to stop
        threading.Timer(0.2, hurry_history, args=(0.2,)).start()
        started = time.monotonic()
        assert mine.recv(1) == b""
        assert time.monotonic() - started < 3
    finally:
        hurry_history(None)
        mine.close()
        server.close()


# ----------------------------------------------------------------- a port that never answers


class Silent:
    """A TCP server on 127.0.0.1 that accepts connections and never says a word;
    ``connected`` is set once a client has connected (the command is connecting)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connected = threading.Event()


@pytest.fixture
def silent() -> Iterator[Silent]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    server = Silent(listener.getsockname()[1])
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue
            server.connected.set()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_a_port_that_never_answers_costs_the_connect_timeout(
    tmp_path: Path, silent: Silent
) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql://oxy@127.0.0.1:{silent.port}/db?sslmode=disable"
    proc = _start(_project(tmp_path, url))
    code, document, err = _finish(proc, within=20)
    assert code == 0, err  # the history is optional for oxy test: a warning
    assert "cannot be reached" in document["history"][0]["error"]
    assert document["summary"]["results"] == 1 and document["tests"][0]["status"] == "scored"


def test_sigterm_while_connecting_still_reports(tmp_path: Path, silent: Silent) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql://oxy@127.0.0.1:{silent.port}/db?sslmode=disable"
    proc = _start(_project(tmp_path, url, latency_ms=3000))
    # Signalled while it waits on the history, however long the start took on this machine.
    assert silent.connected.wait(30), "the command never connected to the history"
    proc.send_signal(signal.SIGTERM)
    code, document, err = _finish(proc, within=15)
    assert code == 3, err
    assert "interrupted (SIGTERM)" in err
    assert document["summary"]["interrupted"] is True


# ----------------------------------------------------------------- a real server, stopped


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("PostgreSQL tests need psycopg: pip install -e '.[dev]'")
    if os.environ.get("OXY_TEST_POSTGRES", "1") == "0":
        pytest.skip("PostgreSQL tests disabled by OXY_TEST_POSTGRES=0")
    try:
        server = PgCluster().start()  # its own: this test stops it
    except PgUnavailable as exc:
        if os.environ.get("OXY_REQUIRE_POSTGRES") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


def _server_pids(server: PgCluster) -> list[int]:
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(
        ["pgrep", "-P", str(postmaster)], capture_output=True, text=True, check=False
    ).stdout.split()
    return [postmaster, *map(int, children)]


def _signal(pid: int, sig: int) -> None:
    """A backend listed a moment ago may have ended since (the probe connection of
    _wait_for_our_connection closes as we list): nothing to stop then."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _wait_for_our_connection(server: PgCluster, proc: subprocess.Popen[str]) -> None:
    import psycopg

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and proc.poll() is None:
        with psycopg.connect(
            host="127.0.0.1",
            port=server.port,
            user="postgres",
            password="postgres",
            dbname="postgres",
            autocommit=True,
        ) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'oxyeval'"
            ).fetchone()
        if row and row[0]:
            return
        time.sleep(0.05)
    raise AssertionError("oxy test never connected to its history")


@pytest.mark.parametrize("sigterm", [False, True], ids=["waits", "sigterm"])
def test_a_stopped_server_never_hangs_a_run(
    tmp_path: Path, cluster: PgCluster, sigterm: bool
) -> None:
    from oxyeval.store import open_store, resolve_location

    database = cluster.create_database()
    open_store(resolve_location(cluster.url(database), environ={})).close()  # migrated
    url = f"postgresql://oxy@127.0.0.1:{cluster.port}/{database}"
    # Interrupted runs get a slow model: on a loaded machine the history may connect late
    # (importing its driver), and the SIGTERM must still land inside the run, not after it.
    proc = _start(_project(tmp_path, url, latency_ms=10_000 if sigterm else 2500))
    _wait_for_our_connection(cluster, proc)
    pids = _server_pids(cluster)
    for pid in pids:
        _signal(pid, signal.SIGSTOP)
    try:
        if sigterm:
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
        code, document, err = _finish(proc, within=25)
    finally:
        for pid in pids:
            _signal(pid, signal.SIGCONT)
    if sigterm:
        assert code == 3, err
        assert document["summary"]["interrupted"] is True
        assert "interrupted (SIGTERM)" in err
    else:
        assert code == 0, err
        assert document["tests"][0]["status"] == "scored"
        error = document["history"][0]["error"]
        assert "stopped answering" in error or "cannot be reached" in error, error
    assert PASSWORD not in err and PASSWORD not in json.dumps(document)
