from __future__ import annotations

from pathlib import Path

import pytest

from oxyeval.errors import ConfigError, LoadError
from oxyeval.suites.consistency import collect_files, run_tests

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: analyst
    vendor: mock
    outputs: ["Total: 42", "Total: 42", "Total is 42", "Total: 99 (XYZ)"]
  - name: judge
    vendor: mock
    rules:
      - match: "XYZ"
        output: "99 and 42 differ.\\nAnswer: B"
      - match: "."
        output: "Both say 42.\\nAnswer: A"
"""

AGENT = """\
model: analyst
system_instructions: Answer briefly.
tests:
  - type: consistency
    n: 4
    task_description: What is the total?
    model_ref: judge
"""


def test_consistency_test_end_to_end(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": AGENT})
    run = run_tests([root / "a.agent.yml"])
    (test,) = run.tests
    # runs: 1 "Total: 42", 2 "Total: 42", 3 "Total is 42", 4 "Total: 99 (XYZ)"
    # pairs: (1,2) identical A; (1,3),(2,3) A; (1,4),(2,4),(3,4) B -> 3/6
    assert test.ok
    assert test.accuracy == pytest.approx(0.5)
    assert (test.pairs, test.identical_pairs, test.judge_calls) == (6, 1, 3)
    assert test.selected == 1
    consistency = {o.run: o.consistency for o in test.outputs}
    assert consistency[4] == 0.0
    assert consistency[1] == pytest.approx(2 / 3)
    assert sorted((c["runs"], c["weight"]) for c in test.failing) == [([1, 4], 2), ([3, 4], 1)]
    assert all("differ" in c["reasoning"] for c in test.failing)


def test_failed_runs_are_collected_not_fatal(make_project: MakeProject) -> None:
    config = CONFIG.replace(
        'outputs: ["Total: 42", "Total: 42", "Total is 42", "Total: 99 (XYZ)"]',
        'outputs: ["Total: 42"]\n    rules:\n      - match: "explode"\n        error: "boom"',
    )
    agent = AGENT.replace("What is the total?", "What is the total?") + (
        "  - type: consistency\n    n: 3\n    task_description: please explode\n    model_ref: judge\n"
    )
    root = make_project(config, {"a.agent.yml": agent})
    run = run_tests([root / "a.agent.yml"])
    ok, broken = run.tests
    assert ok.ok and ok.accuracy == 1.0 and ok.judge_calls == 0  # all identical
    assert not broken.ok and broken.accuracy is None
    assert len(broken.run_errors) == 3
    assert "only 0 of 3 runs succeeded" in (broken.error or "")
    assert "boom" in (broken.error or "")


def test_judge_without_verdicts_leaves_test_unscored(make_project: MakeProject) -> None:
    config = CONFIG.replace('output: "Both say 42.\\nAnswer: A"', 'output: "no idea"').replace(
        'output: "99 and 42 differ.\\nAnswer: B"', 'output: "hmm"'
    )
    root = make_project(config, {"a.agent.yml": AGENT})
    (test,) = run_tests([root / "a.agent.yml"]).tests
    assert test.accuracy is None
    assert "no valid verdicts" in (test.error or "")
    assert len(test.judge_errors) == 3
    assert test.judge_calls == 6  # each asked twice


def test_missing_api_key_fails_before_any_call(make_project: MakeProject) -> None:
    config = (
        CONFIG
        + "  - name: remote\n    vendor: openai\n    model_ref: gpt-x\n    key_var: OXY_TEST_NO_SUCH_KEY\n"
    )
    root = make_project(config, {"a.agent.yml": AGENT.replace("model: analyst", "model: remote")})
    with pytest.raises(LoadError) as info:
        run_tests([root / "a.agent.yml"], environ={})
    (d,) = info.value.diagnostics
    assert "OXY_TEST_NO_SUCH_KEY" in d.message
    assert (Path(d.file).name, d.line, d.key) == ("config.yml", 15, "models[2].key_var")


def test_all_file_errors_reported_together(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG,
        {
            "a.agent.yml": AGENT.replace("model: analyst", "model: analist"),
            "b.agent.yml": "model: [\n",
        },
    )
    with pytest.raises(LoadError) as info:
        run_tests([root / "a.agent.yml", root / "b.agent.yml"])
    files = {Path(d.file).name for d in info.value.diagnostics}
    assert files == {"a.agent.yml", "b.agent.yml"}


def test_system_instructions_template_error_is_input_error(make_project: MakeProject) -> None:
    agent = AGENT.replace("Answer briefly.", "Answer for {{ compnay }}.")
    root = make_project(CONFIG, {"a.agent.yml": agent + "variables:\n  company: Acme\n"})
    # Found when the file loads, with the name it meant (it was a render error at run time).
    with pytest.raises(LoadError, match=r"uses 'compnay'.*did you mean 'company'"):
        run_tests([root / "a.agent.yml"])


def test_context_files_and_variables_reach_the_system_prompt(make_project: MakeProject) -> None:
    config = CONFIG.replace(
        'outputs: ["Total: 42", "Total: 42", "Total is 42", "Total: 99 (XYZ)"]',
        'rules:\n      - match: "."\n        output: "ok"',
    )
    agent = (
        "model: analyst\n"
        "system_instructions: 'Schema: {{ context.schema }} for {{ company }}'\n"
        "context:\n  - name: schema\n    type: file\n    src: ['docs/*.sql']\n"
        "variables:\n  company: {type: string, default: Acme}\n"
    )
    root = make_project(
        config, {"a.agent.yml": agent, "docs/orders.sql": "CREATE TABLE orders(id INT);"}
    )
    from oxyeval.project.agents import load_agent
    from oxyeval.project.config import load_project
    from oxyeval.providers import ModelPool
    from oxyeval.workflow.agent import AgentRunner

    project = load_project(root)
    runner = AgentRunner(
        load_agent(project, root / "a.agent.yml"), ModelPool(project.models), project.root
    )
    assert runner.system_prompt() == "Schema: CREATE TABLE orders(id INT); for Acme"


def test_context_glob_cannot_escape_project(make_project: MakeProject) -> None:
    agent = AGENT.replace("Answer briefly.", "'{{ context.x }}'") + (
        "context:\n  - {name: x, type: file, src: ['../*.txt']}\n"
    )
    root = make_project(CONFIG, {"a.agent.yml": agent})
    with pytest.raises(LoadError, match=r"a\.agent\.yml:9:.*must stay inside the project"):
        run_tests([root / "a.agent.yml"])


def test_collect_files_from_folder(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG,
        {
            "agents/a.agent.yml": AGENT,
            "agents/b.agent.yml": AGENT,
            ".venv/x.agent.yml": AGENT,
            "notes.yml": "x: 1",
        },
    )
    names = [p.name for p in collect_files([root])]
    assert names == ["a.agent.yml", "b.agent.yml"]
    (root / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no \*\.agent\.yml"):
        collect_files([root / "empty"])


def test_a_file_named_twice_is_tested_once(tmp_path) -> None:
    from oxyeval.suites.consistency import collect_files

    (tmp_path / "a.agent.yml").write_text("model: m\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.agent.yml").write_text("model: m\n", encoding="utf-8")
    files = collect_files(
        [tmp_path, tmp_path / "a.agent.yml", str(tmp_path / "sub/../a.agent.yml")]
    )
    assert [f.name for f in files] == ["a.agent.yml", "b.agent.yml"]
