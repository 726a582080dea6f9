"""The sandbox's globals and filters that could make far more than they are given.

Each guard checks the size of what it is about to make before making it (see
``sandbox.py``); every filter's result is then paid for in the rendering's budget, and a
list or mapping it returns is weighed (``render_budget``): ``[none] * 1000 |
map('default', big, true) | list`` holds ``big`` a thousand times.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jinja2 import filters as jinja_filters
from jinja2 import pass_eval_context
from jinja2.exceptions import TemplateRuntimeError
from jinja2.nodes import EvalContext
from jinja2.runtime import Undefined
from jinja2.utils import Namespace, generate_lorem_ipsum, htmlsafe_json_dumps
from markupsafe import Markup, soft_str

from .limits import MAX_RANGE, MAX_RANGE_TOTAL
from .render_budget import TemplateLimitError, check_chars, check_result, check_text, current
from .sandbox_items import item_guards
from .sandbox_text import text_guards

__all__ = [
    "BoundedNamespace",
    "accounted",
    "bounded_lipsum",
    "bounded_range",
    "check_printf",
    "check_text",
    "filter_guards",
    "is_int",
    "method_size",
    "template_json",
]


def is_int(value: Any) -> bool:
    return isinstance(value, int)  # bool included: True * 'x' is 'x'


def _is_container(value: Any) -> bool:
    return isinstance(value, (list, tuple, dict, set, frozenset))


_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def check_printf(fmt: str, args: Any) -> None:
    """``"%999999999s" % x`` allocates the width before returning: check widths first,
    and the text of lists and mappings it prints."""
    size = len(fmt)
    star = False
    for width, precision in _PRINTF.findall(fmt):
        for part in (width, precision):
            if part == "*":
                star = True
            elif part:
                size += int(part)
    values = args if isinstance(args, tuple) else (args,)
    if star:
        size += sum(v for v in values if is_int(v) and v > 0)
    for value in values:
        check_text(value, "a %-formatted value")
    check_chars(size, "a %-formatted string")


# str methods that can return far more than they are given, and how much.
def method_size(name: str, text: str | bytes, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    if name in ("center", "ljust", "rjust", "zfill"):
        width = args[0] if args else kwargs.get("width", 0)
        return max(len(text), width if is_int(width) else 0)
    if name == "expandtabs":
        tabsize = args[0] if args else kwargs.get("tabsize", 8)
        tabs = text.count("\t" if isinstance(text, str) else b"\t")
        return len(text) + tabs * max(0, tabsize if is_int(tabsize) else 8)
    if name == "replace" and len(args) >= 2:
        old, new = args[0], args[1]
        if not isinstance(old, (str, bytes)) or not isinstance(new, (str, bytes)):
            return len(text)
        count = text.count(old) if old else len(text) + 1  # type: ignore[arg-type]
        limit = args[2] if len(args) > 2 else kwargs.get("count", -1)
        if is_int(limit) and limit >= 0:
            count = min(count, limit)
        return len(text) + count * max(0, len(new) - len(old))
    if name == "join" and args:
        items = args[0]
        if isinstance(items, (list, tuple)):
            parts = sum(len(i) for i in items if isinstance(i, (str, bytes)))
            return parts + len(text) * max(0, len(items) - 1)
    if name == "translate" and args and isinstance(text, str):
        return _translated_size(text, args[0])
    return len(text)


def _translated_size(text: str, table: Any) -> int:
    """``'aaa'.translate({97: big})`` replaces each ``a`` by ``big``: the characters
    mapped to longer strings, counted (a few hundred at most, else the upper bound)."""
    if isinstance(table, Mapping):
        pairs: Iterable[tuple[Any, Any]] = table.items()
    elif isinstance(table, (list, tuple)):
        pairs = enumerate(table)
    else:  # a str, range or bytes maps each character to at most one
        return len(text)
    growing = [(k, len(v)) for k, v in pairs if isinstance(v, str) and len(v) > 1]
    if not growing:
        return len(text)
    if len(growing) > 256:
        return len(text) * max(n for _, n in growing)
    size = len(text)
    for key, n in growing:
        if is_int(key) and 0 <= key <= 0x10FFFF:  # str.translate looks up code points
            size += text.count(chr(key)) * (n - 1)
    return size


# Filters that turn their value into text: a list or mapping is weighed first.
_TEXT_FILTERS = frozenset(
    {
        "capitalize",
        "e",
        "escape",
        "forceescape",
        "lower",
        "safe",
        "string",
        "striptags",
        "title",
        "trim",
        "truncate",
        "upper",
        "urlencode",
        "urlize",
        "wordcount",
    }
)


def accounted(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """A filter whose result counts towards the rendering's total (``upper`` of a large
    string in a loop makes a new copy each time), and whose list or mapping is weighed."""
    text = name in _TEXT_FILTERS
    skip = 0 if getattr(func, "jinja_pass_arg", None) is None else 1  # context comes first

    @functools.wraps(func)  # keeps jinja_pass_arg (pass_context and friends)
    def accounted(*args: Any, **kwargs: Any) -> Any:
        if text and len(args) > skip and not isinstance(args[skip], str):
            check_text(args[skip], f"{name}(...)")
        result = func(*args, **kwargs)
        spent = current()
        if type(result) is str and len(result) <= spent.chars:  # the usual case, quickly
            spent.account(len(result))
        elif isinstance(result, (str, bytes, int)):
            check_result(result, args[skip] if len(args) > skip else None, f"{name}(...)")
        else:
            spent.check_weight(result, f"the result of {name}(...)")
        return result

    return accounted


def bounded_range(*args: int) -> range:
    rng = range(*args)
    if len(rng) > MAX_RANGE:
        raise TemplateLimitError(
            f"range(...) of {len(rng):,} items; templates are limited to {MAX_RANGE:,}"
        )
    spent = current()
    spent.range_items += len(rng)
    if spent.range_items > MAX_RANGE_TOTAL:
        raise TemplateLimitError(
            f"range(...) calls of one rendering add up to more than {MAX_RANGE_TOTAL:,} "
            "items (nested loops?)"
        )
    return rng


def bounded_lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    if not all(is_int(v) for v in (n, min, max)) or n > 100 or max > 1000:
        raise TemplateLimitError("lipsum(...) is limited to 100 paragraphs of 1,000 words")
    return generate_lorem_ipsum(n, html, min, max)


class BoundedNamespace(Namespace):
    """``namespace()``: its repr names its attributes only. A namespace is the one
    value a template can change ({% set ns.x = ... %}), so a list holding it could grow
    after it was weighed; printing the list must not print what was added since."""

    def __repr__(self) -> str:
        attrs = object.__getattribute__(self, "_Namespace__attrs")
        return f"<Namespace {', '.join(map(str, attrs))}>"


# -- filters that can multiply their input ----------------------------------------------


def _width(value: Any, what: str) -> None:
    if is_int(value):
        check_chars(value, what)


def _center(value: Any, width: int = 80) -> str:
    _width(width, "center(width)")
    return jinja_filters.do_center(value, width)


def _indent(s: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    check_text(s, "indent(...)")
    text = soft_str(s)
    step = len(width) if isinstance(width, str) else width if is_int(width) else 0
    check_chars(len(text) + (text.count("\n") + 2) * max(0, step), "indent(...)")
    return jinja_filters.do_indent(s, width, first, blank)


def _format(value: Any, *args: Any, **kwargs: Any) -> str:
    check_printf(soft_str(value), kwargs or args)
    return jinja_filters.do_format(value, *args, **kwargs)


@pass_eval_context
def _replace(eval_ctx: EvalContext, s: Any, old: Any, new: Any, count: int | None = None) -> str:
    check_text(s, "replace(...)")
    text = soft_str(s)
    check_chars(
        method_size(
            "replace", text, (soft_str(old), soft_str(new), -1 if count is None else count), {}
        ),
        "replace(...)",
    )
    return jinja_filters.do_replace(eval_ctx, s, old, new, count)


def template_json(value: Any) -> Any:
    """JSON's ``default`` in templates (``tojson``): a value the engine puts into
    templates (an SQL result, a loop's or a branch's outputs) as the plain data its
    ``_template_json()`` method gives (templates cannot call it: its name starts with an
    underscore), weighed like anything a template prints; another mapping as a dict;
    anything else an error worded for the template's author, not Python's "Object of type
    X is not JSON serializable"."""
    if isinstance(value, Undefined):
        value._fail_with_undefined_error()
    method = getattr(type(value), "_template_json", None)
    if method is not None:
        data = method(value)
    elif isinstance(value, Mapping):
        data = dict(value)
    else:
        kind = "namespace" if isinstance(value, Namespace) else type(value).__name__
        raise TemplateRuntimeError(
            f"tojson cannot write a {kind} value (text, numbers, true, false, none, lists "
            "and mappings can be written as JSON)"
        )
    check_text(data, "tojson(...)")
    return data


