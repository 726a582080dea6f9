"""The Jinja sandbox with resource limits: no template may allocate gigabytes or spin forever.

Jinja's ``SandboxedEnvironment`` stops templates from reaching Python internals, but
not from exhausting memory: ``{{ 'x' * 1000000000 }}``, ``"%999999999s" | format(1)``,
``'ab' | replace('a', big)`` and a doubling ``{% set ns.s = ns.s ~ ns.s %}`` in a loop
all allocate before anything could look at the result. So every operation that can
make a value much larger than its inputs is checked *before* it runs, against
:func:`oxyeval.project.limits.render_limit` (characters) and the item, integer and call
budgets in :mod:`oxyeval.project.limits`; rendered text is measured as it streams out.

A limit breached raises :class:`TemplateLimitError` (a ``SecurityError``), which
``templates.render`` turns into an error naming the template's file, key and line.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from string import Formatter
from typing import Any

from jinja2 import filters as jinja_filters
from jinja2 import pass_environment, pass_eval_context
from jinja2.compiler import CodeGenerator, Frame
from jinja2.nodes import Concat, EvalContext
from jinja2.runtime import Context, markup_join, str_join
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedFormatter, SecurityError
from jinja2.utils import generate_lorem_ipsum
from markupsafe import EscapeFormatter, Markup, soft_str

from .limits import (
    MAX_BUILT_FACTOR,
    MAX_RANGE,
    MAX_RANGE_TOTAL,
    MAX_TEMPLATE_CALLS,
    MAX_TEMPLATE_INT_BITS,
    MAX_TEMPLATE_ITEMS,
    render_limit,
)

__all__ = ["LimitedSandbox", "TemplateLimitError", "budget"]


class TemplateLimitError(SecurityError):
    """A template tried to build something larger than the sandbox allows."""


@dataclass
class _Budget:
    """What one rendering has used so far; limits that no single operation shows."""

    chars: int  # the most one string (or the rendered text) may have
    calls: int = 0
    range_items: int = 0
    built: int = 0  # characters (and list items) made by operations so far

    def account(self, size: int) -> None:
        """A loop that keeps making large strings is bounded in total, not only per string."""
        self.built += size
        cap = self.chars * MAX_BUILT_FACTOR
        if self.built > cap:
            raise TemplateLimitError(
                f"the operations of one rendering built more than {cap:,} characters "
                f"({MAX_BUILT_FACTOR} times the {self.chars:,}-character limit)"
            )


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "oxyeval_template_budget", default=None
)


@contextlib.contextmanager
def budget() -> Iterator[None]:
    """One rendering's budget: calls and range items add up across loops and macros."""
    token = _BUDGET.set(_Budget(render_limit()))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _current() -> _Budget:
    # Outside budget() (a direct Jinja call) every operation is still checked on its own.
    return _BUDGET.get() or _Budget(render_limit())


def _check_chars(size: int, what: str) -> None:
    spent = _current()
    if size > spent.chars:
        raise TemplateLimitError(
            f"{what} would be {size:,} characters; templates are limited to {spent.chars:,} "
            "(set OXY_MAX_RENDER_CHARS to change it)"
        )
    spent.account(size)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple, dict)) else 0


def _check_items(size: int, what: str) -> None:
    if size > MAX_TEMPLATE_ITEMS:
        raise TemplateLimitError(
            f"{what} would have {size:,} items; templates are limited to {MAX_TEMPLATE_ITEMS:,}"
        )
    _current().account(size)


def _is_int(value: Any) -> bool:
    return isinstance(value, int)  # bool included: True * 'x' is 'x'


