"""Values that enter the program from outside: text made valid, JSON bounded, numbers finite.

Text reaches oxyeval from servers (a model's answer, a tool call's arguments), the
command line, the environment and files. Python lets a ``str`` hold what no encoder
accepts: JSON's ``"\\ud83d"`` decodes to a lone UTF-16 surrogate, and argv or environment
bytes that are not UTF-8 arrive as surrogate escapes (``\\udcff``). Such a string travels
fine until something writes it (the console, a JSON or JUnit report, the history
database), which then raises UnicodeEncodeError: the results of a run that scored are
lost. So every such value is made valid where it enters (:func:`valid_text`, and
:func:`loads` for JSON): a surrogate pair is joined into its character, anything else
becomes U+FFFD, with a warning naming where it came from.

JSON from outside is also bounded (:func:`loads`): nesting deeper than
:data:`MAX_JSON_DEPTH` (Python's parser would raise RecursionError), integers longer than
:data:`MAX_INT_DIGITS` (beyond any float; Python refuses 4,300 digits with a ValueError
that says nothing of where), and the non-finite numbers that Python's ``json`` accepts
but JSON has not (``NaN``, ``Infinity``, ``1e999``), each a :class:`JSONProblem` with
the line it is on. The documented contract is that numbers are finite.

Values that arrive already decoded (a GraphQL variable, which the HTTP layer parsed with
Python's lenient ``json``) are held to the same bounds by :func:`value_problem`. What is
written out as JSON goes through :func:`finite_json` first: a value that slipped past
these checks (a row an older version stored) is written as ``null``, as JavaScript's
``JSON.stringify`` writes ``NaN``, rather than make the whole answer invalid JSON.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

__all__ = [
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "JSONProblem",
    "finite_json",
    "lenient_loads",
    "loads",
    "reset_warnings",
    "valid_text",
    "value_problem",
]

log = logging.getLogger("oxyeval.inputs")

#: Lists and objects inside each other; the project's YAML files have the same bound.
MAX_JSON_DEPTH = 100
#: Digits of an integer (a float's range ends at about 1.8e308).
MAX_INT_DIGITS = 308

_SURROGATE = re.compile("[\ud800-\udfff]")
_said: set[str] = set()


def valid_text(text: str, where: str | None = None) -> str:
    """``text`` with no lone surrogate left: a high/low pair joined into its character,
    any other surrogate replaced by U+FFFD. With ``where``, a warning names the place
    (once per place), so a reader knows why a character shows as the replacement mark."""
    if text.isascii() or _SURROGATE.search(text) is None:  # the first: a scan at C speed
        return text
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if where is not None:
        _warn(where, fixed.count("\ufffd") - text.count("\ufffd"))
    return fixed


def reset_warnings() -> None:
    """Forget the places already warned about: each command invocation says them anew."""
    _said.clear()


def _warn(where: str, count: int) -> None:
    """One warning per place per invocation (a model answering 100 times says it once, a
    file loaded twice once)."""
    if where in _said:
        return
    if len(_said) < 1000:
        _said.add(where)
    log.warning(
        "%s: %d invalid character(s) (a lone UTF-16 surrogate, or bytes that are not UTF-8) "
        "replaced by U+FFFD",
        where,
        count,
    )


class JSONProblem(ValueError):
    """JSON text that is not taken: invalid, too deep, a number out of range.

    ``line`` is 1-based (None when unknown); ``str()`` is the reason alone. ``syntax``:
    the text is not JSON at all (rather than JSON out of bounds), for callers that then
    take it as plain text.
    """

    def __init__(
        self,
        message: str,
        line: int | None = None,
        *,
        column: int | None = None,
        syntax: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.syntax = syntax

    def where(self, source: str) -> str:
        """``source:line:column`` as far as they are known."""
        parts = [source] + [str(n) for n in (self.line, self.column) if n is not None]
        return ":".join(parts if self.line is not None else [source])


class _Number(ValueError):
    """Raised from the parser's number hooks; turned into a JSONProblem with its line."""


def _constant(name: str) -> Any:
    raise _Number(f"{name} is not a number JSON allows (numbers must be finite)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Number(f"{text} is out of range (numbers must be finite)")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Number(f"an integer of {len(text.lstrip('-'))} digits is out of range")
    return int(text)


_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float, parse_int=_int)


def loads(data: str | bytes, where: str | None = None) -> Any:
    """``data`` parsed as strict, bounded JSON (see the module docstring), its strings
    made valid text (a warning naming ``where`` when one was not). Raises JSONProblem."""
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JSONProblem(
                f"not UTF-8 text (bad byte at offset {exc.start})", syntax=True
            ) from None
    else:
        text = data
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise JSONProblem(
            f"not valid JSON: {exc.msg}", exc.lineno, column=exc.colno, syntax=True
        ) from None
    except _Number as exc:
        raise JSONProblem(str(exc), _number_line(text)) from None
    except RecursionError:
        raise JSONProblem(_too_deep(), _depth_line(text)) from None
    except ValueError as exc:  # what int() itself refuses
        raise JSONProblem(str(exc)) from None
    return _checked(value, text, where)


