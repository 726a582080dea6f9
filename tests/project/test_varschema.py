"""Variables' JSON Schemas: checked where they are written, run with RE2 and finite numbers."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.config import load_project
from oxyeval.project.varschema import schema_problems, variable_error
from oxyeval.workflow.spec import load_workflow

from ..conftest import MakeProject


@pytest.mark.parametrize(
    ("spec", "path", "why"),
    [
        ({"type": "number", "maximum": "1e999"}, ("maximum",), "not a valid JSON Schema"),
        ({"type": "nope"}, ("type",), "not a valid JSON Schema"),
        ({"pattern": "["}, ("pattern",), "invalid regular expression '['"),
        ({"pattern": "(?<=a)b"}, ("pattern",), "lookarounds"),
        ({"patternProperties": {"(": {}}}, ("patternProperties", "("), "invalid regular"),
        ({"properties": {"a": {"pattern": "(a)\\1"}}}, ("properties", "a", "pattern"), "back"),
        ({"$ref": "#"}, ("$ref",), "never end"),
        ({"allOf": [{"$ref": "#"}]}, ("allOf", 0, "$ref"), "never end"),
        ({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"not": {"$ref": "#/$defs/a"}}}}, None, "end"),
        ({"$ref": "#/$defs/missing"}, ("$ref",), "points at nothing"),
        ({"$ref": "https://example.com/s.json"}, ("$ref",), "never fetched"),
        ({"$ref": "other.schema.json#/x"}, ("$ref",), "only refer inside itself"),
        ({"$id": "https://x/", "$ref": "#"}, ("$id",), "not supported"),
        ({"$dynamicRef": "#"}, ("$dynamicRef",), "not supported"),
        (
            {"patternProperties": {"^a": {}}, "unevaluatedProperties": False},
            ("patternProperties",),
            "cannot be combined",
        ),
    ],
)
def test_a_schema_that_cannot_be_used_is_refused_where_written(
    spec: dict[str, Any], path: tuple[Any, ...] | None, why: str
) -> None:
    problems = schema_problems(spec)
    assert problems, spec
    assert why in problems[0][1]
    if path is not None:
        assert problems[0][0] == path


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "string", "pattern": "^[A-Z]{2}$"},
        {"type": "array", "items": {"$ref": "#"}},  # a tree: descends into the value
        {"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}},
        {"type": "object", "patternProperties": {"^x_": {"type": "integer"}}},
        {"type": "number", "maximum": 10, "description": "d", "default": 3},
    ],
)
def test_ordinary_schemas_are_fine(spec: dict[str, Any]) -> None:
    assert schema_problems(spec) == []


def test_patterns_run_in_linear_time_wherever_jsonschema_matches_them() -> None:
    """pattern, patternProperties and additionalProperties (which matched the property
    patterns with Python's re) all go through RE2."""
    evil = "(a+)+$"
    value = "a" * 50_000 + "!"
    started = time.perf_counter()
    assert "does not match" in (variable_error({"pattern": evil}, value) or "")
    schema = {"patternProperties": {evil: {"type": "integer"}}, "additionalProperties": False}
    assert "not allowed" in (variable_error(schema, {value: 1}) or "")
    assert variable_error({"propertyNames": {"pattern": evil}}, {value: 1}) is not None
    assert time.perf_counter() - started < 2.0
    assert variable_error(schema, {"aaa": 1}) is None
    assert "not of type 'integer'" in (variable_error(schema, {"aaa": "x"}) or "")


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_numbers_are_finite(value: float) -> None:
    assert variable_error({"type": "number"}, value) is not None


def test_a_recursive_schema_on_a_deep_value_is_a_reason_not_a_crash() -> None:
    """A tree schema descends one level per level of the value: jsonschema's recursion
    runs out long before the value does (a RecursionError until now)."""

    def nested(levels: int) -> Any:
        value: Any = []
        for _ in range(levels):
            value = [value]
        return value

    tree = {"type": "array", "items": {"$ref": "#"}}
    assert variable_error(tree, nested(50)) is None
    assert variable_error(tree, nested(5000)) == (
        "the value is nested too deep to check against its schema"
    )


def test_validate_and_run_report_the_schema_at_its_line(make_project: MakeProject) -> None:
    workflow = (
        "variables:\n"
        "  a: {type: string, default: x}\n"
        "  b: {type: object, $ref: '#', default: {}}\n"
        "  c: {type: string, pattern: '[', default: x}\n"
        "tasks:\n  - {name: f, type: formatter, template: '{{ a }}'}\n"
    )
    root = make_project(files={"w.workflow.yml": workflow})
    with pytest.raises(LoadError) as caught:
        load_workflow(load_project(root), root / "w.workflow.yml")
    found = {(d.line, d.key) for d in caught.value.diagnostics}
    assert found == {(3, "variables.b.'$ref'"), (4, "variables.c.pattern")}


def test_an_agent_variable_schema_is_checked_too(make_project: MakeProject) -> None:
    from oxyeval.project.agents import load_agent

    agent = "model: agent_model\nsystem_instructions: hi\nvariables:\n  v: {maximum: x}\n"
    root = make_project(files={"a.agent.yml": agent})
    with pytest.raises(LoadError, match=r"a.agent.yml:4:.*variables.v.maximum"):
        load_agent(load_project(root), Path(root / "a.agent.yml"))