def _int_bits(left: int, right: int, op: str) -> int:
    """Bits of ``left * right`` or ``left ** right``, known before it is computed: exact
    whenever that decides against the limit, so an integer of exactly the limit's size
    is allowed, else a figure over the limit (the nearest bounds can tell).

    From the operands' bit lengths the result's size lies within tight bounds. Only
    when the limit falls between them is the result computed to count, and then it has
    at most twice the limit's bits (the upper bound is at most twice the lower), which
    costs microseconds."""
    a, b = left.bit_length(), right.bit_length()
    if op == "*":
        low, high = max(a + b - 1, 1), a + b
    elif abs(left) <= 1 or right <= 0:  # 0, 1, -1 to any power; negative powers are floats
        return 1
    else:  # |left| ** right: 2 ** ((a - 1) * right) <= it < 2 ** (a * right)
        low, high = (a - 1) * right + 1, a * right
    if high <= MAX_TEMPLATE_INT_BITS:
        return high
    if low > MAX_TEMPLATE_INT_BITS:
        if op == "**":  # said "about": the size from the logarithm, never below the bound
            try:
                return max(low, int(right * math.log2(abs(left))) + 1)
            except OverflowError:  # an exponent too large for a float: the bound says enough
                return low
        return low
    exact = abs(left) * abs(right) if op == "*" else abs(left) ** right
    return exact.bit_length()


_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _check_printf(fmt: str, args: Any) -> None:
    """``"%999999999s" % x`` allocates the width before returning: check widths first."""
    size = len(fmt)
    star = False
    for width, precision in _PRINTF.findall(fmt):
        for part in (width, precision):
            if part == "*":
                star = True
            elif part:
                size += int(part)
    if star:
        values = args if isinstance(args, tuple) else (args,)
        size += sum(v for v in values if _is_int(v) and v > 0)
    _check_chars(size, "a %-formatted string")


class _BoundedFormatter(SandboxedFormatter):
    """``str.format`` with the width and precision of every field checked."""

    def format_field(self, value: Any, format_spec: str) -> Any:
        numbers = [int(n) for n in re.findall(r"\d+", format_spec)]
        _check_chars(sum(numbers) + len(soft_str(value)), "a formatted field")
        return super().format_field(value, format_spec)


class _BoundedEscapeFormatter(_BoundedFormatter, EscapeFormatter):
    pass


