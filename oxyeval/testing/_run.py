"""The SDK's one runner: test cases, their outputs and their checks, as a run of kind
``sdk`` inside a :class:`~oxyeval.suites.SuiteRun`.

``evaluate``/``assert_test`` (test cases that carry their outputs, scored by metrics)
and ``run_test_suite`` (test cases sent through a function, its outputs scored by
evaluators) are the same run seen two ways, so both are thin over this: a
:class:`Subject` per test case, maybe producing its output, then measured by its
:class:`Check` s. Around that work, the run has what every kind has: one
:class:`~oxyeval.workflow.RunContext` for the project (one model pool, the verdict cache
kept in the history, one judge session, named for the judged metrics by
:func:`~oxyeval.testing._judge.judging_in`), one concurrency budget, the event stream
(subjects started, samples, scores, results recorded), the run row and its results in
the history (kept by the suite run's recorder, compared with earlier results by
:mod:`~oxyeval.testing._regressions`), finished by the one status rule
(:func:`~oxyeval.suites.final_status`); pass or fail is the one decision's
(:func:`~oxyeval.evaluation.decide_run`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._tasks import gather_settled
from ..errors import OxyError
from ..evaluation import SampleFinished, ScoreRecorded, SubjectStarted
from ._judge import judging_in
from ._regressions import STORAGE
from ._results import SDK, Measured, regression_lines, sdk_result

if TYPE_CHECKING:
    from ..evaluation import Decision, EventSink, Result
    from ..suites import SuiteRun
    from ..workflow import RunContext

__all__ = ["Check", "Finished", "Outcome", "Sdk", "SdkOutcome", "SdkRun", "Subject", "run_sdk"]

log = logging.getLogger("oxyeval")

#: What a test case's output is called when producing it failed and nothing measured it.
PRODUCE = "fn"


@dataclass(eq=False)
class Check:
    """One measurement of a test case's output (a metric, an evaluator): ``measure(item,
    output)`` gives what it made of them, or None to skip the case; an exception is that
    case's error under this check. ``limit``: at most that many at once (its own, inside
    the run's budget)."""

    name: str
    measure: Callable[[Any, Any], Awaitable[Measured | None]]
    limit: int | None = None


@dataclass(eq=False)
class Subject:
    """One test case: ``key`` names it in the history (a hash, its input); ``produce``
    makes its output from ``item`` (None: ``item`` carries it)."""

    key: str
    item: Any
    checks: Sequence[Check]
    label: str = ""
    produce: Callable[[Any], Awaitable[Any]] | None = None


@dataclass(eq=False)
class Outcome:
    """A test case's run: its output (or why producing it failed), what each check made
    of it (None: skipped), in the checks' order, and its results."""

    subject: Subject
    output: Any = None
    error: str | None = None
    duration_s: float = 0.0
    measured: list[Measured | None] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _project(where: Path) -> tuple[Any, str | None]:
    """The project found from ``where`` (None: outside any project), or None and why
    when its config.yml cannot be loaded: its metrics still run, unkept."""
    from ..project import find_config, load_project

    if find_config(where) is None:
        return None, None
    try:
        return load_project(where), None
    except OxyError as exc:
        return None, f"warning: the evaluations are not kept in the history: {exc}"


class _Slot:
    """A unit of work's place: its own limit first, then the run's budget, so a unit
    waiting for its own limit never holds a place of the budget."""

    def __init__(self, own: asyncio.Semaphore | None, budget: asyncio.Semaphore | None) -> None:
        self._own, self._budget = own, budget

    async def __aenter__(self) -> None:
        if self._own is not None:
            await self._own.acquire()
        if self._budget is not None:
            try:
                await self._budget.acquire()
            except BaseException:
                if self._own is not None:
                    self._own.release()
                raise

    async def __aexit__(self, *exc: object) -> None:
        if self._budget is not None:
            self._budget.release()
        if self._own is not None:
            self._own.release()


