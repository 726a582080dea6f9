"""Who owns a run, recorded so that another process can tell a live run from a dead one.

A run is 'running' until its process finishes it; a process that dies leaves it so, and
the next process that looks marks it 'interrupted' when the run is provably dead. A pid
alone proves nothing: a process in another PID namespace on the same host (a container
sharing the host name, ``--uts=host``, a CI job's service container) has pids that mean
nothing here, so a live run there was taken for a dead one. A run row therefore also
carries its owner's identity (``runs.owner``, JSON):

* ``boot``: the kernel's boot id (``/proc/sys/kernel/random/boot_id``), shared by every
  container of one kernel and new at every boot;
* ``pidns``: the PID namespace (device and inode of ``/proc/self/ns/pid``);
* ``start``: the process's start time in clock ticks since boot (``/proc/<pid>/stat``),
  which tells the process from a later one that reuses its pid.

A run is **dead** only when the looking process shares its host name, boot and PID
namespace and the pid is gone (or now belongs to a process started at another time).
It is **alive** when that pid still runs that process. Otherwise its state is
**unknown** (another namespace or host, a row written before owners were recorded
whose pid is gone here, an identity that could not be read): it is never marked
interrupted for that, only after :data:`~._runs.FOREIGN_RUN_STALE_AFTER`, as runs of
another host are. Chosen over a heartbeat, which would need a write every few seconds
from every run into a shared database, and would still guess from a clock.

Platforms without PID namespaces (macOS, Windows) have no boot id or namespace here;
there the pid (and its start time, where known) decides, as it always did.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["ALIVE", "DEAD", "UNKNOWN", "Owner", "current_owner", "process_start", "run_state"]

ALIVE, DEAD, UNKNOWN = "alive", "dead", "unknown"


@dataclass(frozen=True)
class Owner:
    """The identity of a process, as a run row records it."""

    host: str
    pid: int
    os: str = sys.platform
    boot: str | None = None
    pidns: str | None = None
    start: int | None = None

    def text(self) -> str:
        """What ``runs.owner`` holds (the host and pid have their own columns)."""
        fields = {"os": self.os, "boot": self.boot, "pidns": self.pidns, "start": self.start}
        return json.dumps({k: v for k, v in fields.items() if v is not None}, sort_keys=True)

    @classmethod
    def parse(cls, host: str | None, pid: int | None, text: str | None) -> Owner | None:
        """A row's owner; None when it has no readable owner (a row from before owners
        were recorded, or a damaged one)."""
        if not text:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        start = data.get("start")
        return cls(
            host=host or "",
            pid=pid or 0,
            os=str(data.get("os") or ""),
            boot=_str(data.get("boot")),
            pidns=_str(data.get("pidns")),
            start=start if isinstance(start, int) and not isinstance(start, bool) else None,
        )

    @property
    def namespaced(self) -> bool:
        """Whether this identity can tell PID namespaces apart (Linux with /proc)."""
        return self.boot is not None and self.pidns is not None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read(4096).strip() or None
    except OSError:
        return None


def process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (Linux); None when that
    cannot be read (no /proc, the process is gone, /proc hides other users' processes)."""
    text = _read(f"/proc/{pid}/stat")
    if text is None:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses; starttime is
    # field 22 overall, the 20th after the closing parenthesis.
    fields = text.rpartition(")")[2].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _pid_namespace() -> str | None:
    try:
        st = os.stat("/proc/self/ns/pid")
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}"


@functools.lru_cache(maxsize=4)
def _identity(pid: int) -> Owner:
    boot = _read("/proc/sys/kernel/random/boot_id") if sys.platform.startswith("linux") else None
    return Owner(
        host=socket.gethostname(),
        pid=pid,
        boot=boot,
        pidns=_pid_namespace() if boot else None,
        start=process_start(pid),
    )


def current_owner() -> Owner:
    """This process's identity (read once per pid: a forked child reads its own)."""
    return _identity(os.getpid())


def run_state(host: str | None, pid: int | None, owner: str | None, me: Owner) -> str:
    """Whether the run a row describes is ALIVE, DEAD or UNKNOWN, seen from ``me``."""
    from ._runs import pid_alive

    pid = pid or 0
    if (host or "") != me.host:
        return UNKNOWN
    theirs = Owner.parse(host, pid, owner)
    if theirs is None:
        # Written before owners were recorded: a live pid is a live run, and a missing
        # one may be a process in another PID namespace.
        return ALIVE if pid > 0 and pid_alive(pid) else UNKNOWN
    if theirs.namespaced or me.namespaced:
        if (theirs.boot, theirs.pidns) != (me.boot, me.pidns):
            return UNKNOWN  # another boot, container or machine of the same name
    elif theirs.os != me.os or me.os.startswith("linux"):
        return UNKNOWN  # Linux without a readable identity: namespaces cannot be ruled out
    if pid <= 0:
        return UNKNOWN
    if pid == me.pid:
        same = theirs.start is None or me.start is None or theirs.start == me.start
        return ALIVE if same else DEAD
    if not pid_alive(pid):
        return DEAD
    started = process_start(pid)
    if theirs.start is not None and started is not None and started != theirs.start:
        return DEAD  # the pid was reused by a later process
    return ALIVE
