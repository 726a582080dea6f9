"""``oxy test`` as a library call: load files, run their tests, return a ConsistencyRun.

All files are loaded (and every model key resolved) before the first model call,
so bad input fails fast with every problem listed, and a run never dies halfway
through on a config error. Provider failures during a run are recorded per run
or per judge call; they never abort the other tests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._tasks import gather_settled, run_sync
from ..errors import ConfigError, Diagnostic, LoadError, ProviderError
from ..evaluation import (
    Consistency,
    EventSink,
    SampleFinished,
    ScoreRecorded,
    StepsPlanned,
    SubjectStarted,
)
from ..judge.consistency import (
    Comparison,
    ConsistencyScore,
    normalize,
    pair_count,
    plan_comparisons,
    score_comparisons,
)
from ..judge.judge import Judge, JudgeSession
from ..project.agents import Agent, load_agent
from ..project.config import Project, load_project
from ..project.document import path_problem
from ..project.files import file_kind, project_files
from ..project.tests import JudgeSpec, TestSpec
from ..providers import ModelPool, RetryPolicy, stopped_at_token_limit
from ..workflow.agent import counted, token_limit_warning
from ..workflow.compile import CompiledWorkflow, compile_workflow
from ..workflow.context import RunContexts
from ..workflow.engine import TaskFailed
from ..workflow.spec import load_workflow
from ..workflow.sql import SqlError
from .cache import Tally, counting
from .consistency_history import ConsistencyHistory
from .results import ConsistencyRun, ConsistencyTestResult, OutputRecord, test_result
from .suite import ProgressSink, SuiteRun, progress_events
from .targets import AgentTarget, Target, WorkflowTarget, workflow_question

if TYPE_CHECKING:
    from ..judge.verdicts import VerdictCache

__all__ = ["ProgressSink", "collect_files", "run_tests", "run_tests_async"]

_KIND = "consistency"

log = logging.getLogger("oxyeval.runner")


def collect_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files to test: given files as they are, folders searched for agent/workflow files;
    each file once, however many of the paths name it (a folder and a file in it)."""
    out: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = project_files(path, ("agent", "workflow"))
            if not found:
                raise ConfigError(f"{path}: no *.agent.yml or *.workflow.yml files in this folder")
        elif (problem := path_problem(path)) is not None:
            raise LoadError([Diagnostic(str(path), problem)])
        else:
            found = [path]
        for file in found:
            if file.resolve() not in seen:
                seen.add(file.resolve())
                out.append(file)
    return out


@dataclass
class _Subject:
    """What a test runs n times: an agent answering, or a workflow producing a task's output."""

    project: Project
    file: Path
    tests: list[TestSpec]
    model: str  # shown in reports: the agent's model, or "workflow"
    agent: Agent | None = None
    plan: CompiledWorkflow | None = None


@dataclass
class _Job:
    """One consistency test to run: its target, the inputs each run gets, the question
    the judge is told, and the models the judges use."""

    spec: TestSpec
    target: Target
    inputs: Mapping[str, Any]
    question: str
    models: ModelPool
    verdicts: VerdictCache | None = None  # earlier verdicts, replayed (see suites.cache)
    session: JudgeSession | None = None  # what the run's judges learnt (a RunContext's)
    file: str = ""  # relative to its project: with the test's name, its stored subject


def _load_all(files: list[Path], project_dir: str | None) -> tuple[list[_Subject], list[str]]:
    projects: dict[Path, Project] = {}  # config path -> project, loaded once
    subjects: list[_Subject] = []
    problems: list[Diagnostic] = []
    warnings: list[str] = []
    for file in files:
        kind = file_kind(file)
        try:
            project = load_project(file, project_dir=project_dir, cache=projects)
            if kind == "workflow":
                plan = compile_workflow(load_workflow(project, file))
                warnings.extend(w.format() for w in plan.workflow.warnings)
                subjects.append(_Subject(project, file, plan.workflow.tests, "workflow", plan=plan))
                continue
            if kind != "agent":
                raise LoadError(
                    [
                        Diagnostic(
                            str(file),
                            "not a test file: oxy test takes *.agent.yml or *.workflow.yml files",
                        )
                    ]
                )
            agent = load_agent(project, file)
            if agent.kind == "routing" and agent.tests:
                raise ConfigError(
                    f"{agent.display}: routing agents are not supported by oxyeval yet, so "
                    "their tests cannot run"
                )
        except LoadError as exc:
            problems.extend(exc.diagnostics)
            continue
        subjects.append(_Subject(project, file, agent.tests, agent.model, agent=agent))
        warnings.extend(w.format() for w in agent.warnings)
    if problems:
        raise LoadError(problems)
    for project in projects.values():
        warnings[:0] = [w.format() for w in project.warnings]
    return subjects, warnings


