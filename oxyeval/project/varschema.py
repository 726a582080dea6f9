"""Variables' JSON Schemas: checked where they are written, then run with bounds.

A variable of an agent or a workflow may carry a JSON Schema (``{type: string,
pattern: ...}``), which a given value (``--var``, ``--vars``, a case's input, a task's
``variables:``) must satisfy. The schema is the project's own text, so it is checked at
load time, where ``oxy validate`` reports it at its line, and not first met while a run
validates a value (where jsonschema raised TypeError for ``maximum: 1e999`` and
recursed without end on ``$ref: "#"``):

* it must be a valid JSON Schema (2020-12) by the meta-schema;
* every ``pattern`` and ``patternProperties`` key must compile for RE2
  (:mod:`oxyeval.patterns`): values are matched in linear time, never by a
  backtracking engine (``(a+)+$`` against 40 characters hung a run through SIGTERM);
* ``$ref`` points inside the variable's own schema (``#`` or ``#/...``), at something
  there, and no chain of references reaches the same subschema again without descending
  into the value (that would recurse forever on any value); jsonschema would otherwise
  *download* a ``$ref: https://...`` while validating. ``$id``, anchors and dynamic
  references, which move what a reference means, are refused.
"""

from __future__ import annotations

import functools
import math
import urllib.parse
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import Diagnostic
from ..patterns import PatternError, compile_pattern
from .document import Document, KeyPath

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["check_variables", "schema_problems", "variable_error"]

