"""`oxy cases` and `oxy history` on the new store: read commands never write, bad formats and
missing databases are errors, pending is not an error, and PostgreSQL URLs work end to end
with the password never shown."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.report.documents import SCHEMA_VERSION
from oxyeval.store import open_store

from ..conftest import MakeProject
from ..pgcluster import PASSWORD, PgCluster
from ..suites.test_cases_run import CONFIG, PROMPT
from .conftest import Backend

FIXTURE = Path(__file__).parent / "fixtures" / "history-v0.1.0.db"
PENDING = PROMPT + "  - {name: new, input: {text: love}}\n"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(CONFIG, {"s.prompt.yml": PENDING})
    monkeypatch.chdir(project)
    monkeypatch.delenv("OXY_DB", raising=False)
    return project


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reads_on_a_new_project_create_nothing(root: Path) -> None:
    pretty = invoke("history")
    assert pretty.exit_code == 0 and "no runs yet" in pretty.stdout
    assert json.loads(invoke("history", "--format", "json").stdout) == {
        "schemaVersion": SCHEMA_VERSION,
        "document": "history",
        "runs": [],
    }
    listed = json.loads(invoke("cases", "list", "--json").stdout)["testCases"]
    assert {c["name"]: c["totalRuns"] for c in listed} == {"happy": 0, "sad": 0, "meh": 0, "new": 0}
    shown = json.loads(invoke("cases", "show", "meh", "--json").stdout)
    assert shown["testCase"]["expectedOutput"] == "negative" and shown["stats"]["totalRuns"] == 0
    assert not (root / ".oxy").exists()


def test_a_run_that_cannot_start_creates_no_database(root: Path) -> None:
    bad = invoke("cases", "run", "--case", "nope")
    assert bad.exit_code == 2 and "no test case named 'nope'" in bad.stderr
    version = invoke("cases", "run", "--version", "9")
    assert version.exit_code == 2 and "has no version 9; versions: 1" in version.stderr
    assert not (root / ".oxy").exists()
    assert invoke("cases", "run", "--version", "1", "--case", "happy").exit_code == 0
    assert (root / ".oxy" / "oxyeval.db").is_file()
    db = root / ".oxy" / "oxyeval.db"
    before = _digest(db)
    assert invoke("cases", "run", "--case", "hapy").exit_code == 2
    assert "did you mean 'happy'" in invoke("cases", "run", "--case", "hapy").stderr
    assert _digest(db) == before  # not even a sync


def test_an_accept_that_cannot_succeed_changes_nothing(root: Path) -> None:
    text = (root / "s.prompt.yml").read_text()
    never = invoke("cases", "accept", "meh")
    assert never.exit_code == 2 and "has never run; pass the expected output" in never.stderr
    unknown = invoke("cases", "accept", "mehh", "--output", "x")
    assert unknown.exit_code == 2 and "did you mean 'meh'" in unknown.stderr
    assert not (root / ".oxy").exists() and (root / "s.prompt.yml").read_text() == text
    assert invoke("cases", "accept", "meh", "--output", "neutral").exit_code == 0
    assert (root / ".oxy" / "oxyeval.db").is_file()


def test_unknown_formats_are_refused(root: Path) -> None:
    for args in (
        ("history", "--format", "xml"),
        ("cases", "list", "--format", "xml"),
        ("cases", "show", "meh", "--format", "yaml"),
        ("cases", "run", "--format", "xml"),
    ):
        result = invoke(*args)
        assert result.exit_code == 2, args
        assert "xml" in result.stderr or "yaml" in result.stderr
        assert "pretty" in result.stderr and "json" in result.stderr
    assert not (root / ".oxy").exists()


def test_a_missing_database_given_explicitly_is_an_error(root: Path, tmp_path: Path) -> None:
    result = invoke("history", "--db", "/nonexistent/dir/x.db")
    assert result.exit_code == 2
    assert "/nonexistent/dir/x.db does not exist" in result.stderr
    as_json = invoke("history", "--db", "/nonexistent/dir/x.db", "--format", "json")
    assert as_json.exit_code == 2 and json.loads(as_json.stdout)["exitCode"] == 2
    assert invoke("cases", "list", "--db", str(tmp_path / "missing.db")).exit_code == 2
    assert not Path("/nonexistent").exists() and not (tmp_path / "missing.db").exists()


def test_history_counts_pending_apart_from_errors(root: Path) -> None:
    result = invoke("cases", "run", "--format", "json")
    summary = json.loads(result.stdout)["summary"]
    assert (summary["unknown"], summary["failed"]) == (0, 1)
    (run,) = json.loads(invoke("history", "--json").stdout)["runs"]
    assert (run["passed"], run["failed"], run["errors"], run["pending"]) == (2, 1, 0, 1)
    assert run["done"] == 4 and run["status"] == "completed"


def test_read_commands_never_write(root: Path) -> None:
    invoke("cases", "run")
    db = root / ".oxy" / "oxyeval.db"
    with open_store(db) as s:  # a crashed run, as another process would leave it
        crashed = s.runs.start(prompt_id="sentiment", total=3)
        from oxyeval.store._tables import runs

        with s.write("test") as conn:
            conn.execute(runs.update().where(runs.c.id == crashed).values(pid=2**22 + 12345))
        s.release_run(crashed)  # so closing this store leaves it 'running'
    (root / "s.prompt.yml").write_text(
        PENDING.replace("expected_output: negative}\n", "expected_output: NEG}\n", 1)
    )
    before = _digest(db)
    history = json.loads(invoke("history", "--json").stdout)["runs"]
    assert (
        history[0]["id"] == crashed and history[0]["status"] == "interrupted"
    )  # shown, not written
    listed = json.loads(invoke("cases", "list", "--json").stdout)["testCases"]
    assert {c["name"]: c["expectedOutput"] for c in listed}["sad"] == "NEG"  # the file's truth
    assert invoke("cases", "show", "sad").exit_code == 0
    assert _digest(db) == before
    with open_store(db, read_only=True) as r:
        assert r.runs.get(crashed).status == "running"  # type: ignore[union-attr]
        assert r.cases.get("sentiment::sad").expected_output == "negative"  # type: ignore[union-attr]


def test_a_0_1_0_history_is_read_then_upgraded(root: Path, tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    shutil.copyfile(FIXTURE, db)
    before = _digest(db)
    runs = json.loads(invoke("history", "--db", str(db), "--json").stdout)["runs"]
    assert len(runs) == 4 and _digest(db) == before
    assert {r["status"] for r in runs} == {"completed", "failed", "interrupted"}
    shown = json.loads(
        invoke("cases", "show", "sentiment::happy", "--db", str(db), "--json").stdout
    )
    assert shown["stats"]["totalRuns"] == 3
    assert invoke("cases", "run", "--db", str(db), "--case", "happy").exit_code == 0
    shown = json.loads(
        invoke("cases", "show", "sentiment::happy", "--db", str(db), "--json").stdout
    )
    assert shown["stats"]["totalRuns"] == 4
    assert len(json.loads(invoke("history", "--db", str(db), "--json").stdout)["runs"]) == 5


def test_config_history_entry_with_an_unset_password_var_or_a_bad_key(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(
        CONFIG + "history:\n  url: postgresql://oxy@127.0.0.1:1/db\n  password_var: OXY_NOT_SET\n",
        {"s.prompt.yml": PROMPT},
    )
    monkeypatch.chdir(root)
    monkeypatch.delenv("OXY_DB", raising=False)
    monkeypatch.delenv("OXY_NOT_SET", raising=False)
    # Not bad input (PGPASSWORD or ~/.pgpass may hold the password): it tries the server.
    result = invoke("history")
    assert result.exit_code == 3 and "cannot be reached" in result.stderr
    unknown = make_project(CONFIG + "history:\n  uri: x.db\n", {"s.prompt.yml": PROMPT})
    assert "uri" in invoke("history", "--project", str(unknown)).stderr


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_cases_and_history_on_postgresql(
    backend: Backend, pg_cluster: PgCluster, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = backend.fresh().url.replace("postgresql+psycopg://", "postgresql://")
    shown = url.replace(PASSWORD, "***")
    run = invoke("cases", "run", "--db", url, "--format", "json")
    assert run.exit_code == 1, run.stderr  # meh fails, as on SQLite
    doc = json.loads(run.stdout)
    assert doc["history"][0]["db"] == shown and doc["summary"]["passed"] == 2
    pretty = invoke("cases", "run", "--db", url, "--case", "happy")
    assert pretty.exit_code == 0 and f"history in {shown}" in pretty.stdout
    monkeypatch.setenv("OXY_DB", url)
    runs = json.loads(invoke("history", "--json").stdout)["runs"]
    assert [r["done"] for r in runs] == [1, 4]
    assert json.loads(invoke("cases", "show", "happy", "--json").stdout)["stats"]["totalRuns"] == 2
    assert invoke("cases", "accept", "meh").exit_code == 0
    assert "expected_output: neutral" in (root / "s.prompt.yml").read_text()
    listed = json.loads(invoke("cases", "list", "--json").stdout)["testCases"]
    assert {c["name"]: c["expectedOutput"] for c in listed}["meh"] == "neutral"
    assert not (root / ".oxy").exists()
    # The password comes from config.yml's password_var too, and is never printed.
    monkeypatch.delenv("OXY_DB")
    (root / "config.yml").write_text(
        CONFIG
        + f"history:\n  url: {url.replace(PASSWORD + '@', '@').replace(':@', '@')}\n  password_var: OXY_PG_PW\n"
    )
    monkeypatch.setenv("OXY_PG_PW", PASSWORD)
    both = [
        invoke("history"),
        invoke("history", "--json"),
        invoke("cases", "run", "--case", "happy"),
    ]
    assert [r.exit_code for r in both] == [0, 0, 0]
    for r in both:
        assert PASSWORD not in r.stdout + r.stderr
    monkeypatch.setenv("OXY_PG_PW", "wrong-" + PASSWORD)
    refused = invoke("history", "--json")
    assert refused.exit_code == 3 and "refused the password" in refused.stderr
    assert "password_var" in refused.stderr  # from config.yml's variable: it says so
    assert PASSWORD not in refused.stdout + refused.stderr
