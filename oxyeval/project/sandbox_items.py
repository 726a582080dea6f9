"""The sandbox's filters and methods that walk items: counted, and the lists they make capped.

A list built in a template (``*``, ``+``) stops at ``MAX_TEMPLATE_ITEMS``; the filters and
methods that turn something into a list did not: ``("x" * 5000000) | sort`` made five
million items (4 s, 840 MB), ``| map("upper") | list`` six seconds, and a Python loop
inside a filter (``map``, ``select``, ``unique``, ``groupby``'s key) ran without any
check of the deadline or of a stop request. Here:

* a string taken as a sequence of characters by a filter (``list``, ``sort``, ``map``,
  ``join``, ``max``...) may have at most ``MAX_TEMPLATE_ITEMS`` characters
  (``{% for c in s %}`` stays a loop, counted as loops are);
* every filter that walks its input walks it through the rendering's ticker
  (``render_budget``): the items count with the loop iterations, and every batch
  checks the deadline and the stop flag, also in a Python loop deep inside Jinja;
* a filter or method that *holds* what it walks (``list``, ``sort``, ``unique``,
  ``groupby``, ``slice``, ``reverse``, ``dictsort``, ``split``, ``splitlines``) makes at
  most ``MAX_TEMPLATE_ITEMS`` items, refused before it starts when the input's length is
  known, else as soon as the next item would pass the limit;
* ``sum`` of lists concatenates once (Python's ``sum`` copies the total so far for every
  part: 100,000 one-item lists took minutes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sized
from itertools import chain, compress, islice
from typing import Any

from jinja2 import filters as jinja_filters
from jinja2 import pass_context, pass_environment, pass_eval_context
from jinja2.exceptions import FilterArgumentError
from jinja2.nodes import EvalContext
from jinja2.runtime import Context, Undefined
from markupsafe import soft_str

from . import limits
from .render_budget import TemplateLimitError, check_chars, check_items, check_text, current

__all__ = ["check_split", "item_guards", "walked"]

# Characters splitlines() breaks at (str): each one, and \r\n as one.
_LINE_BREAKS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _too_many(what: str, size: int | None = None) -> TemplateLimitError:
    many = f"more than {limits.MAX_TEMPLATE_ITEMS:,}" if size is None else f"{size:,}"
    return TemplateLimitError(
        f"{what} would hold {many} items; templates are limited to {limits.MAX_TEMPLATE_ITEMS:,}"
    )


class _Walk:
    """A filter's input, iterated through the rendering's ticker and, for a filter that
    holds its items, cut at the item limit. Truthiness is the input's (Jinja's ``map``
    and ``select`` test ``if value:`` first)."""

    __slots__ = ("cap", "value", "what")

    def __init__(self, value: Any, what: str, cap: bool) -> None:
        self.value = value
        self.what = what
        self.cap = cap

    def __bool__(self) -> bool:
        return bool(self.value)

    def __iter__(self) -> Iterator[Any]:
        items = compress(self.value, current().ticker)
        if not self.cap:
            return items
        return chain(islice(items, limits.MAX_TEMPLATE_ITEMS), self._over(items))

    def _over(self, rest: Iterator[Any]) -> Iterator[Any]:
        for _ in rest:  # one item past the limit
            raise _too_many(self.what)
        yield from ()


def walked(value: Any, what: str, *, hold: bool = False) -> Any:
    """``value`` as a filter walks it (see the module docstring). Refused at once: a
    string of more characters than the item limit, and with ``hold`` any input whose
    length is known to be over it. A list, tuple or mapping within the limit that the
    filter holds is given as it is: what is done with it is bounded by its length."""
    if isinstance(value, (str, bytes)):
        if len(value) > limits.MAX_TEMPLATE_ITEMS:
            raise TemplateLimitError(
                f"{what} would take a string of {len(value):,} characters as that many "
                f"items; templates are limited to {limits.MAX_TEMPLATE_ITEMS:,} items"
            )
    elif hold and isinstance(value, Sized) and not isinstance(value, Undefined):
        size = len(value)
        if size > limits.MAX_TEMPLATE_ITEMS:
            raise _too_many(what, size)
        if isinstance(value, (list, tuple, dict)):
            return value
    return _Walk(value, what, hold)


def check_split(name: str, text: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """``split``, ``rsplit`` and ``splitlines`` of a long text: at most the item limit,
    counted before the list is made (in C: ``count``, or a split stopped at the limit)."""
    if not isinstance(text, (str, bytes)):
        return
    limit = limits.MAX_TEMPLATE_ITEMS
    what = f"the result of .{name}()"
    if name == "splitlines":
        if len(text) <= limit:
            return
        if isinstance(text, str):
            breaks = sum(text.count(c) for c in _LINE_BREAKS) - text.count("\r\n")
            ends = text.endswith(_LINE_BREAKS)
        else:
            breaks = text.count(b"\n") + text.count(b"\r") - text.count(b"\r\n")
            ends = text.endswith((b"\n", b"\r"))
        size = breaks + (0 if ends else 1)
    elif name in ("split", "rsplit"):
        sep = args[0] if args else kwargs.get("sep")
        most = args[1] if len(args) > 1 else kwargs.get("maxsplit", -1)
        if isinstance(most, int) and 0 <= most < limit:
            return
        if sep is None:
            if len(text) // 2 < limit:  # words are at least a character and a space apart
                return
            if len(text.split(None, limit)) > limit:  # stops making pieces at the limit
                raise _too_many(what)
            return
        if not sep or isinstance(sep, str) != isinstance(text, str):
            return  # an empty or wrong separator: Python's own error
        if len(text) // len(sep) < limit:
            return
        size = text.count(sep) + 1  # type: ignore[arg-type]
    else:
        return
    if size > limit:
        raise _too_many(what, size)


# -- the filters -------------------------------------------------------------------------


def _list(value: Any) -> list[Any]:
    return list(walked(value, "list(...)", hold=True))


@pass_environment
def _sort(
    environment: Any,
    value: Any,
    reverse: bool = False,
    case_sensitive: bool = False,
    attribute: Any = None,
) -> list[Any]:
    items = walked(value, "sort(...)", hold=True)
    return jinja_filters.do_sort(environment, items, reverse, case_sensitive, attribute)


@pass_environment
def _unique(
    environment: Any, value: Any, case_sensitive: bool = False, attribute: Any = None
) -> Iterator[Any]:
    items = walked(value, "unique(...)", hold=True)
    return jinja_filters.sync_do_unique(environment, items, case_sensitive, attribute)


@pass_environment
def _groupby(
    environment: Any,
    value: Any,
    attribute: Any,
    default: Any = None,
    case_sensitive: bool = False,
) -> list[Any]:
    items = walked(value, "groupby(...)", hold=True)
    return jinja_filters.sync_do_groupby(environment, items, attribute, default, case_sensitive)


def _dictsort(
    value: Any, case_sensitive: bool = False, by: str = "key", reverse: bool = False
) -> list[Any]:
    if isinstance(value, Sized) and not isinstance(value, Undefined):
        check_items(len(value), "dictsort(...)")
    return jinja_filters.do_dictsort(value, case_sensitive, by, reverse)  # type: ignore[arg-type]


def _reverse(value: Any) -> Any:
    """A string reversed as a string; a sequence as a reversed view (nothing copied);
    anything else (a generator) copied, within the item limit."""
    if isinstance(value, str):
        return value[::-1]
    try:
        return reversed(value)
    except TypeError:
        pass
    try:
        items = list(walked(value, "reverse(...)", hold=True))
    except TypeError as exc:
        raise FilterArgumentError("argument must be iterable") from exc
    items.reverse()
    return items


def _batch(value: Any, linecount: int, fill_with: Any = None) -> Any:
    if isinstance(linecount, int):
        check_items(linecount, "batch(...)")
        if fill_with is not None:  # the last batch holds fill_with up to linecount-1 times
            spent = current()
            limit = spent.weight_limit
            if spent.weigh(fill_with) * linecount > limit:
                raise TemplateLimitError(f"batch(...) would repeat fill_with past {limit:,}")
    return jinja_filters.do_batch(walked(value, "batch(...)"), linecount, fill_with)


def _slice(value: Any, slices: int, fill_with: Any = None) -> Any:
    if isinstance(slices, int):
        check_items(slices, "slice(...)")
        if fill_with is not None:  # each slice may end with fill_with
            spent = current()
            limit = spent.weight_limit
            if spent.weigh(fill_with) * slices > limit:
                raise TemplateLimitError(f"slice(...) would repeat fill_with past {limit:,}")
    return jinja_filters.sync_do_slice(walked(value, "slice(...)", hold=True), slices, fill_with)


def _streaming(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``map``, ``select`` and the like: lazy, their input walked through the ticker."""

    @pass_context
    def streamed(context: Context, value: Any, *args: Any, **kwargs: Any) -> Any:
        return func(context, walked(value, f"{name}(...)"), *args, **kwargs)

    streamed.__name__ = streamed.__qualname__ = f"do_{name}"
    return streamed


