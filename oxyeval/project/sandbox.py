"""The Jinja sandbox with resource limits: no template may allocate gigabytes or spin forever.

Jinja's ``SandboxedEnvironment`` stops templates from reaching Python internals, but
not from exhausting memory or time: ``{{ 'x' * 1000000000 }}``,
``"%999999999s" | format(1)``, ``'ab' | replace('a', big)`` and a doubling
``{% set ns.s = ns.s ~ ns.s %}`` in a loop all allocate before anything could look at
the result. So every operation that can make a value much larger than its inputs is
checked *before* it runs, against :func:`oxyeval.project.limits.render_limit`
(characters) and the item, integer and call budgets in :mod:`oxyeval.project.limits`;
rendered text is measured as it streams out.

The code Jinja generates is changed in three places (``_CodeGenerator``): ``a ~ b`` is
a checked join; every list, tuple or mapping literal is weighed as it is built (its
size once unfolded: ``[s, s]`` prints ``s`` twice), as are the results of ``*``, ``+``,
filters and calls, so no value a template holds is too large to print, compare or
sort; and every ``{% for %}`` iterates through the rendering's ticker, which counts
iterations in C and, between batches, checks the deadline and whether the command is
being interrupted (``render_budget.py``). Compiling a template first checks its shape
(``template_shape.py``): what Jinja's parser or Python's compiler would choke on is a
template error with a line. The filters and methods that walk items keep to the item
limit and walk through the ticker (``sandbox_items.py``); those whose work could outgrow
their input run in linear time or are bounded before they run (``sandbox_text.py``).

A limit breached raises :class:`TemplateLimitError` (a ``SecurityError``), which
``templates.render`` turns into an error naming the template's file, key and line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from string import Formatter
from types import BuiltinFunctionType, CodeType
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.parser import Parser
from jinja2.runtime import Context, LoopContext, markup_join, str_join
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedFormatter
from markupsafe import EscapeFormatter, Markup, soft_str

from . import limits
from .limits import MAX_TEMPLATE_CALLS, MAX_TEMPLATE_INT_BITS
from .render_budget import (
    Counted,
    TemplateLimitError,
    budget,
    check_chars,
    check_items,
    check_result,
    check_text,
    current,
    over_weight,
)
from .sandbox_filters import (
    BoundedNamespace,
    accounted,
    bounded_lipsum,
    bounded_range,
    check_printf,
    filter_guards,
    is_int,
    method_size,
    template_json,
)
from .sandbox_items import check_split
from .sandbox_text import check_method, strip_text
from .template_shape import TemplateShapeError, check_shape, check_size, python_failure

__all__ = ["LimitedSandbox", "TemplateLimitError", "TemplateShapeError", "budget"]


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


class _BoundedFormatter(SandboxedFormatter):
    """``str.format`` with the width and precision of every field checked."""

    def format_field(self, value: Any, format_spec: str) -> Any:
        check_text(value, "a formatted field")
        numbers = [int(n) for n in re.findall(r"\d+", format_spec)]
        check_chars(sum(numbers) + len(soft_str(value)), "a formatted field")
        return super().format_field(value, format_spec)


class _BoundedEscapeFormatter(_BoundedFormatter, EscapeFormatter):
    pass


# Methods of str, bytes and int with checks of their own (sandbox_text, sandbox_items).
_WATCHED_METHODS = frozenset(
    {"strip", "lstrip", "rstrip", "encode", "decode", "to_bytes", "split", "rsplit", "splitlines"}
)


def _is_constant(items: Iterable[nodes.Node]) -> bool:
    return all(isinstance(i, nodes.Const) for i in items)


class _CodeGenerator(CodeGenerator):
    """Jinja's code generator with the sandbox's hooks (see the module docstring)."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile:
            escape = "context.eval_ctx.autoescape"
        else:
            escape = repr(bool(frame.eval_ctx.autoescape))
        self.write(f"environment.bounded_concat({escape}, (")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> Any:
        # Jinja allows no node types of our own: a loop's items are marked by identity.
        items: set[int] = self.__dict__.setdefault("_loop_items", set())
        if id(node) not in items:
            return super().visit(node, *args, **kwargs)
        items.discard(id(node))
        self.write("environment.counted(")
        super().visit(node, *args, **kwargs)
        self.write(")")
        return None

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        self.__dict__.setdefault("_loop_items", set()).add(id(node.iter))
        super().visit_For(node, frame)

    def _weighed(self, visit: Callable[[], None], what: str) -> None:
        self.write("environment.weighed(")
        visit()
        self.write(f", {what!r})")

    def visit_List(self, node: nodes.List, frame: Frame) -> None:
        if _is_constant(node.items):  # as large as its source, which has a limit
            return super().visit_List(node, frame)
        self._weighed(lambda: super(_CodeGenerator, self).visit_List(node, frame), "a list")

    def visit_Tuple(self, node: nodes.Tuple, frame: Frame) -> None:
        if node.ctx != "load" or _is_constant(node.items):  # {% for a, b in ... %}: a target
            return super().visit_Tuple(node, frame)
        self._weighed(lambda: super(_CodeGenerator, self).visit_Tuple(node, frame), "a tuple")

    def visit_Dict(self, node: nodes.Dict, frame: Frame) -> None:
        if _is_constant(i for pair in node.items for i in (pair.key, pair.value)):
            return super().visit_Dict(node, frame)
        self._weighed(lambda: super(_CodeGenerator, self).visit_Dict(node, frame), "a mapping")


