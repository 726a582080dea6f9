"""A quick yes to "does this file hold no schema problem?", for files where asking
jsonschema costs more than the run they start.

jsonschema walks a document node by node through generic keyword functions (about ten
microseconds a value): a prompt file of 10,000 cases took half a second to check before
its first case ran. Most files have no problem at all, and proving that needs no
message. :func:`check` compiles a schema once into nested closures that answer with
three values: ``True`` (valid, with no warning either), ``False`` (certainly invalid) or
``None`` (not known here). Only ``True`` is acted on: :func:`validate_document` then
skips jsonschema; on anything else jsonschema runs as always and its errors, in its
words, are what users see. So this module may answer ``None`` wherever it likes, and
must never answer ``True`` or ``False`` where jsonschema would not: a keyword it does not
know, an ``x-oxy-unsupported`` key that is present (a warning), ``unevaluatedProperties``
and ``uniqueItems`` over several items answer ``None``; equality for ``enum`` and
``const`` is only decided between values of one type.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

__all__ = ["check"]

Check = Callable[[Any], "bool | None"]

#: Keywords that describe and never constrain.
_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples"}
)
_ANNOTATIONS |= {"x-error"}  # a message for jsonschema's error, never a constraint


#: JSON types as the schema module's type checker reads them: an integer is never a
#: boolean nor a float (``1.0``), a number is finite.
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "integer": lambda x: isinstance(x, int) and not isinstance(x, bool),
    "number": lambda x: (
        isinstance(x, (int, float))
        and not isinstance(x, bool)
        and (isinstance(x, int) or math.isfinite(x))
    ),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
}


def _same(a: Any, b: Any) -> bool | None:
    """Equal as JSON Schema compares, where that is certain: values of one scalar type."""
    if type(a) is not type(b) or isinstance(a, (list, dict)):
        return None
    if type(a) is float and (math.isnan(a) or math.isnan(b)):
        return None
    return a == b


def _all(results: list[bool | None]) -> bool | None:
    if False in results:
        return False
    return None if None in results else True


def _any(results: list[bool | None]) -> bool | None:
    if True in results:
        return True
    return None if None in results else False


class _Compiler:
    def __init__(self, resolve: Callable[[str, str], tuple[Any, str]]) -> None:
        self._resolve = resolve  # ($ref, where it is) -> (its schema, where that is)
        self._done: dict[tuple[int, str], Check] = {}

    def compile(self, schema: Any, file: str) -> Check:
        if schema is True:
            return lambda _x: True
        if schema is False:
            return lambda _x: False
        if not isinstance(schema, dict):
            return lambda _x: None
        ident = (id(schema), file)
        if ident in self._done:
            return self._done[ident]
        cell: list[Check] = []
        self._done[ident] = lambda x: cell[0](x)  # a schema that refers to itself
        made = self._build(schema, file)
        cell.append(made)
        self._done[ident] = made
        return made

    def _build(self, schema: dict[str, Any], file: str) -> Check:
        parts: list[Check] = []
        for keyword, value in schema.items():
            if keyword in _ANNOTATIONS or keyword in ("then", "else"):
                continue
            part = self._keyword(keyword, value, schema, file)
            if part is None:
                return lambda _x: None  # a keyword not known here: jsonschema decides
            parts.append(part)
        if len(parts) == 1:
            return parts[0]

        def each(x: Any) -> bool | None:
            unknown = False
            for part in parts:
                verdict = part(x)
                if verdict is False:
                    return False
                if verdict is None:
                    unknown = True
            return None if unknown else True

        return each

    def _keyword(self, keyword: str, value: Any, schema: dict[str, Any], file: str) -> Check | None:
        method = getattr(self, "_k_" + keyword.replace("$", "").replace("-", "_"), None)
        return None if method is None else method(value, schema, file)

    def _k_ref(self, ref: Any, _schema: Any, file: str) -> Check | None:
        target, where = self._resolve(str(ref), file)
        box: list[Check] = []

        def follow(x: Any) -> bool | None:
            if not box:
                box.append(self.compile(target, where))
            return box[0](x)

        return follow

    def _k_x_oxy_unsupported(self, _value: Any, _schema: Any, _file: str) -> Check:
        return lambda _x: None  # present: a warning, which only jsonschema words

    def _k_type(self, value: Any, _schema: Any, _file: str) -> Check | None:
        names = [value] if isinstance(value, str) else list(value)
        if not all(n in _TYPES for n in names):
            return None
        tests = [_TYPES[n] for n in names]
        return lambda x: any(t(x) for t in tests)

    def _k_properties(self, value: dict[str, Any], _schema: Any, file: str) -> Check:
        checks = {name: self.compile(sub, file) for name, sub in value.items()}

        def properties(x: Any) -> bool | None:
            if not isinstance(x, dict):
                return True
            return _all([checks[k](v) for k, v in x.items() if k in checks])

        return properties

    def _k_additionalProperties(self, value: Any, schema: Any, file: str) -> Check | None:
        if "patternProperties" in schema:
            return None
        known = set(schema.get("properties", {}))
        rest = self.compile(value, file)

        def additional(x: Any) -> bool | None:
            if not isinstance(x, dict):
                return True
            return _all([rest(v) for k, v in x.items() if k not in known])

        return additional

    def _k_required(self, value: list[str], _schema: Any, _file: str) -> Check:
        return lambda x: not isinstance(x, dict) or all(k in x for k in value)

    def _k_items(self, value: Any, schema: Any, file: str) -> Check | None:
        if "prefixItems" in schema or not isinstance(value, (dict, bool)):
            return None
        item = self.compile(value, file)

        def items(x: Any) -> bool | None:
            if not isinstance(x, list):
                return True
            unknown = False
            for each in x:
                verdict = item(each)
                if verdict is False:
                    return False
                unknown = unknown or verdict is None
            return None if unknown else True

        return items

    def _bound(self, test: Callable[[Any], bool]) -> Check:
        is_number = _TYPES["number"]  # a bound applies to numbers only, as in jsonschema
        return lambda x: not is_number(x) or test(x)

    def _k_minimum(self, v: Any, _s: Any, _f: str) -> Check:
        return self._bound(lambda x: x >= v)

    def _k_maximum(self, v: Any, _s: Any, _f: str) -> Check:
        return self._bound(lambda x: x <= v)

    def _k_exclusiveMinimum(self, v: Any, _s: Any, _f: str) -> Check:
        return self._bound(lambda x: x > v)

    def _k_exclusiveMaximum(self, v: Any, _s: Any, _f: str) -> Check:
        return self._bound(lambda x: x < v)

    def _k_minLength(self, v: int, _s: Any, _f: str) -> Check:
        return lambda x: not isinstance(x, str) or len(x) >= v

    def _k_maxLength(self, v: int, _s: Any, _f: str) -> Check:
        return lambda x: not isinstance(x, str) or len(x) <= v

    def _k_pattern(self, v: str, _s: Any, _f: str) -> Check:
        found = re.compile(v).search  # jsonschema searches too: unanchored
        return lambda x: not isinstance(x, str) or found(x) is not None

    def _k_minItems(self, v: int, _s: Any, _f: str) -> Check:
        return lambda x: not isinstance(x, list) or len(x) >= v

    def _k_maxItems(self, v: int, _s: Any, _f: str) -> Check:
        return lambda x: not isinstance(x, list) or len(x) <= v

    def _k_uniqueItems(self, v: Any, _s: Any, _f: str) -> Check:
        return lambda x: True if not v or not isinstance(x, list) or len(x) < 2 else None

    def _k_const(self, v: Any, _s: Any, _f: str) -> Check:
        return lambda x: _same(x, v)

    def _k_enum(self, options: list[Any], _s: Any, _f: str) -> Check:
        return lambda x: _any([_same(x, option) for option in options])

    def _k_allOf(self, subs: list[Any], _s: Any, file: str) -> Check:
        checks = [self.compile(sub, file) for sub in subs]
        return lambda x: _all([c(x) for c in checks])

    def _k_anyOf(self, subs: list[Any], _s: Any, file: str) -> Check:
        checks = [self.compile(sub, file) for sub in subs]
        return lambda x: _any([c(x) for c in checks])

    def _k_oneOf(self, subs: list[Any], _s: Any, file: str) -> Check:
        checks = [self.compile(sub, file) for sub in subs]

        def one_of(x: Any) -> bool | None:
            verdicts = [c(x) for c in checks]
            if None in verdicts:
                return None
            return verdicts.count(True) == 1

        return one_of

    def _k_not(self, sub: Any, _s: Any, file: str) -> Check:
        inner = self.compile(sub, file)

        def negated(x: Any) -> bool | None:
            verdict = inner(x)
            return None if verdict is None else not verdict

        return negated

    def _k_if(self, sub: Any, schema: dict[str, Any], file: str) -> Check:
        condition = self.compile(sub, file)
        then = self.compile(schema.get("then", True), file)
        other = self.compile(schema.get("else", True), file)

        def conditional(x: Any) -> bool | None:
            verdict = condition(x)
            if verdict is None:
                return None
            return then(x) if verdict else other(x)

        return conditional


def check(
    schema: dict[str, Any], file: str, resolve: Callable[[str, str], tuple[Any, str]]
) -> Check:
    """``schema`` (from ``file``: any name for the schema file it is in) compiled into a
    three-valued check; ``resolve`` finds what a ``$ref`` in a file names, and the file
    that holds it."""
    return _Compiler(resolve).compile(schema, file)
