"""Tasks carry typed fields filled (with defaults) when the file is loaded."""

from __future__ import annotations

from oxyeval.project.config import load_project
from oxyeval.workflow.spec import Cache, Export, load_workflow, walk_tasks

from ..conftest import MakeProject

CONFIG = """\
models:
  - {name: m, vendor: mock, outputs: ["ok"]}
  - {name: judge, vendor: mock, outputs: ["Answer: A"]}
databases:
  - {name: shop, type: duckdb, dataset: data}
"""
WORKFLOW = """\
tasks:
  - name: ask
    type: agent
    agent_ref: a.agent.yml
    prompt: hi
    consistency_run: 4
    judge_model: judge
    variables: {size: 2}
    cache: {enabled: true, path: "cache/{{ size }}.json"}
    export: {format: json, path: out/ask.json}
  - name: q
    type: execute_sql
    database: shop
    sql_query: SELECT 1 AS one
    dry_run_limit: 5
    depends_on: [ask]
    export: {format: docx, path: out/q.docx}
  - name: each
    type: loop_sequential
    values: [1, 2]
    concurrency: 3
    tasks:
      - {name: line, type: formatter, template: "{{ each.value }}", cache: {path: c.txt}}
  - name: more
    type: loop_sequential
    values: "{{ q.one }}"
    tasks:
      - {name: plain, type: formatter, template: x}
"""


def test_fields_are_typed_with_defaults(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG,
        {
            "a.agent.yml": "model: m\nsystem_instructions: hi\n",
            "data/x.csv": "a\n1\n",
            "w.workflow.yml": WORKFLOW,
        },
    )
    workflow = load_workflow(load_project(root), root / "w.workflow.yml")
    tasks = {t.name: t for t in walk_tasks(workflow.tasks)}

    ask = tasks["ask"]
    assert (ask.consistency_run, ask.judge_model, ask.variables) == (4, "judge", {"size": 2})
    assert ask.cache == Cache(enabled=True, path="cache/{{ size }}.json")
    assert ask.export == Export(format="json", path="out/ask.json")
    assert (ask.database, ask.dry_run_limit, ask.depends_on) == (None, None, [])

    q = tasks["q"]
    assert (q.database, q.dry_run_limit, q.depends_on) == ("shop", 5, ["ask"])
    assert q.export is None  # a format oxyeval does not write: skipped (warned at load)
    assert any("export format 'docx'" in w.message for w in workflow.warnings)
    assert (q.consistency_run, q.judge_model, q.variables, q.cache) == (1, None, {}, None)

    assert (tasks["each"].values, tasks["each"].concurrency) == ([1, 2], 3)
    assert (tasks["more"].values, tasks["more"].concurrency) == ("{{ q.one }}", 1)
    assert tasks["line"].cache == Cache(enabled=False, path="c.txt")
