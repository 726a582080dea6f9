"""A suite run: the one place a run of any kind is set up, driven and ended.

Why: each kind of test (consistency tests, test cases, A/B branches, judged pass/fail
tests, workflows, the SDK's evaluations) used to set its run up its own way, and every
capability a run gains (a cache, a history, events, batching, bounded memory) had to be
written once per kind. :class:`SuiteRun` owns it once:

* the run's histories (one store per database, or none: ``history=False``), opened only
  when the run's checks have passed, so a run that stops on bad input creates no
  database, and closed last;
* its run rows and its results in them (:mod:`.recorder`): each :class:`Result` kept as
  it is recorded, the rows finished by the one status rule (:func:`final_status`);
* each project's :class:`~oxyeval.workflow.RunContext` (models, databases, agents) with
  the run's cache (``cache: bool | None``: ``--cache`` / ``--no-cache`` / neither), and
  one concurrency budget for the calls of the whole run;
* its event stream (:mod:`oxyeval.evaluation.events`): run started, samples, scores,
  results, cache hits, warnings, run finished (with its decision);
* the one decision (:func:`~oxyeval.evaluation.decide_run`) at the end, under ``gates``;
* optionally a redaction scope (``scope_secrets``): for a long-lived process (a server,
  a notebook) running many projects, the secrets a run registers are forgotten after it.

A kind is a :class:`Kind`: it plans units of work (loading its files and checking every
key first: bad input stops the run before anything is opened) and executes each unit,
recording its results with :meth:`SuiteRun.keep`. ``await SuiteRun(...).run(kind)``
does the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .._collector import relaxed
from .._tasks import Limit, gather_settled, settle_windowed
from ..errors import OxyError
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
    decide_run,
    result_kind,
)
from ..providers import batch_subject
from ..redact import secret_scope
from .history_store import Histories
from .recorder import Handle, Recorded, Recorder, RunRow, Storage
from .run_cache import cache_factory
from .shards import Sharding, ShardKey
from .status import final_status, interrupted_by

if TYPE_CHECKING:
    from ..evaluation import DecidableRun, Decision, Gates
    from ..project.config import Project
    from ..providers import RetryPolicy
    from ..workflow.context import RunContext, RunContexts
    from .run_cache import RunCaches

__all__ = [
    "Kind",
    "ProgressSink",
    "SuiteRun",
    "final_status",
    "interrupted_by",
    "progress_events",
    "run_kind",
    "runs_window",
]

T = TypeVar("T")


#: Units alive at once per call the run's budget allows (the others finish being stored
#: meanwhile), and at least this many, for a run of more units than that.
_WINDOW_PER_CALL = 8
_WINDOW_MIN = 1024
#: Runs under way at once, at least, for a kind whose units are many runs each (see
#: :func:`_window`): 1,000 consistency tests of 100 runs start a few dozen at a time.
_WINDOW_RUNS = 4096


class Kind(Protocol):
    """A kind of test on the one run pipeline.

    ``name`` is its registered result kind; ``storage`` how its results become history
    rows (the core's ``results`` rows unless it keeps detail rows too); ``run`` the
    object its report reads, filled in as the run goes (what the one decision decides
    on: :class:`~oxyeval.evaluation.DecidableRun`). A kind whose units are many runs
    each may say how many (``runs_of(unit) -> int``): the run then starts units a
    window of runs at a time (:func:`runs_window`), not a window of units. A kind whose
    results finish out of their report's order puts them in it in ``in_order(suite)``,
    called once the history is written and before the one decision."""

    name: str
    storage: Storage
    run: DecidableRun

    async def plan(self, suite: SuiteRun) -> Sequence[Any]:
        """Load the files and build the units of work in the run's contexts
        (:meth:`SuiteRun.context`), every model and key checked; register where each
        unit's results go (:meth:`SuiteRun.add`); pass the tests its report lists
        through :meth:`SuiteRun.shard`, so a sharded run keeps only its share. Raise bad
        input here: nothing is opened or called yet."""
        ...

    async def execute(self, unit: Any, suite: SuiteRun) -> None:
        """Do one unit's work, recording each result as it finishes
        (:meth:`SuiteRun.keep`); cut short, keep what finished."""
        ...

    def stopped(self, suite: SuiteRun) -> None:
        """The run was interrupted: list what never finished, so the report says so."""
        ...

    def finished(self, suite: SuiteRun) -> None:
        """The run ended (done, failed or interrupted): put the report in order."""
        ...


class ProgressSink(Protocol):
    """A progress display keyed by subject (``oxy test``'s rich bar): what
    :func:`progress_events` drives from the event stream."""

    def start(self, key: str, label: str, total: int) -> None: ...
    def add_total(self, key: str, amount: int) -> None: ...
    def advance(self, key: str, amount: int = 1) -> None: ...


def progress_events(progress: ProgressSink) -> EventSink:
    """A subscriber that moves ``progress``, saying what it counts: a bar per subject for
    its samples (``· runs``), and once its judging is planned, a second one for the judge
    calls (``· judge``), each advanced by the events of its own kind; samples of subjects
    that announced none (test cases) advance one bar for the whole run."""
    labels: dict[str, str] = {}
    judging: set[str] = set()
    whole: dict[str, int] = {}  # the run's bar: its total, until its first sample

    def sink(event: Event) -> None:
        if isinstance(event, RunStarted):
            whole["total"] = event.subjects
        elif isinstance(event, SampleFinished) and event.subject not in labels:
            # A kind whose subjects are single samples (a test case: one answer, scored
            # without a judge) announces none: one bar counts them for the whole run.
            if "started" not in whole:
                whole["started"] = 1
                name = _RUN_BARS.get(event.kind, event.kind)
                progress.start(_RUN_BAR, name, whole.get("total", 0))
            progress.advance(_RUN_BAR)
        elif isinstance(event, SubjectStarted):
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
        elif isinstance(event, ScoreRecorded) and event.subject in labels:
            key = f"{event.subject}#judge"
            progress.advance(key if event.subject in judging else event.subject)

    return sink


#: The key of the run-wide bar (no subject's key holds a '#' and a space).
_RUN_BAR = "# run"
#: What the run-wide bar says it counts, per kind.
_RUN_BARS = {"cases": "test cases"}


class SuiteRun:
    """One run of one kind of test: ``await SuiteRun(...).run(kind)``; or ``async with``
    it around work a caller drives itself (:meth:`start`, :meth:`keep`)."""

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
        retry: RetryPolicy | None = None,
        storage: Storage | None = None,
        gates: Gates | None = None,
        concurrency: int | None = None,
        sharding: Sharding | None = None,
    ) -> None:
        from ..workflow.context import RunContexts

        self.kind = kind
        sinks = [events] if callable(events) else list(events or ())
        self.events = EventStream(sinks)
        self.environ = environ
        self.histories = Histories(db, environ, enabled=history)
        self.caches: RunCaches = cache_factory(
            cache, histories=self.histories, events=self.events, kind=kind
        )
        self.contexts: RunContexts = RunContexts(retry=retry, environ=environ, cache=self.caches)
        self.recorder = Recorder(kind, self.histories, storage)
        self.gates = gates
        #: The run's one concurrency budget: every unit's calls together (None: only each
        #: kind's and each model endpoint's own limits).
        self.budget = Limit(concurrency) if concurrency else None
        #: This run's shard of a sharded run (None: the whole selection).
        self.sharding = sharding
        self.budget_size = concurrency or 0
        self.status = "running"
        self.started = False
        self.recorded = 0
        self.errors = 0  # results that could not be produced: the run "failed"
        self.decision: Decision | None = None
        self._run: DecidableRun | None = None
        self._kind: Kind | None = None
        self._scope = scope_secrets
        self._exit = ExitStack()

    # -- what a kind uses ---------------------------------------------------------------

    def context(self, project: Project, **options: Any) -> RunContext:
        """``project``'s models, databases and agents for this run, with its cache
        (``options``: see :meth:`~oxyeval.workflow.RunContexts.get`)."""
        return self.contexts.get(project, **options)

    def add(
        self, project: Project, row: RunRow | None = None, *, part: str = "", count: int = 0
    ) -> Handle:
        """Where a unit's ``count`` results go: ``project``'s history, under ``row`` (the
        run's one row per history by default; ``part`` names the unit in its subject).
        A bad history location is bad input, raised now."""
        return self.recorder.add(project, row or RunRow(), part=part, count=count)

    def shard(
        self, items: Sequence[T], key: Callable[[T], ShardKey], projects: Iterable[Project] = ()
    ) -> list[T]:
        """The items (a kind's tests, in plan order) this run's shard runs: all of them
        when the run is not sharded. ``projects``: where the items come from, whose
        histories keep the shard's outcome under its run group."""
        if self.sharding is None:
            return list(items)
        return self.sharding.select(items, key, list(projects), histories=self.histories)

    async def store(self, project: Project) -> Any:
        """``project``'s history store, opened now (for a kind that reads what it plans
        from the history: prompts, cases, branches); None when the run keeps none."""
        history = self.histories.for_project(project, full=self.recorder.storage.full)
        if history is None:
            return None
        self.histories.start()
        return await history.store()

    async def keep(self, handle: Handle, result: Result, extra: Any = None) -> Recorded:
        """A result is final: counted, told to subscribers, kept in the history (with
        ``extra``, what its kind stores beside it); returns once written, with what the
        write gave back and ``result.previous`` filled. Cancelled while it is written,
        it is in the history, and :class:`~.recorder.KeptThenCancelled` carries what was
        kept so the report has it too, then the cancellation goes on."""
        self.record(result)
        return await self.recorder.record(handle, result, extra)

    def emit(self, event: Event) -> None:
        self.events(event)

    def start(self, subjects: int = 0) -> None:
        """The run's checks passed: its histories start opening and its run rows begin
        (in the background), and subscribers hear that it began."""
        self.histories.start()
        self.recorder.start()
        self.started = True
        self.emit(RunStarted(kind=self.kind, subjects=subjects))

    def record(self, result: Result) -> None:
        """A subject's final result: counted and told to subscribers (:meth:`keep` also
        keeps it in the history)."""
        self.recorded += 1
        unknown = result_kind(result.kind).unknown - {"interrupted"}
        self.errors += result.status in unknown
        if self.events:  # nobody listens: no event made
            self.emit(ResultRecorded(kind=self.kind, result=result))

    def warn(self, message: str) -> None:
        self.emit(Warned(kind=self.kind, message=message))

    # -- the run ------------------------------------------------------------------------

    async def run(self, kind: Kind) -> Decision:
        """Plan, start, execute every unit and decide: the one way a run of any kind
        goes. Interrupted, what finished is kept and the interruption raised again;
        the decision (:attr:`decision`) is made either way."""
        self._run = kind.run
        self._kind = kind
        with relaxed():  # see oxyeval._collector
            async with self:
                units = list(await kind.plan(self))
                self.start(len(units))
                for warning in getattr(kind.run, "warnings", ()):
                    self.warn(warning)
                try:
                    # Settled: on Ctrl-C every unit has kept its own (partial) results before
                    # what never started is listed. Many units go through a window of them
                    # (a few per call the budget lets run at once), so what a run holds does
                    # not grow with its number of cases.
                    window = _window(kind, units, self.budget_size)
                    if window and len(units) > window:
                        await settle_windowed(
                            _drained(units), lambda unit: self._execute(kind, unit), window
                        )
                    else:
                        await gather_settled(*(self._execute(kind, unit) for unit in units))
                except (asyncio.CancelledError, KeyboardInterrupt):
                    kind.run.interrupted = True
                    kind.stopped(self)
                    raise
            assert self.decision is not None
            return self.decision

    async def _execute(self, kind: Kind, unit: Any) -> None:
        """One unit, its model calls labelled with the unit (what a ``--batch`` run's
        stored requests belong to)."""
        with batch_subject(_unit_label(unit)):
            await kind.execute(unit, self)

    async def __aenter__(self) -> SuiteRun:
        if self._scope:
            self._exit.enter_context(secret_scope())
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        interrupted = interrupted_by(exc_type)
        errors = self.errors > 0
        self.status = final_status(interrupted=interrupted, failed=exc_type is not None or errors)
        error = rest[0] if rest and isinstance(rest[0], BaseException) else None
        try:
            try:
                await self.contexts.aclose()  # the cache's last writes, before the rows end
            finally:
                failed = exc_type is not None and not interrupted
                await self.recorder.close(interrupted=interrupted, failed=failed)
        finally:
            try:
                await self.histories.aclose()
            finally:
                if self._run is not None:
                    stopped = error if isinstance(error, OxyError) else None
                    if interrupted:
                        self._run.interrupted = True
                    # The report pairs each result with its outcome by position: the
                    # results are put in the report's order before they are decided on.
                    in_order = getattr(self._kind, "in_order", None)
                    if in_order is not None:
                        in_order(self)
                    self.decision = decide_run(self._run, self.gates, error=stopped)
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


def _window(kind: Kind, units: Sequence[Any], budget: int) -> int:
    """Units under way at once (0: every one). A kind whose units are each many runs
    (``runs_of``: a consistency test's n) has as many units as make
    :data:`_WINDOW_RUNS` runs: started all at once, 1,000 tests of 100 runs held 100,000
    waiting calls, each a task and its frame, from the first second."""
    runs_of = getattr(kind, "runs_of", None)
    if runs_of is None:
        return max(_WINDOW_PER_CALL * budget, _WINDOW_MIN) if budget else 0
    return runs_window(max((runs_of(unit) for unit in units), default=1), budget)


def runs_window(runs: int, budget: int) -> int:
    """How many units of up to ``runs`` runs each are under way at once: enough for
    :data:`_WINDOW_RUNS` runs, and eight rounds of the ``budget`` (calls at once), to
    wait for a slot, so a unit's slow last runs or its judge calls never leave the
    model idle."""
    return max(1, -(-max(_WINDOW_PER_CALL * budget, _WINDOW_RUNS) // max(1, runs)))


def _drained(units: list[Any]) -> Iterator[Any]:
    """``units`` in order, each let go of by the list as it is handed out: what a unit
    holds (a test case, its inputs) is freed once it has run, not at the end of a run
    of 100,000."""
    units.reverse()
    while units:
        yield units.pop()


def _unit_label(unit: Any) -> str:
    """What a unit of work is called: its ``subject`` or ``name``, else its spec's name
    after its file (a consistency test); "" when it names nothing."""
    for attribute in ("subject", "name"):
        value = getattr(unit, attribute, None)
        if isinstance(value, str):
            return value
    name = getattr(getattr(unit, "spec", None), "name", None)
    if not isinstance(name, str):
        return ""
    file = getattr(unit, "file", "")
    return f"{file}::{name}" if isinstance(file, str) and file else name


async def run_kind(kind: Kind, **options: Any) -> SuiteRun:
    """The one library call of every kind: a suite run of ``kind`` (``options``: ``db``,
    ``environ``, ``history``, ``cache``, ``events``, ``retry``, ``gates``,
    ``concurrency``, ``scope_secrets``, ``sharding``). Whatever ends it, the kind's run object gets the
    decision and how many calls the cache served, and the kind puts its report in order."""
    suite = SuiteRun(kind.name, storage=kind.storage, **options)
    try:
        await suite.run(kind)
    finally:
        run: Any = kind.run
        run.decision = suite.decision
        if hasattr(run, "cached_calls"):
            run.cached_calls = suite.caches.total_served
        kind.finished(suite)
    return suite
