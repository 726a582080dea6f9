"""Runs (one ``oxy cases run`` per prompt, one ``oxy test``, one ``oxy run``) and liveness.

A run is 'running' until its process finishes it. A process that dies leaves it 'running';
the next process to look marks it 'interrupted' if the run is provably dead:

* in this host's kernel and PID namespace (see :mod:`._owner`: host name, boot id, PID
  namespace and process start time are recorded with the run), its pid no longer exists
  or now belongs to another process (a live pid is a live run, whichever Store in that
  process owns it: a Store that closes without finishing its runs marks them
  interrupted itself, see ``Store.close``);
* anywhere else (another host sharing a PostgreSQL history or a synced file, another
  container on this host, a run recorded before owners were), its pid cannot be
  probed, so it is presumed dead only after :data:`FOREIGN_RUN_STALE_AFTER`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ._errors import NotFoundError
from ._owner import DEAD, UNKNOWN, current_owner, run_state
from ._results import check_run_kind
from ._rows import Run
from ._tables import run_totals, runs
from ._util import new_id, utc_timestamp
from .kinds import FINISHED_RUN_STATUSES

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from ._core import Store

__all__ = ["FOREIGN_RUN_STALE_AFTER", "Runs", "interrupt_runs", "pid_alive"]

FOREIGN_RUN_STALE_AFTER = timedelta(hours=24)
_R = runs.c


def pid_alive(pid: int) -> bool:
    """Whether a local process exists; tells a crashed run from a live one."""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process on Windows
        import ctypes
        from ctypes import wintypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return ctypes.get_last_error() == 5  # type: ignore[attr-defined]  # access denied
        try:
            code = wintypes.DWORD()
            if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
                return True
            return code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def interrupt_runs(conn: Connection, run_ids: Sequence[str]) -> None:
    """Mark still-running runs interrupted (the caller owns the transaction)."""
    if run_ids:
        conn.execute(
            runs.update()
            .where(_R.id.in_(list(run_ids)), _R.status == "running")
            .values(status="interrupted", finished_at=utc_timestamp())
        )


#: ``Run``'s count of each stored outcome (``unjudged`` is counted in ``results`` only).
_COUNTED = {"passed": "passed", "failed": "failed", "unknown": "errors", "neutral": "pending"}
_T = run_totals.c
#: Built once: building it per call cost as much as running it.
_TOTALS = sa.select(
    _T.run_id, _T.outcome, _T.status, _T.results, _T.scored, _T.score_sum, _T.regressions
).where(_T.run_id.in_(sa.bindparam("runs", expanding=True)))


def _counts(conn: Connection, found: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Each run's results counted by their stored outcome, whatever their kind, from the
    totals kept as they were written (a few rows per run, however many results it has)."""
    if not found:
        return {}
    out: dict[str, dict[str, Any]] = {}
    rows = conn.execute(_TOTALS, {"runs": [r.id for r in found]}).all()
    for run_id, outcome, status, n, scored, score_sum, regressions in rows:
        c = out.get(run_id)
        if c is None:
            c = out[run_id] = {
                "results": 0,
                "scored": 0,
                "score_sum": 0.0,
                "regressions": 0,
                "statuses": {},
            }
        c["results"] += n
        c["regressions"] += regressions
        c["statuses"][status] = c["statuses"].get(status, 0) + n
        if outcome in _COUNTED:
            key = _COUNTED[outcome]
            c[key] = c.get(key, 0) + n
        if outcome != "unknown":  # an interrupted test's partial score is no average
            c["scored"] += scored
            c["score_sum"] += score_sum
    return out


def _run(r: Any, counts: dict[str, Any] | None) -> Run:
    c = counts or {}
    return Run(
        id=r.id,
        kind=r.kind,
        group_id=r.group_id,
        subject=r.subject,
        prompt_id=r.prompt_id,
        prompt_version=r.prompt_version,
        started_at=r.started_at,
        finished_at=r.finished_at,
        status=r.status,
        total=r.total,
        done=r.done,
        pid=r.pid,
        host=r.host,
        passed=c.get("passed", 0),
        failed=c.get("failed", 0),
        pending=c.get("pending", 0),
        errors=c.get("errors", 0),
        regressions=c.get("regressions", 0),
        results=c.get("results", 0),
        scored=c.get("scored", 0),
        score_sum=c.get("score_sum", 0.0),
        statuses=c.get("statuses", {}),
    )