@pass_eval_context
def _tojson(eval_ctx: EvalContext, value: Any, indent: int | None = None) -> Markup:
    """JSON text, bounded while it is written: without indent its size is about the
    value's weight (checked first); with indent, each line is indented by its depth, so
    the text is measured as the encoder streams it."""
    if indent is not None and (not is_int(indent) or indent > 64):
        raise TemplateLimitError("tojson(indent) is limited to 64 spaces")
    check_text(value, "tojson(...)")
    if indent is None:
        return jinja_filters.do_tojson(eval_ctx, value, indent)
    policies = eval_ctx.environment.policies
    kwargs = {**policies["json.dumps_kwargs"], "indent": indent}
    limit = current().chars
    chunks: list[str] = []
    size = 0
    for chunk in json.JSONEncoder(**kwargs).iterencode(value):
        size += len(chunk)
        if size > limit:
            check_chars(size, "tojson(...)")
        chunks.append(chunk)
    return htmlsafe_json_dumps("".join(chunks), dumps=lambda text, **_: text)


def _pprint(value: Any) -> str:
    """pprint indents by depth: its text is at most the value's weight times its depth,
    which must fit (a deep list of small lists prints far more than it weighs)."""
    spent = current()
    weight = spent.weigh(value, spent.chars) if _is_container(value) else 0
    check_chars(weight * (_depth(value) + 1), "pprint(...)")
    return jinja_filters.do_pprint(value)


def _depth(value: Any, limit: int = 10_000) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack and deepest < limit:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, (list, tuple, set, frozenset)):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in item)
    return deepest


def filter_guards() -> dict[str, Callable[..., Any]]:
    """The guarded filters, by name, to replace Jinja's own."""
    return {
        "center": _center,
        "indent": _indent,
        "format": _format,
        "replace": _replace,
        "tojson": _tojson,
        "pprint": _pprint,
        **item_guards(),
        **text_guards(),
    }
