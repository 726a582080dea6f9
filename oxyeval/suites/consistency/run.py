"""``oxy test`` as a library call and as a kind on the run pipeline (:class:`Consistency`):
each test of each agent or workflow file a unit, run n times and judged, its result
stored as it finishes with the previous result of the same test found for comparison."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._tasks import run_sync
from ...evaluation import EventSink, Previous, Result
from ...providers import RetryPolicy
from ..earlier import baseline_tally
from ..recorder import Storage
from ..shards import ShardKey
from ..suite import ProgressSink, SuiteRun, progress_events, run_kind
from ..targets import AgentTarget, Target, WorkflowTarget, workflow_question
from .judging import Job, label, run_test, test_entry
from .loading import Subject, collect_files, load_all
from .results import ConsistencyRun, ConsistencyTestResult, majority_tally, test_result

if TYPE_CHECKING:
    from ...evaluation import Gates
    from ...store import NewConsistencyResult
    from ..history_store import RunStore
    from ..shards import Sharding

__all__ = ["Consistency", "new_result", "run_tests", "run_tests_async"]


def _unfinished(run: ConsistencyRun, jobs: list[Job]) -> list[tuple[Job, ConsistencyTestResult]]:
    """On Ctrl-C, each test that had not even started, as the result it is listed as
    (interrupted, unscored), not silently dropped; tests under way list their own
    finished runs (``_run_test``)."""
    done = {(t.file, t.index) for t in run.tests}
    added = []
    for job in jobs:
        spec = job.spec
        if (spec.display, spec.index) in done:
            continue
        for k, judge in enumerate(spec.judges):
            result = test_entry(spec, judge, label(spec, k), job.question, job.target.model)
            result.error = "interrupted before it finished"
            result.interrupted = True
            added.append((job, result))
    return added


def in_file_order(run: ConsistencyRun, jobs: list[Job]) -> None:
    """Report in file order, whatever order the tests finished in."""
    order = {(j.spec.display, j.spec.index): k for k, j in enumerate(jobs)}
    run.tests.sort(key=lambda t: (order.get((t.file, t.index), 0), t.name))


def _shard(subjects: list[Subject], suite: SuiteRun) -> list[Subject]:
    """The subjects with only this shard's tests (each test named by its file and name,
    weighed by its runs); a file none of whose tests fall here is left out."""
    tests = [(item, spec) for item in subjects for spec in item.tests]
    mine = suite.shard(
        tests,
        lambda pair: ShardKey(pair[0].project.relative(pair[0].file), pair[1].name, pair[1].n),
        [item.project for item in subjects],
    )
    kept = {(id(item), id(spec)) for item, spec in mine}
    shared = []
    for item in subjects:
        chosen = [spec for spec in item.tests if (id(item), id(spec)) in kept]
        if chosen:
            shared.append(replace(item, tests=chosen))
    return shared


def _plan(subjects: list[Subject], suite: SuiteRun, run: ConsistencyRun) -> list[Job]:
    """Every test to run, its target checked before any call: a missing key or a template
    error is bad input (exit 2), once, not n failed runs."""
    jobs: list[Job] = []
    for item in subjects:
        if not item.tests:
            run.skipped.append(f"{item.project.relative(item.file)}: no consistency tests")
            continue
        # Where the project's history is: a bad location is bad input, before any call.
        handle = suite.add(
            item.project,
            part=item.project.relative(item.file),
            count=sum(len(t.judges) for t in item.tests),
        )
        context = suite.context(item.project)
        target: Target
        if item.agent is not None:
            target = AgentTarget(context, item.agent)
        else:
            assert item.plan is not None
            target = WorkflowTarget(context, item.plan)
        second = [run.agreement_model] if run.agreement_model else []
        context.models.check(
            sorted({*target.models, *(j.model for t in item.tests for j in t.judges), *second})
        )
        target.check()
        verdicts, session = context.verdicts, context.judging
        for spec in item.tests:
            if item.agent is not None:
                question = spec.task_description or ""
                inputs: dict[str, Any] = {"question": question}
                job_target: Target = target
            else:
                assert item.plan is not None
                job_target = WorkflowTarget(context, item.plan, spec.task_ref)
                question, inputs = workflow_question(item.plan, spec), {}
            jobs.append(
                Job(
                    spec,
                    job_target,
                    inputs,
                    question,
                    context.models,
                    verdicts,
                    session,
                    item.project.relative(item.file),
                    handle,
                    run.agreement_model,
                )
            )
    return jobs


def new_result(file: str, test: ConsistencyTestResult) -> NewConsistencyResult:
    """The row a test result becomes (``file`` relative to the project)."""
    from ...store import NewConsistencyResult

    selected = test.selected_output
    return NewConsistencyResult(
        file=file,
        name=test.name,
        status=test.status,
        test_index=test.index,
        accuracy=test.accuracy,
        n=test.n,
        runs_ok=sum(1 for o in test.outputs if o.error is None),
        pairing=test.pairing,
        model=test.agent_model,
        judge_model=test.judge_model,
        pairs_total=max(test.total_pairs, test.judged_pairs),
        pairs_judged=test.judged_pairs,
        identical_pairs=test.identical_pairs,
        judge_calls=test.judge_calls,
        selected_run=None if selected is None else selected.run,
        selected_output=None if selected is None else selected.text,
        run_errors=[{"run": o.run, "error": o.error or ""} for o in test.run_errors],
        tally=majority_tally(test),
        error=test.error,
        duration_ms=round(test.duration * 1000, 3),
    )


def _test_rows(store: RunStore, run_id: str, items: Sequence[tuple[Result, Any]]) -> list[Any]:
    """A test's row (with its result row, in one transaction)."""
    return [store.tests.record(run_id, new_result(file, test)) for _r, (file, test) in items]


