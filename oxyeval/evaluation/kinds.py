"""The kinds of result a history holds, registered rather than hard-coded.

A kind says which of its statuses leave the outcome unknown (exit 3 whatever else
happened) and how a line about a result reads in a CI log. Adding a kind of test is
:func:`register_kind` with those few things: the store, the decision and the readers
take any registered kind. Importing nothing heavy, since the lean history writer and
the command line's help need the names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .result import Result

__all__ = ["ResultKind", "kind_names", "register_kind", "result_kind"]


def _unknown_line(result: Result) -> str:
    return f"error: {result.subject}: {result.error or result.status}"


def _failed_line(result: Result) -> str:
    score = "-" if result.score is None else f"{result.score:.3f}"
    return f"failed: {result.subject}: score {score}"


@dataclass(frozen=True)
class ResultKind:
    """What the core needs to know of one kind of result."""

    name: str
    statuses: tuple[str, ...]
    #: Statuses that leave the outcome unknown: the run exits 3 (infrastructure), never 1.
    unknown: frozenset[str] = frozenset({"error", "interrupted"})
    #: Statuses that are neither pass nor fail (a case with no expected output yet).
    neutral: frozenset[str] = frozenset()
    #: Whether a result's own check (``Result.passed``) gates the run: False for a kind
    #: whose pass is a statistic to compare, not a requirement (an A/B branch's quality
    #: against the pass mark ranks branches; a run of them fails only on missing data).
    checks_gate: bool = True
    #: What the score is called in messages ("accuracy", "score", "pass rate").
    metric: str = "score"
    #: What one result is called in messages ("test", "case", "branch").
    noun: str = "result"
    #: The CI-log line of a result whose outcome is unknown, and of one that failed its
    #: own check; ``{subject}: why``, secrets scrubbed by the caller.
    unknown_line: Callable[[Result], str] = field(default=_unknown_line, compare=False)
    failed_line: Callable[[Result], str] = field(default=_failed_line, compare=False)


_KINDS: dict[str, ResultKind] = {}


def register_kind(kind: ResultKind, *, replace: bool = False) -> ResultKind:
    """Make ``kind`` known to the decision, the history and the readers. A name taken by
    another definition is a programming error unless ``replace`` (tests, reloads)."""
    known = _KINDS.get(kind.name)
    if known is not None and known != kind and not replace:
        raise ValueError(f"result kind {kind.name!r} is already registered")
    if not kind.statuses or not set(kind.unknown | kind.neutral) <= set(kind.statuses):
        raise ValueError(f"result kind {kind.name!r}: unknown/neutral must be among its statuses")
    _KINDS[kind.name] = kind
    return kind


def result_kind(name: str) -> ResultKind:
    """The registered kind ``name``; a KeyError naming the known ones otherwise."""
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(f"unknown result kind {name!r}; known: {', '.join(_KINDS)}") from None


def kind_names() -> tuple[str, ...]:
    return tuple(_KINDS)