def _comparison_dict(
    comp, scores: Mapping[str, float], groups: Mapping[int, int]
) -> dict[str, object]:
    return {
        "runs": list(comp.runs),
        "groups": [groups[comp.runs[0]], groups[comp.runs[1]]],
        "weight": comp.weight,
        "identical": comp.identical,
        "verdict": comp.choice,
        "score": scores.get(comp.choice, 0.0) if comp.choice else None,
        "reasoning": comp.reasoning,
        "error": comp.error,
        "judge_calls": comp.judge_calls,
        "cached": comp.cached,
    }


def _label(spec: TestSpec, k: int) -> str:
    """A test's name; with several similarity metrics, one result per metric."""
    return f"{spec.name} [metric {k + 1}]" if len(spec.judges) > 1 else spec.name


def _result(
    spec: TestSpec, judge: JudgeSpec, label: str, question: str, model: str
) -> ConsistencyTestResult:
    total = pair_count(spec.n, spec.pairing)
    return ConsistencyTestResult(
        name=label,
        file=spec.display,
        index=spec.index,
        task_description=question,
        n=spec.n,
        pairing=spec.pairing,
        agent_model=model,
        judge_model=judge.model,
        scores=dict(judge.scores),
        total_pairs=total,
        min_judged=spec.min_judged,
    )


async def _judge_outputs(
    spec: TestSpec,
    judge_spec: JudgeSpec,
    label: str,
    outputs: list[OutputRecord],
    model: str,
    question: str,
    pool: ModelPool,
    emit: EventSink,
    started: float,
    judged: list[Comparison] | None = None,
    verdicts: VerdictCache | None = None,
    session: JudgeSession | None = None,
) -> ConsistencyTestResult:
    """Judge and score one metric; ``judged`` collects each verdict as it comes, so an
    interrupted test keeps the ones it has."""
    key = f"{spec.display}#{spec.index}"
    result = _result(spec, judge_spec, label, question, model)
    result.outputs = [OutputRecord(**o.__dict__) for o in outputs]
    texts = {o.run: o.text or "" for o in outputs if o.error is None}
    if len(texts) < 2:
        first = next((o.error for o in outputs if o.error), None)
        why = f"; first error: {first}" if first else ""
        result.error = (
            f"only {len(texts)} of {spec.n} runs succeeded, need at least 2 to compare{why}"
        )
        result.duration = time.perf_counter() - started
        return result
    judge = Judge(
        pool.get(judge_spec.model),
        judge_spec.prompt,
        settings=judge_spec.settings,
        cache=verdicts,
        session=session,
    )

    def done(comparison: Comparison) -> None:
        if judged is not None:
            judged.append(comparison)
        emit(
            ScoreRecorded(
                kind=_KIND,
                subject=key,
                metric=label,
                value=result.scores.get(comparison.choice) if comparison.choice else None,
                label=comparison.choice,
            )
        )

    consistency = Consistency(
        judge.comparer(question),
        n=spec.n,
        pairing=spec.pairing,
        scores=result.scores,
        min_judged=spec.min_judged,
        concurrency=spec.concurrency,
        on_planned=lambda count: emit(StepsPlanned(kind=_KIND, subject=key, steps=count)),
        on_done=done,
    )
    outcome = (await consistency.score_set(texts)).detail
    _apply_score(result, outcome.comparisons, outcome.score, texts)
    result.error = outcome.error
    result.accuracy, result.selected = outcome.accuracy, outcome.selected
    result.duration = time.perf_counter() - started
    return result


def _apply_score(
    result: ConsistencyTestResult,
    comparisons: list[Comparison],
    score: ConsistencyScore,
    texts: Mapping[int, str],
) -> None:
    result.accuracy = score.accuracy
    result.pairs = score.pairs
    result.judged_pairs = score.judged_pairs
    result.identical_pairs = sum(c.weight for c in comparisons if c.identical)
    result.judge_calls = score.judge_calls
    result.selected = score.selected
    groups: dict[str, int] = {}
    for o in result.outputs:
        o.consistency = score.per_run.get(o.run)
        if o.run in texts:
            o.group = groups.setdefault(normalize(texts[o.run]), len(groups) + 1)
    by_run = {o.run: o.group for o in result.outputs if o.group is not None}
    result.comparisons = [_comparison_dict(c, result.scores, by_run) for c in comparisons]


