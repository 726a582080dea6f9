"""Fixtures that write small oxyeval projects into tmp_path."""

from __future__ import annotations

import os
import signal
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .mariadbserver import MariaDB, MariaDBUnavailable
from .pgcluster import HOW_TO_ENABLE, PgCluster, PgUnavailable

MOCK_CONFIG = """\
models:
  - name: agent_model
    vendor: mock
    outputs: ["The total is 42."]
  - name: judge
    vendor: mock
    rules:
      - match: "."
        output: "Same facts.\\nAnswer: A"
"""

MakeProject = Callable[..., Path]


def default_signals() -> None:
    """``preexec_fn`` of a child a test signals: SIGINT back to its default disposition.

    A shell's background job, ``nohup`` and some CI runners start the test run with
    SIGINT ignored, and a child inherits that; oxy rightly leaves an ignored SIGINT
    ignored, so a test that sends one must not depend on how pytest was started.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: What a victim file outside the project holds: a secret on a line that is neither YAML
#: nor JSON, so a reader that opened it would quote that line in its parse error.
VICTIM_SECRET = "correct-horse-battery-staple"  # no pattern the redactor knows
VICTIM_TEXT = f'password: "{VICTIM_SECRET}\n'


@pytest.fixture
def make_project(tmp_path: Path) -> MakeProject:
    """Write ``config.yml`` plus ``files`` (name -> YAML text, dedented) and return the folder."""

    def make(config: str | None = MOCK_CONFIG, files: dict[str, str] | None = None) -> Path:
        if config is not None:
            (tmp_path / "config.yml").write_text(textwrap.dedent(config), encoding="utf-8")
        for name, text in (files or {}).items():
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text), encoding="utf-8")
        return tmp_path

    return make


@pytest.fixture
def victim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file of the user's outside every project, as ``~/.git-credentials`` is (mode
    0600): what a shared project's links point at. Tests check it is never shown,
    and that its content and mode are unchanged afterwards."""
    path = tmp_path_factory.mktemp("home") / ".git-credentials"
    path.write_text(VICTIM_TEXT, encoding="utf-8")
    path.chmod(0o600)
    return path


@pytest.fixture(autouse=True)
def _wide_piped_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports on stdout are read whole: a pipe's default of 80 columns would wrap table
    cells mid-phrase, which tests of content should not depend on (a test of widths
    sets or removes COLUMNS itself)."""
    monkeypatch.setenv("COLUMNS", "160")


@pytest.fixture(autouse=True)
def _forget_secrets() -> Iterator[None]:
    """Keys a test registers do not outlive it (one test's key must not hide another's
    output)."""
    from oxyeval.redact import secret_scope

    with secret_scope():
        yield


# -- the throwaway PostgreSQL cluster: one per session, for the store and the warehouses --


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster | None]:
    if os.environ.get("OXY_TEST_POSTGRES", "1") == "0":
        yield None
        return
    try:
        import psycopg  # noqa: F401
    except ImportError:
        yield None
        return
    cluster: PgCluster | None = None
    try:
        cluster = PgCluster()
        cluster.start()
    except PgUnavailable as exc:
        _why.append(str(exc))
        if cluster is not None:
            cluster.stop()
        yield None
        return
    try:
        yield cluster
    finally:
        cluster.stop()


_why: list[str] = []  # why the cluster could not start, for the skip message


def pg_skip_reason() -> str:
    if _why:
        return f"{_why[0]}"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "PostgreSQL tests need psycopg: pip install -e '.[dev]'"
    if os.environ.get("OXY_TEST_POSTGRES", "1") == "0":
        return "PostgreSQL tests disabled by OXY_TEST_POSTGRES=0"
    return f"no PostgreSQL server could be started; to run these tests, {HOW_TO_ENABLE}"


# -- the throwaway MariaDB server: one per session, for the MySQL warehouse ---------------


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[MariaDB]:
    """Skips (with how to enable it) where no server can be started; fails instead with
    ``OXY_REQUIRE_MARIADB=1`` (CI), where a skip would hide a broken set-up."""
    try:
        import mysql.connector  # noqa: F401

        server = MariaDB().start()
    except (ImportError, MariaDBUnavailable) as exc:
        reason = (
            "the MySQL warehouse's tests need mysql-connector-python: pip install -e '.[dev]'"
            if isinstance(exc, ImportError)
            else str(exc)
        )
        if os.environ.get("OXY_REQUIRE_MARIADB") == "1":
            pytest.fail(f"OXY_REQUIRE_MARIADB=1 but {reason}")
        pytest.skip(reason)
    try:
        yield server
    finally:
        server.stop()
