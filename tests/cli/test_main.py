"""``main()``, the ``oxy`` entry point: Click runs without its standalone mode, command-line
errors become one JSON document with ``--format json``, and nothing replaces
``sys.stdout`` or ``sys.stderr``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import typer

import oxyeval.cli._app as cli
from oxyeval.cli import main
from oxyeval.cli.console import echo, streams
from oxyeval.report.documents import SCHEMA_VERSION

from ..conftest import MakeProject


def oxy(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    code = info.value.code
    assert isinstance(code, int)
    return code, out, err


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(files={"a.agent.yml": "model: agent_model\nsystem_instructions: hi\n"})
    monkeypatch.chdir(project)
    return project


USAGE_ERRORS = [
    (["test", "a.agent.yml", "--format", "json", "--bogus"], "No such option: --bogus"),
    (
        ["test", "a.agent.yml", "--format=json", "--min-accuracy", "abc"],
        "'abc' is not a valid float",
    ),
    (["test", "a.agent.yml", "--format", "json", "--threshold-mode", "x"], "'x' is not one of"),
    (["ab", "show", "--format", "json"], "Missing argument 'BRANCH'"),
    (["run", "--format", "json"], "Missing argument 'FILE'"),
    (["cases", "run", "--format", "json", "--concurrency", "0"], "not in the range"),
    (["cases", "list", "--json", "--bogus"], "No such option: --bogus"),
    (["history", "--json", "--limit", "many"], "'many' is not a valid int"),
    (["compile", "w.workflow.yml", "--format", "json"], "No such option: --format"),
    (["nosuch", "--format", "json"], "No such command 'nosuch'"),
]


@pytest.mark.parametrize(
    ("args", "reason"), USAGE_ERRORS, ids=[" ".join(a) for a, _ in USAGE_ERRORS]
)
def test_a_command_line_error_with_json_is_one_document_and_exit_2(
    root: Path, capsys: pytest.CaptureFixture[str], args: list[str], reason: str
) -> None:
    code, out, err = oxy(args, capsys)
    assert code == 2
    assert reason in err and "Usage:" in err  # Click's own message, on stderr
    doc = json.loads(out)  # exactly one document: json.loads refuses anything after it
    assert doc == {
        "schemaVersion": SCHEMA_VERSION,
        "document": "error",
        "error": " ".join(err.split()),
        "exitCode": 2,
    }


def test_without_json_a_command_line_error_prints_nothing_on_stdout(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = oxy(["test", "a.agent.yml", "--bogus"], capsys)
    assert code == 2 and out == ""
    assert "Error: No such option: --bogus" in err


def test_help_version_and_no_arguments(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = oxy(["--version"], capsys)
    assert code == 0 and out.startswith("oxyeval ")
    code, out, _err = oxy(["cases", "run", "--help"], capsys)
    assert code == 0 and "--prompt-version" in out
    assert "--version" not in out.replace("--prompt-version", "")  # the old name is hidden
    code, out, err = oxy([], capsys)  # no command: the help, as a usage error
    assert code == 2 and out == "" and "Commands:" in err


def test_validate_without_a_project_gives_json_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = oxy(["validate", "--format", "json"], capsys)
    assert code == 2 and "no config.yml" in err
    doc = json.loads(out)
    assert doc["exitCode"] == 2 and "no config.yml" in doc["error"]


def _fake_app(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, object]]:
    """Swap in an app whose commands record the ``sys`` streams they see."""
    seen: list[tuple[object, object]] = []
    fake = typer.Typer()

    @fake.command("look")
    def look() -> None:
        seen.append((sys.stdout, sys.stderr))
        echo("looked")

    @fake.command("half")
    def half(format: str = typer.Option("pretty", "--format")) -> None:
        seen.append((sys.stdout, sys.stderr))
        streams().stdout.write('{"partial": true}\n')
        raise RuntimeError("broke after printing")

    monkeypatch.setattr(cli, "app", fake)
    return seen


def test_main_never_replaces_the_process_streams(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = _fake_app(monkeypatch)
    before = (sys.stdout, sys.stderr)
    code, out, _err = oxy(["look"], capsys)
    assert code == 0 and out == "looked\n"
    assert seen == [before]  # what the command saw is what the caller had
    assert (sys.stdout, sys.stderr) == before


def test_a_failure_after_the_document_adds_no_second_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_app(monkeypatch)
    code, out, err = oxy(["half", "--format", "json"], capsys)
    assert code == 3
    assert "internal error: RuntimeError: broke after printing" in err
    assert json.loads(out) == {"partial": True}  # one document: the command's own


def test_debug_shows_the_traceback_of_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = typer.Typer()

    @fake.command("boom")
    def boom(debug: bool = typer.Option(False, "--debug")) -> None:
        raise RuntimeError("a bug")

    @fake.command("other")
    def other() -> None: ...

    monkeypatch.setattr(cli, "app", fake)
    code, _out, err = oxy(["boom", "--debug"], capsys)
    assert code == 3
    assert "Traceback" in err and "RuntimeError: a bug" in err
