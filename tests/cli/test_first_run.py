"""What a newcomer types first: -h, the command list, usage lines, global flags, a
mistyped path, a folder that is no project, output piped to a file."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.cli.helptext import ROOT_COMMANDS

from ..conftest import MakeProject

AGENT = """\
model: agent_model
system_instructions: Be brief.
tests:
  - {type: consistency, name: totals, n: 2, task_description: "Total?", model_ref: judge}
"""


def invoke(*args: str, **kwargs: object):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), **kwargs)  # type: ignore[arg-type]


def test_help_lists_init_first_with_whole_summaries_and_takes_h() -> None:
    short, long = invoke("-h"), invoke("--help")
    assert short.exit_code == 0 and short.stdout == long.stdout
    commands = short.stdout.split("Commands:")[1]
    listed = [line.split()[0] for line in commands.splitlines() if line.startswith("  ")]
    assert listed == list(ROOT_COMMANDS)
    assert "..." not in commands and "…" not in commands
    assert max(len(line) for line in short.stdout.splitlines()) <= 80
    group = invoke("cases", "-h")  # a group: whole first sentences, and -h inherited
    assert group.exit_code == 0 and "..." not in group.stdout.split("Commands:")[1]
    usage = invoke("run", "-h")
    assert usage.stdout.startswith("Usage: oxy run [OPTIONS] FILE\n"), usage.stdout


def test_verbose_logs_each_model_call_and_no_color_strips_colours(
    make_project: MakeProject,
) -> None:
    root = make_project(files={"a.agent.yml": AGENT})
    quiet = invoke("test", str(root / "a.agent.yml"), "--no-history", "-q")
    assert "answered in" not in quiet.stderr
    loud = invoke("-v", "test", str(root / "a.agent.yml"), "--no-history", "-q")
    assert loud.exit_code == 0, loud.stderr
    assert "model agent_model: answered in" in loud.stderr
    colour = invoke("test", str(root / "nope.agent.yml"), env={"FORCE_COLOR": "1", "TERM": "xterm"})
    plain = invoke(
        "--no-color",
        "test",
        str(root / "nope.agent.yml"),
        env={"FORCE_COLOR": "1", "TERM": "xterm"},
    )
    assert "\x1b[" in colour.stderr and "\x1b[" not in plain.stderr
    assert "file not found" in plain.stderr


def test_piped_output_wraps_at_80_columns_unless_columns_says(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    root = make_project(files={"a.agent.yml": AGENT})
    piped = invoke("test", str(root / "a.agent.yml"), "--no-history")
    assert piped.exit_code == 0, piped.stderr
    assert 70 < max(len(line) for line in piped.stdout.splitlines()) <= 80  # the title's rule
    wide = invoke("test", str(root / "a.agent.yml"), "--no-history", env={"COLUMNS": "120"})
    assert 110 < max(len(line) for line in wide.stdout.splitlines()) <= 120


def test_a_mistyped_path_gets_a_did_you_mean_and_no_project_names_oxy_init(
    make_project: MakeProject,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = make_project(files={"agents/support.agent.yml": AGENT})
    monkeypatch.chdir(root)
    typo = invoke("test", "agents/suport.agent.yml")
    assert typo.exit_code == 2
    assert "did you mean 'agents/support.agent.yml'?" in typo.stderr
    folder = invoke("test", "agnts/support.agent.yml")
    assert "did you mean 'agents/support.agent.yml'?" in folder.stderr
    assert "did you mean" not in invoke("test", "zzz.agent.yml").stderr
    monkeypatch.chdir(tmp_path_factory.mktemp("no-project"))
    none = invoke("test", "--format", "json")
    assert none.exit_code == 2 and "`oxy init` makes one here" in none.stderr
    assert json.loads(none.stdout)["exitCode"] == 2


def test_cases_show_takes_limit_and_still_its_older_recent(make_project: MakeProject) -> None:
    root = make_project(
        files={
            "p.prompt.yml": "model: agent_model\ntemplate: hi\nsimilarity: lexical\ncases:\n  - {name: c, input: {}, expected_output: x}\n"
        }
    )
    for option in ("--limit", "--recent"):
        shown = invoke("cases", "show", "c", option, "3", "--project", str(root), "--json")
        assert shown.exit_code == 0, shown.output
        assert json.loads(shown.stdout)["testCase"]["name"] == "c"
    assert "--recent" not in invoke("cases", "show", "-h").stdout


def test_the_serve_extra_is_named_as_this_install_needs_it() -> None:
    from oxyeval.cli.serve import _install_hint

    # This test runs from a clone (the tests are not installed): pip needs the folder.
    assert _install_hint("serve").startswith("pip install -e '.[serve]' in ")


def test_oxys_own_flags_may_follow_the_command() -> None:
    from oxyeval.cli._app import global_flags_first

    assert global_flags_first(["test", "a/", "-v", "--no-color"]) == [
        "-v",
        "--no-color",
        "test",
        "a/",
    ]
    assert global_flags_first(["run", "w.yml", "--", "-v"]) == ["run", "w.yml", "--", "-v"]
