"""Where the history lives and how we talk to it: locations, engines, SQLite pragmas, errors.

A location is a plain path (an SQLite file, the embedded default) or a URL
(``postgresql://user@host:5432/db`` for a team's shared history, ``sqlite:///file``).
Resolution is pure Python, so deciding *where* costs no SQLAlchemy import; the engine is
built only when a store is opened.

Passwords: a URL's password is never shown. ``Location.display`` masks it as ``***``, every
error message is scrubbed of it, and it is registered with :mod:`oxyeval.redact` so no
report, log line or row can carry it. A password can come from the URL, from the
environment variable named by ``history.password_var`` in config.yml, or from libpq's own
``PGPASSWORD`` / ``~/.pgpass`` (psycopg reads those itself). A ``password_var`` that is unset
or empty (a pull request from a fork gets no secrets) is not an error: we connect without a
password and let libpq look; only a refused login names the variable.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from ..paths import inside_project
from ..redact import (
    mask_credentials,
    redact,
    register_credentials,
    register_secret,
    split_userinfo,
)
from ._errors import LocationError
from ._translate import translate

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_STATEMENT_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "Location",
    "create_engine",
    "missing_folder",
    "resolve_location",
    "translate",
]

DEFAULT_TIMEOUT = 10.0  # seconds a writer waits for another process (or a lock) before giving up
#: PostgreSQL: seconds one connection attempt may take (libpq's connect_timeout; with
#: ``sslmode=prefer``, the default, libpq makes two attempts).
DEFAULT_CONNECT_TIMEOUT = 10.0
#: PostgreSQL: seconds one statement may take, server-side (statement_timeout) and, for a
#: server that no longer answers at all, client-side (the connection is cut a second later).
DEFAULT_STATEMENT_TIMEOUT = 30.0
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_PG_SCHEMES = {"postgresql", "postgres", "postgresql+psycopg", "postgres+psycopg"}
_SQLITE_SCHEMES = {"sqlite", "sqlite+pysqlite"}
#: A libpq keyword/value connection string: ``host=... dbname=...`` (a file name never
#: starts with one of libpq's keywords followed by ``=``).
_DSN = re.compile(
    r"^\s*(?:host|hostaddr|port|dbname|user|password|passfile|service|sslmode|sslpassword"
    r"|connect_timeout|application_name|options)\s*=",
    re.I,
)


@dataclass(frozen=True)
class Location:
    """Where one history is. ``display`` is what users see; ``url`` is never printed."""

    backend: str  # "sqlite" | "postgresql"
    display: str
    path: Path | None = None  # the SQLite file (None: PostgreSQL, or SQLite in memory)
    explicit: bool = False  # named by --db, OXY_DB or config.yml: a missing file is an error
    url: str = field(default="", repr=False)  # SQLAlchemy URL, password included
    password: str | None = field(default=None, repr=False)
    #: config.yml's ``history.password_var`` when that variable is unset or empty: we then
    #: connect without a password of our own (libpq falls back to PGPASSWORD / ~/.pgpass),
    #: and a refused login names the variable.
    unset_password_var: str | None = None
    #: The password was written in the URL itself (``--db``/``OXY_DB``): a refused login
    #: says so, rather than pointing at config.yml.
    password_in_url: bool = field(default=False, compare=False)
    #: Whether opening may create the SQLite file's missing folders: yes for the user's own
    #: ``--db`` / ``OXY_DB`` and for the project's ``.oxy/``; no for any other path a
    #: project file names (a shared config.yml must not make folders anywhere).
    make_folders: bool = True
    #: PostgreSQL: seconds to wait for a connection (per attempt, as libpq counts) and for
    #: one statement (the server's ``statement_timeout``, and a client-side deadline for a
    #: server that stopped answering); None means the defaults. Not part of the identity.
    connect_timeout: float | None = field(default=None, compare=False)
    statement_timeout: float | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return self.display

    @property
    def memory(self) -> bool:
        return self.backend == "sqlite" and self.path is None


#: SQLAlchemy's reading of a URL's userinfo (``make_url``, which the engine is built
#: from): a user name holding no ``:`` or ``/``, then ``:`` and a password up to the
#: first ``@``.
_SQLA_USERINFO = re.compile(r"([^:/]*)(?::([^@]*))?@")


def _userinfo(url: str) -> tuple[str | None, str | None, str]:
    """``(user, password, the URL without them)`` as SQLAlchemy reads ``url``; user and
    password as written (percent-encoded), None when absent."""
    at = url.index("://") + 3
    m = _SQLA_USERINFO.match(url, at)
    if m is None:
        return None, None, url
    return m.group(1) or None, m.group(2), url[:at] + url[m.end() :]


def _split(url: str) -> Any:
    """``urlsplit`` of the URL without its userinfo as SQLAlchemy reads it (a password may
    hold a raw ``/``, ``?`` or ``#``: ``bob:pa/ss@host`` is password ``pa/ss`` there, port
    ``pa`` for ``urlsplit``), so no check of the host, port or database quotes a piece
    of it; a malformed URL (``postgresql://u@[::1/db``) is a LocationError naming it
    (its credentials masked) instead of a ValueError. Every URL of a history passes
    here first: the credentials in it (``user:pw@``, ``?password=``, ``?sslpassword=``)
    are registered before anything can show them."""
    register_credentials(url)
    shown = mask_credentials(url)
    read = split_userinfo(url)
    if _userinfo(url)[1] != (None if read is None else read[1]):
        # A raw '@' in the password (SQLAlchemy ends it at the first), or a '/' before
        # the password's ':' (SQLAlchemy then finds no user): it would connect to a host
        # named by a piece of the password.
        raise LocationError(
            f"history database {shown}: the password (or the user name) holds a raw '@' "
            "or '/' that makes the URL ambiguous; percent-encode it ('@' as %40, '/' as %2F)",
            path=shown,
        )
    try:
        parts = urlsplit(_userinfo(url)[2])
    except ValueError as exc:
        raise LocationError(
            f"history database {shown}: not a valid URL ({redact(str(exc))}); use a file "
            "path (SQLite) or postgresql://user@host:5432/dbname",
            path=shown,
        ) from None
    return parts


def _mask(url: str) -> str:
    """The URL with every credential libpq reads from it as ``***`` (the userinfo password,
    ``password=`` and ``sslpassword=`` parameters); user, host, port and database stay
    readable."""
    _split(url)
    return mask_credentials(url)


def _query_password(url: str) -> str | None:
    """A ``password=`` or ``sslpassword=`` written in the URL's query, as libpq reads it."""
    from urllib.parse import parse_qsl

    for name, value in parse_qsl(_split(url).query, keep_blank_values=False):
        if name.lower() in ("password", "sslpassword"):
            return value
    return None


def _refuse_connection_string(text: str, key: tuple[str, ...] = ()) -> None:
    """libpq's keyword/value form (``host=... dbname=... password=...``) is not a file name,
    and taken as one it would create a file named after the password: a LocationError,
    masked (and the password registered), for every path a history can come from."""
    if _DSN.match(text):
        register_credentials(text)
        shown = mask_credentials(text)
        raise LocationError(
            f"history database {shown!r} is a libpq connection string; oxyeval takes a "
            "PostgreSQL URL: postgresql://user@host:5432/dbname (the password in "
            "history.password_var, PGPASSWORD or ~/.pgpass)",
            path=shown,
            key=key,
        )


def _sqlite_location(path: str | Path, *, explicit: bool, base: Path | None = None) -> Location:
    text = str(path)
    _refuse_connection_string(text)
    if text == ":memory:":
        return Location("sqlite", ":memory:", None, explicit, "sqlite://")
    p = Path(text).expanduser()
    if base is not None and not p.is_absolute():
        p = base / p
    return Location("sqlite", str(p), p, explicit, "")


def _port_problem(netloc: str) -> str | None:
    """What is wrong with the URL's port, if anything. Read from the text rather than
    from ``urlsplit``'s ``port``, whose ValueError wording varies and which takes 0."""
    host = netloc.rpartition("@")[2]
    if host.startswith("["):  # [::1]:5432
        host = host.partition("]")[2]
    text = host.partition(":")[2]
    if not text:
        return None
    if not (text.isascii() and text.isdigit()):
        return f"the port is not a number ({text!r})"
    if not 1 <= int(text) <= 65535:
        return f"the port {int(text)} is out of range: a port is 1-65535"
    return None


def _url_location(
    text: str,
    *,
    explicit: bool,
    password: str | None,
    base: Path | None,
    unset_var: str | None = None,
) -> Location:
    parts = _split(text)
    scheme = parts.scheme.lower()
    shown = _mask(text)
    if scheme in _SQLITE_SCHEMES:
        # sqlite:///relative.db and sqlite:////absolute.db, as SQLAlchemy spells them.
        raw = text.split("://", 1)[1]
        raw = raw[1:] if raw.startswith("/") else raw
        if not raw or raw == ":memory:":
            return _sqlite_location(":memory:", explicit=explicit)
        return _sqlite_location(unquote(raw.split("?", 1)[0]), explicit=explicit, base=base)
    if scheme not in _PG_SCHEMES:
        raise LocationError(
            f"history database {shown}: unsupported URL scheme '{parts.scheme}'; use a file "
            "path (SQLite) or postgresql://user@host:5432/dbname",
            path=shown,
        )
    if not parts.hostname and "host=" not in (parts.query or ""):
        raise LocationError(
            f"history database {shown}: the URL names no host; "
            "write postgresql://user@host:5432/dbname",
            path=shown,
        )
    if not parts.path.strip("/"):
        raise LocationError(
            f"history database {shown}: the URL names no database; "
            "write postgresql://user@host:5432/dbname",
            path=shown,
        )
    port = _port_problem(parts.netloc)
    if port is not None:
        raise LocationError(f"history database {shown}: {port}", path=shown)
    written = _userinfo(text)[1]
    if written:
        password = unquote(written)
    url = "postgresql+psycopg://" + text.split("://", 1)[1]
    if password:
        register_secret(password)
    return Location(
        "postgresql",
        shown,
        None,
        explicit,
        url,
        password,
        None if password else unset_var,
        password_in_url=bool(written),
    )


def resolve_location(
    db: str | os.PathLike[str] | None = None,
    *,
    project_root: Path | None = None,
    environ: Mapping[str, str] | None = None,
    history: Mapping[str, Any] | None = None,
) -> Location:
    """Where the history is: ``--db`` wins, then ``OXY_DB``, then config.yml's ``history:``,
    else ``<project>/.oxy/oxyeval.db``.

    A relative path from ``--db`` or ``OXY_DB`` is relative to the working directory, like
    any path a user types, and may point anywhere (``~`` expanded): that is the user's
    choice. A path in config.yml is the project's: relative to the project folder, never
    outside it (links followed), ``~`` not expanded, and its missing folders are not
    created (only the project's own ``.oxy/`` is). ``history`` is config.yml's mapping
    (``{url, password_var, connect_timeout, statement_timeout}``); its entry is checked
    even when ``--db`` or ``OXY_DB`` wins, so a bad config.yml fails the same way
    everywhere, and its timeouts apply to whichever history is used.
    """
    env = os.environ if environ is None else environ
    root = Path(project_root) if project_root is not None else Path.cwd()
    timeouts = _timeouts(history)
    configured = _configured(history, root, env) if history and history.get("url") else None
    given: str | None = None
    if db is not None and str(db).strip():
        given = str(db).strip()
    elif (env.get("OXY_DB") or "").strip():
        given = env["OXY_DB"].strip()
    if given is not None:
        if _URL.match(given):
            found = _url_location(given, explicit=True, password=None, base=None)
        else:
            found = _sqlite_location(given, explicit=True)
    elif configured is not None:
        found = configured
    else:
        found = _default_location(root)
    return replace(found, **timeouts) if timeouts else found


def _timeouts(history: Mapping[str, Any] | None) -> dict[str, float]:
    """config.yml's ``history.connect_timeout`` / ``statement_timeout`` (the schema has
    checked them: positive numbers), as Location fields."""
    out: dict[str, float] = {}
    for name in ("connect_timeout", "statement_timeout"):
        value = (history or {}).get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            out[name] = float(value)
    return out


def _configured(history: Mapping[str, Any], root: Path, env: Mapping[str, str]) -> Location:
    """config.yml's ``history.url`` as a Location, or a LocationError at its key."""
    text = str(history["url"]).strip()
    # An unset or empty variable is not an error here: a pull request from a fork gets
    # no secrets, and PGPASSWORD or ~/.pgpass may hold the password anyway. We connect
    # without one (libpq looks there itself); if the server then refuses, the error
    # names the variable (translate), and `oxy test` runs on without history.
    var = history.get("password_var")
    password = (env.get(str(var)) or None) if var else None
    unset_var = str(var) if var and not password else None
    if not _URL.match(text):
        return _project_sqlite(text, root)
    register_credentials(text)
    read = split_userinfo(text)  # a password however it is read (not only SQLAlchemy's)
    written = _userinfo(text)[1] or (read[1] if read else None)
    try:
        written = written or _query_password(text)
    except LocationError as exc:  # at its line in config.yml
        raise LocationError(str(exc), path=exc.path, key=("history", "url")) from None
    if written:
        # The error quotes config.yml's line, which holds it: scrub it from there too.
        register_secret(unquote(written))
        register_secret(written)
        raise LocationError(
            "history.url contains a password; config.yml is shared, so put the password "
            "in an environment variable and name it in history.password_var",
            key=("history", "url"),
        )
    try:
        if _split(text).scheme.lower() in _SQLITE_SCHEMES:
            # sqlite:///relative.db and sqlite:////absolute.db, held to the project's rule.
            raw = text.split("://", 1)[1]
            raw = unquote((raw[1:] if raw.startswith("/") else raw).split("?", 1)[0])
            if not raw or raw == ":memory:":
                return _sqlite_location(":memory:", explicit=True)
            return _project_sqlite(raw, root)
        return _url_location(text, explicit=True, password=password, base=root, unset_var=unset_var)
    except LocationError as exc:
        if exc.key:
            raise
        raise LocationError(str(exc), path=exc.path, key=("history", "url")) from None


def _project_sqlite(text: str, root: Path) -> Location:
    """An SQLite history named in config.yml, held to the rule for every path a project
    file names: a shared file must not make oxyeval write outside the project (a history
    at ``~/.ssh/authorized_keys`` would put test names into that file)."""
    key = ("history", "url")
    _refuse_connection_string(text, key=key)
    base = root.resolve()
    if text.startswith("~"):
        raise LocationError(
            f"history.url {text!r}: '~' is not expanded in config.yml (a shared file must not "
            "name a place in each user's home); give a path inside the project, or use --db "
            "or OXY_DB for a history elsewhere",
            key=key,
        )
    target = inside_project(base, text)
    if target is None:
        raise LocationError(
            f"history.url {text!r} leaves the project folder {base}; a history named in "
            "config.yml must stay inside the project (use --db or OXY_DB for one elsewhere)",
            key=key,
        )
    if target == base:
        raise LocationError(f"history.url {text!r} is the project folder itself", key=key)
    return Location(
        "sqlite", str(target), target, True, "", make_folders=target.parent == base / ".oxy"
    )


def missing_folder(location: Location) -> str | None:
    """Why the SQLite file's folder will not be created (None when it exists or may be):
    a history named in config.yml gets no folders made for it, except the project's
    ``.oxy/``. For ``oxy validate`` (a warning) and for opening (an error)."""
    path = location.path
    if location.make_folders or path is None or path.parent.is_dir():
        return None
    return (
        f"history database {location.display}: the folder {path.parent} does not exist, and "
        "oxyeval creates no folders for a history named in config.yml (only the project's "
        ".oxy/); create it, or change history.url"
    )


def _default_location(root: Path) -> Location:
    """``<project>/.oxy/oxyeval.db``; an ``.oxy`` that links out of the project is refused
    (a cloned repository could ship such a link)."""
    base = root.resolve()
    path = base / ".oxy" / "oxyeval.db"
    try:
        target = path.resolve()
    except (OSError, RuntimeError):
        target = None
    if target is None or not target.is_relative_to(base):
        raise LocationError(
            f"history database {path}: the project's .oxy folder links outside the project "
            f"({target or 'a link loop'}); remove the link, or choose a history with --db, "
            "OXY_DB or history.url in config.yml",
            path=str(path),
        )
    return Location("sqlite", str(path), path, False, "")


# --------------------------------------------------------------------------- engines


def _enable_wal(cur: Any, timeout: float) -> None:
    """Switch a file to WAL (persistent: later connections find it set).

    The switch needs an exclusive lock, and SQLite returns "database is locked" for it
    at once, without its busy handler, when another connection is opening the same new
    file: several processes starting on a fresh history would fail. Retry until the
    busy timeout instead (or the command's stop request).
    """
    from ._lockwait import retry_locked

    if str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
        return
    retry_locked(lambda: cur.execute("PRAGMA journal_mode = WAL").fetchone(), timeout)


def _sqlite_connect(location: Location, timeout: float, read_only: bool, immutable: bool) -> Any:
    import sqlite3

    if location.memory:
        target, uri = ":memory:", False
    elif read_only:
        from urllib.parse import quote

        target, uri = f"file:{quote(str(location.path))}?mode=ro", True
        if immutable:  # a read-only folder cannot hold the WAL's shared-memory file
            target += "&immutable=1"
    else:
        target, uri = str(location.path), False
    # isolation_level=None: we issue BEGIN ourselves (see _on_begin), so a write transaction
    # takes the write lock up front instead of failing to upgrade a read lock.
    return sqlite3.connect(
        target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
    )


def create_engine(
    location: Location,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    read_only: bool = False,
    creator: Any = None,
) -> Engine:
    """An engine for ``location`` with our per-connection settings.

    SQLite: WAL (readers never block the writer), synchronous=NORMAL, foreign keys, a busy
    timeout, and BEGIN IMMEDIATE for writes. PostgreSQL (psycopg 3): a connect timeout
    (the location's, else the URL's ``connect_timeout``, else 10 s), a lock timeout of
    ``timeout``, a statement timeout (the location's, else 30 s) enforced by the server
    and, a second later, by the client for a server that stopped answering at all
    (:mod:`._watchdog`), and REPEATABLE READ for multi-query reads.
    """
    import sqlalchemy as sa
    from sqlalchemy import event
    from sqlalchemy.pool import QueuePool, StaticPool

    if location.backend == "sqlite":
        immutable = (
            read_only
            and location.path is not None
            and (
                not os.access(location.path.parent, os.W_OK)
                or not os.access(location.path, os.W_OK)
            )
        )
        make = creator or (lambda: _sqlite_connect(location, timeout, read_only, immutable))
        engine = sa.create_engine(
            "sqlite+pysqlite://",
            creator=make,
            # One connection per checkout, never shared by two threads at once (the URL names no
            # file, which would make SQLAlchemy pick a per-thread pool that closes connections
            # other threads are using). A private in-memory database is one shared connection.
            poolclass=StaticPool if (location.memory or creator is not None) else QueuePool,
        )

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            try:
                cur.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
                cur.execute("PRAGMA foreign_keys = ON")
                if not read_only and not location.memory:
                    # Reading the schema first surfaces "not a database" before we change it.
                    cur.execute("SELECT count(*) FROM sqlite_master").fetchone()
                    _enable_wal(cur, timeout)
                    cur.execute("PRAGMA synchronous = NORMAL")
            finally:
                cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Any) -> None:
            if conn.get_execution_options().get("oxy_write", False):
                from ._lockwait import begin_write

                # In slices, so a command asked to stop stops waiting for the lock.
                begin_write(conn.exec_driver_sql, timeout)
            else:
                conn.exec_driver_sql("BEGIN")

        return engine
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise LocationError(
            f"history database {location.display} is PostgreSQL, which needs the psycopg "
            "driver: pip install 'oxyeval[postgres]'",
            path=location.display,
        ) from None
    url = sa.engine.make_url(location.url)
    if location.password and not url.password:
        url = url.set(password=location.password)
    statement = location.statement_timeout or DEFAULT_STATEMENT_TIMEOUT
    options = f"-c lock_timeout={int(timeout * 1000)} -c statement_timeout={int(statement * 1000)}"
    if url.query.get("options"):  # the URL's own libpq options come after ours (and win)
        options += f" {url.query['options']}"
    connect_args: dict[str, Any] = {"application_name": "oxyeval", "options": options}
    if location.connect_timeout is not None or "connect_timeout" not in url.query:
        # libpq's unit is whole seconds (and 1 is its minimum that means anything).
        seconds = location.connect_timeout or DEFAULT_CONNECT_TIMEOUT
        connect_args["connect_timeout"] = max(1, round(seconds))
    engine = sa.create_engine(
        url, connect_args=connect_args, pool_size=4, max_overflow=8, pool_pre_ping=False
    )
    # psycopg logs what it could not clean up on a lost connection ("error ignored
    # terminating Pipeline"); with no logging configured, Python would print that on
    # stderr beside our own one-line error. Records still reach handlers a user set up.
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    from ._watchdog import guard_engine

    guard_engine(engine, statement + 1.0)
    return engine