def _previous_tests(
    store: RunStore, run_id: str | None, items: Sequence[tuple[Result, Any]]
) -> list[Previous | None]:
    """Each test's latest earlier scored result outside this run (the one a drop is
    measured against), also on the test itself, which the reports read."""
    found: list[Previous | None] = []
    for _result, (file, test) in items:
        prev = store.tests.previous(file, test.name, before_run=run_id)
        test.previous = (
            None
            if prev is None or prev.accuracy is None
            else Previous(
                prev.accuracy,
                prev.created_at,
                prev.run_id,
                baseline_tally(store, "consistency", f"{file}::{test.name}", prev.run_id),
            )
        )
        found.append(test.previous)
    return found


class Consistency:
    """Consistency tests as a kind on the run pipeline: each test of each agent or
    workflow file is a unit, run n times and judged; each test's result is stored as it
    finishes, with the previous result of the same test found for comparison."""

    name = "consistency"
    storage = Storage(write=_test_rows, previous=_previous_tests)

    def __init__(
        self, paths: Iterable[str | Path], *, project_dir: str | None, run: ConsistencyRun
    ) -> None:
        self.paths = paths
        self.project_dir = project_dir
        self.run = run
        self.jobs: list[Job] = []
        self._cut: list[ConsistencyTestResult] = []  # never started, listed in in_order

    async def plan(self, suite: SuiteRun) -> list[Job]:
        subjects, warnings = load_all(collect_files(self.paths), self.project_dir)
        self.run.warnings.extend(warnings)
        if suite.sharding is not None:
            subjects = _shard(subjects, suite)
        self.run.history = suite.recorder.notes  # one entry per history, once it opens
        self.jobs = _plan(subjects, suite, self.run)
        return self.jobs

    @staticmethod
    def runs_of(job: Job) -> int:
        """A test's runs: how many tests the run starts at once (see SuiteRun.run)."""
        return job.spec.n

    async def execute(self, job: Job, suite: SuiteRun) -> None:
        mine: list[ConsistencyTestResult] = []
        began = time.perf_counter()
        try:
            await run_test(job, suite.emit, mine)
        finally:
            for result in mine:
                result.started = began
            try:
                await asyncio.gather(*(self._keep(suite, job, result) for result in mine))
            finally:
                # Held after they are stored: what storing learnt (each one's previous
                # result) goes with them, also to disk (see ConsistencyRun.tests).
                self.run.tests.extend(mine)

    @staticmethod
    async def _keep(suite: SuiteRun, job: Job, test: ConsistencyTestResult) -> None:
        await suite.keep(
            job.handle, test_result(test, f"{job.file}::{test.name}"), (job.file, test)
        )

    def in_order(self, suite: SuiteRun) -> None:
        """The tests that never started (listed once the history has told each its
        previous result), then all in file order, before the decision."""
        self.run.tests.extend(self._cut)
        self._cut = []
        in_file_order(self.run, self.jobs)

    def finished(self, suite: SuiteRun) -> None:
        """Put in order before the decision (:meth:`in_order`)."""

    def stopped(self, suite: SuiteRun) -> None:
        for job, test in _unfinished(self.run, self.jobs):
            result = test_result(test, f"{job.file}::{test.name}")
            suite.record(result)
            suite.recorder.submit(job.handle, result, (job.file, test))
            self._cut.append(test)


