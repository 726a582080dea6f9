"""A throwaway MariaDB server for the MySQL warehouse's tests.

Uses Debian's ``mariadb-server`` binaries (``mariadb-install-db``, ``mariadbd``) without
its default instance: a private data folder in a temporary folder, listening on
127.0.0.1 on a free port and on a private socket, without binary log or fsync (nothing
here must survive a crash), started as the ``mysql`` user when run as root. Stopped and
deleted by :meth:`MariaDB.stop`.

Two accounts: ``root`` on the socket (set-up) and ``oxy`` on 127.0.0.1 with a password,
owner of every table the tests make, so what is refused is refused by the read-only
transaction, not by a grant.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["HOW_TO_ENABLE", "PASSWORD", "MariaDB", "MariaDBUnavailable"]

PASSWORD = "oxy-my-" + "S3cr3t-7c1d0b"  # what the tests look for in output: it must never show
HOW_TO_ENABLE = (
    "install MariaDB's server (Debian: apt-get install mariadb-server) so that "
    "mariadb-install-db and mariadbd are on PATH or in /usr/sbin; .ci/run does this"
)


class MariaDBUnavailable(RuntimeError):
    """No server can be started here; the message says how to enable one."""


def _find(name: str) -> str | None:
    return shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)), None
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MariaDB:
    def __init__(self) -> None:
        install, server = _find("mariadb-install-db"), _find("mariadbd")
        if not install or not server:
            raise MariaDBUnavailable(f"no MariaDB server binaries found; {HOW_TO_ENABLE}")
        self.install, self.server = install, server
        self.root = Path(tempfile.mkdtemp(prefix="oxy-mariadb-"))
        self.data = self.root / "data"
        self.socket = self.root / "sock"
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def _user(self) -> list[str]:
        if os.geteuid() != 0:
            return []
        import pwd

        try:
            user = pwd.getpwnam("mysql")
        except KeyError:
            raise MariaDBUnavailable(
                f"running as root and there is no 'mysql' user to run the server as; {HOW_TO_ENABLE}"
            ) from None
        os.chown(self.root, user.pw_uid, user.pw_gid)
        return ["--user=mysql"]

    def start(self) -> MariaDB:
        user = self._user()
        done = subprocess.run(
            [
                self.install,
                "--no-defaults",
                f"--datadir={self.data}",
                *user,
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
                "--skip-name-resolve",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise MariaDBUnavailable(f"mariadb-install-db failed: {done.stderr.strip()[-500:]}")
        self.proc = subprocess.Popen(
            [
                self.server,
                "--no-defaults",
                f"--datadir={self.data}",
                *user,
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--socket={self.socket}",
                f"--pid-file={self.root / 'pid'}",
                f"--log-error={self.root / 'err.log'}",
                "--skip-name-resolve",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=16M",
                "--innodb-flush-log-at-trx-commit=0",
                "--innodb-doublewrite=0",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not self.socket.exists() or not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (self.root / "err.log").read_text(errors="replace")[-800:]
                self.stop()
                raise MariaDBUnavailable(f"mariadbd did not start: {log}")
            time.sleep(0.05)
        self.admin_sql(
            f"CREATE USER 'oxy'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'",
            "GRANT ALL ON *.* TO 'oxy'@'127.0.0.1'",
        )
        return self

    def _answers(self) -> bool:
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect(str(self.socket))
            except OSError:
                return False
        return True

    def admin_sql(self, *statements: str, database: str | None = None) -> list[tuple[object, ...]]:
        """Run statements as root (on the socket); the last one's rows."""
        import getpass

        import mysql.connector

        user = "root" if os.geteuid() == 0 else getpass.getuser()  # unix_socket sign-in
        conn = mysql.connector.connect(
            unix_socket=str(self.socket), user=user, database=database, autocommit=True
        )
        rows: list[tuple[object, ...]] = []
        try:
            cur = conn.cursor()
            for sql in statements:
                cur.execute(sql)
                rows = list(cur.fetchall()) if cur.with_rows else []
        finally:
            conn.close()
        return rows

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        with contextlib.suppress(OSError):
            shutil.rmtree(self.root, ignore_errors=True)
