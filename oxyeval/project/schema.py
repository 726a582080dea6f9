"""Check parsed files against the JSON Schemas in ``schemas/``.

The schemas are the single source of truth for what a file may contain (editors
use the same files through ``# yaml-language-server: $schema=``). This module
only turns jsonschema's errors into diagnostics a person can act on: the file,
line and key, a "did you mean" for typos, and warnings rather than errors for
keys that oxy accepts and we do not implement yet (``x-oxy-unsupported``).
"""

from __future__ import annotations

import difflib
import functools
import json
import math
from collections.abc import Callable, Iterator
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..errors import Diagnostic
from ..redact import clip
from .document import Document, KeyPath

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

__all__ = ["SCHEMA_FILES", "did_you_mean", "load_schema", "schema_path", "validate_document"]

SCHEMA_FILES = {
    "config": "config.schema.json",
    "agent": "agent.schema.json",
    "workflow": "workflow.schema.json",
    "prompt": "prompt.schema.json",
    "cases": "cases.schema.json",
    "test": "agent-test.schema.json",
    "common": "common.schema.json",
    "chattest-prompt": "chattest-prompt.schema.json",
    "chattest-model": "chattest-model.schema.json",
}
UNSUPPORTED = "x-oxy-unsupported"


def did_you_mean(word: str, candidates: list[str] | set[str] | tuple[str, ...]) -> str:
    """`` did you mean 'x'?`` when a candidate is close, else an empty string."""
    close = difflib.get_close_matches(str(word), sorted(map(str, candidates)), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def schema_path(kind: str) -> str:
    """Filesystem path of a shipped schema, for the ``$schema=`` comment in editors."""
    return str(resources.files("oxyeval") / "schemas" / SCHEMA_FILES[kind])


@functools.cache
def load_schema(kind: str) -> dict[str, Any]:
    text = (resources.files("oxyeval") / "schemas" / SCHEMA_FILES[kind]).read_text("utf-8")
    return json.loads(text)


@functools.cache
def _validator(kind: str) -> Validator:
    from jsonschema import Draft202012Validator, ValidationError, validators
    from referencing import Registry, Resource

    def unsupported(
        _v: Any, message: str, instance: Any, _schema: Any
    ) -> Iterator[ValidationError]:
        yield ValidationError(message, validator=UNSUPPORTED, instance=instance)

    # JSON Schema counts 1.0 as an integer and lets NaN pass every bound, so `n: 1.0e+9`
    # validated and then failed as a TypeError, and `temperature: .nan` reached the wire.
    # Counts are ints (never floats or booleans); numbers are finite.
    checker = Draft202012Validator.TYPE_CHECKER.redefine_many(
        {
            "integer": lambda _c, x: isinstance(x, int) and not isinstance(x, bool),
            "number": lambda _c, x: (
                isinstance(x, (int, float))
                and not isinstance(x, bool)
                and (isinstance(x, int) or math.isfinite(x))
            ),
        }
    )
    cls = validators.extend(Draft202012Validator, {UNSUPPORTED: unsupported}, type_checker=checker)
    registry: Registry = Registry().with_resources(
        (name, Resource.from_contents(load_schema(k))) for k, name in SCHEMA_FILES.items()
    )
    return cls(load_schema(kind), registry=registry)


@functools.cache
def _quick_check(kind: str) -> Callable[[Any], bool | None]:
    from .schema_check import check

    return check(load_schema(kind), kind, _target)


def _target(ref: str, kind: str) -> tuple[Any, str]:
    """What a local or cross-file ``$ref`` in a schema of ``kind`` names (our schemas
    only use those two forms), and the kind of schema that holds it."""
    file, _, pointer = ref.partition("#")
    if file:
        kind = next(k for k, name in SCHEMA_FILES.items() if name == file)
    node: Any = load_schema(kind)
    for part in pointer.strip("/").split("/") if pointer.strip("/") else []:
        node = node[part]
    return node, kind


def _resolve(schema: Any, kind: str) -> Any:
    """Follow ``$ref`` until the schema that holds the keywords."""
    while isinstance(schema, dict) and "$ref" in schema:
        schema, kind = _target(schema["$ref"], kind)
    return schema


def _allowed_keys(schema: Any, instance: Any, kind: str) -> set[str]:
    """Keys a schema would accept for this instance, following allOf and if/then/else."""
    schema = _resolve(schema, kind)
    if not isinstance(schema, dict):
        return set()
    if schema.get("additionalProperties") is True and isinstance(instance, dict):
        return set(instance)
    keys = set(schema.get("properties", {}))
    for sub in schema.get("allOf", []):
        keys |= _allowed_keys(sub, instance, kind)
    for sub in schema.get("anyOf", []) + schema.get("oneOf", []):
        keys |= _allowed_keys(sub, instance, kind)
    if "if" in schema:
        branch = (
            "then" if _validator(kind).evolve(schema=schema["if"]).is_valid(instance) else "else"
        )
        if branch in schema:
            keys |= _allowed_keys(schema[branch], instance, kind)
    return keys


_TYPE_NAMES = {
    "object": "a mapping (key: value)",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"string {clip(value, 40, total=True)!r}"
    import datetime as _dt

    if isinstance(value, (_dt.date, _dt.datetime)):
        return (
            f"a date ({value.isoformat()}; YAML reads it as a date: quote it to make it a string)"
        )
    return f"{type(value).__name__} {value!r}"


def _diagnostics_for(error: ValidationError, doc: Document, kind: str) -> list[Diagnostic]:
    path: KeyPath = tuple(error.absolute_path)
    validator = error.validator
    schema = error.schema if isinstance(error.schema, dict) else {}
    value = error.instance

    if validator == UNSUPPORTED:
        # The keyword sits on the property's own schema, so the path is the unsupported key.
        message = str(error.message)
        if isinstance(value, dict) and isinstance(value.get("type"), str):
            message = f"type '{value['type']}': {message}"
        return [doc.diagnostic(path, message, severity="warning", at_key=True)]

    if validator in ("additionalProperties", "unevaluatedProperties") and isinstance(value, dict):
        allowed = _allowed_keys(
            error.schema if validator == "unevaluatedProperties" else schema, value, kind
        )
        if validator == "additionalProperties":
            allowed = set(schema.get("properties", {}))
        extras = [k for k in value if k not in allowed]
        shown = sorted(k for k in allowed if not str(k).startswith("x-"))
        return [
            doc.diagnostic(
                (*path, key),
                f"unknown key '{key}'{did_you_mean(key, shown)} (allowed here: {', '.join(shown)})",
                at_key=True,
            )
            for key in extras
        ]  # no extras: an artefact of a failing branch, already reported on its own

    if validator == "required":
        missing = [k for k in error.validator_value if isinstance(value, dict) and k not in value]
        name = missing[0] if missing else error.message
        return [doc.diagnostic(path, f"missing required key '{name}'", at_key=True)]

    if validator == "type":
        expected = error.validator_value
        names = [expected] if isinstance(expected, str) else list(expected)
        want = " or ".join(_TYPE_NAMES.get(n, n) for n in names)
        return [doc.diagnostic(path, f"expected {want}, got {_describe(value)}")]

    if validator == "enum":
        options = [str(o) for o in error.validator_value]
        hint = did_you_mean(value, options) if isinstance(value, str) else ""
        return [
            doc.diagnostic(path, f"{_describe(value)} is not one of: {', '.join(options)}{hint}")
        ]

    if validator in ("anyOf", "oneOf"):
        if "x-error" in schema:
            return [doc.diagnostic(path, schema["x-error"])]
        from jsonschema.exceptions import best_match

        inner = best_match(error.context) if error.context else None
        if inner is not None:
            return _diagnostics_for(inner, doc, kind)

    if validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        words = {
            "minimum": "at least",
            "exclusiveMinimum": "greater than",
            "maximum": "at most",
            "exclusiveMaximum": "less than",
        }[validator]
        return [doc.diagnostic(path, f"must be {words} {error.validator_value}, got {value!r}")]

    if validator == "minItems":
        return [doc.diagnostic(path, f"needs at least {error.validator_value} item(s)")]

    if validator == "maxItems":
        count = len(value) if isinstance(value, list) else "too many"
        return [doc.diagnostic(path, f"has {count} items; at most {error.validator_value} allowed")]

    if validator == "minLength":
        return [doc.diagnostic(path, "must not be empty")]

    if validator == "pattern":
        return [doc.diagnostic(path, f"{_describe(value)} must match {error.validator_value}")]

    return [doc.diagnostic(path, str(error.message))]


def _guessed_branch(error: ValidationError, misspelt: set[tuple[Any, ...]]) -> bool:
    """A key an ``if``/``then``/``else`` branch requires of a mapping whose own values
    include one that is not among its choices: the branch was picked on a typo."""
    conditional = "then" in error.relative_schema_path or "else" in error.relative_schema_path
    return error.validator == "required" and conditional and tuple(error.absolute_path) in misspelt


def validate_document(doc: Document, kind: str) -> list[Diagnostic]:
    """Every schema problem of ``doc`` (errors and warnings), in file order."""
    if doc.data is None:
        return [
            Diagnostic(
                doc.display,
                f"file is empty; expected {'an' if kind[0] in 'aeiou' else 'a'} {kind} mapping",
            )
        ]
    if _quick_check(kind)(doc.data) is True:
        return []  # certainly no error and no warning: jsonschema would find none
    out: list[Diagnostic] = []
    seen: set[tuple[Any, ...]] = set()
    errors = list(_validator(kind).iter_errors(doc.data))
    # A value that is not one of its choices (`vendor: mokc`) also sends its mapping down
    # the schema's "any other vendor" branch, which then demands keys (`model_ref`) the
    # intended choice does not need: only the "did you mean 'mock'" error helps.
    misspelt = {tuple(e.absolute_path)[:-1] for e in errors if e.validator == "enum"}
    errors = [e for e in errors if not _guessed_branch(e, misspelt)]
    for error in errors:
        for diag in _diagnostics_for(error, doc, kind):
            ident = (diag.line, diag.column, diag.key, diag.message)
            if ident not in seen:
                seen.add(ident)
                out.append(diag)
    # A mistyped type ("consistancy") is an error; the "this test is skipped" warning that
    # the same typo triggers through the schema's else branch would only confuse.
    typo_at = {
        d.key[: -len(".type")] for d in out if d.severity == "error" and d.key.endswith(".type")
    }
    out = [d for d in out if not (d.severity == "warning" and d.key in typo_at)]
    # "expected an integer, got float 1000000000.0" says it all; a bound on the same value
    # ("must be at most 10000") would only repeat it.
    wrong_type = {(d.line, d.key) for d in out if d.message.startswith("expected ")}
    out = [d for d in out if d.message.startswith("expected ") or (d.line, d.key) not in wrong_type]
    out.sort(key=lambda d: (d.line or 0, d.column or 0))
    return out
