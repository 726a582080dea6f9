"""What the commands print when something goes wrong: each error
once, in plain words, with the same prefixes across commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oxyeval.cli import main
from oxyeval.report.documents import SCHEMA_VERSION

from ..conftest import MakeProject

CONFIG = """\
models:
  - {name: m, vendor: mock, outputs: ["hi"]}
databases:
  - {name: shop, type: duckdb, dataset: data}
"""
BAD_TEMPLATE = """\
tasks:
  - name: q
    type: execute_sql
    database: shop
    sql_query: SELECT 1 AS a
  - name: f
    type: formatter
    template: "{{ q.nope }}"
"""
TEMPLATE_ERROR = (
    "t.workflow.yml:8: tasks[1].template (task 'f'): template error: "
    "the SQL result has no column or attribute 'nope' (columns: a)"
)


@pytest.fixture(autouse=True)
def _dataset_folder(tmp_path: Path) -> None:
    """config.yml's database names a dataset folder, which must exist to load."""
    (tmp_path / "data").mkdir(exist_ok=True)


def oxy(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    code = info.value.code
    assert isinstance(code, int)
    return code, out, err


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(CONFIG, {"data/x.csv": "a\n1\n", "t.workflow.yml": BAD_TEMPLATE})
    monkeypatch.chdir(project)
    return project


def test_oxy_run_prints_a_template_error_once_then_names_the_failed_task(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = oxy(["run", "t.workflow.yml", "--no-history"], capsys)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith("✓ q execute_sql ")
    assert lines[1:] == [f"✗ f: {TEMPLATE_ERROR}", "error: task 'f' failed (see its error above)"]


def test_oxy_run_quiet_prints_the_error_in_the_summary(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = oxy(["run", "t.workflow.yml", "--no-history", "-q"], capsys)
    assert code == 2
    assert err.splitlines() == [f"error: task 'f' failed: {TEMPLATE_ERROR}"]


def test_oxy_run_json_carries_the_one_line_error(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = oxy(["run", "t.workflow.yml", "--no-history", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == doc["summary"]["exitCode"] == 2
    assert doc["failedTasks"] == [{"task": "f", "error": TEMPLATE_ERROR}]


def test_oxy_run_warns_with_the_warning_prefix_when_the_history_cannot_be_written(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = "tasks:\n  - {name: q, type: execute_sql, database: shop, sql_query: SELECT 1 AS a}\n"
    project = make_project(CONFIG, {"data/x.csv": "a\n1\n", "ok.workflow.yml": ok})
    monkeypatch.chdir(project)
    (project / "folder").mkdir()
    code, out, err = oxy(["run", "ok.workflow.yml", "--db", "folder", "-q"], capsys)
    assert code == 0 and "| 1 |" in out  # the run stands
    assert err.splitlines() == [
        "warning: history not stored in folder: history database folder is a directory, "
        "not a database file; point --db/OXY_DB at a file"
    ]


BAD_AGENT = """\
model: m
system_instructions: hi
tests:
  - type: consistency
    n: -1
    task_description: x
"""
BAD_N = "a.agent.yml:5:8: tests[0].n: must be at least 2, got -1"


@pytest.fixture
def bad(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(
        CONFIG,
        {
            "a.agent.yml": BAD_AGENT,
            "p.prompt.yml": "name: p\nmodel: m\ntemplate: hi\nthreshold: 7\ncases: []\n",
        },
    )
    monkeypatch.chdir(project)
    return project


def test_oxy_test_json_error_of_a_load_failure_is_the_message_alone(
    bad: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = oxy(["test", "a.agent.yml", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == doc["exitCode"] == 2
    assert doc["error"] == BAD_N
    assert err.startswith(f"error: {BAD_N}\n")  # the terminal keeps the excerpt and count
    assert err.rstrip().endswith("1 error(s) in a.agent.yml")


def test_oxy_run_json_error_of_a_load_failure_is_the_message_alone(
    bad: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = oxy(["run", "a.agent.yml", "--question", "hi", "--format", "json"], capsys)
    assert code == 2
    assert json.loads(out) == {
        "schemaVersion": SCHEMA_VERSION,
        "document": "error",
        "error": BAD_N,
        "exitCode": 2,
    }


def test_oxy_cases_json_error_of_a_load_failure_is_the_message_alone(
    bad: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = oxy(["cases", "run", "p.prompt.yml", "--format", "json"], capsys)
    assert code == 2
    assert json.loads(out) == {
        "schemaVersion": SCHEMA_VERSION,
        "document": "error",
        "error": "p.prompt.yml:4:12: threshold: must be at most 1, got 7",
        "exitCode": 2,
    }


def test_several_load_errors_are_one_line_each(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = make_project(CONFIG, {"a.agent.yml": BAD_AGENT.replace("x\n", "x\n    nn: 3\n")})
    monkeypatch.chdir(project)
    _code, out, _err = oxy(["test", "a.agent.yml", "--format", "json"], capsys)
    assert json.loads(out)["error"].splitlines() == [
        BAD_N,
        "a.agent.yml:7:5: tests[0].nn: unknown key 'nn'; did you mean 'n'? (allowed here: "
        "concurrency, judge_swap, metrics, min_judged, model_ref, n, name, pairing, prompt, "
        "scores, "
        "task_description, task_ref, type)",
    ]


def test_every_logged_warning_reads_warning_and_notes_stay_plain() -> None:
    import io
    import logging

    from rich.console import Console

    from oxyeval.cli._app import setup_logging

    out = io.StringIO()
    setup_logging(Console(file=out, width=200, color_system=None), debug=False)
    log = logging.getLogger("oxyeval.suites.run_cache")
    log.warning("cache: disabled for this run, the history database failed: %s", "locked")
    log.warning("warning: already prefixed")
    log.info("a plain note")
    assert out.getvalue().splitlines() == [
        "warning: cache: disabled for this run, the history database failed: locked",
        "warning: already prefixed",
        "a plain note",
    ]


def test_cache_with_no_history_is_refused_before_any_call(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / "a.agent.yml").write_text("model: m\nsystem_instructions: hi\n")
    expected = "--cache replays answers kept in the history, which --no-history turns off"
    code, out, err = oxy(["run", "t.workflow.yml", "--no-history", "--cache"], capsys)
    assert code == 2 and out == "" and expected in err
    code, out, err = oxy(
        ["test", "a.agent.yml", "--no-history", "--cache", "--format", "json"], capsys
    )
    assert code == 2 and json.loads(out)["error"] == expected and expected in err
    assert not (root / ".oxy").exists()


def test_an_empty_question_is_bad_input(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (root / "a.agent.yml").write_text("model: m\nsystem_instructions: hi\n")
    for question in ("", "  \n"):
        code, out, err = oxy(["run", "a.agent.yml", "--question", question], capsys)
        assert code == 2 and out == ""
        assert "--question is empty" in err


def test_oxy_run_prints_the_workflows_load_warnings_once(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / "a.agent.yml").write_text("model: m\nsystem_instructions: hi\n")
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - name: a\n    type: agent\n    agent_ref: a.agent.yml\n"
        "    prompt: hello\n    retry: 2\n"
    )
    code, out, err = oxy(["run", "w.workflow.yml", "--no-history"], capsys)
    assert code == 0 and out.strip() == "hi"
    assert err.count("warning: w.workflow.yml:6:5: tasks[0].retry: retry is accepted") == 1
    code, out, err = oxy(["run", "w.workflow.yml", "--no-history", "--format", "json"], capsys)
    (warning,) = json.loads(out)["warnings"]
    assert code == 0 and warning.startswith("warning: w.workflow.yml:6:5: tasks[0].retry:")
