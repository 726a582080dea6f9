"""Project files that are links out of the project are refused, unread.

A shared project (a fork's pull request, a downloaded example) can ship a project file as
a link to a file of whoever runs it. Each test links to a "victim" outside the project
that holds a token on a line a parse error would quote, and checks that no reader shows
it, and that each says which file is the link.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.errors import LoadError
from oxyeval.project.chattest import load_json
from oxyeval.project.document import load_yaml, path_problem
from oxyeval.project.files import find_config, project_root

from ..conftest import VICTIM_SECRET as TOKEN
from ..conftest import VICTIM_TEXT, MakeProject


def _refused(path: Path, relative: str) -> str:
    """The one message of a read of ``path`` that must be refused, checked."""
    with pytest.raises(LoadError) as caught:
        load_yaml(path)
    (diagnostic,) = caught.value.diagnostics
    text = diagnostic.format()
    assert "is a link that leaves the project folder" in text
    assert relative in text
    assert TOKEN not in text
    return text


@pytest.mark.parametrize(
    "name",
    [
        "prompts/x.prompt.yml",
        "x.cases.yml",
        "agents/x.agent.yml",
        "x.workflow.yml",
        "x.agent.test.yml",
        "config.yml",
    ],
)
def test_a_project_file_that_links_out_is_refused_unread(
    make_project: MakeProject, victim: Path, name: str
) -> None:
    root = make_project()
    link = root / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(victim)
    _refused(link, name)


def test_a_file_in_a_linked_folder_that_leaves_is_refused(
    make_project: MakeProject, victim: Path
) -> None:
    """The folder, not the file, is the link: its target has no config.yml, so walking up
    from the target would find no project and read the file as a stray one."""
    root = make_project()
    (victim.parent / "x.prompt.yml").write_text(VICTIM_TEXT, encoding="utf-8")
    (root / "prompts").symlink_to(victim.parent, target_is_directory=True)
    _refused(root / "prompts" / "x.prompt.yml", os.path.join("prompts", "x.prompt.yml"))
    assert project_root(root / "prompts" / "x.prompt.yml") == root


def test_a_link_that_stays_inside_the_project_is_read(make_project: MakeProject) -> None:
    root = make_project(files={"shared/a.prompt.yml": "name: a\n"})
    (root / "a.prompt.yml").symlink_to(Path("shared") / "a.prompt.yml")
    assert load_yaml(root / "a.prompt.yml").data == {"name": "a"}
    assert path_problem(root / "a.prompt.yml") is None


def test_a_file_in_no_project_is_read_as_before(tmp_path: Path, victim: Path) -> None:
    """A file named on the command line outside any project is the user's own choice."""
    (tmp_path / "mine.yml").write_text("a: 1\n", encoding="utf-8")
    (tmp_path / "link.yml").symlink_to(tmp_path / "mine.yml")
    assert load_yaml(tmp_path / "link.yml").data == {"a": 1}
    assert project_root(tmp_path / "link.yml") is None


def test_the_project_of_a_link_is_where_the_link_is(
    make_project: MakeProject, victim: Path
) -> None:
    root = make_project()
    (root / "x.agent.yml").symlink_to(victim)
    assert find_config(root / "x.agent.yml") == root / "config.yml"


def test_a_chattest_file_that_links_out_is_refused_unread(
    make_project: MakeProject, victim: Path
) -> None:
    root = make_project()
    (root / "chat.json").symlink_to(victim)
    with pytest.raises(LoadError) as caught:
        load_json(root / "chat.json")
    text = caught.value.diagnostics[0].format()
    assert "leaves the project" in text and TOKEN not in text


#: Each in a workflow of its own: a workflow with one error is not linked further.
SQL_WORKFLOW = "tasks:\n  - {name: q, type: execute_sql, database: db, sql_file: q.sql}\n"
AGENT_WORKFLOW = "tasks:\n  - {name: a, type: agent, agent_ref: helper, prompt: hi}\n"


def test_validate_names_every_link_out_and_quotes_none(
    make_project: MakeProject, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI end to end, as a fork's pull request would run it in a public CI log: the
    YAML files, an SQL file a workflow names, an agent found by its bare name."""
    from oxyeval.cli._app import app

    root = make_project(
        files={"q.workflow.yml": SQL_WORKFLOW, "a.workflow.yml": AGENT_WORKFLOW, "data/.keep": ""},
    )
    with (root / "config.yml").open("a", encoding="utf-8") as handle:
        handle.write("databases:\n  - {name: db, type: duckdb, dataset: data}\n")
    for name in ("q.sql", "agents/helper.agent.yml", "s.prompt.yml", "s.agent.test.yml"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(victim)
    monkeypatch.chdir(root)
    result = CliRunner().invoke(app, ["validate"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert TOKEN not in result.output
    text = " ".join(result.output.split())
    for name in ("agents/helper.agent.yml", "s.prompt.yml", "s.agent.test.yml"):
        assert f"{name} (or a folder on its way) points outside it" in text
    assert "q.sql" in text
