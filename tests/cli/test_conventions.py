"""One set of command-line conventions, checked on every command's --help, so a new
command (oxy ab, oxy chattest, oxy serve) cannot break them."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from oxyeval.cli._app import app

#: Click's default placeholders, which read differently command to command.
_DEFAULT_METAVAR = re.compile(r"<(?:str|int|float|int range|float range)>|\{[a-z_]+\}")


def _commands() -> Iterator[tuple[list[str], object]]:
    root = typer.main.get_command(app)

    def walk(command: object, path: list[str]) -> Iterator[tuple[list[str], object]]:
        children = getattr(command, "commands", None)
        if children:
            for name, sub in children.items():
                yield from walk(sub, [*path, name])
        else:
            yield path, command

    yield from walk(root, [])


COMMANDS = list(_commands())


def _help(path: list[str]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_command_is_walked() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"test", "run", "report", "validate", "cases run", "cache clear", "history"} <= names


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_the_help_follows_the_conventions(path: list[str]) -> None:
    text = _help(path)
    usage = text.splitlines()[0]
    # Placeholders are upper case words: FILE, FILE..., PATH..., NAME, DIR, N, TEXT.
    assert not _DEFAULT_METAVAR.search(text), text
    for word in re.findall(r"[\[{]([A-Za-z_.]+)[\]}]", usage):
        assert word == "OPTIONS" or word.rstrip(".").isupper(), usage
    # --debug on every command, with what it does.
    assert re.search(r"--debug\s+\S", text), text
    # --format always offers its choices; --json is the old spelling, not advertised.
    if "--format" in text:
        assert re.search(r"--format <pretty\|json>", text), text
    assert not re.search(r"^\s+--json\b", text, re.M), text
    # The same words for the same things everywhere.
    if "--db" in text:
        assert "--db PATH|URL" in text, text
    if "--project" in text:
        assert "--project DIR" in text, text
    if "--cache" in text:
        assert "test" not in text.split("--cache", 1)[1].split("--", 1)[0].lower()


def test_history_kind_offers_its_choices() -> None:
    assert "--kind cases|consistency|workflow|ab|passfail|sdk|ask|test" in _help(["history"])


def test_a_missing_file_is_named_as_given_by_every_command(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """one rule for paths in messages: as the user typed them."""
    from pathlib import Path

    root = Path(str(tmp_path))
    (root / "config.yml").write_text("models:\n  - {name: m, vendor: mock, outputs: [x]}\n")
    monkeypatch.chdir(root)
    for command in (["run", "nope.workflow.yml"], ["test", "nope.agent.yml"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, result.stderr
        assert f"error: {command[1]}: file not found" in result.stderr
        assert str(root) not in result.stderr


def test_validate_lists_the_files_as_the_user_would_type_them(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``oxy validate --format json`` listed a project found from the
    working folder with absolute paths, and a folder argument's config.yml too, beside
    relative agent paths. Now: relative to where the user stands, or as given."""
    import json
    from pathlib import Path

    root = Path(str(tmp_path))
    (root / "config.yml").write_text("models:\n  - {name: m, vendor: mock, outputs: [x]}\n")
    (root / "agents").mkdir()
    (root / "agents" / "a.agent.yml").write_text("model: m\nsystem_instructions: hi\n")

    def files(*args: str) -> list[str]:
        result = CliRunner().invoke(app, ["validate", "--format", "json", *args])
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)["files"]

    monkeypatch.chdir(root)
    assert files() == ["config.yml", "agents/a.agent.yml"]
    assert files(".") == ["config.yml", "agents/a.agent.yml"]
    monkeypatch.chdir(root / "agents")
    assert files() == ["../config.yml", "../agents/a.agent.yml"]
    assert files("--project", str(root)) == [
        str(root / "config.yml"),
        str(root / "agents/a.agent.yml"),
    ]