def _extreme(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``min`` and ``max``: one pass over the input, walked through the ticker."""

    @pass_environment
    def extreme(
        environment: Any, value: Any, case_sensitive: bool = False, attribute: Any = None
    ) -> Any:
        return func(environment, walked(value, f"{name}(...)"), case_sensitive, attribute)

    extreme.__name__ = extreme.__qualname__ = f"do_{name}"
    return extreme


@pass_environment
def _sum(environment: Any, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
    """Python's ``sum``, but lists and tuples are concatenated once: ``sum`` adds them
    one by one, copying the total so far each time (quadratic)."""
    joins = isinstance(start, (list, tuple))
    items: Iterable[Any] = walked(iterable, "sum(...)", hold=joins)
    if attribute is not None:
        items = map(jinja_filters.make_attrgetter(environment, attribute), items)
    if not joins:
        return sum(items, start)
    parts = list(items)
    check_items(len(start) + sum(len(p) for p in parts if isinstance(p, (list, tuple))), "sum(...)")
    kind = list if isinstance(start, list) else tuple
    if all(isinstance(p, kind) for p in parts):
        return start + kind(chain.from_iterable(parts))
    return sum(parts, start)  # a mix of kinds: Python's own result or error


@pass_eval_context
def _join(eval_ctx: EvalContext, value: Any, d: str = "", attribute: Any = None) -> str:
    """The joined text, measured item by item as the items are walked (each list or
    mapping weighed before it becomes text): stopped at the render limit."""
    items: Iterable[Any] = walked(value, "join(...)")
    if attribute is not None:
        items = map(jinja_filters.make_attrgetter(eval_ctx.environment, attribute), items)
    limit = current().chars
    step = len(soft_str(d))
    size = -step
    parts = []
    for item in items:
        check_text(item, "join(...)")
        size += step + len(soft_str(item))
        if size > limit:
            check_chars(size, "join(...)")
        parts.append(item)
    check_chars(max(size, 0), "join(...)")
    return jinja_filters.sync_do_join(eval_ctx, parts, d)


def item_guards() -> dict[str, Callable[..., Any]]:
    """The filters of this module, by name, to replace Jinja's own."""
    return {
        "list": _list,
        "sort": _sort,
        "unique": _unique,
        "groupby": _groupby,
        "dictsort": _dictsort,
        "reverse": _reverse,
        "batch": _batch,
        "slice": _slice,
        "map": _streaming("map", jinja_filters.sync_do_map),
        "select": _streaming("select", jinja_filters.sync_do_select),
        "reject": _streaming("reject", jinja_filters.sync_do_reject),
        "selectattr": _streaming("selectattr", jinja_filters.sync_do_selectattr),
        "rejectattr": _streaming("rejectattr", jinja_filters.sync_do_rejectattr),
        "min": _extreme("min", jinja_filters.do_min),
        "max": _extreme("max", jinja_filters.do_max),
        "sum": _sum,
        "join": _join,
    }