class _CodeGenerator(CodeGenerator):
    """Compiles ``a ~ b`` to a checked join (Jinja's own is not interceptable)."""

    def visit_Concat(self, node: Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile:
            escape = "context.eval_ctx.autoescape"
        else:
            escape = repr(bool(frame.eval_ctx.autoescape))
        self.write(f"environment.bounded_concat({escape}, (")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


# str methods that can return far more than they are given, and how much.
def _method_size(
    name: str, text: str | bytes, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> int:
    if name in ("center", "ljust", "rjust", "zfill"):
        width = args[0] if args else kwargs.get("width", 0)
        return max(len(text), width if _is_int(width) else 0)
    if name == "expandtabs":
        tabsize = args[0] if args else kwargs.get("tabsize", 8)
        tabs = text.count("\t" if isinstance(text, str) else b"\t")
        return len(text) + tabs * max(0, tabsize if _is_int(tabsize) else 8)
    if name == "replace" and len(args) >= 2:
        old, new = args[0], args[1]
        if not isinstance(old, (str, bytes)) or not isinstance(new, (str, bytes)):
            return len(text)
        count = text.count(old) if old else len(text) + 1  # type: ignore[arg-type]
        limit = args[2] if len(args) > 2 else kwargs.get("count", -1)
        if _is_int(limit) and limit >= 0:
            count = min(count, limit)
        return len(text) + count * max(0, len(new) - len(old))
    if name == "join" and args:
        items = args[0]
        if isinstance(items, (list, tuple)):
            parts = sum(len(i) for i in items if isinstance(i, (str, bytes)))
            return parts + len(text) * max(0, len(items) - 1)
    return len(text)


class LimitedSandbox(ImmutableSandboxedEnvironment):
    """The sandbox every oxyeval template renders in (see the module docstring).

    Immutable: a template cannot ``append`` to the list it is looping over (an endless
    loop) nor change a value another task will read.
    """

    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.concat = self._bounded_join  # type: ignore[method-assign]
        self.globals["range"] = _bounded_range
        self.globals["lipsum"] = _bounded_lipsum
        for name, guard in _FILTER_GUARDS.items():
            self.filters[name] = guard
        for name, func in list(self.filters.items()):
            self.filters[name] = _accounted(func)

    # -- output and concatenation --------------------------------------------------------

    def _bounded_join(self, parts: Iterable[str]) -> str:
        """Rendered output, macro bodies, {% set %} blocks: measured while they stream."""
        limit = _current().chars
        out: list[str] = []
        size = 0
        for part in parts:
            size += len(part)
            if size > limit:
                _check_chars(size, "the rendered text")
            out.append(part)
        _current().account(size)
        return "".join(out)

    def bounded_concat(self, autoescape: bool, values: Iterable[Any]) -> str:
        parts = [soft_str(v) for v in values]
        _check_chars(sum(map(len, parts)), "a ~ concatenation")
        return markup_join(parts) if autoescape else str_join(parts)

    # -- operators -----------------------------------------------------------------------

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator in ("*", "**") and _is_int(left) and _is_int(right):
            bits = _int_bits(left, right, operator)
            if bits > MAX_TEMPLATE_INT_BITS:
                # A size past 10**18 is only "huge" (and its digits could not be printed).
                size = f"about {bits:,}" if bits < 10**18 else "more than 10**18"
                raise TemplateLimitError(
                    f"an integer of {size} bits; templates are limited to {MAX_TEMPLATE_INT_BITS:,}"
                )
        elif operator == "*":
            seq, times = (left, right) if _is_int(right) else (right, left)
            if _is_int(times) and times > 0:
                if isinstance(seq, (str, bytes)):
                    _check_chars(len(seq) * times, "a repeated string")
                elif isinstance(seq, (list, tuple)):
                    _check_items(len(seq) * times, "a repeated list")
        elif operator == "+":
            if isinstance(left, (str, bytes)) and isinstance(right, (str, bytes)):
                _check_chars(len(left) + len(right), "a + concatenation")
            elif isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
                _check_items(len(left) + len(right), "a + concatenated list")
        elif operator == "%" and isinstance(left, str):
            _check_printf(left, right)
        return super().call_binop(context, operator, left, right)

    # -- calls ---------------------------------------------------------------------------

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        spent = _current()
        spent.calls += 1
        if spent.calls > MAX_TEMPLATE_CALLS:
            raise TemplateLimitError(
                f"more than {MAX_TEMPLATE_CALLS:,} calls in one rendering "
                "(a macro that calls itself?)"
            )
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, (str, bytes)):
            name = getattr(__obj, "__name__", "")
            _check_chars(_method_size(name, owner, args, kwargs), f"the result of .{name}()")
        result = super().call(__context, __obj, *args, **kwargs)
        spent.account(_size(result))
        return result

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """Jinja's own wrapper, with a formatter that checks field widths."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text: str = value.__self__
        formatter: Formatter = (
            _BoundedEscapeFormatter(self, escape=text.escape)
            if isinstance(text, Markup)
            else _BoundedFormatter(self)
        )
        is_map = value.__name__ == "format_map"

        def checked(*args: Any, **kwargs: Any) -> str:
            if is_map:
                if kwargs or len(args) != 1:
                    return wrapped(*args, **kwargs)  # Jinja raises its own TypeError
                args, kwargs = (), args[0]
            return type(text)(formatter.vformat(text, args, kwargs))

        checked.__name__ = value.__name__
        return checked


def _accounted(func: Callable[..., Any]) -> Callable[..., Any]:
    """A filter whose results count towards the rendering's total (``upper`` of a large
    string in a loop makes a new copy each time)."""

    @functools.wraps(func)  # keeps jinja_pass_arg (pass_context and friends)
    def accounted(*args: Any, **kwargs: Any) -> Any:
        result = func(*args, **kwargs)
        _current().account(_size(result))
        return result

    return accounted


def _bounded_range(*args: int) -> range:
    rng = range(*args)
    if len(rng) > MAX_RANGE:
        raise TemplateLimitError(
            f"range(...) of {len(rng):,} items; templates are limited to {MAX_RANGE:,}"
        )
    spent = _current()
    spent.range_items += len(rng)
    if spent.range_items > MAX_RANGE_TOTAL:
        raise TemplateLimitError(
            f"range(...) calls of one rendering add up to more than {MAX_RANGE_TOTAL:,} "
            "items (nested loops?)"
        )
    return rng


def _bounded_lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    if not all(_is_int(v) for v in (n, min, max)) or n > 100 or max > 1000:
        raise TemplateLimitError("lipsum(...) is limited to 100 paragraphs of 1,000 words")
    return generate_lorem_ipsum(n, html, min, max)


# -- filters that can multiply their input ----------------------------------------------


def _width(value: Any, what: str) -> None:
    if _is_int(value):
        _check_chars(value, what)


def _center(value: Any, width: int = 80) -> str:
    _width(width, "center(width)")
    return jinja_filters.do_center(value, width)


def _indent(s: Any, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    text = soft_str(s)
    step = len(width) if isinstance(width, str) else width if _is_int(width) else 0
    _check_chars(len(text) + (text.count("\n") + 2) * max(0, step), "indent(...)")
    return jinja_filters.do_indent(s, width, first, blank)


def _format(value: Any, *args: Any, **kwargs: Any) -> str:
    _check_printf(soft_str(value), kwargs or args)
    return jinja_filters.do_format(value, *args, **kwargs)


@pass_eval_context
def _replace(eval_ctx: EvalContext, s: Any, old: Any, new: Any, count: int | None = None) -> str:
    text = soft_str(s)
    _check_chars(
        _method_size(
            "replace", text, (soft_str(old), soft_str(new), -1 if count is None else count), {}
        ),
        "replace(...)",
    )
    return jinja_filters.do_replace(eval_ctx, s, old, new, count)


@pass_eval_context
def _join(eval_ctx: EvalContext, value: Any, d: str = "", attribute: Any = None) -> str:
    items = list(value)
    if attribute is not None:
        items = list(map(jinja_filters.make_attrgetter(eval_ctx.environment, attribute), items))
    size = sum(len(soft_str(i)) for i in items) + len(soft_str(d)) * max(0, len(items) - 1)
    _check_chars(size, "join(...)")
    return jinja_filters.sync_do_join(eval_ctx, items, d)


@pass_environment
def _wordwrap(
    environment: Any,
    s: str,
    width: int = 79,
    break_long_words: bool = True,
    wrapstring: str | None = None,
    break_on_hyphens: bool = True,
) -> str:
    if wrapstring is not None:
        text = soft_str(s)
        _check_chars(len(text) + (len(text) + 1) * len(soft_str(wrapstring)), "wordwrap(...)")
    return jinja_filters.do_wordwrap(
        environment, s, width, break_long_words, wrapstring, break_on_hyphens
    )


@pass_eval_context
def _tojson(eval_ctx: EvalContext, value: Any, indent: int | None = None) -> Markup:
    if indent is not None and (not _is_int(indent) or indent > 64):
        raise TemplateLimitError("tojson(indent) is limited to 64 spaces")
    return jinja_filters.do_tojson(eval_ctx, value, indent)


def _batch(value: Any, linecount: int, fill_with: Any = None) -> Any:
    if _is_int(linecount):
        _check_items(linecount, "batch(...)")
    return jinja_filters.do_batch(value, linecount, fill_with)


def _slice(value: Any, slices: int, fill_with: Any = None) -> Any:
    if _is_int(slices):
        _check_items(slices, "slice(...)")
    return jinja_filters.sync_do_slice(value, slices, fill_with)


@pass_environment
def _sum(environment: Any, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
    items = list(iterable)
    if attribute is not None:
        items = list(map(jinja_filters.make_attrgetter(environment, attribute), items))
    if isinstance(start, (list, tuple)):
        _check_items(
            len(start) + sum(len(i) for i in items if isinstance(i, (list, tuple))), "sum(...)"
        )
    return sum(items, start)


_FILTER_GUARDS: dict[str, Callable[..., Any]] = {
    "center": _center,
    "indent": _indent,
    "format": _format,
    "replace": _replace,
    "join": _join,
    "wordwrap": _wordwrap,
    "tojson": _tojson,
    "batch": _batch,
    "slice": _slice,
    "sum": _sum,
}
