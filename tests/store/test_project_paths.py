"""A history named in config.yml stays inside the project.

config.yml comes with a repository, from anyone: its ``history.url`` must not make
oxyeval create or write a file elsewhere (``~/.ssh/authorized_keys`` made into an SQLite
database, with a test name holding a key on its own line). The user's own ``--db`` and
``OXY_DB`` may point anywhere.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.store import LocationError, missing_folder, resolve_location

from ..conftest import MOCK_CONFIG, MakeProject

AGENT = (
    "model: agent_model\nsystem_instructions: hi\ntests:\n"
    "  - {type: consistency, n: 2, task_description: q, model_ref: judge}\n"
)
URL_LINE = MOCK_CONFIG.count("\n") + 2  # "history:" follows the mock config, then "url:"


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path_factory.mktemp("home")  # outside the project (tmp_path)
    (folder / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("OXY_DB", raising=False)
    return folder


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("~/.ssh/authorized_keys", "'~' is not expanded in config.yml"),
        ("~root/.ssh/authorized_keys", "'~' is not expanded in config.yml"),
        ("../outside.db", "leaves the project folder"),
        ("sqlite:///../outside.db", "leaves the project folder"),
        ("sqlite:////tmp/elsewhere.db", "leaves the project folder"),
    ],
)
def test_a_history_path_leaving_the_project_is_bad_input_everywhere(
    make_project: MakeProject, home: Path, url: str, why: str
) -> None:
    root = make_project(MOCK_CONFIG + f"history:\n  url: {url}\n", {"a.agent.yml": AGENT})
    before = _files(home)
    runner = CliRunner()
    for argv in (
        ["validate", str(root)],
        ["test", str(root / "a.agent.yml"), "--format", "json"],
        ["run", str(root / "a.agent.yml"), "--question", "hi"],
        ["history", "--project", str(root)],
        # The file is bad even when the user's --db takes the history elsewhere, or
        # when no history is used at all.
        ["test", str(root / "a.agent.yml"), "--db", str(root / "mine.db")],
        ["test", str(root / "a.agent.yml"), "--no-history"],
    ):
        result = runner.invoke(app, argv)
        assert result.exit_code == 2, (argv, result.output)
        assert f"config.yml:{URL_LINE}" in result.stderr and why in result.stderr, result.stderr
    assert _files(home) == before  # nothing created in the home folder
    assert not (root.parent / "outside.db").exists()
    assert not Path("/tmp/elsewhere.db").exists()
    document = json.loads(
        runner.invoke(app, ["test", str(root / "a.agent.yml"), "--format", "json"]).stdout
    )
    assert document["exitCode"] == 2


def test_a_link_out_of_the_project_is_followed_and_refused(
    make_project: MakeProject, home: Path
) -> None:
    root = make_project(MOCK_CONFIG + "history:\n  url: hist.db\n", {"a.agent.yml": AGENT})
    (root / "hist.db").symlink_to(home / ".ssh" / "authorized_keys")  # dangling: not made yet
    result = CliRunner().invoke(app, ["test", str(root / "a.agent.yml")])
    assert result.exit_code == 2, result.output
    assert "leaves the project folder" in result.stderr
    assert not (home / ".ssh" / "authorized_keys").exists()


def test_the_default_history_refuses_an_oxy_folder_linking_out(
    make_project: MakeProject, home: Path
) -> None:
    root = make_project(files={"a.agent.yml": AGENT})
    (root / ".oxy").symlink_to(home / ".ssh")
    result = CliRunner().invoke(app, ["test", str(root / "a.agent.yml")])
    assert result.exit_code == 2, result.output
    assert ".oxy folder links outside the project" in result.stderr
    assert list((home / ".ssh").iterdir()) == []


def test_missing_folders_of_a_configured_history_are_not_created(
    make_project: MakeProject, home: Path
) -> None:
    root = make_project(MOCK_CONFIG + "history:\n  url: db/h.db\n", {"a.agent.yml": AGENT})
    runner = CliRunner()
    checked = runner.invoke(app, ["validate", str(root)])
    assert checked.exit_code == 0, checked.output  # valid: the folder may be made before a run
    assert "warning: " in checked.stderr and f"config.yml:{URL_LINE}" in checked.stderr
    assert "does not exist" in checked.stderr
    ran = runner.invoke(app, ["test", str(root / "a.agent.yml"), "--format", "json"])
    assert ran.exit_code == 0, ran.output  # the history is optional for oxy test: a warning
    assert "does not exist" in json.loads(ran.stdout)["history"][0]["error"]
    assert not (root / "db").exists()
    (root / "db").mkdir()
    stored = runner.invoke(app, ["test", str(root / "a.agent.yml")])
    assert stored.exit_code == 0, stored.output
    assert (root / "db" / "h.db").is_file()


def test_the_projects_own_oxy_folder_is_created(make_project: MakeProject, home: Path) -> None:
    root = make_project(MOCK_CONFIG + "history:\n  url: .oxy/team.db\n", {"a.agent.yml": AGENT})
    result = CliRunner().invoke(app, ["test", str(root / "a.agent.yml")])
    assert result.exit_code == 0, result.output
    assert (root / ".oxy" / "team.db").is_file()


def test_the_users_own_db_may_point_anywhere(tmp_path: Path, home: Path) -> None:
    """--db and OXY_DB are typed by the user: ~ is expanded and folders are made."""
    location = resolve_location("~/histories/h.db", project_root=tmp_path / "p", environ={})
    assert location.path == home / "histories" / "h.db"
    assert location.make_folders and missing_folder(location) is None
    from_env = resolve_location(None, environ={"OXY_DB": str(tmp_path / "x" / "y.db")})
    assert from_env.path == tmp_path / "x" / "y.db" and from_env.make_folders


def test_a_configured_path_is_resolved_inside_the_project(tmp_path: Path, home: Path) -> None:
    root = tmp_path
    (root / "sub").mkdir(parents=True)
    inside = resolve_location(project_root=root, history={"url": "sub/../sub/h.db"}, environ={})
    assert inside.path == (root / "sub" / "h.db").resolve() and not inside.make_folders
    absolute = resolve_location(project_root=root, history={"url": str(root / "a.db")}, environ={})
    assert absolute.path == (root / "a.db").resolve()
    with pytest.raises(LocationError) as caught:
        resolve_location(project_root=root, history={"url": "~/h.db"}, environ={})
    assert caught.value.key == ("history", "url")
    assert not (home / "h.db").exists() and os.listdir(home) == [".ssh"]


def test_a_malformed_history_url_in_config_points_at_its_line(tmp_path: Path) -> None:
    with pytest.raises(LocationError) as caught:
        resolve_location(
            project_root=tmp_path, history={"url": "postgresql://u@[::1/db"}, environ={}
        )
    assert caught.value.key == ("history", "url") and "not a valid URL" in str(caught.value)
