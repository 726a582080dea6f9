"""A workflow's variables at run time: given values over defaults, checked by their schema.

Also which strings count as written by the project's author or its user (the only
text an SQL template's ``raw_sql`` may print as SQL): see :func:`strings`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, LoadError
from ..inputs import JSONProblem, loads
from ..project.templates import TemplateRef, render
from ..project.varschema import variable_error
from ..redact import clip

if TYPE_CHECKING:
    from .spec import Workflow

__all__ = ["coerce", "is_template", "resolve_variables", "strings"]


def resolve_variables(workflow: Workflow, given: Mapping[str, Any]) -> dict[str, Any]:
    """Given values (coerced to the declared type) over defaults, checked by their schema."""
    unknown = sorted(set(given) - set(workflow.variables))
    if unknown:
        declared = ", ".join(workflow.variables) or "none"
        raise ConfigError(
            f"{workflow.doc.display}: unknown variable(s) {', '.join(unknown)}; declared: {declared}"
        )
    values: dict[str, Any] = {}
    missing = []
    for name, schema in workflow.variables.items():
        if name in given:
            try:
                value = coerce(given[name], schema, f"variable '{name}'")
            except JSONProblem as exc:
                shown = clip(repr(given[name]), 80, total=True)
                raise ConfigError(
                    f"{workflow.doc.display}: variable '{name}' = {shown}: {exc}"
                ) from None
        elif "default" in schema:
            value = schema["default"]
        else:
            missing.append(name)
            continue
        error = variable_error(schema, value)
        if error is not None:
            shown = repr(value)
            if len(shown) > 80:  # a long value once, not twice (jsonschema repeats it)
                error = error.replace(shown, "the value")
                shown = clip(shown, 80, total=True)  # redacted, then cut: never split a key
            raise ConfigError(f"{workflow.doc.display}: variable '{name}' = {shown}: {error}")
        values[name] = value
    if missing:
        raise ConfigError(
            f"{workflow.doc.display}: no value for variable(s) {', '.join(missing)}; pass "
            "--var NAME=VALUE or --vars FILE.yml, or give them a default"
        )
    # Defaults may themselves be templates over other variables (oxy allows it). A
    # given value is a value: rendering it would run a --var or a task output as a template.
    for name, value in values.items():
        if name not in given and isinstance(value, str) and "{{" in value:
            values[name] = _render_default(workflow, name, value, values)
    return values


def _render_default(workflow: Workflow, name: str, value: str, values: Mapping[str, Any]) -> str:
    """A templated default rendered over the other variables; one that cannot be is bad
    input naming the file, the variable and why, never left as its template text."""
    ref = TemplateRef(value, workflow.doc, workflow.default_key(name))
    try:
        return render(ref, {k: v for k, v in values.items() if k != name})
    except LoadError as exc:
        for d in exc.diagnostics:
            d.message = f"variable '{name}': its default could not be rendered: {d.message}"
        raise


def is_template(value: Any) -> bool:
    return isinstance(value, str) and any(tag in value for tag in ("{{", "{%", "{#"))


def strings(values: Iterable[Any]) -> set[str]:
    """Every string in these values, nested lists and mappings included."""
    out: set[str] = set()
    for value in values:
        if isinstance(value, str):
            out.add(value)
        elif isinstance(value, (list, tuple)):
            out |= strings(value)
        elif isinstance(value, dict):
            out |= strings(value.values())
    return out


def coerce(value: Any, schema: Mapping[str, Any], where: str | None = None) -> Any:
    """A --var string as the declared type (numbers, booleans, lists and objects as JSON).

    Raises JSONProblem for JSON out of bounds (``1e999``, ``NaN``, 5,000 digits, nesting
    deeper than the project's files allow): numbers are finite, and such a value is bad
    input rather than ``inf`` or a RecursionError."""
    if not isinstance(value, str):
        return value
    kind = schema.get("type")
    if kind in ("integer", "number", "boolean", "array", "object"):
        try:
            parsed = loads(value, where)
        except JSONProblem as exc:
            if not exc.syntax:
                raise
            if kind == "boolean" and value.lower() in ("yes", "no", "on", "off"):
                return value.lower() in ("yes", "on")
            return value  # the schema check reports the mismatch
        if kind == "integer" and isinstance(parsed, float):
            return value  # 5.0 or 1e3 is not an integer here either (as in project files)
        return parsed
    return value
