"""What the app under test was made with (a model, a prompt's version, a temperature),
carried by a run's results: DeepEval's ``hyperparameters=`` and ``log_hyperparameters``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["LOGGED", "hyperparameters_of", "log_hyperparameters"]

#: What ``log_hyperparameters`` logged in this process: every later run carries it.
LOGGED: dict[str, str] = {}


def hyperparameters_of(given: Mapping[str, Any] | None) -> dict[str, str]:
    """The run's hyperparameters as text (a prompt object by its text or name), the
    ones ``log_hyperparameters`` logged first, those given to the call over them."""
    if given is not None and not isinstance(given, Mapping):
        raise TypeError(f"hyperparameters must be a dict, got {type(given).__name__}")
    merged = dict(LOGGED)
    for key, value in (given or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"hyperparameters keys must be str, got {key!r}")
        if value is None:
            continue
        shown = getattr(value, "alias", None) or getattr(value, "text", None)
        merged[key] = value if isinstance(value, str) else str(shown if shown else value)
    return merged


def log_hyperparameters(func: Callable[[], Mapping[str, Any]]) -> Callable[..., Any]:
    """Log what the app under test was made with (DeepEval's decorator): ``func`` is
    called once now and what it returns (a dict) is carried by every later run's
    results in this process."""
    LOGGED.update(hyperparameters_of(func()))

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper
