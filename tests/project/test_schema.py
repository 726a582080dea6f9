from __future__ import annotations

from pathlib import Path

import pytest

from oxyeval.project.document import parse_yaml
from oxyeval.project.schema import did_you_mean, validate_document


def check(text: str, kind: str, name: str = "f.yml"):
    doc, problems = parse_yaml(text, Path(name))
    assert problems == []
    return validate_document(doc, kind)


AGENT_OK = "model: m\nsystem_instructions: hi\n"


def test_valid_agent_has_no_problems() -> None:
    assert (
        check(AGENT_OK + "tests:\n  - type: consistency\n    task_description: q\n", "agent") == []
    )


def test_unknown_key_suggests_nearest_with_line() -> None:
    found = check(AGENT_OK + "tests:\n  - type: consistency\n    task_descripton: q\n", "agent")
    assert len(found) == 1
    d = found[0]
    assert d.severity == "error"
    assert (d.line, d.column) == (5, 5)
    assert d.key == "tests[0].task_descripton"
    assert "did you mean 'task_description'?" in d.message


def test_all_errors_reported_together() -> None:
    text = "model: m\nsystem_instructions: 3\ntests:\n  - type: consistency\n    n: 1\n    pairing: circle\n"
    found = check(text, "agent")
    keys = {d.key for d in found}
    assert keys == {"system_instructions", "tests[0].n", "tests[0].pairing"}
    by_key = {d.key: d for d in found}
    assert "expected a string, got int 3" in by_key["system_instructions"].message
    assert by_key["tests[0].n"].line == 5
    assert "at least 2" in by_key["tests[0].n"].message
    assert "ring" in by_key["tests[0].pairing"].message


def test_oxy_keys_we_do_not_support_are_warnings() -> None:
    found = check(AGENT_OK + "public: true\nretrieval:\n  include: [x]\n", "agent")
    assert [d.severity for d in found] == ["warning", "warning"]
    assert found[0].key == "public" and found[0].line == 3


def test_unsupported_test_type_warns_not_errors() -> None:
    found = check(AGENT_OK + "tests:\n  - type: custom\n    dataset: x.csv\n", "agent")
    assert [d.severity for d in found] == ["warning"]
    assert "skipped" in found[0].message


def test_missing_required_key() -> None:
    found = check("system_instructions: hi\n", "agent")
    assert len(found) == 1
    assert "missing required key 'model'" in found[0].message


def test_enum_typo_suggests() -> None:
    found = check("models:\n  - name: a\n    vendor: opneai\n    model_ref: x\n", "config")
    assert len(found) == 1
    assert found[0].line == 3
    assert "did you mean 'openai'?" in found[0].message


def test_mock_model_needs_outputs_or_rules() -> None:
    found = check("models:\n  - name: a\n    vendor: mock\n", "config")
    assert [d.message for d in found] == ["a mock model needs outputs: or rules:"]


def test_hosted_model_needs_model_ref() -> None:
    found = check("models:\n  - name: a\n    vendor: anthropic\n", "config")
    assert [d.message for d in found] == ["missing required key 'model_ref'"]


def test_workflow_task_keys_depend_on_type() -> None:
    text = (
        "tasks:\n"
        "  - name: a\n    type: agent\n    agent_ref: x.agent.yml\n    prompt: hi\n    consistency_runs: 3\n"
        "  - name: b\n    type: execute_sql\n    database: d\n"
        "  - name: c\n    type: semantic_query\n    topic: t\n"
    )
    found = check(text, "workflow")
    messages = {d.key: d for d in found}
    assert "did you mean 'consistency_run'?" in messages["tasks[0].consistency_runs"].message
    assert messages["tasks[1]"].message == "give exactly one of sql_query and sql_file"
    assert messages["tasks[2]"].severity == "warning"
    assert "tasks[2].topic" not in messages  # unsupported types accept their own keys
    assert "tasks[1].database" not in messages  # no spurious error from the failing branch


def test_empty_file() -> None:
    doc, _ = parse_yaml("", Path("e.agent.yml"))
    found = validate_document(doc, "agent")
    assert "file is empty" in found[0].message


@pytest.mark.parametrize(
    ("word", "hint"), [("modle", "model"), ("zzz", None), ("task_descriptoin", "task_description")]
)
def test_did_you_mean(word: str, hint: str | None) -> None:
    text = did_you_mean(word, ["model", "task_description", "tests"])
    assert (hint in text) if hint else text == ""


def test_tool_types_oxy_knows_warn_unknown_ones_error() -> None:
    text = AGENT_OK + (
        "tools:\n"
        "  - type: execute_sql\n    database: local\n"  # no name: defaults to the type
        "  - name: omni\n    type: execute_omni\n    model_path: x\n"
        "  - name: t\n    type: excute_sql\n"
    )
    found = {d.key: d for d in check(text, "agent")}
    assert "tools[0]" not in found
    assert found["tools[1]"].severity == "warning"
    assert found["tools[1]"].message.startswith("type 'execute_omni': ")
    assert found["tools[2].type"].severity == "error"
    assert "did you mean 'execute_sql'?" in found["tools[2].type"].message


def test_legacy_oxy_keys_warn() -> None:
    config = (
        "models:\n  - {name: a, vendor: mock, outputs: [x]}\n"
        "databases:\n  - {name: d, type: duckdb, dataset: data, key_path: None}\n"
        "retrievals: []\n"
    )
    found = check(config, "config")
    assert [(d.severity, d.key) for d in found] == [
        ("warning", "databases[0].key_path"),
        ("warning", "retrievals"),
    ]