async def run_tests_async(
    paths: Iterable[str | Path],
    *,
    project_dir: str | None = None,
    progress: ProgressSink | None = None,
    into: ConsistencyRun | None = None,
    retry: RetryPolicy | None = None,
    environ: Mapping[str, str] | None = None,
    cache: bool | None = None,
    db: str | Path | None = None,
    history: bool = True,
    events: EventSink | None = None,
    gates: Gates | None = None,
    sharding: Sharding | None = None,
) -> ConsistencyRun:
    """Run the consistency tests of the given agent and workflow files (``sharding``:
    only one shard's share of them, see :mod:`oxyeval.suites.shards`).

    ``into`` is filled as tests finish, so a caller that is interrupted still has
    every finished result. ``cache``: None (the default) replays judge verdicts kept
    in the project's history (``db``: where it is, default as for ``oxy history``),
    True replays agent answers too, False neither (see :mod:`oxyeval.suites.run_cache`).

    Each test's result is stored in its project's history as it finishes (``db``: an
    SQLite file or a PostgreSQL URL instead of the project's; ``history=False``: nothing
    is read or written), and ``previous`` on each result is the latest earlier scored
    result of the same test. A history that cannot be opened or written never fails the
    run: ``run.history`` says what was stored and why not. ``run.decision`` is the one
    decision under ``gates``.
    """
    run = into if into is not None else ConsistencyRun()
    kind = Consistency(paths, project_dir=project_dir, run=run)
    sinks = [events, progress_events(progress) if progress is not None else None]
    await run_kind(
        kind,
        db=db,
        environ=environ,
        history=history,
        cache=cache,
        events=sinks,
        retry=retry,
        gates=gates,
        sharding=sharding,
    )
    return run


def run_tests(
    paths: Iterable[str | Path],
    *,
    project_dir: str | None = None,
    progress: ProgressSink | None = None,
    into: ConsistencyRun | None = None,
    retry: RetryPolicy | None = None,
    environ: Mapping[str, str] | None = None,
    cache: bool | None = None,
    db: str | Path | None = None,
    history: bool = True,
    events: EventSink | None = None,
    gates: Gates | None = None,
    sharding: Sharding | None = None,
) -> ConsistencyRun:
    """:func:`run_tests_async` for scripts; in a notebook or async code, await that."""
    return run_sync(
        run_tests_async(
            paths,
            project_dir=project_dir,
            progress=progress,
            into=into,
            retry=retry,
            environ=environ,
            cache=cache,
            db=db,
            history=history,
            events=events,
            gates=gates,
            sharding=sharding,
        ),
        "run_tests_async",
    )
