"""How suites run by a command under ``oxy exec`` report to it: one JSON line per suite
run, appended to the file the command names in its environment.

``oxy exec -- python run.py`` runs ``python run.py`` with :data:`EXEC_REPORT_ENV` set to a
file of its own; every ``run_test_suite`` in that process (and in any process it starts,
which inherit the environment) appends what it decided there, and ``oxy exec`` reads the
file once the command ends. A file rather than a socket: no server to start, nothing on
the network, and a line written by ``O_APPEND`` in one ``write`` is never interleaved
with another process's. Outside ``oxy exec`` the variable is unset and nothing is
written.

:data:`EXEC_SUITES_ENV` carries ``oxy exec --test-suites``: a JSON list of strings; a suite
whose id contains none of them is skipped (Autoblocks' substring match).
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

__all__ = ["EXEC_REPORT_ENV", "EXEC_SUITES_ENV", "report", "selected"]

#: The file suites append their records to (set by ``oxy exec`` for its command).
EXEC_REPORT_ENV = "OXY_EXEC_REPORT"
#: ``oxy exec --test-suites``, as a JSON list of substrings of the suites' ids to run.
EXEC_SUITES_ENV = "OXY_EXEC_TEST_SUITES"

_LOCK = threading.Lock()


def report(record: dict[str, Any]) -> None:
    """Append ``record`` to the file of the ``oxy exec`` running this process, if any.
    A file that cannot be written is said on stderr once per record; the suite's own
    result is unaffected (``oxy exec`` then finds the suite missing and says so)."""
    path = os.environ.get(EXEC_REPORT_ENV)
    if not path:
        return
    line = (json.dumps(record, default=str, ensure_ascii=False) + "\n").encode()
    try:
        with _LOCK:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
    except OSError as exc:
        import sys

        print(f"oxyeval: could not report to oxy exec ({path}): {exc}", file=sys.stderr)


def selected(suite: str) -> bool:
    """Whether ``oxy exec --test-suites`` (if given) selects the suite ``suite``."""
    raw = os.environ.get(EXEC_SUITES_ENV)
    if not raw:
        return True
    try:
        wanted = json.loads(raw)
    except ValueError:
        return True
    if not isinstance(wanted, list) or not wanted:
        return True
    return any(isinstance(w, str) and w in suite for w in wanted)
