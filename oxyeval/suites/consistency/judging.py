"""One consistency test: its target run n times, the answers judged in pairs and scored;
cut short, what finished is kept (its runs, and a partial score when it can be given).

Provider failures are recorded per run or per judge call; they never abort the test, or
the others.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..._tasks import gather_settled
from ...errors import ProviderError
from ...evaluation import Consistency as ConsistencyScorer
from ...evaluation import EventSink, SampleFinished, ScoreRecorded, StepsPlanned, SubjectStarted
from ...judge.consistency import (
    Comparison,
    ConsistencyScore,
    normalize,
    pair_count,
    plan_comparisons,
    score_comparisons,
)
from ...judge.judge import Judge, JudgeSession
from ...project.tests import JudgeSpec, TestSpec
from ...providers import ModelPool, stopped_at_token_limit
from ...workflow.agent import counted, token_limit_warning
from ...workflow.engine import TaskFailed
from ...workflow.sql import SqlError
from ..recorder import Handle
from ..run_cache import Tally, counting
from ..targets import Target
from .agreement import second_opinion
from .results import ConsistencyTestResult, OutputRecord

if TYPE_CHECKING:
    from ...judge.verdicts import VerdictCache

__all__ = ["Job", "label", "run_test", "swap_summary", "test_entry"]

_KIND = "consistency"

log = logging.getLogger("oxyeval.runner")


@dataclass
class Job:
    """One consistency test to run: its target, the inputs each run gets, the question
    the judge is told, and the models the judges use."""

    spec: TestSpec
    target: Target
    inputs: Mapping[str, Any]
    question: str
    models: ModelPool
    verdicts: VerdictCache | None = None  # earlier verdicts, replayed (see suites.run_cache)
    session: JudgeSession | None = None  # what the run's judges learnt (a RunContext's)
    file: str = ""  # relative to its project: with the test's name, its stored subject
    handle: Handle = field(default_factory=lambda: Handle(None, None))  # where it is kept
    #: ``--judge-agreement``: a second judge model that re-judges a sample of the pairs.
    agreement_model: str | None = None


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
        "inferred": comp.inferred,
        "position_bias": comp.position_bias,
    }


def swap_summary(swapped: list[Comparison]) -> dict[str, object]:
    """``judge_swap``: of the pairs judged in both orders (without a judge error in
    either), how many the two orders disagreed on."""
    clean = [c for c in swapped if c.error is None or c.position_bias]
    biased = sum(1 for c in clean if c.position_bias)
    return {
        "pairs": len(clean),
        "disagreements": biased,
        "share": round(biased / len(clean), 6) if clean else None,
    }


def label(spec: TestSpec, k: int) -> str:
    """A test's name; with several similarity metrics, one result per metric."""
    return f"{spec.name} [metric {k + 1}]" if len(spec.judges) > 1 else spec.name


def test_entry(
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
    agreement_model: str | None = None,
) -> ConsistencyTestResult:
    """Judge and score one metric; ``judged`` collects each verdict as it comes, so an
    interrupted test keeps the ones it has."""
    key = f"{spec.display}#{spec.index}"
    result = test_entry(spec, judge_spec, label, question, model)
    result.outputs = [replace(o) for o in outputs]
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

    consistency = ConsistencyScorer(
        judge.comparer(question),
        n=spec.n,
        pairing=spec.pairing,
        scores=result.scores,
        min_judged=spec.min_judged,
        concurrency=spec.concurrency,
        on_planned=lambda count: emit(StepsPlanned(kind=_KIND, subject=key, steps=count)),
        on_done=done,
        swap=spec.judge_swap,
    )
    outcome = (await consistency.score_set(texts)).detail
    _apply_score(result, outcome.comparisons, outcome.score, texts)
    result.error = outcome.error
    result.accuracy, result.selected = outcome.accuracy, outcome.selected
    if outcome.pairing_check is not None:
        result.pairing_check = outcome.pairing_check.to_dict()
    if agreement_model is not None:
        second = Judge(
            pool.get(agreement_model),
            judge_spec.prompt,
            settings=judge_spec.settings,
            cache=verdicts,
            session=session,
        )
        result.judge_agreement = await second_opinion(
            outcome.comparisons,
            texts,
            second.comparer(question),
            model=agreement_model,
            concurrency=spec.concurrency,
        )
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
    swapped = [c for c in comparisons if c.swap_judged]
    if swapped:
        result.judge_swap = swap_summary(swapped)
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
    result = test_entry(spec, judge_spec, label, question, model)
    result.interrupted = True
    result.outputs = [replace(finished[r]) for r in sorted(finished)]
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


async def run_test(job: Job, emit: EventSink, into: list[ConsistencyTestResult]) -> None:
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
        # A workflow's tested task: the prompt as its runs rendered it, unless the test
        # says what was asked (task_description).
        asked = None if spec.task_description else getattr(job.target, "asked", None)
        with counting(judge_tallies[k]):
            results[k] = await _judge_outputs(
                spec,
                judge_spec,
                label(spec, k),
                outputs,
                model,
                asked or question,
                job.models,
                emit,
                started,
                judged[k],
                job.verdicts,
                job.session,
                job.agreement_model,
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
                    spec, judge_spec, label(spec, k), question, model, finished, judged[k], started
                )
        raise
    finally:
        for k, result in results.items():
            result.cached_calls = run_tally.calls + judge_tallies[k].calls
        into.extend(results[k] for k in sorted(results))
