"""Errors of a history database in one sentence a user can act on (SQLite and PostgreSQL),
naming the database and never its password."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..redact import redact
from ._errors import StoreError

if TYPE_CHECKING:
    from ._engine import Location

__all__ = ["translate"]


def _scrub(text: str, location: Location) -> str:
    if location.password:
        text = text.replace(location.password, "***")
    return redact(text)


def translate(exc: BaseException, location: Location, action: str) -> StoreError:
    """One sentence a user can act on, naming the database and never its password."""
    where = location.display
    orig = getattr(exc, "orig", None) or exc
    msg = " ".join(_scrub(str(orig), location).split())
    low = msg.lower()
    backend = location.backend
    if isinstance(exc, StoreError):
        return exc
    if backend == "postgresql":
        text = _translate_pg(
            orig, msg, low, where, action, location.unset_password_var, location.password_in_url
        )
    elif "locked" in low or "busy" in low:
        text = (
            f"history database {where} is locked by another process (gave up while {action}); "
            "wait for the other oxy process to finish, or point --db/OXY_DB at another file"
        )
    elif "not a database" in low or "malformed" in low or "corrupt" in low:
        text = (
            f"history database {where} is not a valid SQLite database or is corrupt ({msg}); "
            "move it aside, or point --db/OXY_DB at another file"
        )
    elif "unable to open" in low or "cannot open" in low:
        text = (
            f"history database {where} cannot be opened ({msg}); check that the path is a file "
            "and that its folder exists and is writable"
        )
    elif "readonly" in low or "read-only" in low:
        text = f"history database {where} is read-only ({msg}); check file permissions"
    elif "disk" in low and ("full" in low or "i/o" in low):
        text = f"history database {where}: {msg} while {action}"
    else:
        text = f"history database {where}: {action} failed: {msg}"
    error = StoreError(text, path=where)
    error.unreachable = backend == "postgresql" and _unreachable(low) is not None
    return error


def _translate_pg(
    orig: BaseException,
    msg: str,
    low: str,
    where: str,
    action: str,
    unset_var: str | None,
    in_url: bool = False,
) -> str:
    sqlstate = getattr(orig, "sqlstate", None) or ""
    refused = sqlstate == "28P01" or "password authentication failed" in low
    if unset_var and ("no password supplied" in low or refused):
        # The variable is what the user configured: name it first. libpq looked in
        # PGPASSWORD and ~/.pgpass (and found none, or a wrong one): say that too.
        how = (
            "refused the password from PGPASSWORD or ~/.pgpass"
            if refused
            else "asks for a password and neither PGPASSWORD nor ~/.pgpass has one"
        )
        return (
            f"history database {where}: history.password_var in config.yml names "
            f"{unset_var}, which is not set (or is empty), and the server {how} ({msg}); "
            f"export {unset_var} with the database password"
        )
    if "no password supplied" in low:
        return (
            f"history database {where}: the server asks for a password and none was given; "
            "set it in the variable named by history.password_var in config.yml, or in "
            "PGPASSWORD or ~/.pgpass"
        )
    if refused and in_url:
        return (
            f"history database {where}: the server refused the password written in the URL "
            f"({msg}); correct it in --db or OXY_DB"
        )
    if refused:
        return (
            f"history database {where}: the server refused the password ({msg}); set it in the "
            "variable named by history.password_var in config.yml, or in PGPASSWORD or ~/.pgpass"
        )
    if (
        sqlstate == "28000"
        or "no pg_hba.conf entry" in low
        or ("role" in low and "does not exist" in low)
    ):
        return f"history database {where}: the server refused the connection ({msg})"
    if sqlstate == "3D000" or ("database" in low and "does not exist" in low):
        return (
            f"history database {where} does not exist on that server ({msg}); create it "
            "(createdb, or CREATE DATABASE) and run again"
        )
    if sqlstate in ("55P03", "40P01") or "lock timeout" in low or "deadlock" in low:
        return (
            f"history database {where} is locked by another process (gave up while {action}); "
            "try again when the other oxy process has finished"
        )
    gone = _unreachable(low)
    if gone == "connect":
        return (
            f"history database {where} cannot be reached ({msg}); check that the PostgreSQL "
            "server is running and that host and port are right"
        )
    if gone == "answer":
        return (
            f"history database {where} stopped answering (gave up while {action}: {msg}); "
            "check that the PostgreSQL server is running and responsive"
        )
    if sqlstate == "42501" or "permission denied" in low:
        return f"history database {where}: permission denied while {action} ({msg})"
    return f"history database {where}: {action} failed: {msg}"


def _unreachable(low: str) -> str | None:
    """Whether a PostgreSQL error says the server cannot be reached (``"connect"``) or
    stopped answering (``"answer"``): trying again in the same command only waits again."""
    if any(
        phrase in low
        for phrase in (
            "connection refused",
            "could not connect",
            "connection failed",
            "timeout expired",
            "could not translate host name",
            "failed to resolve host",
            "gave up connecting",  # the command was asked to stop (_watchdog)
        )
    ):
        return "connect"
    if any(
        phrase in low
        for phrase in (
            "stopped answering",
            "no reply within",  # the client-side deadline (_watchdog)
            "server closed the connection unexpectedly",
            "connection is lost",
        )
    ):
        return "answer"
    return None
