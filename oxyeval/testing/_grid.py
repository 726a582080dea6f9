"""Grid search: one run of a suite per combination of parameter values.

``run_test_suite(..., grid_search_params={"model": ["a", "b"], "temperature": [0, 1]})``
runs the suite four times; inside each run, :func:`grid_search_ctx` gives ``fn`` and the
evaluators the combination in force (``{"model": "a", "temperature": 0}``), so the code
under test reads its settings there instead of taking them as arguments.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = [
    "GridSearchParams",
    "check_params",
    "combination_label",
    "combinations",
    "grid_search_ctx",
    "in_combination",
]

GridSearchParams = Mapping[str, Sequence[Any]]

_COMBINATION: ContextVar[dict[str, Any] | None] = ContextVar(
    "oxyeval_grid_search_combination", default=None
)


def grid_search_ctx() -> dict[str, Any] | None:
    """The combination of the grid search run in progress (None outside one)."""
    return _COMBINATION.get()


@contextmanager
def in_combination(combination: dict[str, Any] | None) -> Iterator[None]:
    """Code run in this block (and the tasks and worker threads it starts, which copy
    the context) sees ``combination`` through :func:`grid_search_ctx`."""
    token = _COMBINATION.set(combination)
    try:
        yield
    finally:
        _COMBINATION.reset(token)


def check_params(suite: str, params: Any) -> str | None:
    """Why ``params`` is no grid (a mapping of names to non-empty sequences), or None."""
    if not isinstance(params, Mapping):
        return f"run_test_suite {suite!r}: grid_search_params must be a dict, not {params!r}"
    if not params:
        return f"run_test_suite {suite!r}: grid_search_params has no parameter"
    for key, values in params.items():
        if not isinstance(key, str):
            return f"run_test_suite {suite!r}: grid_search_params key {key!r} is not a string"
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            return (
                f"run_test_suite {suite!r}: grid_search_params[{key!r}] must be a list of "
                f"values, not {values!r}"
            )
        if not values:
            return f"run_test_suite {suite!r}: grid_search_params[{key!r}] has no value"
    return None


def combinations(params: GridSearchParams) -> list[dict[str, Any]]:
    """Every combination of the values, in order (the last parameter varies fastest)."""
    keys = list(params)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*params.values())]


def combination_label(combination: Mapping[str, Any]) -> str:
    """``model=a, temperature=0``: a combination as runs and reports name it."""
    return ", ".join(
        f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in combination.items()
    )