def _interrupted_result(
    spec: TestSpec,
    judge_spec: JudgeSpec,
    label: str,
    question: str,
    model: str,
    finished: Mapping[int, OutputRecord],
    judged: list[Comparison],
    started: float,
) -> ConsistencyTestResult:
    """A test cut short keeps what it finished: its runs, and a (partial) score when at
    least two runs succeeded and the judge gave at least one verdict."""
    result = _result(spec, judge_spec, label, question, model)
    result.interrupted = True
    result.outputs = [OutputRecord(**finished[r].__dict__) for r in sorted(finished)]
    result.duration = time.perf_counter() - started
    texts = {o.run: o.text or "" for o in result.outputs if o.error is None}
    runs = f"{len(finished)} of {spec.n} run(s) finished"
    verdicts = [c for c in judged if c.choice is not None and not c.identical]
    if len(texts) < 2 or not verdicts:
        if len(texts) < 2:  # runs cut off did not fail: say which it was
            why = "fewer than 2 runs " + ("had answered" if len(finished) < spec.n else "succeeded")
        else:
            why = "runs still going, none judged" if len(finished) < spec.n else "no verdict yet"
        result.error = f"interrupted: {runs}; not scored ({why})"
        return result
    # Judging starts once every run is done, so this is the plan the judge was working on.
    by_runs = {c.runs: c for c in judged}
    comparisons = [by_runs.get(c.runs, c) for c in plan_comparisons(texts, spec.pairing)]
    score = score_comparisons(comparisons, sorted(texts), result.scores)
    _apply_score(result, comparisons, score, texts)
    result.error = (
        f"interrupted: {runs}, {score.judged_pairs} of {score.pairs} pair(s) judged; "
        "the score covers only those"
    )
    return result


async def _run_test(job: _Job, emit: EventSink, into: list[ConsistencyTestResult]) -> None:
    """Run a test n times and judge it, adding one result per metric to ``into``; when
    cancelled, what finished is added too (see :func:`_interrupted_result`)."""
    spec, question, model = job.spec, job.question, job.target.model
    started = time.perf_counter()
    key = f"{spec.display}#{spec.index}"
    emit(
        SubjectStarted(kind=_KIND, subject=key, label=f"{spec.display} · {spec.name}", steps=spec.n)
    )
    # Runs of this test in flight; each model endpoint's own adaptive limit applies inside.
    semaphore = asyncio.Semaphore(spec.concurrency)
    finished: dict[int, OutputRecord] = {}
    judged: list[list[Comparison]] = [[] for _ in spec.judges]
    results: dict[int, ConsistencyTestResult] = {}
    cut: list[int] = []  # runs whose answer stopped at the token limit
    # Calls served from the cache: the runs' (shared by every metric) and each judge's.
    run_tally, judge_tallies = Tally(), [Tally() for _ in spec.judges]

    async def one(run: int) -> None:
        async with semaphore:
            served = run_tally.calls
            try:
                with counting(run_tally):
                    c = await job.target.complete(job.inputs, run=run)
            except (ProviderError, TaskFailed, SqlError) as exc:
                finished[run] = OutputRecord(run=run, text=None, error=str(exc))
                emit(SampleFinished(kind=_KIND, subject=key, index=run, error=str(exc)))
                return
            emit(
                SampleFinished(
                    kind=_KIND,
                    subject=key,
                    index=run,
                    latency_ms=None if c.latency is None else c.latency * 1000,
                    cached=run_tally.calls > served,
                )
            )
            if stopped_at_token_limit(c.finish_reason):
                cut.append(run)
            finished[run] = OutputRecord(
                run=run,
                text=c.text,
                latency=c.latency,
                input_tokens=c.usage.input_tokens,
                output_tokens=c.usage.output_tokens,
                cost=c.cost,
                ttft=c.time_to_first_token,
            )

    async def judge(k: int, judge_spec: JudgeSpec, outputs: list[OutputRecord]) -> None:
        with counting(judge_tallies[k]):
            results[k] = await _judge_outputs(
                spec,
                judge_spec,
                _label(spec, k),
                outputs,
                model,
                question,
                job.models,
                emit,
                started,
                judged[k],
                job.verdicts,
                job.session,
            )

    # Settled gathers: on Ctrl-C every run and judge has stopped before ``finished`` and
    # ``judged`` are read below, so the partial result is complete and final.
    try:
        await gather_settled(*(one(r) for r in range(1, spec.n + 1)))
        if cut:  # one line for the test, not one per run
            subject = f"test '{spec.name}' ({spec.display})"
            which = counted(sorted(cut), spec.n, "run")
            log.warning("%s", token_limit_warning(subject, which, model, job.target.max_tokens))
        outputs = [finished[r] for r in sorted(finished)]
        await gather_settled(*(judge(k, j, outputs) for k, j in enumerate(spec.judges)))
    except asyncio.CancelledError:
        for k, judge_spec in enumerate(spec.judges):
            if k not in results:
                results[k] = _interrupted_result(
                    spec, judge_spec, _label(spec, k), question, model, finished, judged[k], started
                )
        raise
    finally:
        for k, result in results.items():
            result.cached_calls = run_tally.calls + judge_tallies[k].calls
        into.extend(results[k] for k in sorted(results))


