"""A suite run: what every kind of test shares around its own work.

Why: consistency tests, test cases and workflow runs each set up their run their own way
(histories, a cache, who tells the progress bar, how the run's final status is worked
out), and each new kind (A/B branches, judged pass/fail tests, the SDK's suites) would
have copied one of them. :class:`SuiteRun` owns those parts once:

* the run's histories (one store per database, or none: ``history=False``), started only
  when the run's checks have passed (:meth:`SuiteRun.start`), so a run that stops on bad
  input creates no database, and closed last;
* its caches: one ``cache: bool | None`` (``--cache`` / ``--no-cache`` / neither), made
  into each project's cache in that history;
* its event stream (:mod:`oxyeval.evaluation.events`): run started, samples, scores,
  results, cache hits, warnings, run finished; the progress bar and callers subscribe;
* the final status rule (:func:`final_status`), also what the history's run rows get;
* optionally a redaction scope (``scope_secrets``): for a long-lived process (a server,
  a notebook) running many projects, the secrets a run registers are forgotten after it.
  A command-line run leaves it off: its report is printed after the run, still scrubbed.

A kind's own module does its work inside ``async with SuiteRun(...) as suite`` and
calls :meth:`~SuiteRun.start`, :meth:`~SuiteRun.emit` and :meth:`~SuiteRun.record`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..evaluation import (
    Event,
    EventSink,
    EventStream,
    Result,
    ResultRecorded,
    RunFinished,
    RunStarted,
    SampleFinished,
    ScoreRecorded,
    StepsPlanned,
    SubjectStarted,
    Warned,
    result_kind,
)
from ..redact import secret_scope
from .cache import cache_factory
from .history import Histories

if TYPE_CHECKING:
    from ..evaluation import Decision
    from .cache import RunCaches

__all__ = ["ProgressSink", "SuiteRun", "final_status", "interrupted_by", "progress_events"]


def interrupted_by(exc_type: type[BaseException] | None) -> bool:
    """What ended a block was a signal (SIGINT/SIGTERM become a cancellation or a
    KeyboardInterrupt), not an error."""
    return exc_type is not None and issubclass(
        exc_type, (asyncio.CancelledError, KeyboardInterrupt)
    )


def final_status(*, interrupted: bool = False, failed: bool = False) -> str:
    """A run's final status, the one rule for every kind (and its history row):
    ``interrupted`` (SIGINT/SIGTERM, cancelled) wins; then ``failed`` when the run did not
    do all its work: it stopped on an error, or a subject could not be tested (a result in
    error: a provider down, a test that could not be scored); else ``completed``. A run
    whose tests ran and failed their checks *completed*: pass or fail is the decision's."""
    if interrupted:
        return "interrupted"
    return "failed" if failed else "completed"


class ProgressSink(Protocol):
    """A progress display keyed by subject (``oxy test``'s rich bar): what
    :func:`progress_events` drives from the event stream."""

    def start(self, key: str, label: str, total: int) -> None: ...
    def add_total(self, key: str, amount: int) -> None: ...
    def advance(self, key: str, amount: int = 1) -> None: ...


def progress_events(progress: ProgressSink) -> EventSink:
    """A subscriber that moves ``progress``, saying what it counts: a bar per subject for
    its samples (``· runs``), and once its judging is planned, a second one for the judge
    calls (``· judge``), each advanced by the events of its own kind."""
    labels: dict[str, str] = {}
    judging: set[str] = set()

    def sink(event: Event) -> None:
        if isinstance(event, SubjectStarted):
            labels[event.subject] = event.label or event.subject
            progress.start(event.subject, f"{labels[event.subject]} · runs", event.steps)
        elif isinstance(event, StepsPlanned):
            key = f"{event.subject}#judge"
            if event.subject in judging:
                progress.add_total(key, event.steps)
            else:
                judging.add(event.subject)
                label = labels.get(event.subject, event.subject)
                progress.start(key, f"{label} · judge", event.steps)
        elif isinstance(event, SampleFinished):
            progress.advance(event.subject)
        elif isinstance(event, ScoreRecorded):
            key = f"{event.subject}#judge"
            progress.advance(key if event.subject in judging else event.subject)

    return sink


class SuiteRun:
    """One run of one kind of test; ``async with`` it around the run's work."""

    def __init__(
        self,
        kind: str,
        *,
        db: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
        history: bool = True,
        cache: bool | None = None,
        events: EventSink | Iterable[EventSink | None] | None = None,
        scope_secrets: bool = False,
    ) -> None:
        self.kind = kind
        sinks = [events] if callable(events) else list(events or ())
        self.events = EventStream(sinks)
        self.histories = Histories(db, environ, enabled=history)
        self.caches: RunCaches = cache_factory(
            cache, histories=self.histories, events=self.events, kind=kind
        )
        self.status = "running"
        self.started = False
        self.recorded = 0
        self.errors = 0  # results that could not be produced: the run "failed"
        self.decision: Decision | None = None
        self._scope = scope_secrets
        self._exit = ExitStack()

    def emit(self, event: Event) -> None:
        self.events(event)

    def start(self, subjects: int = 0) -> None:
        """The run's checks passed: its histories start opening (in the background) and
        subscribers hear that it began."""
        self.histories.start()
        self.started = True
        self.emit(RunStarted(kind=self.kind, subjects=subjects))

    def record(self, result: Result) -> None:
        """A subject's final result: counted and told to subscribers."""
        self.recorded += 1
        unknown = result_kind(result.kind).unknown - {"interrupted"}
        self.errors += result.status in unknown
        self.emit(ResultRecorded(kind=self.kind, result=result))

    def warn(self, message: str) -> None:
        self.emit(Warned(kind=self.kind, message=message))

    def status_for(self, exc_type: type[BaseException] | None) -> str:
        """The status this run ends with if ``exc_type`` ends it (None: it ends normally):
        for a kind that finishes its history rows before the run itself ends."""
        failed = exc_type is not None or self.errors > 0
        return final_status(interrupted=interrupted_by(exc_type), failed=failed)

    async def __aenter__(self) -> SuiteRun:
        if self._scope:
            self._exit.enter_context(secret_scope())
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        self.status = self.status_for(exc_type)
        try:
            await self.histories.aclose()
        finally:
            if self.started:  # a run stopped by its checks never began: no events
                self.emit(
                    RunFinished(
                        kind=self.kind,
                        status=self.status,
                        results=self.recorded,
                        decision=self.decision,
                    )
                )
            self._exit.close()
