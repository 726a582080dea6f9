"""The words of a workflow's run-time errors: one line that names the
file and line, the key and the task, and says what was wrong in the template's terms,
never a Python class or module path."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.templates import TemplateRef, render
from oxyeval.workflow.engine import WorkflowFailed, execute_workflow
from oxyeval.workflow.outputs import ConsistentOutput, LoopIteration, LoopOutput, LoopValue
from oxyeval.workflow.sql import SqlResult

from ..conftest import MakeProject

CONFIG = """\
models:
  - {name: m, vendor: mock, outputs: ["hi"]}
databases:
  - {name: shop, type: duckdb, dataset: data}
"""
WORKFLOW = """\
tasks:
  - name: q
    type: execute_sql
    database: shop
    sql_query: SELECT 1 AS a
  - name: f
    type: formatter
    template: "{{ q.nope }}"
"""


def _failed(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> WorkflowFailed:
    root = make_project(CONFIG, {"data/x.csv": "a\n1\n", "t.workflow.yml": WORKFLOW})
    monkeypatch.chdir(root)  # paths in messages are shown relative to the working folder
    with pytest.raises(WorkflowFailed) as info:
        asyncio.run(execute_workflow(Path("t.workflow.yml")))
    return info.value


def test_a_runtime_template_error_is_one_line_naming_file_line_key_and_task(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = _failed(make_project, monkeypatch)
    [record] = failed.run.failed
    assert record.error == (
        "t.workflow.yml:8: tasks[1].template (task 'f'): template error: "
        "the SQL result has no column or attribute 'nope' (columns: a)"
    )
    assert str(failed) == f"task 'f' failed: {record.error}"
    assert failed.exit_code == 2  # the file must change: bad input


def test_the_brief_summary_names_the_failed_tasks_without_repeating_their_errors(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = _failed(make_project, monkeypatch)
    assert failed.run.summary(brief=True) == "task 'f' failed (see its error above)"


def _message(source: str, **context: Any) -> str:
    with pytest.raises(LoadError) as info:
        render(TemplateRef(source), context)
    [diagnostic] = info.value.diagnostics
    where = " (template line 1)"  # a template from no file says where in itself
    assert diagnostic.message.endswith(where)
    return diagnostic.message.removesuffix(where)


def test_a_missing_row_of_a_sql_result_says_how_many_rows_there_are() -> None:
    result = SqlResult(["a"], [(1,)])
    assert _message("{{ q[3] }}", q=result) == (
        "template error: the SQL result has no row 3 (it has 1 row)"
    )


@pytest.mark.parametrize(
    ("source", "value", "expected"),
    [
        (
            "{{ s.nope }}",
            ConsistentOutput("an answer", 0.9, {}),
            "the agent's answer has no attribute 'nope' (it has value, score and details)",
        ),
        (
            "{{ s.nope }}",
            LoopOutput([]),
            "the loop's output has no attribute 'nope': it is a list of 0 iteration(s); "
            "read one ([0].name) or loop over them",
        ),
        ("{{ s[2] }}", LoopOutput([]), "the loop's output has no iteration 2 (it has 0)"),
        (
            "{{ s.nope }}",
            LoopValue("x", 0),
            "the loop's current item has no attribute 'nope' (it has value and index)",
        ),
        (
            "{{ s.nope }}",
            LoopIteration("x", 0, {"line": "a"}, ["line"], "line"),
            "the iteration has no task 'nope' (tasks: line; and value, index)",
        ),
    ],
)
def test_workflow_values_explain_what_they_hold(source: str, value: Any, expected: str) -> None:
    message = _message(source, s=value)
    assert message == f"template error: {expected}"
    assert "oxyeval." not in message


def test_another_class_is_named_without_its_module() -> None:
    class Thing:
        pass

    assert _message("{{ t.nope }}", t=Thing()) == (
        "template error: 'Thing object' has no attribute 'nope'"
    )


def test_an_undefined_name_still_lists_the_variables_available() -> None:
    assert _message("{{ nope }}", a=1, b=2) == (
        "template error: 'nope' is undefined (variables available here: a, b)"
    )


def test_a_missing_key_of_a_plain_mapping_keeps_jinja_s_words() -> None:
    assert _message("{{ d.nope }}", d={"a": 1}) == (
        "template error: 'dict object' has no attribute 'nope'"
    )