def _mark_unfinished(run: ConsistencyRun, jobs: list[_Job]) -> None:
    """On Ctrl-C, a test that had not even started is listed (interrupted, unscored), not
    silently dropped; tests under way list their own finished runs (``_run_test``)."""
    done = {(t.file, t.index) for t in run.tests}
    for job in jobs:
        spec = job.spec
        if (spec.display, spec.index) in done:
            continue
        for k, judge in enumerate(spec.judges):
            result = _result(spec, judge, _label(spec, k), job.question, job.target.model)
            result.error = "interrupted before it finished"
            result.interrupted = True
            run.tests.append(result)
    _in_file_order(run, jobs)


def _in_file_order(run: ConsistencyRun, jobs: list[_Job]) -> None:
    """Report in file order, whatever order the tests finished in."""
    order = {(j.spec.display, j.spec.index): k for k, j in enumerate(jobs)}
    run.tests.sort(key=lambda t: (order.get((t.file, t.index), 0), t.name))


def _plan(subjects: list[_Subject], contexts: RunContexts, run: ConsistencyRun) -> list[_Job]:
    """Every test to run, its target checked before any call: a missing key or a template
    error is bad input (exit 2), once, not n failed runs."""
    jobs: list[_Job] = []
    for item in subjects:
        if not item.tests:
            run.skipped.append(f"{item.project.relative(item.file)}: no consistency tests")
            continue
        context = contexts.get(item.project)
        target: Target
        if item.agent is not None:
            target = AgentTarget(context, item.agent)
        else:
            assert item.plan is not None
            target = WorkflowTarget(context, item.plan)
        context.models.check(
            sorted({*target.models, *(j.model for t in item.tests for j in t.judges)})
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
                _Job(
                    spec,
                    job_target,
                    inputs,
                    question,
                    context.models,
                    verdicts,
                    session,
                    item.project.relative(item.file),
                )
            )
    return jobs


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
) -> ConsistencyRun:
    """Run the consistency tests of the given agent and workflow files.

    ``into`` is filled as tests finish, so a caller that is interrupted still has
    every finished result. ``cache``: None (the default) replays judge verdicts kept
    in the project's history (``db``: where it is, default as for ``oxy history``),
    True replays agent answers too, False neither (see :mod:`oxyeval.suites.cache`).

    Each test's result is stored in its project's history as it finishes (``db``: an
    SQLite file or a PostgreSQL URL instead of the project's; ``history=False``: nothing
    is read or written), and ``previous`` on each result is the latest earlier scored
    result of the same test. A history that cannot be opened or written never fails the
    run: ``run.history`` says what was stored and why not.
    """
    run = into if into is not None else ConsistencyRun()
    subjects, warnings = _load_all(collect_files(paths), project_dir)
    run.warnings.extend(warnings)
    sinks = [events, progress_events(progress) if progress is not None else None]
    jobs: list[_Job] = []
    # One store per history database for the whole run, shared by the cache and the
    # recorder of results, closed last; without a history nothing is cached either.
    async with SuiteRun(
        "consistency", db=db, environ=environ, history=history, cache=cache, events=sinks
    ) as suite:
        caches = suite.caches
        recorder = ConsistencyHistory(run, suite.histories)
        for item in subjects:  # where each project's history is: bad input, before any call
            if item.tests:
                counts = [(t.display, t.index, len(t.judges)) for t in item.tests]
                recorder.add(item.project, item.file, counts)
        # The recorder closes last whatever happens: stopped while the cache is flushed,
        # its run rows still get their final word (it closes once).
        async with recorder, RunContexts(retry=retry, environ=environ, cache=caches) as contexts:
            jobs.extend(_plan(subjects, contexts, run))
            # Every check passed (files, keys): only now may the history be created. It
            # opens in the background while the first answers come in.
            suite.start(len(jobs))
            for warning in run.warnings:
                suite.warn(warning)

            async def one(job: _Job) -> None:
                mine: list[ConsistencyTestResult] = []
                began = time.perf_counter()
                try:
                    await _run_test(job, suite.emit, mine)
                finally:
                    for result in mine:
                        result.started = began
                        suite.record(test_result(result, f"{job.file}::{result.name}"))
                    run.tests.extend(mine)
                    recorder.finished(mine)  # stored in the background as each test ends

            recorder.start()
            try:
                # Settled: on Ctrl-C, every test has added its own (partial) result before
                # the ones that never started are listed; with a plain gather a test still
                # unwinding added itself after that, and was reported and stored twice.
                await gather_settled(*(one(job) for job in jobs))
            except asyncio.CancelledError:
                _mark_unfinished(run, jobs)
                await recorder.close(interrupted=True)
                raise
            except BaseException:
                await recorder.close(failed=True)
                raise
            finally:
                run.cached_calls = caches.total_served
    _in_file_order(run, jobs)
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
        ),
        "run_tests_async",
    )