class SdkRun:
    """One SDK run labelled ``label`` inside ``suite``, for the project found from
    ``where`` (the working directory); ``async with`` it, then :meth:`run` test cases
    (once, or call by call: a pytest session's ``assert_test`` s).

    ``concurrency``: units of work (an output produced, a check measured) in flight at
    once in the whole run (None: no limit of the run's own; the models' limits apply);
    ``produce_limit``: outputs produced at once; ``total``: results expected (the run
    row's, 0 when unknown); ``subjects``: test cases expected (the run's start event).
    """

    def __init__(
        self,
        suite: SuiteRun,
        label: str,
        *,
        where: Path | None = None,
        concurrency: int | None = None,
        produce_limit: int | None = None,
        total: int = 0,
        subjects: int = 0,
    ) -> None:
        self.suite = suite
        self.label = label
        self.where = where or Path.cwd()
        self.context: RunContext | None = None
        self.handle: Any = None
        self.results: list[Result] = []
        self._total, self._subjects = total, subjects
        self._budget = suite.budget or (asyncio.Semaphore(concurrency) if concurrency else None)
        self._produce = asyncio.Semaphore(produce_limit) if produce_limit else None
        self._limits: dict[int, asyncio.Semaphore] = {}
        self._problem: str | None = None

    def prepare(self) -> None:
        """The project's context and where its results go (a bad ``history:`` entry is
        warned about and the run goes on unkept); the run is not started."""
        from ..suites import RunRow

        project, problem = _project(self.where)
        if project is not None:
            try:
                self.handle = self.suite.add(project, RunRow(subject=self.label), count=self._total)
            except OxyError as exc:
                problem = f"warning: the evaluations are not kept in the history: {exc}"
            self.context = self.suite.context(project)
        self._problem = problem

    def started(self) -> None:
        """The suite run has started: say what the preparation found."""
        if self._problem is not None:
            log.warning("%s", self._problem)
            self.suite.warn(self._problem)

    async def __aenter__(self) -> SdkRun:
        self.prepare()
        self.suite.start(self._subjects)
        self.started()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        self.warn_unstored()

    def warn_unstored(self) -> None:
        """Why the results are not (all) kept, said once: the run goes on without them."""
        for note in self.suite.recorder.notes:
            if note.error is not None:
                message = f"warning: the evaluations were not stored in the history: {note.error}"
                log.warning("%s", message)
                self.suite.warn(message)

    @property
    def stored(self) -> int:
        """Results the history holds so far."""
        return sum(note.stored for note in self.suite.recorder.notes)

    # -- the work

    def _slot(self, own: asyncio.Semaphore | None) -> _Slot:
        return _Slot(own, self._budget)

    def _limit(self, check: Check) -> asyncio.Semaphore | None:
        if not check.limit:
            return None
        limit = self._limits.get(id(check))
        if limit is None:
            limit = self._limits[id(check)] = asyncio.Semaphore(check.limit)
        return limit

    async def run(self, subjects: Sequence[Subject]) -> list[Outcome]:
        """Produce and measure every test case, each unit of work within the budget, and
        record each case's results as it finishes; the outcomes in the order given."""
        return await gather_settled(*(self.one(s) for s in subjects))

    async def one(self, subject: Subject) -> Outcome:
        """One test case produced and measured, with the judged metrics' context."""
        with judging_in(self.context):
            return await self._one(subject)

    async def _one(self, subject: Subject) -> Outcome:
        emit, kind = self.suite.emit, SDK.name
        name = f"{self.label}::{subject.key}"
        outcome = Outcome(subject)
        steps = len(subject.checks) + (subject.produce is not None)
        emit(SubjectStarted(kind=kind, subject=name, label=subject.label, steps=steps))
        if subject.produce is not None:
            started = time.perf_counter()
            async with self._slot(self._produce):
                try:
                    outcome.output = await subject.produce(subject.item)
                except Exception as exc:  # the function under test failed: this case's error
                    outcome.error = _why(exc)
            outcome.duration_s = time.perf_counter() - started
            emit(
                SampleFinished(
                    kind=kind,
                    subject=name,
                    latency_ms=outcome.duration_s * 1000,
                    error=outcome.error,
                )
            )
        if outcome.error is None:
            outcome.measured = await gather_settled(
                *(self._measure(name, subject, check, outcome.output) for check in subject.checks)
            )
        else:  # nothing to measure: each check's step ends in that error
            outcome.measured = [Measured(error=outcome.error) for _ in subject.checks]
            for check in subject.checks:
                emit(ScoreRecorded(kind=kind, subject=name, metric=check.name, label="error"))
        latency = None if subject.produce is None else round(outcome.duration_s * 1000, 3)
        for check, measured in zip(subject.checks, outcome.measured, strict=True):
            if measured is not None:
                outcome.results.append(
                    sdk_result(self.label, subject.key, check.name, measured, latency)
                )
        if outcome.error is not None and not subject.checks:  # never a silent failure
            failed = Measured(error=outcome.error)
            outcome.results.append(sdk_result(self.label, subject.key, PRODUCE, failed, latency))
        if self.handle is not None:
            await asyncio.gather(*(self.suite.keep(self.handle, r) for r in outcome.results))
        else:
            for result in outcome.results:
                self.suite.record(result)
        self.results.extend(outcome.results)
        return outcome

    async def _measure(
        self, name: str, subject: Subject, check: Check, output: Any
    ) -> Measured | None:
        async with self._slot(self._limit(check)):
            try:
                measured = await check.measure(subject.item, output)
            except Exception as exc:  # a check's failure is this case's error, not the run's
                measured = Measured(error=_why(exc))
        self.suite.emit(
            ScoreRecorded(
                kind=SDK.name,
                subject=name,
                metric=check.name,
                value=None if measured is None else measured.score,
                label=None if measured is None or measured.error is None else "error",
            )
        )
        return measured

    def regressions(self) -> list[str]:
        """Each result whose score fell against its previous one: ``case / metric: why``."""
        return regression_lines(self.results)