class LimitedSandbox(ImmutableSandboxedEnvironment):
    """The sandbox every oxyeval template renders in (see the module docstring).

    Immutable: a template cannot ``append`` to the list it is looping over (an endless
    loop) nor change a value another task will read. Not optimized: Jinja's optimizer
    folds constants at compile time with work that grows with the cube of an
    expression's depth (a chain of 100 filters took a third of a second), and nothing
    a template prints depends on it.
    """

    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        options.setdefault("optimized", False)
        super().__init__(**options)
        self.concat = self._bounded_join  # type: ignore[method-assign]
        self.globals["range"] = bounded_range
        self.globals["lipsum"] = bounded_lipsum
        self.globals["namespace"] = BoundedNamespace
        self.filters.update(filter_guards())
        # tojson writes the engine's values (an SQL result...) through their own protocol
        dumps = {**self.policies["json.dumps_kwargs"], "default": template_json}
        self.policies = {**self.policies, "json.dumps_kwargs": dumps}
        for name, func in list(self.filters.items()):
            self.filters[name] = accounted(name, func)

    # -- compiling: the template's shape first; Python's own limits as template errors -----

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        check_size(self.lexer, source, name, filename)
        parser = Parser(self, source, name, filename)
        try:
            tree = parser.parse()
        except RecursionError:  # {{ ((((...)))) }} thousands deep: Jinja parses recursively
            raise TemplateShapeError(
                "template nested too deeply to parse", parser.stream.current.lineno, name, filename
            ) from None
        check_shape(tree, name, filename)
        return tree

    def _generate(
        self,
        source: nodes.Template,
        name: str | None,
        filename: str | None,
        defer_init: bool = False,
    ) -> str:
        try:
            return super()._generate(source, name, filename, defer_init)
        except (RecursionError, MemoryError) as exc:
            raise python_failure(exc, None, name, filename) from None

    def _compile(self, source: str, filename: str) -> CodeType:
        try:
            return super()._compile(source, filename)
        except (SyntaxError, RecursionError, MemoryError) as exc:  # SyntaxError: Jinja's code
            raise python_failure(exc, source, None, None) from None

    # -- output and concatenation --------------------------------------------------------

    def _bounded_join(self, parts: Iterable[str]) -> str:
        """Rendered output, macro bodies, {% set %} blocks: measured while they stream."""
        spent = current()
        limit = spent.chars
        out: list[str] = []
        size = 0
        for part in parts:
            size += len(part)
            if size > limit:
                check_chars(size, "the rendered text")
            out.append(part)
        spent.account(size)
        return "".join(out)

    def bounded_concat(self, autoescape: bool, values: Iterable[Any]) -> str:
        parts = []
        for value in values:
            check_text(value, "a ~ concatenation")
            parts.append(soft_str(value))
        check_chars(sum(map(len, parts)), "a ~ concatenation")
        return markup_join(parts) if autoescape else str_join(parts)

    # -- values the generated code builds -------------------------------------------------

    def weighed(self, value: Any, what: str) -> Any:
        """A list, tuple or mapping literal, if it is not too heavy (``[s, s, s]``)."""
        return current().check_weight(value, what)

    def counted(self, items: Any) -> Counted:
        """A ``{% for %}``'s items, counted as they are iterated."""
        return Counted(items, current().ticker)

    # -- operators -----------------------------------------------------------------------

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator in ("*", "**") and is_int(left) and is_int(right):
            bits = _int_bits(left, right, operator)
            if bits > MAX_TEMPLATE_INT_BITS:
                # A size past 10**18 is only "huge" (and its digits could not be printed).
                size = f"about {bits:,}" if bits < 10**18 else "more than 10**18"
                raise TemplateLimitError(
                    f"an integer of {size} bits; templates are limited to {MAX_TEMPLATE_INT_BITS:,}"
                )
        elif operator == "*":
            seq, times = (left, right) if is_int(right) else (right, left)
            if is_int(times) and times > 0:
                if isinstance(seq, (str, bytes)):
                    check_chars(len(seq) * times, "a repeated string")
                elif isinstance(seq, (list, tuple)):
                    check_items(len(seq) * times, "a repeated list")
                    self._check_repeat(seq, times)
        elif operator == "+":
            if isinstance(left, (str, bytes)) and isinstance(right, (str, bytes)):
                check_chars(len(left) + len(right), "a + concatenation")
            elif isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
                check_items(len(left) + len(right), "a + concatenated list")
                spent = current()
                limit = spent.weight_limit
                if spent.weigh(left) + spent.weigh(right) > limit:
                    raise TemplateLimitError(over_weight("a + concatenated list", limit))
        elif operator == "%" and isinstance(left, str):
            check_printf(left, right)
        result = super().call_binop(context, operator, left, right)
        if isinstance(result, str) and len(result) > current().chars:  # Markup escapes
            check_chars(len(result), f"the result of {operator}")
        return result

    @staticmethod
    def _check_repeat(seq: list[Any] | tuple[Any, ...], times: int) -> None:
        """``[s] * n`` holds ``s`` n times: its weight, before it is made."""
        spent = current()
        limit = spent.weight_limit
        if (spent.weigh(seq) - 2) * times + 2 > limit:
            raise TemplateLimitError(over_weight("a repeated list", limit))

    # -- calls ---------------------------------------------------------------------------

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        spent = current()
        spent.calls += 1
        if spent.calls > MAX_TEMPLATE_CALLS:
            raise TemplateLimitError(
                f"more than {MAX_TEMPLATE_CALLS:,} calls in one rendering "
                "(a macro that calls itself?)"
            )
        spent.tick_call()
        owner = getattr(__obj, "__self__", None)
        what = "the value returned by a call"
        result: Any = None
        if isinstance(owner, (str, bytes, int)):
            name = getattr(__obj, "__name__", "")
            what = f"the result of .{name}()"
            if name in _WATCHED_METHODS:
                check_method(name, owner, args, kwargs)
                check_split(name, owner, args, kwargs)
                if name.endswith("strip") and len(args) == 1 and not kwargs:
                    result = strip_text(name, owner, args[0])  # None: Python's own is linear
            if not isinstance(owner, int):
                check_chars(method_size(name, owner, args, kwargs), what)
        elif isinstance(__obj, LoopContext) and args:  # loop(children) of a recursive loop
            args = (Counted(args[0], spent.ticker), *args[1:])
        if result is None:
            result = super().call(__context, __obj, *args, **kwargs)
        if type(result) is str and len(result) <= spent.chars:  # the usual case, quickly
            spent.account(len(result))
        elif isinstance(result, (str, bytes, int)):
            check_result(result, owner, what)
        else:
            if (
                isinstance(result, (list, tuple, dict))
                and (isinstance(__obj, BuiltinFunctionType) or __obj is dict)
                and len(result) > limits.MAX_TEMPLATE_ITEMS
            ):  # dict.fromkeys(...), dict(...) of a large mapping, list.copy()
                check_items(len(result), what)
            spent.check_weight(result, what)
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