def _too_deep() -> str:
    return f"nested more than {MAX_JSON_DEPTH} levels deep (lists and objects inside each other)"


def _checked(value: Any, text: str, where: str | None) -> Any:
    """``value`` with its strings made valid, in place, or JSONProblem when too deep.
    Iterative: a value nested as deep as the parser allows must not recurse here."""
    replaced = 0

    def fix(item: str) -> str:
        nonlocal replaced
        if _SURROGATE.search(item) is None:
            return item
        fixed = valid_text(item)
        replaced += fixed.count("\ufffd") - item.count("\ufffd")
        return fixed

    if isinstance(value, str):
        value = fix(value)
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (list, dict)) and depth > MAX_JSON_DEPTH:
            raise JSONProblem(_too_deep(), _depth_line(text))
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i] = fix(item)
                elif isinstance(item, (list, dict)):
                    stack.append((item, depth + 1))
        elif isinstance(node, dict):
            if any(_SURROGATE.search(key) for key in node):
                items = [(fix(k), v) for k, v in node.items()]
                node.clear()
                node.update(items)
            for key, item in node.items():
                if isinstance(item, str):
                    node[key] = fix(item)
                elif isinstance(item, (list, dict)):
                    stack.append((item, depth + 1))
    if replaced and where is not None:
        _warn(where, replaced)
    return value


# A string, or (outside strings) a constant or a number: what the line finders look at.
_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)|(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?)|([\[\]{}])'
)


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _number_line(text: str) -> int | None:
    """The line of the first number the parser hooks refuse (only run on that error)."""
    for match in _TOKEN.finditer(text):
        constant, number = match.group(1), match.group(2)
        if constant is not None:
            return _line(text, match.start())
        if number is not None:
            try:
                _int(number) if number.lstrip("-").isdigit() else _float(number)
            except _Number:
                return _line(text, match.start())
    return None


def _depth_line(text: str) -> int | None:
    """The line where nesting first passes the bound (only run on that error)."""
    depth = 0
    for match in _TOKEN.finditer(text):
        bracket = match.group(3)
        if bracket is None:
            continue
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return _line(text, match.start())
    return None


#: 10**MAX_INT_DIGITS: the first integer past the bound (a float's range ends before it).
_INT_BOUND = 10**MAX_INT_DIGITS
#: Integers Python can print (4,300 digits; 14,000 bits stay below that).
_PRINTABLE_BITS = 14_000


def _number_problem(value: Any) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        name = "NaN" if math.isnan(value) else ("-Infinity" if value < 0 else "Infinity")
        return f"{name} is not a number JSON allows (numbers must be finite)"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_BOUND:
        return f"an integer of more than {MAX_INT_DIGITS} digits is out of range"
    return None


def value_problem(value: Any, name: str = "value") -> str | None:
    """Why a decoded value is not JSON as :func:`loads` bounds it, naming where in it
    (``input.a[2]: ...``); None when it is. Iterative, so any depth is measured safely."""
    stack: list[tuple[Any, str, int]] = [(value, name, 0)]
    while stack:
        node, where, depth = stack.pop()
        if isinstance(node, (dict, list, tuple)):
            if depth >= MAX_JSON_DEPTH:
                return f"{name}: {_too_deep()}"  # its path would be 100 steps long
            if isinstance(node, dict):
                stack.extend((v, f"{where}.{k}", depth + 1) for k, v in node.items())
            else:
                stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(node))
            continue
        problem = _number_problem(node)
        if problem is not None:
            return f"{where}: {problem}"
    return None


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if type(value) is int and value.bit_length() > _PRINTABLE_BITS:
        return None
    return value


def finite_json(value: Any) -> Any:
    """``value`` with every non-finite float and every integer too long to print as
    ``None``: what strict JSON can write. A copy (lists for tuples); iterative."""
    if not isinstance(value, (dict, list, tuple)):
        return _finite(value)
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, (dict, list, tuple)):
                copy: Any = {} if isinstance(item, dict) else []
                stack.append((item, copy))
            else:
                copy = _finite(item)
            if isinstance(target, dict):
                target[key] = copy
            else:
                target.append(copy)
    return root


def _lenient_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:  # past Python's 4,300 digits
        return None


_LENIENT = json.JSONDecoder(
    parse_constant=lambda name: None,
    parse_float=lambda text: _finite(float(text)),
    parse_int=_lenient_int,
)


def lenient_loads(text: str) -> Any:
    """JSON that this program wrote earlier (a stored row), read so that it never fails on
    what an older version let through: ``NaN``, ``Infinity``, ``1e999`` and integers
    Python cannot read become ``None``. Input from outside goes through :func:`loads`."""
    return _LENIENT.decode(text)
