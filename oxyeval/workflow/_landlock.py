"""Linux Landlock for the SQL worker: the kernel, not our checks, keeps its writes and
network in bounds.

The SQL worker runs statements that a model may have written. DuckDB's own sandbox
settings and our statement checks come first; this is the layer under them: after
:func:`restrict`, the process (and every thread it starts later) may read files but
write only inside the folders it is given, and may neither connect nor listen on TCP
(so no extension download, whatever DuckDB is asked to do). It is unprivileged (no
root, no namespaces) and needs Linux 5.13 or later with Landlock enabled; elsewhere
:func:`restrict` returns 0 and the worker relies on the other layers.

The constants and struct layouts are the kernel's uapi (``linux/landlock.h``); the
system call numbers are the same on every architecture Linux added them to after 5.10.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable

__all__ = ["restrict"]

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_V1_ALL = (1 << 13) - 1  # execute ... make_sym: the thirteen rights of ABI 1
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the uapi header: 12 bytes
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _abi(libc: ctypes.CDLL) -> int:
    version = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def restrict(writable: Iterable[str]) -> int:
    """Allow this process reads everywhere, writes only under ``writable`` folders, and no
    TCP at all. Returns the Landlock ABI version enforced, or 0 when the kernel has none
    (then nothing changed). Call it before starting threads: it binds the calling thread
    and the threads it creates afterwards."""
    libc = _libc()
    if libc is None:
        return 0
    abi = _abi(libc)
    if abi < 1:
        return 0
    fs = _V1_ALL
    if abi >= 2:
        fs |= _REFER
    if abi >= 3:
        fs |= _TRUNCATE
    attr = _RulesetAttr(fs, 0, 0)
    size = ctypes.sizeof(ctypes.c_uint64)  # ABI 1-3: handled_access_fs only
    if abi >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP
        size = 2 * ctypes.sizeof(ctypes.c_uint64)
    if abi >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
        size = ctypes.sizeof(_RulesetAttr)
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        return 0
    try:
        _allow(libc, ruleset, "/", _EXECUTE | _READ_FILE | _READ_DIR)
        for folder in writable:
            _allow(libc, ruleset, folder, fs)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi


def _allow(libc: ctypes.CDLL, ruleset: int, folder: str, access: int) -> None:
    fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = _PathBeneathAttr(access, fd)
        if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule({folder})")
    finally:
        os.close(fd)
