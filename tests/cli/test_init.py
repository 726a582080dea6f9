"""``oxy init``: a starter project that validates, tests and runs its cases offline, and
never overwrites a file without --force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.project.scaffold import SCAFFOLD


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_the_scaffold_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    created = invoke("init", "my project")
    assert created.exit_code == 0, created.output
    root = tmp_path / "my project"
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == sorted(
        [*SCAFFOLD, ".gitignore"]
    )
    assert ".oxy/" in (root / ".gitignore").read_text("utf-8").splitlines()
    assert "cd 'my project'" in created.stdout and "oxy cases run" in created.stdout
    validated = invoke("validate", str(root), "--format", "json")
    assert validated.exit_code == 0, validated.output
    doc = json.loads(validated.stdout)
    assert doc["valid"] and doc["warnings"] == [] and len(doc["files"]) == 3
    monkeypatch.chdir(root)  # the commands init prints, from the project folder
    tested = invoke("test", "agents/support.agent.yml", "--min-accuracy", "0.8", "--format", "json")
    assert tested.exit_code == 0, tested.output
    assert json.loads(tested.stdout)["accuracy"] == 1.0
    cases = invoke("cases", "run", "--format", "json")
    assert cases.exit_code == 0, cases.output
    assert json.loads(cases.stdout)["summary"]["passed"] == 3
    assert (root / ".oxy" / "oxyeval.db").is_file()


def test_existing_files_are_never_overwritten_without_force(tmp_path: Path) -> None:
    (tmp_path / "config.yml").write_text("models: []\n", encoding="utf-8")
    refused = invoke("init", str(tmp_path))
    assert refused.exit_code == 2
    assert f"{tmp_path / 'config.yml'} already exists; nothing was written" in refused.stderr
    assert "--force" in refused.stderr
    assert (tmp_path / "config.yml").read_text("utf-8") == "models: []\n"
    assert not (tmp_path / "agents").exists()  # nothing at all was written
    forced = invoke("init", str(tmp_path), "--force")
    assert forced.exit_code == 0, forced.output
    assert (tmp_path / "config.yml").read_text("utf-8") == SCAFFOLD["config.yml"]


def test_default_folder_and_bad_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    here = invoke("init")
    assert here.exit_code == 0 and (tmp_path / "config.yml").is_file()
    assert "cd " not in here.stdout
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x", encoding="utf-8")
    assert invoke("init", str(a_file)).exit_code == 2
    (tmp_path / "other" / "config.yml").mkdir(parents=True)  # a folder where a file goes
    folder = invoke("init", str(tmp_path / "other"), "--force")
    assert folder.exit_code == 2 and "already exists; nothing was written (remove it first)" in (
        folder.stderr
    )


def test_init_keeps_the_history_out_of_git_without_replacing_a_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.pyc", encoding="utf-8")
    assert invoke("init", str(tmp_path)).exit_code == 0
    lines = (tmp_path / ".gitignore").read_text("utf-8").splitlines()
    assert lines[0] == "*.pyc" and lines[-1] == ".oxy/"
    assert invoke("init", str(tmp_path), "--force").exit_code == 0
    assert (tmp_path / ".gitignore").read_text("utf-8").count(".oxy/") == 1  # once


def test_bare_oxy_test_runs_a_new_projects_tests_and_names_the_other_kinds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert invoke("init", str(tmp_path)).exit_code == 0
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # the project is found from a folder inside it
    tested = invoke("test", "--format", "json", "--no-history")
    assert tested.exit_code == 0, tested.output
    assert [t["name"] for t in json.loads(tested.stdout)["tests"]] == ["support hours"]
    assert "test cases in 1 file: oxy cases run" in tested.stderr
    # With oxy's *.test.yml files it runs those, and says how to run the others.
    (tmp_path / "agents" / "support.agent.test.yml").write_text(
        "cases:\n  - {name: hours, prompt: When is it open, expected: 9am to 5pm}\n",
        encoding="utf-8",
    )
    both = invoke("test", "--format", "json", "--no-history")
    assert json.loads(both.stdout)["kind"] == "test-files", both.output
    assert "consistency tests in 1 file do not run with the *.test.yml files: oxy test .." in (
        both.stderr
    )
