"""What a run tells whoever listens, as it happens: one event stream for every kind of test.

Why one stream: a progress bar, the history writer, a dashboard and a pytest plugin all
want to know the same things (a run began, a sample came back, a score or a result was
recorded, the cache answered, something went wrong, the run ended); each used to get its
own callback with its own shape, or none. A subscriber is any callable taking an
:class:`Event` (:class:`EventSink`); events are small frozen dataclasses, matched by type.

This module sits in the evaluation core, below reporting and the command line, so that
the SDK and a pytest plugin can subscribe without importing either.

Events are delivered synchronously, in the order they happen, on the event loop's
thread: a subscriber must be quick (queue work elsewhere). A subscriber that raises is
logged and dropped from the stream; it never stops or fails the run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .decision import Decision
    from .result import Result

__all__ = [
    "CacheServed",
    "Event",
    "EventSink",
    "EventStream",
    "ResultRecorded",
    "RunFinished",
    "RunStarted",
    "SampleFinished",
    "ScoreRecorded",
    "StepsPlanned",
    "SubjectStarted",
    "Warned",
]

log = logging.getLogger("oxyeval.events")


@dataclass(frozen=True, kw_only=True)
class Event:
    """What every event carries: the kind of run it belongs to and when (monotonic)."""

    kind: str
    at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True, kw_only=True)
class RunStarted(Event):
    """The run's checks passed and its work begins; ``subjects``: how many it will test."""

    subjects: int = 0


@dataclass(frozen=True, kw_only=True)
class SubjectStarted(Event):
    """One subject (a test, a case, a workflow) begins ``steps`` units of work."""

    subject: str
    label: str = ""
    steps: int = 0


@dataclass(frozen=True, kw_only=True)
class StepsPlanned(Event):
    """More work for a subject than announced (a judge's comparisons, once planned)."""

    subject: str
    steps: int


@dataclass(frozen=True, kw_only=True)
class SampleFinished(Event):
    """One output of a subject came back (or failed): a run of an agent, a case's answer,
    a workflow's task. ``cached``: served from the cache, no model call."""

    subject: str
    index: int = 0
    latency_ms: float | None = None
    error: str | None = None
    cached: bool = False


@dataclass(frozen=True, kw_only=True)
class ScoreRecorded(Event):
    """A measurement was made: a judge's verdict on a pair, a case's similarity."""

    subject: str
    metric: str
    value: float | None = None
    label: str | None = None


@dataclass(frozen=True, kw_only=True)
class ResultRecorded(Event):
    """A subject's result is final (and, with a history, being stored)."""

    result: Result


@dataclass(frozen=True, kw_only=True)
class CacheServed(Event):
    """The cache answered ``calls`` model calls of ``cache`` ("answer" or "verdict")."""

    cache: str
    calls: int = 1


@dataclass(frozen=True, kw_only=True)
class Warned(Event):
    """Something the user should know that does not stop the run."""

    message: str


@dataclass(frozen=True, kw_only=True)
class RunFinished(Event):
    """The run ended: ``status`` completed, interrupted or failed (the one rule,
    :func:`oxyeval.suites.suite.final_status`); ``results``: how many were recorded;
    ``decision`` when the caller decided one."""

    status: str
    results: int = 0
    decision: Decision | None = None


class EventSink(Protocol):
    def __call__(self, event: Event) -> None: ...


class EventStream:
    """The subscribers of one run. Callable itself, so a stream is also a sink (a run
    inside a run forwards to its parent)."""

    def __init__(self, sinks: Iterable[EventSink | None] = ()) -> None:
        self._sinks: list[EventSink] = [s for s in sinks if s is not None]

    def subscribe(self, sink: EventSink) -> Callable[[], None]:
        """Add ``sink``; returns what removes it."""
        self._sinks.append(sink)
        return lambda: self._sinks.remove(sink) if sink in self._sinks else None

    def __bool__(self) -> bool:
        return bool(self._sinks)

    def __call__(self, event: Event) -> None:
        for sink in list(self._sinks):
            try:
                sink(event)
            except Exception:
                log.warning("an event subscriber failed and was removed", exc_info=True)
                if sink in self._sinks:
                    self._sinks.remove(sink)
