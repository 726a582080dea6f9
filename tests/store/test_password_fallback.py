"""``history.password_var`` naming a variable that is unset or empty (a pull request from a
fork gets no secrets) is not bad input: oxyeval connects without a password of its own, so
libpq's PGPASSWORD and ~/.pgpass still work; when the server refuses, the error names the
variable, `oxy test` / `oxy run` go on without history, and the store commands exit 3.

The PostgreSQL half runs real ``oxy`` processes, so libpq sees exactly the environment and
HOME a user's shell would give it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oxyeval.errors import EXIT_INFRA
from oxyeval.store import Location, resolve_location
from oxyeval.store._engine import translate

from ..conftest import MakeProject
from ..pgcluster import PASSWORD, PgCluster
from .conftest import Backend

VAR = "OXY_TEST_DB_PASSWORD"
MODELS = """\
models:
  - name: agent_model
    vendor: mock
    outputs: ["The total is 42."]
  - name: judge
    vendor: mock
    rules:
      - {match: ".", output: "Same facts.\\nAnswer: A"}
  - name: m
    vendor: mock
    rules:
      - {match: "love", output: "positive"}
      - {match: ".", output: "neutral"}
"""
AGENT = """\
model: agent_model
system_instructions: Be brief.
tests:
  - {type: consistency, name: totals, n: 3, task_description: "total?", model_ref: judge}
"""
PROMPT = """\
name: sentiment
model: m
template: "Feedback: {{ text }}"
similarity: lexical
cases:
  - {name: happy, input: {text: "I love it"}, expected_output: positive}
"""
WORKFLOW = "tasks:\n  - {name: ask, type: agent, agent_ref: a.agent.yml, prompt: q}\n"


# --------------------------------------------------------------------------- no server needed


@pytest.mark.parametrize("environ", [{}, {VAR: ""}])
def test_an_unset_or_empty_password_var_resolves_without_a_password(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    history = {"url": "postgresql://ci@db.internal:5432/hist", "password_var": VAR}
    loc = resolve_location(project_root=tmp_path, environ=environ, history=history)
    assert loc.backend == "postgresql" and loc.password is None
    assert loc.unset_password_var == VAR
    given = resolve_location(project_root=tmp_path, environ={VAR: "pw-123456"}, history=history)
    assert given.password == "pw-123456" and given.unset_password_var is None
    # --db / OXY_DB win over config.yml, and then config.yml's variable is not ours to name.
    assert resolve_location("postgresql://u@h/db", environ={}).unset_password_var is None


class _PgError(Exception):
    def __init__(self, text: str, sqlstate: str | None = None) -> None:
        super().__init__(text)
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (_PgError("fe_sendauth: no password supplied"), "neither PGPASSWORD nor ~/.pgpass"),
        (
            _PgError('password authentication failed for user "ci"', "28P01"),
            "refused the password from PGPASSWORD or ~/.pgpass",
        ),
    ],
)
def test_a_refused_login_names_the_unset_variable(error: _PgError, says: str) -> None:
    unset = Location("postgresql", "postgresql://ci@h/db", unset_password_var=VAR)
    text = str(translate(error, unset, "opening"))
    assert f"names {VAR}, which is not set" in text and says in text
    assert f"export {VAR}" in text
    # Without an unset variable the message stays the general one.
    plain = str(translate(error, Location("postgresql", "postgresql://ci@h/db"), "opening"))
    assert VAR not in plain and "password_var" in plain


# --------------------------------------------------------------------------- real server


@pytest.fixture
def project(
    backend: Backend, pg_cluster: PgCluster, make_project: MakeProject, tmp_path: Path
) -> Path:
    """A project whose config.yml points at a fresh database, password left to VAR."""
    location = backend.fresh()
    url = location.url.replace("postgresql+psycopg://", "postgresql://").replace(
        f":{PASSWORD}@", "@"
    )
    assert PASSWORD not in url
    history = f"history:\n  url: {url}\n  password_var: {VAR}\n"
    root = make_project(
        MODELS + history,
        {"a.agent.yml": AGENT, "s.prompt.yml": PROMPT, "w.workflow.yml": WORKFLOW},
    )
    (tmp_path / "home").mkdir()
    return root


def _oxy(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``oxy`` as a user's shell runs it: no PG* variables, no OXY_DB, HOME an empty folder
    (its ~/.pgpass only when a test writes one), plus ``env``."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PG") and k not in ("OXY_DB", VAR, "HOME")
    }
    done = subprocess.run(
        [sys.executable, "-m", "oxyeval", *args],
        cwd=root,
        env={**base, "HOME": str(root / "home"), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert PASSWORD not in done.stdout + done.stderr
    return done


def _runs(root: Path, **env: str) -> list[str]:
    shown = _oxy(root, "history", "--format", "json", **env)
    assert shown.returncode == 0, shown.stderr
    return [r["kind"] for r in json.loads(shown.stdout)["runs"]]


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
@pytest.mark.parametrize("value", [None, ""])
def test_pgpassword_supplies_the_password_when_the_variable_is_unset(
    project: Path, value: str | None
) -> None:
    env = {"PGPASSWORD": PASSWORD} | ({VAR: value} if value is not None else {})
    tested = _oxy(project, "test", "a.agent.yml", "-q", **env)
    assert tested.returncode == 0 and "warning" not in tested.stderr, tested.stderr
    cases = _oxy(project, "cases", "run", **env)
    assert cases.returncode == 0, cases.stderr
    assert _runs(project, **env) == ["cases", "consistency"]


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_pgpass_in_home_supplies_the_password(project: Path, pg_cluster: PgCluster) -> None:
    pgpass = project / "home" / ".pgpass"
    pgpass.write_text(f"127.0.0.1:{pg_cluster.port}:*:oxy:{PASSWORD}\n")
    pgpass.chmod(0o600)
    cases = _oxy(project, "cases", "run")
    assert cases.returncode == 0, cases.stderr
    ran = _oxy(project, "run", "w.workflow.yml")
    assert ran.returncode == 0 and "warning" not in ran.stderr, ran.stderr
    assert _runs(project) == ["workflow", "cases"]


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_no_password_anywhere_warns_for_runs_and_stops_the_store_commands(
    project: Path,
) -> None:
    tested = _oxy(project, "test", "a.agent.yml", "-q", "--cache", **{VAR: ""})
    assert tested.returncode == 0, tested.stderr
    assert "warning: history not stored" in tested.stderr
    assert (
        f"names {VAR}, which is not set" in tested.stderr and "Accuracy: 100.00%" in tested.stdout
    )
    ran = _oxy(project, "run", "w.workflow.yml")
    assert ran.returncode == 0 and f"{VAR}, which is not set" in ran.stderr
    assert "The total is 42." in ran.stdout
    for args in (("cases", "run"), ("history",)):
        stopped = _oxy(project, *args)
        assert stopped.returncode == EXIT_INFRA, stopped.stderr
        assert f"names {VAR}, which is not set" in stopped.stderr
        assert "neither PGPASSWORD nor ~/.pgpass" in stopped.stderr
        assert "Traceback" not in stopped.stderr
    as_json = _oxy(project, "cases", "run", "--format", "json")
    assert json.loads(as_json.stdout)["exitCode"] == EXIT_INFRA
    checked = _oxy(project, "validate")
    assert checked.returncode == 0, checked.stderr
    assert "warning:" in checked.stderr and VAR in checked.stderr
    wrong = _oxy(project, "cases", "run", PGPASSWORD="wrong-" + PASSWORD[6:])
    assert wrong.returncode == EXIT_INFRA
    assert "refused the password from PGPASSWORD" in wrong.stderr and VAR in wrong.stderr
    # Nothing reached the database: with the password, the history is still empty.
    assert _runs(project, PGPASSWORD=PASSWORD) == []
