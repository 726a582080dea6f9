"""A template (or a test's task_ref) reading a part an output cannot have is rejected by
the compiled DAG, before any task runs.

``{% for i in per_region %}{{ i.blurp }}{% endfor %}`` used to pass ``oxy validate`` and
fail ``oxy run`` only when the formatter rendered, after the SQL and agent tasks before
it had run and spent their calls.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MOCK_CONFIG, MakeProject

AGENT = "model: agent_model\nsystem_instructions: Be brief.\n"
HEAD = """\
tasks:
  - {name: ask, type: agent, agent_ref: a.agent.yml, prompt: hi}
  - {name: twice, type: agent, agent_ref: a.agent.yml, prompt: hi, consistency_run: 2, judge_model: judge}
  - name: per_region
    type: loop_sequential
    values: [north, south]
    tasks:
      - {name: line, type: formatter, template: "{{ per_region.value }} {{ per_region.index }}: {{ ask }}"}
  - name: verdict
    type: conditional
    conditions:
      - {if: "{{ 1 > 0 }}", tasks: [{name: note, type: formatter, template: strong}]}
    else: [{name: note, type: formatter, template: quiet}]
"""


def _workflow(template: str, tests: str = "") -> str:
    return (
        HEAD
        + f"  - name: report\n    type: formatter\n    template: {json.dumps(template)}\n{tests}"
    )


def _invoke(*argv: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(argv))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("{% for i in per_region %}{{ i.blurp }}{% endfor %}", "reads i.blurp"),
        ("{{ per_region[0].lien }}", "reads per_region[0].lien"),
        ("{% for i in per_region %}{{ i['blurp'] }}{% endfor %}", "reads i.blurp"),
        ("{{ verdict.nope }}", "reads verdict.nope"),
        ("{{ ask.score }}", "reads ask.score"),
        ("{{ twice.scroe }}", "reads twice.scroe"),
    ],
)
def test_a_part_that_cannot_exist_fails_before_any_task_runs(
    make_project: MakeProject, template: str, why: str
) -> None:
    root = make_project(MOCK_CONFIG, {"a.agent.yml": AGENT, "w.workflow.yml": _workflow(template)})
    code, _out, err = _invoke("validate", str(root))
    assert code == 2, err
    assert "w.workflow.yml:16" in err and why in err
    code, out, err = _invoke("run", str(root / "w.workflow.yml"), "--format", "json")
    assert code == 2, err
    assert "✓" not in err  # no task ran: the agent was never asked
    assert json.loads(out)["exitCode"] == 2


def test_the_parts_outputs_have_pass(make_project: MakeProject) -> None:
    template = (
        "{% for i in per_region %}{{ i.line }} {{ i.value }} {{ i.index }} {{ i['line'] }}"
        "{% endfor %}{{ per_region[1].line }} {{ verdict.note }} {{ twice.score }}"
        " {{ twice.value }} {{ ask.upper() }} {% set ask = verdict %}{{ ask.note }}"
        "{% for i in per_region %}{% set i = verdict %}{{ i.note }}{% endfor %}"
    )
    root = make_project(MOCK_CONFIG, {"a.agent.yml": AGENT, "w.workflow.yml": _workflow(template)})
    code, _out, err = _invoke("validate", str(root))
    assert code == 0, err
    code, out, err = _invoke("run", str(root / "w.workflow.yml"), "--no-history")
    assert code == 0, err
    assert "north" in out and "strong" in out


def test_a_nested_task_hides_an_outer_one_of_the_same_name(make_project: MakeProject) -> None:
    workflow = (
        "tasks:\n  - {name: q, type: formatter, template: text}\n"
        "  - name: loop\n    type: loop_sequential\n    values: [1]\n    tasks:\n"
        "      - name: q\n        type: conditional\n        conditions:\n"
        "          - {if: 'true', tasks: [{name: inner, type: formatter, template: x}]}\n"
        "      - {name: use, type: formatter, template: '{{ q.inner }}'}\n"
    )
    root = make_project(MOCK_CONFIG, {"w.workflow.yml": workflow})
    code, _out, err = _invoke("validate", str(root))
    assert code == 0, err


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("per_region.line", "is a loop, whose output is a list of iterations"),
        ("verdict.nope", "has no task 'nope'; did you mean 'note'"),
        ("ask.nope", "is text, with no part 'nope'"),
        ("twice.details", "has value and score, no part 'details'"),
    ],
)
def test_a_task_ref_that_names_no_output_is_bad_input(
    make_project: MakeProject, ref: str, why: str
) -> None:
    tests = f"tests:\n  - {{type: consistency, n: 2, task_ref: {ref}}}\n"
    root = make_project(
        MOCK_CONFIG, {"a.agent.yml": AGENT, "w.workflow.yml": _workflow("x", tests)}
    )
    for argv in (["validate", str(root)], ["test", str(root / "w.workflow.yml")]):
        code, _out, err = _invoke(*argv)
        assert code == 2, err
        assert "w.workflow.yml:18" in err and why in err


def test_a_task_ref_into_a_sub_workflow_is_a_clear_error_at_run_time(
    make_project: MakeProject,
) -> None:
    """A sub-workflow's parts are only known once it runs: a missing one is bad input
    naming the ref (it was an internal AttributeError)."""
    files = {
        "sub.workflow.yml": "tasks:\n  - {name: inner, type: formatter, template: x}\n",
        "w.workflow.yml": (
            "tasks:\n  - {name: sub, type: workflow, src: sub.workflow.yml}\n"
            "tests:\n  - {type: consistency, n: 2, task_ref: sub.nope}\n"
        ),
    }
    root = make_project(MOCK_CONFIG, files)
    code, _out, err = _invoke("test", str(root / "w.workflow.yml"))
    assert code == 2, err
    assert "task_ref 'sub.nope'" in err and "internal error" not in err
