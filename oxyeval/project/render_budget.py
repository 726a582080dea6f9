"""What one rendering may spend in all: iterations, calls, work, wall time, value sizes.

``sandbox.py`` checks each operation before it runs; no single operation shows a loop
of ten billion empty iterations, a list that holds the same million-character string a
hundred thousand times (a few hundred kilobytes of memory, a hundred gigabytes once
printed or compared), or a command being interrupted while a rendering holds the event
loop. This module keeps those totals for one rendering (a context variable, so
renderings in other threads or tasks keep their own):

* loop iterations, counted in C: each ``{% for %}`` iterates through
  ``compress(items, ticker)``, where the ticker yields batches of ``True`` and, between
  batches, checks the iteration limit, the deadline and the stop flag of
  :mod:`oxyeval._tasks` (set by the CLI's first SIGINT/SIGTERM, which then cancels the
  rendering as an ``await`` would have been); the items that filters such as ``map``,
  ``select`` or ``sort`` walk go through the same ticker (``sandbox_items``);
* the work of calls: a filter or method call runs in C (or in library code) that nothing
  can interrupt between operations, so no single call may do much more work than its
  input and result show (``sandbox_text``), and the work done so far (characters built,
  lines wrapped, characters stripped) checks the deadline and the stop flag as it adds
  up (:meth:`Budget.tick`), whether or not any loop is running;
* the **weight** of every list, tuple or mapping a template builds: its size once
  unfolded, about the characters of its text (shared references counted each time), so
  that printing, comparing, sorting or serialising it is bounded by construction, for
  every operation that walks it at once rather than one by one;
* the work of the rendering's operations (characters and items built, walked).

A limit breached raises :class:`TemplateLimitError`, which ``templates.render`` turns
into an error naming the template's file, key and line.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections import deque
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from itertools import chain, compress, repeat
from typing import Any

from jinja2.runtime import LoopContext, Undefined
from jinja2.sandbox import SecurityError

from .._tasks import stop_requested
from . import limits
from .limits import MAX_BUILT_FACTOR, render_limit, render_timeout

__all__ = [
    "Budget",
    "Counted",
    "TemplateLimitError",
    "budget",
    "check_chars",
    "check_int",
    "check_items",
    "check_result",
    "check_text",
    "current",
    "over_weight",
]

_BATCH = 1024  # iterations between two checks of the deadline and the stop flag
_CHECK_EVERY = 1 << 18  # characters built (or other work) between two such checks
_CACHE_MAX = 200_000  # containers whose weight one rendering remembers


class TemplateLimitError(SecurityError):
    """A template tried to build something larger, or run longer, than the sandbox allows."""


class _Ticker:
    """Batches of iterations, each granted after the checks (an iterator of iterators,
    flattened in C by ``chain.from_iterable``: the checks run once per batch)."""

    __slots__ = ("budget", "error", "flat", "granted", "limit")

    def __init__(self, budget: Budget, limit: int) -> None:
        self.budget = budget
        self.granted = 0
        self.limit = limit
        self.error: BaseException | None = None
        self.flat: Iterator[bool] = chain.from_iterable(self)

    def __iter__(self) -> _Ticker:
        return self

    def __next__(self) -> Iterator[bool]:
        try:
            if self.granted >= self.limit:
                raise TemplateLimitError(
                    f"more than {self.limit:,} loop iterations in one rendering, counting "
                    "the items filters such as map and select walk (nested loops over "
                    "large lists?)"
                )
            if self.granted:  # the first batch starts with the rendering: nothing to check
                self.budget.checkpoint()
        except BaseException as exc:
            # chain() drops a source that raised: it would end every later loop at once.
            self.error = exc
            raise
        n = min(_BATCH, self.limit - self.granted)
        self.granted += n
        return repeat(True, n)


class Counted:
    """A ``{% for %}``'s items, iterated through the rendering's ticker: the loop body
    pays nothing per iteration, and ``loop.length`` still asks the items for theirs."""

    __slots__ = ("items", "ticker")

    def __init__(self, items: Any, ticker: Iterator[bool]) -> None:
        self.items = items
        self.ticker = ticker

    def __iter__(self) -> Iterator[Any]:
        return compress(self.items, self.ticker)

    def __len__(self) -> int:
        return len(self.items)  # TypeError for a generator: LoopContext then counts itself


class Budget:
    """What one rendering has used so far; limits that no single operation shows.

    Cheap to make (a rendering of a short prompt takes microseconds): the ticker and the
    deadline are set up when a loop or a call first needs them."""

    __slots__ = (
        "_cache",
        "_clock",
        "_deadline",
        "_iterations",
        "_ticker",
        "built",
        "calls",
        "chars",
        "range_items",
        "started",
        "timeout",
    )

    def __init__(self, chars: int, iterations: int) -> None:
        self.chars = chars  # the most one string (or the rendered text) may have
        self.calls = 0
        self.range_items = 0
        self.built = 0  # characters and items made or walked by operations so far
        self._clock = 0  # work done since the last checkpoint (see tick)
        self.started = time.monotonic()
        self.timeout = 0.0
        self._deadline: float | None = None
        self._iterations = iterations
        self._ticker: _Ticker | None = None
        # id -> (container, weight); the container is kept so that its id stays its own
        self._cache: dict[int, tuple[Any, int]] = {}

    @property
    def ticker(self) -> Iterator[bool]:
        """The iterator every loop of this rendering draws one item from per iteration."""
        if self._ticker is None:
            self._ticker = _Ticker(self, self._iterations)
        elif self._ticker.error is not None:  # caught by something: no later loop runs
            raise self._ticker.error
        return self._ticker.flat

    @property
    def iterations(self) -> int:
        """Loop iterations granted so far (in batches: at most one batch ahead)."""
        return 0 if self._ticker is None else self._ticker.granted

    @property
    def weight_limit(self) -> int:
        """The most a value built in a template may weigh: as much as all the text one
        rendering may build (external data copied by ``list``/``sort`` fits; a repeated
        reference does not)."""
        return self.chars * MAX_BUILT_FACTOR

    def account(self, size: int) -> None:
        """A loop that keeps making large strings is bounded in total, not only per string."""
        self.built += size
        cap = self.chars * MAX_BUILT_FACTOR
        if self.built > cap:
            raise TemplateLimitError(
                f"the operations of one rendering built or walked more than {cap:,} "
                f"characters and items ({MAX_BUILT_FACTOR} times the {self.chars:,}-character "
                "limit)"
            )
        self._clock += size  # self.tick(size), inlined: account runs for every result
        if self._clock >= _CHECK_EVERY:
            self._clock = 0
            self.checkpoint()

    def tick(self, steps: int) -> None:
        """Work done (characters built, lines wrapped...): every ``_CHECK_EVERY`` of it, the
        deadline and the stop flag are checked, so a rendering of a few large calls and
        no loop stops as promptly as one of many small iterations."""
        self._clock += steps
        if self._clock >= _CHECK_EVERY:
            self._clock = 0
            self.checkpoint()

    def checkpoint(self) -> None:
        """Stop a rendering that was interrupted or has run past its deadline."""
        if stop_requested():
            import asyncio

            raise asyncio.CancelledError  # what the command's cancellation would have raised
        if self._deadline is None:
            self.timeout = render_timeout()
            self._deadline = self.started + self.timeout
        if time.monotonic() > self._deadline:
            raise TemplateLimitError(
                f"rendering took more than {self.timeout:g} s (an endless or very long loop?); "
                "OXY_RENDER_TIMEOUT changes the limit"
            )

    def tick_call(self) -> None:
        """Every call counts towards the deadline checks (macros that recurse widely)."""
        if not self.calls & 63:
            self.checkpoint()

    # -- weight ----------------------------------------------------------------------------

    def weigh(self, value: Any, limit: int | None = None) -> int:
        """``value``'s weight, or a number over ``limit`` (default: the weight limit) as
        soon as it is clear that it is over. Walking costs work, which is accounted."""
        limit = self.weight_limit if limit is None else limit
        leaf = _leaf_weight(value)
        if leaf is not None:
            return leaf
        weight, walked = _weigh(value, limit, self._cache)
        if walked > 64:  # small containers are the price of any operation
            self.account(walked)
            self.checkpoint()
        return weight

    def check_weight(self, value: Any, what: str) -> Any:
        """``value`` if it weighs at most the weight limit, else a TemplateLimitError."""
        if _leaf_weight(value) is None:
            limit = self.weight_limit
            weight = self.weigh(value, limit)
            if weight > limit:
                raise TemplateLimitError(over_weight(what, limit))
        return value


def over_weight(what: str, limit: int) -> str:
    """The message for a value too heavy to build."""
    return (
        f"{what} would be more than {limit:,} characters once printed or compared (it "
        f"holds large values many times); templates are limited to {limit:,} "
        f"({MAX_BUILT_FACTOR} times OXY_MAX_RENDER_CHARS)"
    )


def _int_weight(value: int) -> int:
    return value.bit_length() * 3 // 10 + 1  # about its decimal digits


def _leaf_weight(value: Any) -> int | None:
    """The weight of a value that holds no other values; None for a container."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value) + 2
    if isinstance(value, int):
        return _int_weight(value)
    if value is None or isinstance(value, (float, complex, Undefined)):
        return 8
    if isinstance(value, range):
        if not value:
            return 2
        return len(value) * (max(_int_weight(value[0]), _int_weight(value[-1])) + 2) + 2
    if isinstance(value, LoopContext):  # its repr would count (and consume) its items
        return 32
    if _children(value) is not None:
        return None
    return _opaque_weight(value)