@dataclass
class Finished:
    """What a whole SDK run gives back: each test case's outcome in order, the run's
    decision, the regressions found and how many results the history kept."""

    outcomes: list[Outcome]
    decision: Decision
    regressions: list[str]
    stored: int = 0


class SdkOutcome:
    """An SDK run as the one decision reads it: its results in the test cases' order."""

    kind = SDK.name

    def __init__(self, subjects: Sequence[Subject]) -> None:
        self.outcomes: list[Outcome | None] = [None] * len(subjects)
        self.interrupted = False
        self.warnings: list[str] = []

    def as_results(self) -> list[Result]:
        return [r for o in self.outcomes if o is not None for r in o.results]


class Sdk:
    """The SDK's test cases as a kind on the run pipeline: each test case a unit,
    produced (``fn``) and measured by its checks, its results kept as it finishes."""

    name = SDK.name
    storage = STORAGE

    def __init__(
        self,
        label: str,
        subjects: Sequence[Subject],
        *,
        concurrency: int | None,
        produce_limit: int | None,
    ) -> None:
        self.label = label
        self.subjects = list(subjects)
        self.concurrency = concurrency
        self.produce_limit = produce_limit
        self.run = SdkOutcome(self.subjects)
        self.driver: SdkRun | None = None

    async def plan(self, suite: SuiteRun) -> list[int]:
        self.driver = SdkRun(
            suite,
            self.label,
            concurrency=self.concurrency,
            produce_limit=self.produce_limit,
            total=sum(len(s.checks) or 1 for s in self.subjects),
            subjects=len(self.subjects),
        )
        self.driver.prepare()
        return list(range(len(self.subjects)))

    async def execute(self, unit: int, suite: SuiteRun) -> None:
        assert self.driver is not None
        if unit == 0:
            self.driver.started()
        self.run.outcomes[unit] = await self.driver.one(self.subjects[unit])

    def stopped(self, suite: SuiteRun) -> None:
        """Test cases cut short keep nothing: a case's results are recorded whole."""

    def finished(self, suite: SuiteRun) -> None:
        """Why the results are not (all) kept, said once."""
        if self.driver is not None:
            self.driver.warn_unstored()


async def run_sdk(
    label: str,
    subjects: Sequence[Subject],
    *,
    concurrency: int | None = None,
    produce_limit: int | None = None,
    history: bool = True,
    cache: bool | None = None,
    events: EventSink | Iterable[EventSink | None] | None = None,
) -> Finished:
    """Run ``subjects`` as one SDK run labelled ``label`` (see :class:`SdkRun`):
    ``history=False`` keeps nothing (and caches nothing); ``cache`` is the run's
    ``--cache`` (True) / ``--no-cache`` (False) / neither (None: what the judges answer is
    kept and replayed); ``events`` subscribe to the run's events."""
    from ..suites import run_kind

    kind = Sdk(label, subjects, concurrency=concurrency, produce_limit=produce_limit)
    suite = await run_kind(
        kind, history=history, cache=cache, events=events, concurrency=concurrency
    )
    assert suite.decision is not None
    decision = suite.decision
    driver = kind.driver
    assert driver is not None
    outcomes = [o for o in kind.run.outcomes if o is not None]
    return Finished(outcomes, decision, driver.regressions(), driver.stored)