class Runs:
    def __init__(self, store: Store) -> None:
        self._store = store

    @staticmethod
    def new_group_id() -> str:
        """An id to put several runs of one command in one group."""
        return new_id()

    def start(
        self,
        kind: str = "cases",
        *,
        prompt_id: str | None = None,
        prompt_version: int | None = None,
        total: int = 0,
        group_id: str | None = None,
        subject: str | None = None,
        started_at: str | None = None,
    ) -> str:
        """Record a run as 'running' by this process; returns its id."""
        check_run_kind(kind)
        run_id = new_id()
        with self._store.write("starting a run") as conn:
            conn.execute(
                runs.insert().values(
                    id=run_id,
                    kind=kind,
                    group_id=group_id,
                    subject=subject,
                    prompt_id=prompt_id,
                    prompt_version=prompt_version,
                    started_at=utc_timestamp(started_at),
                    status="running",
                    total=total,
                    done=0,
                    pid=os.getpid(),
                    host=self._store.host,
                    owner=current_owner().text(),
                )
            )
        self._store.own_run(run_id)
        return run_id

    def finish(self, run_id: str, status: str = "completed") -> None:
        if status not in FINISHED_RUN_STATUSES:
            raise ValueError(
                f"finish status must be one of {', '.join(FINISHED_RUN_STATUSES)}, not {status!r}"
            )
        with self._store.write("finishing a run") as conn:
            done = conn.execute(
                runs.update()
                .where(_R.id == run_id)
                .values(
                    status=status,
                    finished_at=utc_timestamp(),
                    # A run that did more steps than it planned (a workflow's loop
                    # bodies run once per item) finishes with its total at what it did.
                    total=sa.case((_R.done > _R.total, _R.done), else_=_R.total),
                )
            )
            if done.rowcount == 0:
                raise NotFoundError(
                    f"no run {run_id!r} in {self._store.path}", path=self._store.path
                )
        self._store.release_run(run_id)

    def get(self, run_id: str) -> Run | None:
        with self._store.read("reading a run") as conn:
            row = conn.execute(sa.select(runs).where(_R.id == run_id)).first()
            counts = _counts(conn, [row]) if row is not None else {}
        return None if row is None else _run(row, counts.get(run_id))

    def list(
        self,
        limit: int = 20,
        *,
        kind: str | None = None,
        group_id: str | None = None,
        subject: str | None = None,
        status: str | None = None,
        offset: int = 0,
    ) -> list[Run]:
        """Newest first, each with its results counted (:class:`~._rows.Run`)."""
        q = sa.select(runs)
        if kind is not None:
            q = q.where(_R.kind == kind)
        if group_id is not None:
            q = q.where(_R.group_id == group_id)
        if subject is not None:
            q = q.where(_R.subject == subject)
        if status is not None:
            q = q.where(_R.status == status)
        q = q.order_by(_R.started_at.desc(), _R.seq.desc()).limit(limit).offset(max(0, offset))
        with self._store.read("listing runs") as conn:
            rows = conn.execute(q).all()
            counts = _counts(conn, rows)
        return [_run(r, counts.get(r.id)) for r in rows]

    def _stale(self, conn: Connection) -> list[str]:
        me = replace(current_owner(), host=self._store.host)
        cutoff = utc_timestamp(datetime.now(timezone.utc) - FOREIGN_RUN_STALE_AFTER)
        rows = conn.execute(
            sa.select(_R.id, _R.pid, _R.host, _R.owner, _R.started_at).where(_R.status == "running")
        ).all()
        stale = []
        for r in rows:
            state = run_state(r.host, r.pid, r.owner, me)
            if state == DEAD or (state == UNKNOWN and r.started_at < cutoff):
                stale.append(r.id)
        return stale

    def find_stale(self) -> list[str]:
        """Ids of 'running' runs whose process is gone, without changing them (read commands
        show them as interrupted)."""
        with self._store.read("checking for interrupted runs") as conn:
            return self._stale(conn)

    def mark_stale(self) -> list[str]:
        """Mark 'running' runs whose process is gone as 'interrupted'; return their ids."""
        with self._store.write("checking for interrupted runs") as conn:
            stale = self._stale(conn)
            interrupt_runs(conn, stale)
        return stale
