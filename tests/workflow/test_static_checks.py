"""Checks that need no model call and no data happen at compile time, so `oxy validate`,
`oxy compile` and `oxy run` report the same problem with its file, line and key."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.errors import LoadError
from oxyeval.project.config import load_project
from oxyeval.workflow import spec as spec_module
from oxyeval.workflow.compile import CompileCache, compile_workflow
from oxyeval.workflow.engine import WorkflowFailed, execute_workflow

from ..conftest import MakeProject

CONFIG = """\
models:
  - {name: m, vendor: mock, outputs: ["hi"]}
"""
AGENT = "model: m\nsystem_instructions: brief\nvariables:\n  size: {type: integer, default: 1}\n"
SUB = """\
variables:
  n: {type: integer}
  label: {type: string, default: x}
tasks:
  - {name: t, type: formatter, template: "{{ label }}{{ n }}"}
"""
COMMANDS = ["validate", "compile", "run"]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def project(make_project: MakeProject, workflow: str, **files: str) -> Path:
    return make_project(
        CONFIG, {"a.agent.yml": AGENT, "s.workflow.yml": SUB, "w.workflow.yml": workflow, **files}
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_agent_task_passing_an_undeclared_variable(make_project: MakeProject, command: str) -> None:
    workflow = """\
    tasks:
      - name: ask
        type: agent
        agent_ref: a.agent.yml
        prompt: hi
        variables: {sise: 2}
    """
    root = project(make_project, workflow)
    result = invoke(command, str(root / "w.workflow.yml"))
    assert result.exit_code == 2, result.output
    assert (
        "w.workflow.yml:6:17: tasks[0].variables.sise: task 'ask': agent has no variable "
        "'sise'; did you mean 'size'?" in result.stderr
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_subworkflow_task_passing_an_undeclared_variable(
    make_project: MakeProject, command: str
) -> None:
    workflow = """\
    tasks:
      - name: sub
        type: workflow
        src: s.workflow.yml
        variables: {n: 1, lable: y}
    """
    root = project(make_project, workflow)
    result = invoke(command, str(root / "w.workflow.yml"))
    assert result.exit_code == 2, result.output
    assert (
        "w.workflow.yml:5:23: tasks[0].variables.lable: task 'sub': workflow has no variable "
        "'lable'; did you mean 'label'?; declared: n, label" in result.stderr
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_subworkflow_variable_without_default_must_be_passed(
    make_project: MakeProject, command: str
) -> None:
    root = project(make_project, "tasks:\n  - {name: sub, type: workflow, src: s.workflow.yml}\n")
    result = invoke(command, str(root / "w.workflow.yml"))
    assert result.exit_code == 2, result.output
    assert (
        "w.workflow.yml:2:33: tasks[0].src: task 'sub': sub-workflow " in result.stderr
        and "s.workflow.yml needs variable(s) n (declared without a default)" in result.stderr
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_problems_inside_subworkflows_are_reported_for_the_parent(
    make_project: MakeProject, command: str
) -> None:
    # w -> s1 -> s2: the problem is two files down; s1 also runs a broken agent.
    s1 = """\
    tasks:
      - {name: deeper, type: workflow, src: s2.workflow.yml}
      - {name: ask, type: agent, agent_ref: bad.agent.yml, prompt: hi}
    """
    s2 = "tasks:\n  - {name: t, type: formatter, template: '{{ greting }}'}\n"
    root = project(
        make_project,
        "tasks:\n  - {name: sub, type: workflow, src: s1.workflow.yml}\n",
        **{
            "s1.workflow.yml": s1,
            "s2.workflow.yml": s2,
            "bad.agent.yml": "model: nope\nsystem_instructions: hi\n",
        },
    )
    result = invoke(command, str(root / "w.workflow.yml"))
    assert result.exit_code == 2, result.output
    assert "s2.workflow.yml:2: tasks[0].template: task 't': unknown reference 'greting'" in (
        result.stderr
    )
    assert "bad.agent.yml:1:8: model: unknown model 'nope'" in result.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_subworkflow_cycle(make_project: MakeProject, command: str) -> None:
    back = "tasks:\n  - {name: back, type: workflow, src: w.workflow.yml}\n"
    root = project(
        make_project,
        "tasks:\n  - {name: sub, type: workflow, src: loop.workflow.yml}\n",
        **{"loop.workflow.yml": back},
    )
    result = invoke(command, str(root / "w.workflow.yml"))
    assert result.exit_code == 2, result.output
    assert (
        "loop.workflow.yml:2:39: tasks[0].src: task 'back': sub-workflow cycle: "
        "w.workflow.yml --> loop.workflow.yml --> w.workflow.yml" in result.stderr
    )


def test_a_workflow_running_itself_is_a_cycle(make_project: MakeProject) -> None:
    root = project(make_project, "tasks:\n  - {name: me, type: workflow, src: w.workflow.yml}\n")
    result = invoke("validate", str(root / "w.workflow.yml"))
    assert result.exit_code == 2
    assert "sub-workflow cycle: w.workflow.yml --> w.workflow.yml" in result.stderr


def test_each_file_is_loaded_once(make_project: MakeProject, monkeypatch) -> None:
    # w runs s1 and s2 (twice) and s1 runs s2: a diamond; s2 is loaded once, and its
    # problem is reported once.
    s1 = "tasks:\n  - {name: deeper, type: workflow, src: s2.workflow.yml}\n"
    s2 = "tasks:\n  - {name: t, type: formatter, template: '{{ greting }}'}\n"
    workflow = """\
    tasks:
      - {name: one, type: workflow, src: s1.workflow.yml}
      - {name: two, type: workflow, src: s2.workflow.yml}
      - {name: three, type: workflow, src: s2.workflow.yml}
    """
    root = project(make_project, workflow, **{"s1.workflow.yml": s1, "s2.workflow.yml": s2})
    loaded: list[str] = []
    real = spec_module.load_workflow

    def counting(project, path):
        loaded.append(Path(path).name)
        return real(project, path)

    monkeypatch.setattr(spec_module, "load_workflow", counting)
    proj = load_project(root)
    with pytest.raises(LoadError) as failed:
        compile_workflow(real(proj, root / "w.workflow.yml"))
    assert sorted(loaded) == ["s1.workflow.yml", "s2.workflow.yml"]
    messages = [d.message for d in failed.value.diagnostics]
    assert len([m for m in messages if "unknown reference 'greting'" in m]) == 1, messages

    # Fixed, the shared cache holds each compiled file once, linked from its users.
    (root / "s2.workflow.yml").write_text(s2.replace("greting", '"ok"'), "utf-8")
    loaded.clear()
    cache = CompileCache()
    compiled = compile_workflow(real(proj, root / "w.workflow.yml"), cache)
    assert sorted(loaded) == ["s1.workflow.yml", "s2.workflow.yml"]
    assert sorted(p.name for p in cache.workflows) == [
        "s1.workflow.yml",
        "s2.workflow.yml",
        "w.workflow.yml",
    ]
    s2_path = (root / "s2.workflow.yml").resolve()
    s1_path = (root / "s1.workflow.yml").resolve()
    assert compiled.subworkflows[s2_path] is compiled.subworkflows[s1_path].subworkflows[s2_path]


def test_templated_default_reading_an_unknown_name(make_project: MakeProject) -> None:
    workflow = """\
    variables:
      name: {type: string, default: Ada}
      greeting: {type: string, default: "hello {{ nme }}"}
    tasks:
      - {name: t, type: formatter, template: "{{ greeting }}"}
    """
    root = project(make_project, workflow)
    for command in COMMANDS:
        result = invoke(command, str(root / "w.workflow.yml"))
        assert result.exit_code == 2, (command, result.output)
        assert (
            "w.workflow.yml:3:37: variables.greeting.default: variable 'greeting': the default "
            "template reads 'nme', which is not another variable; did you mean 'name'? "
            "(variables: name)" in result.stderr
        ), (command, result.stderr)


def test_templated_default_that_fails_to_render_is_an_error(make_project: MakeProject) -> None:
    # Only running finds this one: the default reads a variable that exists.
    workflow = """\
    variables:
      region: {type: string, default: North}
      label: "{{ region.code }}"
    tasks:
      - {name: t, type: formatter, template: "{{ label }}"}
    """
    root = project(make_project, workflow)
    assert invoke("validate", str(root / "w.workflow.yml")).exit_code == 0
    result = invoke("run", str(root / "w.workflow.yml"))
    assert result.exit_code == 2
    assert (
        "w.workflow.yml:3: variables.label: variable 'label': its default could not be "
        "rendered: template error: 'str object' has no attribute 'code'" in result.stderr
    )
    assert "{{ region.code }}" not in result.stdout  # never run with the template text
    # A value given for it is a value, not a template: it is not rendered at all.
    given = invoke("run", str(root / "w.workflow.yml"), "--var", "label={{ region.code }}")
    assert given.exit_code == 0, given.output
    assert given.stdout.strip() == "{{ region.code }}"


def test_templated_default_failing_in_a_subworkflow_fails_its_task_as_bad_input(
    make_project: MakeProject,
) -> None:
    sub = """\
    variables:
      region: {type: string, default: North}
      label: {type: string, default: "{{ region + 1 }}"}
    tasks:
      - {name: t, type: formatter, template: "{{ label }}"}
    """
    root = project(
        make_project,
        "tasks:\n  - {name: sub, type: workflow, src: bad.workflow.yml}\n",
        **{"bad.workflow.yml": sub},
    )
    with pytest.raises(WorkflowFailed) as failed:
        asyncio.run(execute_workflow(root / "w.workflow.yml"))
    assert failed.value.exit_code == 2
    message = str(failed.value)
    assert "bad.workflow.yml:3: variables.label.default: variable 'label'" in message
    assert "its default could not be rendered: template error: TypeError" in message
