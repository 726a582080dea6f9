from __future__ import annotations

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.config import load_project
from oxyeval.workflow.compile import compile_workflow, render_mermaid, render_plan
from oxyeval.workflow.spec import load_workflow

from ..conftest import MakeProject

CONFIG = """\
models:
  - {name: m, vendor: mock, outputs: ["ok"]}
databases:
  - {name: shop, type: duckdb, dataset: data}
"""
AGENT = "model: m\nsystem_instructions: hi\n"


def plan_of(make_project: MakeProject, workflow: str, files: dict[str, str] | None = None):
    root = make_project(
        CONFIG,
        {"w.workflow.yml": workflow, "a.agent.yml": AGENT, "data/x.csv": "a\n1\n", **(files or {})},
    )
    return compile_workflow(load_workflow(load_project(root), root / "w.workflow.yml"))


def test_dependencies_come_from_template_references(make_project: MakeProject) -> None:
    plan = plan_of(
        make_project,
        """\
        tasks:
          - {name: a, type: formatter, template: "A"}
          - {name: b, type: formatter, template: "B"}
          - {name: c, type: formatter, template: "{{ a }} {% for x in b %}{{ x }}{% endfor %}"}
          - {name: d, type: formatter, template: "{{ c.upper() }}", depends_on: [b]}
        """,
    )
    graph = plan.root.graph
    assert sorted(graph.edges) == [("a", "c"), ("b", "c"), ("b", "d"), ("c", "d")]
    assert plan.root.levels == [["a", "b"], ["c"], ["d"]]


def test_nested_references_make_the_container_depend(make_project: MakeProject) -> None:
    plan = plan_of(
        make_project,
        """\
        tasks:
          - {name: items, type: formatter, template: "[1, 2]"}
          - {name: header, type: formatter, template: "H"}
          - name: each
            type: loop_sequential
            values: "{{ items }}"
            tasks:
              - {name: line, type: formatter, template: "{{ header }} {{ each.value }}"}
              - {name: shout, type: formatter, template: "{{ line }}!"}
          - {name: unrelated, type: formatter, template: "x"}
        """,
    )
    assert sorted(plan.root.graph.predecessors("each")) == ["header", "items"]
    (body,) = plan.root.children["each"]
    assert list(body.graph.edges) == [("line", "shout")]
    assert plan.root.levels[0] == ["items", "header", "unrelated"]


def test_cycle_is_reported_with_its_path(make_project: MakeProject) -> None:
    with pytest.raises(LoadError) as info:
        plan_of(
            make_project,
            """\
            tasks:
              - {name: a, type: formatter, template: "{{ c }}"}
              - {name: b, type: formatter, template: "{{ a }}"}
              - {name: c, type: formatter, template: "{{ b }}"}
            """,
        )
    text = str(info.value)
    assert "dependency cycle:" in text
    cycle = text.split("dependency cycle: ")[1].splitlines()[0]
    nodes = cycle.split(" --> ")
    assert nodes[0] == nodes[-1] and set(nodes) == {"a", "b", "c"} and len(nodes) == 4


def test_unknown_reference_suggests_nearest_name_with_line(make_project: MakeProject) -> None:
    with pytest.raises(LoadError) as info:
        plan_of(
            make_project,
            """\
            variables:
              month: {type: string, default: "2026-10"}
            tasks:
              - {name: orders, type: formatter, template: "o"}
              - name: report
                type: formatter
                template: |
                  {{ month }}
                  {{ ordres }}
            """,
        )
    (d,) = info.value.diagnostics
    assert "unknown reference 'ordres'" in d.message and "did you mean 'orders'?" in d.message
    assert d.line == 9  # the template line inside the block scalar
    assert "task 'report'" in d.message


def test_self_reference_and_bad_depends_on(make_project: MakeProject) -> None:
    with pytest.raises(LoadError) as info:
        plan_of(
            make_project,
            """\
            tasks:
              - {name: a, type: formatter, template: "{{ a }}"}
              - {name: b, type: formatter, template: "b", depends_on: [aa]}
            """,
        )
    messages = [d.message for d in info.value.diagnostics]
    assert any("a --> a" in m for m in messages)
    assert any("depends_on 'aa' is not a sibling task; did you mean 'a'?" in m for m in messages)


def test_duplicate_names_name_both_places(make_project: MakeProject) -> None:
    with pytest.raises(LoadError) as info:
        plan_of(
            make_project,
            """\
            tasks:
              - {name: a, type: formatter, template: "1"}
              - {name: a, type: formatter, template: "2"}
            """,
        )
    (d,) = info.value.diagnostics
    assert d.line == 3
    assert "tasks[0] (line 2) and tasks[1]" in d.message


def test_missing_files_and_databases_are_load_errors(make_project: MakeProject) -> None:
    with pytest.raises(LoadError) as info:
        plan_of(
            make_project,
            """\
            tasks:
              - {name: a, type: agent, agent_ref: agents/nope.agent.yml, prompt: hi}
              - {name: b, type: execute_sql, database: shp, sql_query: "select 1"}
              - {name: c, type: execute_sql, database: shop, sql_file: missing.sql}
              - {name: d, type: workflow, src: other.workflow.yml}
            """,
        )
    keys = {d.key for d in info.value.diagnostics}
    assert keys == {"tasks[0].agent_ref", "tasks[1].database", "tasks[2].sql_file", "tasks[3].src"}
    assert any("did you mean 'shop'?" in d.message for d in info.value.diagnostics)


def test_plan_text_and_mermaid(make_project: MakeProject) -> None:
    plan = plan_of(
        make_project,
        """\
        tasks:
          - {name: q1, type: execute_sql, database: shop, sql_query: "select * from x.csv"}
          - {name: q2, type: execute_sql, database: shop, sql_query: "select 2"}
          - {name: ask, type: agent, agent_ref: a.agent.yml, prompt: "{{ q1 }}", consistency_run: 3}
          - {name: out, type: formatter, template: "{{ ask }} {{ q2 }}"}
        """,
    )
    text = render_plan(plan)
    assert "level 1: q1 (execute_sql), q2 (execute_sql)  (parallel)" in text
    assert "level 2: ask (agent, consistency_run 3)" in text
    assert "out <- ask, q2" in text
    chart = render_mermaid(plan)
    assert chart.startswith("flowchart TD")
    assert "q1 --> ask" in chart and "ask --> out" in chart and "q2 --> out" in chart
