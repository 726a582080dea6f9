"""A throwaway PostgreSQL cluster for the store's tests and benchmark.

Uses the server binaries on this machine (``initdb``, ``pg_ctl``: on PATH, or Debian's
``/usr/lib/postgresql/<version>/bin``). PostgreSQL refuses to run as root, so as root the
cluster belongs to the ``postgres`` user (``runuser``). The server listens on 127.0.0.1 on
a free port and on a private socket folder, without fsync (nothing here must survive a
crash), and is stopped and deleted by :meth:`PgCluster.stop`.

Two roles: ``postgres`` (trust, for set-up) and ``oxy`` with a password (scram), so the
tests can check how URLs and passwords are handled.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

__all__ = ["PASSWORD", "PgCluster", "PgUnavailable", "find_bin"]

PASSWORD = "oxy-pw-" + "S3cr3t-9f4e2a"  # what the tests look for in output: it must never show
HOW_TO_ENABLE = (
    "install PostgreSQL's server (Debian: apt-get install postgresql) so that initdb and "
    "pg_ctl are on PATH or under /usr/lib/postgresql/*/bin; .ci/run does this"
)


class PgUnavailable(RuntimeError):
    """No server can be started here; the message says how to enable one."""


def find_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for path in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return path
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    def __init__(self) -> None:
        initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
        if not initdb or not pg_ctl:
            raise PgUnavailable(
                f"no PostgreSQL server binaries found; to run these tests, {HOW_TO_ENABLE}"
            )
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.root = Path(tempfile.mkdtemp(prefix="oxy-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root / "sock"
        self.port = _free_port()
        self._as_root = os.geteuid() == 0
        self.started = False

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self._as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def start(self, *, durable: bool = False) -> PgCluster:
        """Start the server; ``durable`` keeps PostgreSQL's default fsync and synchronous
        commit (for benchmarks: the tests do not need them and run faster without)."""
        if self._as_root:
            try:
                import pwd

                user = pwd.getpwnam("postgres")
            except KeyError:
                raise PgUnavailable(
                    f"running as root and there is no 'postgres' user to run the server as; {HOW_TO_ENABLE}"
                ) from None
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self.sockets.mkdir()
        if self._as_root:
            os.chown(self.sockets, user.pw_uid, user.pw_gid)
        pwfile = self.root / "pw"
        pwfile.write_text("postgres\n")
        if self._as_root:
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        done = self._run(
            self.initdb,
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            f"--pwfile={pwfile}",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        )
        if done.returncode != 0:
            raise PgUnavailable(f"initdb failed: {done.stderr.strip()[-500:]}")
        options = (
            f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 -c max_connections=100"
        )
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        done = self._run(
            self.pg_ctl,
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        if done.returncode != 0:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise PgUnavailable(f"pg_ctl start failed: {(done.stderr + log).strip()[-800:]}")
        self.started = True
        self.admin_sql(f"CREATE ROLE oxy LOGIN PASSWORD '{PASSWORD}' CREATEDB")
        return self

    def admin_url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres:postgres@127.0.0.1:{self.port}/{database}"

    def url(self, database: str, *, password: bool = True) -> str:
        """A URL for the ``oxy`` role (with its password in it, unless ``password=False``)."""
        auth = f"oxy:{PASSWORD}" if password else "oxy"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def admin_sql(self, *statements: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user="postgres",
            password="postgres",
            dbname=database,
            autocommit=True,
        ) as conn:
            for sql in statements:
                conn.execute(sql)  # type: ignore[arg-type]

    def create_database(self, template: str | None = None) -> str:
        name = "t_" + uuid.uuid4().hex[:12]
        tpl = f" TEMPLATE {template}" if template else ""
        self.admin_sql(f"CREATE DATABASE {name} OWNER oxy{tpl}")
        return name

    def drop_database(self, name: str) -> None:
        with contextlib.suppress(Exception):
            self.admin_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        if self.started:
            self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")
            self.started = False
        shutil.rmtree(self.root, ignore_errors=True)
