"""A history server that completes the handshake and then never answers.

What pgbouncer does in front of a dead database: it answers the startup itself, then
queues every query. The first round's deadline armed only on SQLAlchemy's cursor
events, which the dialect's first queries on a new connection do not fire, so ``oxy
test`` hung forever, through SIGTERM, with no JSON. Now every round trip of a history
connection is under a deadline (from the end of the handshake until the pool hands the
connection out, each statement, commit and rollback), the handshake gives up once the
command is asked to stop, and psycopg's cancel on Ctrl-C/SIGTERM cuts the socket instead
of waiting for a server that does not answer. Real ``oxy`` processes, short timeouts.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from oxyeval.store import StoreError, open_store, resolve_location

from ..pgcluster import PgCluster
from .pgfake import FreezingProxy, SilentPostgres

pytest.importorskip("psycopg")

AGENT = (
    "model: agent_model\nsystem_instructions: hi\ntests:\n"
    "  - {type: consistency, n: 2, task_description: q, model_ref: judge}\n"
)

WORKFLOW = (
    "tasks:\n  - {name: say, type: agent, agent_ref: a.agent.yml, prompt: q, "
    "consistency_run: 2, judge_model: judge}\n"
)
PROMPT = (
    "name: greet\nmodel: agent_model\ntemplate: 'Say {{ word }}'\nsimilarity: lexical\n"
    "cases:\n  - {name: one, input: {word: a}, expected_output: same}\n"
)


def _project(root: Path, url: str | None, *, connect: float = 1, statement: float = 1) -> Path:
    history = (
        f"history:\n  url: {url}\n  connect_timeout: {connect}\n  statement_timeout: {statement}\n"
        if url
        else ""
    )
    (root / "config.yml").write_text(
        "models:\n"
        "  - {name: agent_model, vendor: mock, outputs: [same]}\n"
        "  - {name: judge, vendor: mock, outputs: ['Answer: A']}\n" + history,
        encoding="utf-8",
    )
    (root / "a.agent.yml").write_text(AGENT, encoding="utf-8")
    (root / "w.workflow.yml").write_text(WORKFLOW, encoding="utf-8")
    (root / "g.prompt.yml").write_text(PROMPT, encoding="utf-8")
    return root


def _start(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "OXY_DB"}
    return subprocess.Popen(
        [sys.executable, "-m", "oxyeval", *args, "--format", "json"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str], within: float) -> tuple[int, dict, str, float]:
    """Exit code, JSON document, stderr, and seconds it took from now."""
    started = time.monotonic()
    try:
        out, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"still running after {within} s; stderr:\n{err}") from None
    assert "Traceback" not in err, err
    return proc.returncode, json.loads(out), err, time.monotonic() - started


def _when(condition: Callable[[], bool], proc: subprocess.Popen[str], within: float = 20) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the command never reached the server"
        time.sleep(0.02)


@pytest.fixture
def silent() -> Iterator[SilentPostgres]:
    with SilentPostgres() as server:
        yield server


# ----------------------------------------------------------------- oxy test, real processes


def test_a_server_silent_after_the_handshake_costs_the_deadline_then_a_warning(
    tmp_path: Path, silent: SilentPostgres
) -> None:
    proc = _start(_project(tmp_path, silent.url()), "test", "a.agent.yml")
    code, document, err, took = _finish(proc, within=30)
    assert code == 0, err  # the history is optional for oxy test: a warning, the run goes on
    assert document["tests"][0]["status"] == "scored"
    error = document["history"][0]["error"]
    assert "stopped answering" in error and "no reply within" in error, error
    assert "warning: history not stored" in err
    assert silent.queries, "the handshake completed and a first query was sent"
    assert took < 15  # connect 1 s + statement 1 s (+1): not forever


def test_sigterm_after_the_handshake_reports_promptly(
    tmp_path: Path, silent: SilentPostgres
) -> None:
    # A statement timeout of a minute: only the stop request can end the wait this soon.
    proc = _start(_project(tmp_path, silent.url(), statement=60), "test", "a.agent.yml")
    _when(silent.query_seen.is_set, proc)
    proc.send_signal(signal.SIGTERM)
    code, document, err, took = _finish(proc, within=20)
    assert code == 3, err
    assert "interrupted (SIGTERM)" in err
    assert document["summary"]["interrupted"] is True
    assert "stopped answering" in (document["history"][0]["error"] or ""), document["history"]
    assert took < 8, took  # HURRY_GRACE (2 s) after the signal, not the minute


@pytest.mark.parametrize("command", [["run", "w.workflow.yml"], ["cases", "run", "g.prompt.yml"]])
def test_sigterm_after_the_handshake_reports_promptly_in_every_command(
    tmp_path: Path, silent: SilentPostgres, command: list[str]
) -> None:
    proc = _start(_project(tmp_path, silent.url(), statement=60), *command)
    _when(silent.query_seen.is_set, proc)
    proc.send_signal(signal.SIGTERM)
    code, document, err, took = _finish(proc, within=20)
    assert code == 3, err
    assert "interrupted (SIGTERM)" in err and "interrupted" in json.dumps(document)
    assert took < 8, took


def test_sigterm_during_the_handshake_reports_promptly(tmp_path: Path) -> None:
    with SilentPostgres(handshake=False) as server:
        proc = _start(_project(tmp_path, server.url(), connect=60), "test", "a.agent.yml")
        _when(lambda: server.startups > 0, proc)
        proc.send_signal(signal.SIGTERM)
        code, document, err, took = _finish(proc, within=20)
    assert code == 3, err
    assert document["summary"]["interrupted"] is True
    assert "gave up connecting" in (document["history"][0]["error"] or ""), document["history"]
    assert took < 8, took  # not the minute of connect_timeout


def test_sigterm_in_a_command_without_an_event_loop_does_not_wait_for_a_cancel(
    tmp_path: Path, silent: SilentPostgres
) -> None:
    # oxy history reads in the main thread: the signal lands inside psycopg's wait, which
    # used to send a cancel request and wait 5 + 5 s for a server that does not answer.
    proc = _start(_project(tmp_path, silent.url(), statement=60), "history")
    _when(silent.query_seen.is_set, proc)
    proc.send_signal(signal.SIGTERM)
    code, document, err, took = _finish(proc, within=20)
    assert code == 3, err
    assert "interrupted (SIGTERM)" in document["error"]
    assert took < 3, took
    time.sleep(0.2)  # a cancel request would have arrived by now
    assert silent.cancels == 0


def test_sigterm_while_another_process_holds_the_sqlite_write_lock(tmp_path: Path) -> None:
    root = _project(tmp_path, None)
    open_store(root / ".oxy" / "oxyeval.db").close()  # a history at the current schema
    holder = sqlite3.connect(root / ".oxy" / "oxyeval.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # held for longer than the 10 s busy timeout
        proc = _start(root, "test", "a.agent.yml")
        time.sleep(1.5)  # started, waiting for the lock
        proc.send_signal(signal.SIGTERM)
        code, document, err, took = _finish(proc, within=30)
    finally:
        holder.close()
    assert code == 3, err
    assert document["summary"]["interrupted"] is True
    assert "locked by another process" in (document["history"][0]["error"] or ""), err
    assert took < 6, took  # it waited 10 s at each write (about 19 s in all)


# ----------------------------------------------------------------- every phase of opening


@pytest.fixture
def frozen_at(pg_cluster: PgCluster | None) -> Iterator[Callable[[bytes], BaseException | None]]:
    """Open a store on a new database through a proxy that goes silent when the client
    sends the given SQL; returns what opening raised (None: it opened)."""
    if pg_cluster is None:
        pytest.skip("needs the PostgreSQL test cluster")
    made: list[str] = []
    cluster = pg_cluster

    def attempt(trigger: bytes) -> BaseException | None:
        made.append(cluster.create_database())
        with FreezingProxy(cluster.port, trigger) as proxy:
            where = resolve_location(proxy.url(cluster.url(made[-1])), environ={})
            where = replace(where, connect_timeout=1, statement_timeout=0.5)
            started = time.monotonic()
            try:
                open_store(where).close()
            except StoreError as exc:
                assert proxy.frozen.is_set(), trigger
                exc.add_note(f"after {time.monotonic() - started:.1f} s")
                return exc
            return None

    yield attempt
    for name in made:
        cluster.drop_database(name)


TRIGGERS = [
    b"pg_catalog.version()",  # the dialect's first queries (no cursor event)
    b"pg_advisory_xact_lock",  # the migration lock
    b"CREATE TABLE",  # the schema itself
    b"COMMIT",  # the migration's commit
]


def test_a_server_that_stops_answering_at_any_step_of_opening_fails_within_the_deadline(
    frozen_at: Callable[[bytes], BaseException | None],
) -> None:
    started = time.monotonic()
    with ThreadPoolExecutor(len(TRIGGERS)) as pool:  # at once: one deadline in all
        outcomes = dict(zip(TRIGGERS, pool.map(frozen_at, TRIGGERS), strict=True))
    for trigger, outcome in outcomes.items():
        assert outcome is not None, f"{trigger!r}: opened through a frozen server?"
        assert "stopped answering" in str(outcome), (trigger, str(outcome))
    assert time.monotonic() - started < 10  # each: 0.5 s + 1 s, not forever


def test_the_late_connection_of_an_abandoned_handshake_is_closed() -> None:
    """Given up while psycopg still connects, the helper thread closes what it gets."""
    from oxyeval.store._watchdog import _connect_unless_stopping, _Tripped, hurry_history

    closed = threading.Event()
    release = threading.Event()

    class Late:
        def close(self) -> None:
            closed.set()

    def connect() -> Late:
        release.wait(5)
        return Late()

    hurry_history(0.2)
    try:
        state = _Tripped()
        with pytest.raises(Exception, match="gave up connecting"):
            _connect_unless_stopping(connect, state)
        assert state.when is not None  # the engine is tripped: no new connections
    finally:
        hurry_history(None)
        release.set()
    assert closed.wait(5)