# Keywords whose value is one subschema, a mapping of them, or a list of them.
_ONE = (
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_MAP = ("$defs", "definitions", "dependentSchemas", "patternProperties", "properties")
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
# Applied to the same value, not to a part of it: a cycle through these never ends.
_IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")
_REFUSED = ("$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveAnchor", "$recursiveRef")
#: What a variable spec holds besides its schema.
_NOT_SCHEMA = ("default", "description")


def _schema(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k not in _NOT_SCHEMA}


def _subschemas(node: dict[str, Any], path: KeyPath) -> Iterator[tuple[str, KeyPath, Any]]:
    """(keyword, path, subschema) for every subschema directly inside ``node``."""
    for keyword in _ONE:
        if keyword in node:
            yield keyword, (*path, keyword), node[keyword]
    for keyword in _MAP:
        if isinstance(node.get(keyword), dict):
            for key, sub in node[keyword].items():
                yield keyword, (*path, keyword, key), sub
    for keyword in _LIST:
        if isinstance(node.get(keyword), list):
            for index, sub in enumerate(node[keyword]):
                yield keyword, (*path, keyword, index), sub


def _pointer(root: Any, ref: str) -> tuple[KeyPath, Any] | None:
    """The path and subschema a local ``#/...`` reference names (None: nothing there)."""
    fragment = urllib.parse.unquote(ref[1:])
    node, path = root, ()
    for raw in fragment.split("/")[1:] if fragment else ():
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node, path = node[part], (*path, part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node, path = node[int(part)], (*path, int(part))
        else:
            return None
    return path, node


def schema_problems(spec: dict[str, Any]) -> list[tuple[KeyPath, str]]:
    """Why a variable's schema cannot be used, as (path inside the spec, reason) pairs,
    in the order of the module docstring; empty when it can."""
    root = _schema(spec)
    meta = _meta_problem(root)
    if meta is not None:
        return [meta]
    problems: list[tuple[KeyPath, str]] = []
    nodes: dict[KeyPath, dict[str, Any]] = {}
    edges: dict[KeyPath, list[tuple[KeyPath, KeyPath]]] = {}  # node -> (via, target)
    todo: list[tuple[KeyPath, Any]] = [((), root)]
    while todo:
        path, node = todo.pop()
        if not isinstance(node, dict) or path in nodes:
            continue
        nodes[path] = node
        out = edges.setdefault(path, [])
        for keyword in _REFUSED:
            if keyword in node:
                problems.append(
                    ((*path, keyword), f"{keyword} is not supported in a variable schema")
                )
        if isinstance(node.get("pattern"), str):
            problems.extend(_pattern_problem(node["pattern"], (*path, "pattern")))
        if isinstance(node.get("patternProperties"), dict):
            for key in node["patternProperties"]:
                problems.extend(_pattern_problem(str(key), (*path, "patternProperties", key)))
            if _uses(root, "unevaluatedProperties"):
                problems.append(
                    (
                        (*path, "patternProperties"),
                        "patternProperties cannot be combined with unevaluatedProperties in "
                        "a variable schema (that check would match the patterns with a "
                        "backtracking engine)",
                    )
                )
        ref = node.get("$ref")
        if ref is not None:
            target = _local_ref(root, ref, (*path, "$ref"), problems)
            if target is not None:
                out.append(((*path, "$ref"), target[0]))
                todo.append(target)
        for keyword, sub_path, sub in _subschemas(node, path):
            if keyword in _IN_PLACE:
                out.append((sub_path, sub_path))
            todo.append((sub_path, sub))
    problems.extend(_cycles(edges))
    return problems


def _uses(node: Any, keyword: str) -> bool:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if keyword in item:
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _local_ref(
    root: Any, ref: Any, where: KeyPath, problems: list[tuple[KeyPath, str]]
) -> tuple[KeyPath, Any] | None:
    if not isinstance(ref, str) or not ref.startswith("#"):
        problems.append(
            (
                where,
                f"$ref {ref!r}: a variable schema may only refer inside itself ('#' or "
                "'#/$defs/...'); other files and URLs are never fetched",
            )
        )
        return None
    target = _pointer(root, ref)
    if target is None:
        problems.append((where, f"$ref {ref!r} points at nothing in this variable's schema"))
    return target


def _cycles(edges: dict[KeyPath, list[tuple[KeyPath, KeyPath]]]) -> list[tuple[KeyPath, str]]:
    """A $ref chain back to a schema already being applied to the same value (iterative DFS)."""
    state: dict[KeyPath, int] = {}  # 1: on the current path, 2: done
    for start in edges:
        if start in state:
            continue
        stack: list[tuple[KeyPath, Iterator[tuple[KeyPath, KeyPath]]]] = [
            (start, iter(edges.get(start, ())))
        ]
        state[start] = 1
        while stack:
            node, pending = stack[-1]
            step = next(pending, None)
            if step is None:
                state[node] = 2
                stack.pop()
                continue
            via, target = step
            if state.get(target) == 1:
                return [
                    (
                        via,
                        "this $ref leads back to a schema that is already being applied to "
                        "the same value, so checking any value would never end",
                    )
                ]
            if target not in state:
                state[target] = 1
                stack.append((target, iter(edges.get(target, ()))))
    return []


def _pattern_problem(source: str, where: KeyPath) -> list[tuple[KeyPath, str]]:
    try:
        compile_pattern(source)
    except PatternError as exc:
        return [(where, f"invalid regular expression {source!r}: {exc}")]
    return []


def _meta_problem(schema: dict[str, Any]) -> tuple[KeyPath, str] | None:
    """The meta-schema's most relevant complaint (patterns are compiled by RE2 later, not
    by Python's ``re`` as the meta-schema's format check would)."""
    from jsonschema.exceptions import best_match

    try:
        error = best_match(_meta_validator().iter_errors(schema))
    except RecursionError:  # not reachable through YAML (100 levels), but not a crash
        return (), "the schema is nested too deep"
    if error is None:
        return None
    return tuple(error.absolute_path), f"not a valid JSON Schema: {error.message}"


@functools.cache
def _meta_validator() -> Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(Draft202012Validator.META_SCHEMA)


@functools.cache
def _validator_class() -> type[Validator]:
    """Draft 2020-12 with finite numbers and RE2 for every pattern it matches."""
    from jsonschema import Draft202012Validator, ValidationError, validators

    def pattern(validator: Any, source: str, instance: Any, _schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not compile_pattern(source).search(instance):
            yield ValidationError(f"{instance!r} does not match {source!r}")

    def pattern_properties(
        validator: Any, patterns: dict[str, Any], instance: Any, _schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for source, subschema in patterns.items():
            compiled = compile_pattern(source)
            for key, value in instance.items():
                if compiled.search(key):
                    yield from validator.descend(value, subschema, path=key, schema_path=source)

    def additional_properties(
        validator: Any, extra: Any, instance: Any, schema: dict[str, Any]
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        named = schema.get("properties", {})
        compiled = [compile_pattern(p) for p in schema.get("patternProperties", {})]
        extras = [k for k in instance if k not in named and not any(p.search(k) for p in compiled)]
        if validator.is_type(extra, "object"):
            for key in extras:
                yield from validator.descend(instance[key], extra, path=key)
        elif not extra and extras:
            shown = ", ".join(repr(k) for k in sorted(extras, key=str))
            yield ValidationError(f"additional properties are not allowed ({shown} unexpected)")

    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "number",
        lambda _c, x: (
            isinstance(x, (int, float))
            and not isinstance(x, bool)
            and (isinstance(x, int) or math.isfinite(x))
        ),
    )
    return validators.extend(
        Draft202012Validator,
        {
            "pattern": pattern,
            "patternProperties": pattern_properties,
            "additionalProperties": additional_properties,
        },
        type_checker=checker,
    )


def variable_error(spec: dict[str, Any], value: Any) -> str | None:
    """Why ``value`` does not fit a variable's JSON Schema (None when it does).

    Never raises: a schema that cannot be used (when it was not loaded through
    :func:`check_variables`) or a value too deep to check is a reason too.
    """
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    problems = schema_problems(spec)
    if problems:
        return f"invalid variable schema: {problems[0][1]}"
    try:
        # An empty registry: nothing is ever fetched (schema_problems allows only '#' refs).
        validator = _validator_class()(_schema(spec), registry=Registry())
        error = next(iter(validator.iter_errors(value)), None)
    except RecursionError:
        return "the value is nested too deep to check against its schema"
    except (PatternError, Unresolvable) as exc:
        return f"invalid variable schema: {exc}"
    return None if error is None else error.message


def check_variables(doc: Document, variables: Any, problems: list[Diagnostic]) -> None:
    """Each variable's schema where it is written, then its default against it (a string
    default for an integer)."""
    if not isinstance(variables, dict):
        return
    for name, spec in variables.items():
        if not isinstance(spec, dict):
            continue
        found = schema_problems(spec)
        for path, message in found:
            problems.append(doc.diagnostic(("variables", name, *path), message))
        if found or "default" not in spec:
            continue
        error = variable_error(spec, spec["default"])
        if error is not None:
            problems.append(
                doc.diagnostic(
                    ("variables", name, "default"),
                    f"default does not match the variable's schema: {error}",
                )
            )
