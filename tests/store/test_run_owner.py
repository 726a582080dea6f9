"""Stale runs are told from live ones by their owner, not by a pid alone.

A run in another PID namespace on the same host (a container with the host's name) was
marked "interrupted" while it ran, because its pid did not exist here. The rule now:
dead only when the run's host, boot and PID namespace are ours and its pid is gone (or
reused by a later process); otherwise alive, or unknown (never marked until the 24-hour
rule for runs we cannot probe).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from oxyeval.store import Location, open_store, resolve_location
from oxyeval.store._owner import (
    ALIVE,
    DEAD,
    UNKNOWN,
    Owner,
    current_owner,
    process_start,
    run_state,
)
from oxyeval.store._tables import runs

REPO = Path(__file__).resolve().parents[2]
LINUX = sys.platform.startswith("linux")
ME = Owner(host="box", pid=os.getpid(), os="linux", boot="b1", pidns="4:100", start=500)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _owner(**fields: object) -> str:
    data = {"os": "linux", "boot": "b1", "pidns": "4:100", **fields}
    return json.dumps({k: v for k, v in data.items() if v is not None})


def test_a_dead_pid_in_our_own_namespace_is_dead() -> None:
    pid = _dead_pid()
    assert run_state("box", pid, _owner(start=7), ME) == DEAD


def test_a_dead_pid_in_another_pid_namespace_is_unknown() -> None:
    pid = _dead_pid()
    assert run_state("box", pid, _owner(pidns="4:999", start=7), ME) == UNKNOWN
    assert run_state("box", pid, _owner(boot="b2", start=7), ME) == UNKNOWN  # rebooted, or twin
    assert run_state("elsewhere", pid, _owner(start=7), ME) == UNKNOWN  # another host


@pytest.mark.skipif(not LINUX, reason="process start times come from /proc")
def test_a_live_pid_is_alive_unless_it_now_belongs_to_a_later_process() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    try:
        start = process_start(child.pid)
        assert start is not None
        me = replace(current_owner(), host="box")
        owner = json.dumps({"os": me.os, "boot": me.boot, "pidns": me.pidns, "start": start})
        assert run_state("box", child.pid, owner, me) == ALIVE
        reused = json.dumps({"os": me.os, "boot": me.boot, "pidns": me.pidns, "start": start - 1})
        assert run_state("box", child.pid, reused, me) == DEAD  # the pid was reused
    finally:
        child.communicate(b"")


def test_our_own_pid_is_alive_with_our_start_time() -> None:
    assert run_state("box", ME.pid, _owner(start=500), ME) == ALIVE
    assert run_state("box", ME.pid, _owner(start=499), ME) == DEAD  # an earlier owner of our pid


def test_rows_from_before_owners_were_recorded() -> None:
    """A live pid is still a live run; a missing one may be in another namespace."""
    assert run_state("box", os.getpid(), None, ME) == ALIVE
    assert run_state("box", _dead_pid(), None, ME) == UNKNOWN
    assert run_state("box", _dead_pid(), "not json", ME) == UNKNOWN


def test_without_a_readable_identity_linux_never_decides_by_pid() -> None:
    blind = replace(ME, boot=None, pidns=None)
    pid = _dead_pid()
    assert run_state("box", pid, json.dumps({"os": "linux", "start": 7}), blind) == UNKNOWN
    mac = replace(blind, os="darwin")  # no PID namespaces at all: the pid decides
    assert run_state("box", pid, json.dumps({"os": "darwin"}), mac) == DEAD
    assert run_state("box", os.getpid(), json.dumps({"os": "darwin"}), mac) == ALIVE


@pytest.mark.skipif(not LINUX, reason="the identity is read from /proc")
def test_this_process_identity_is_read_from_proc() -> None:
    me = current_owner()
    assert me.pid == os.getpid() and me.namespaced
    assert me.start == process_start(os.getpid())
    assert Owner.parse(me.host, me.pid, me.text()) == me


def test_mark_stale_keeps_a_run_of_another_namespace_until_the_24_hour_rule(
    tmp_path: Path,
) -> None:
    location = resolve_location(str(tmp_path / "h.db"), environ={})
    with open_store(location) as store:
        young = store.runs.start("consistency")
        old = store.runs.start("consistency", started_at="2020-01-01T00:00:00Z")
        gone = store.runs.start("consistency")
        me = current_owner()
        other_ns = _owner(boot=me.boot or "b", pidns="1:1", start=1)
        with store.write("test") as conn:
            conn.execute(
                runs.update()
                .where(runs.c.id.in_([young, old]))
                .values(pid=_dead_pid(), owner=other_ns)
            )
            conn.execute(runs.update().where(runs.c.id == gone).values(pid=_dead_pid()))
        expected = [old, gone] if me.namespaced or not LINUX else [old]
        assert sorted(store.runs.mark_stale()) == sorted(expected)
        assert store.runs.get(young).status == "running"  # type: ignore[union-attr]
        store.runs.finish(young)


def test_both_writers_record_the_owner(tmp_path: Path) -> None:
    from oxyeval.store import open_results

    location = resolve_location(str(tmp_path / "h.db"), environ={})
    with open_store(location) as store:
        full = store.runs.start("consistency")
    lean = open_results(location)
    assert lean is not None
    with lean:
        quick = lean.runs.start("consistency")
    with open_store(location, read_only=True) as reader, reader.read("test") as conn:
        rows = dict(conn.execute(runs.select().with_only_columns(runs.c.id, runs.c.owner)).all())
    for run in (full, quick):
        assert Owner.parse("h", 1, rows[run]) is not None


CHILD = """
import sys
sys.path.insert(0, {repo!r})
from oxyeval.store import open_store
store = open_store(sys.argv[1])
run = store.runs.start("consistency", subject="in a container")
print(run, flush=True)
sys.stdin.read()
store.runs.finish(run)
store.close()
"""


def _unshare_works() -> bool:
    if not LINUX or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, check=False
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="needs unshare --pid (root, Linux)")
def test_a_live_run_in_another_pid_namespace_is_never_marked_interrupted(
    tmp_path: Path,
) -> None:
    location: Location = resolve_location(str(tmp_path / "h.db"), environ={})
    open_store(location).close()
    # Give the child a pid that does not exist out here, as in a real container.
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    free = next(p for p in range(pid_max - 50, 300, -1) if not Path(f"/proc/{p}").exists())
    script = CHILD.format(repo=str(REPO))
    inner = f'echo {free - 1} > /proc/sys/kernel/ns_last_pid; {sys.executable} -c "$0" "$1"'
    child = subprocess.Popen(
        [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            "sh",
            "-c",
            inner,
            script,
            str(tmp_path / "h.db"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        run = child.stdout.readline().strip()
        assert run, "the child never started its run"
        with open_store(location) as store:
            recorded = store.runs.get(run)
            assert recorded is not None and not Path(f"/proc/{recorded.pid}").exists()
            assert store.runs.find_stale() == [] and store.runs.mark_stale() == []
            assert store.runs.get(run).status == "running"  # type: ignore[union-attr]
    finally:
        child.communicate("")
    assert child.returncode == 0
    with open_store(location, read_only=True) as store:
        assert store.runs.get(run).status == "completed"  # type: ignore[union-attr]