def _opaque_weight(value: Any) -> int:
    """An object that is neither text nor a container: the length of its repr (what a
    list holding it prints), which the engine's objects keep short."""
    try:
        return len(repr(value)) + 2
    except Exception:  # a repr that fails fails again when printed; it weighs little
        return 16


def _children(value: Any) -> Iterable[Any] | None:
    if isinstance(value, (list, tuple, set, frozenset, deque, KeysView, ValuesView)):
        return value
    if isinstance(value, (dict, ItemsView)):
        return chain.from_iterable(value if isinstance(value, ItemsView) else value.items())
    if isinstance(value, Mapping):
        return chain.from_iterable(value.items())
    return None


def _weigh(value: Any, limit: int, cache: dict[int, tuple[Any, int]]) -> tuple[int, int]:
    """(weight, values walked) of a container, without recursion (deep data is fine),
    stopping at a weight over ``limit``. Containers that hold containers, or many
    values, are remembered: a list built from lists weighed before costs its length."""
    hit = cache.get(id(value))
    if hit is not None:
        return hit[1], 1
    walked = 0
    total = 2
    # frame: [container, iterator over its children, its weight so far, holds a container]
    stack: list[list[Any]] = [[value, iter(_children(value) or ()), 2, False]]
    while stack:
        frame = stack[-1]
        for child in frame[1]:
            walked += 1
            weight = _leaf_weight(child)
            if weight is None:
                frame[3] = True
                hit = cache.get(id(child))
                if hit is None:  # walk it first; its weight is added to ours when done
                    frame[2] += 2
                    total += 4
                    stack.append([child, iter(_children(child) or ()), 2, False])
                    if total > limit:
                        return limit + 1, walked
                    break
                weight = hit[1]
            frame[2] += weight + 2
            total += weight + 2
            if total > limit:
                return limit + 1, walked
        else:
            stack.pop()
            container, weight = frame[0], frame[2]
            if (frame[3] or weight > 256) and len(cache) < _CACHE_MAX:
                cache[id(container)] = (container, weight)
            if not stack:
                return weight, walked
            stack[-1][2] += weight  # (its separator was counted when it was entered)
    return total, walked  # not reached: the last frame returns


_BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "oxyeval_template_budget", default=None
)


def _new() -> Budget:
    # Read at each rendering: tests (and OXY_* variables set by a caller) take effect.
    return Budget(render_limit(), limits.MAX_TEMPLATE_ITERATIONS)


@contextlib.contextmanager
def budget() -> Iterator[Budget]:
    """One rendering's budget: calls, iterations and work add up across loops and macros,
    and its wall time counts from now."""
    spent = _new()
    token = _BUDGET.set(spent)
    try:
        yield spent
    finally:
        _BUDGET.reset(token)


def current() -> Budget:
    """The budget of the rendering in progress. Outside :func:`budget` (a direct Jinja
    call) every operation is still checked on its own, against a fresh budget."""
    return _BUDGET.get() or _new()


def check_chars(size: int, what: str) -> None:
    """A string of ``size`` characters is about to be made: within the limit, and paid for."""
    spent = current()
    if size > spent.chars:
        raise TemplateLimitError(
            f"{what} would be {size:,} characters; templates are limited to {spent.chars:,} "
            "(set OXY_MAX_RENDER_CHARS to change it)"
        )
    spent.account(size)


def check_text(value: Any, what: str) -> None:
    """A list or mapping about to become text (printed, ``~``, ``string``, ``%s``): its
    weight is about the text's length, known before the text is made."""
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        spent = current()
        weight = spent.weigh(value, spent.chars)
        if weight > spent.chars:
            raise TemplateLimitError(
                f"{what} would be more than {spent.chars:,} characters; templates are "
                f"limited to {spent.chars:,} (set OXY_MAX_RENDER_CHARS to change it)"
            )


def check_result(result: Any, given: Any, what: str) -> None:
    """What a filter, method or operator returned, paid for: a string longer than the
    render limit (and than the string it was given: a long text passed through is not
    built here) or an integer past the bit limit is refused. These are the results whose
    size the checks before the call bound only by a small factor (``escape`` writes six
    characters for one ``<``, ``urlencode`` twelve for an emoji) or not at all
    (``int(s, 16)``, ``int.from_bytes``), so they are measured once made."""
    if isinstance(result, (str, bytes)):
        size = len(result)
        spent = current()
        if size > spent.chars and not (isinstance(given, (str, bytes)) and size <= len(given)):
            check_chars(size, what)
        spent.account(size)
    elif isinstance(result, int):
        check_int(result, what)


def check_int(value: int, what: str) -> None:
    """An integer made by a call (``int(s, 16)``, ``from_bytes``): within the bit limit,
    so that what a template computes with it next stays fast."""
    bits = value.bit_length()
    if bits > limits.MAX_TEMPLATE_INT_BITS:
        raise TemplateLimitError(
            f"{what} is an integer of {bits:,} bits; templates are limited to "
            f"{limits.MAX_TEMPLATE_INT_BITS:,}"
        )


def check_items(size: int, what: str) -> None:
    """A list of ``size`` items is about to be made: within the limit, and paid for."""
    if size > limits.MAX_TEMPLATE_ITEMS:
        raise TemplateLimitError(
            f"{what} would have {size:,} items; templates are limited to "
            f"{limits.MAX_TEMPLATE_ITEMS:,}"
        )
    current().account(size)
