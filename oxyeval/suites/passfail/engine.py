"""The one engine of judged pass/fail tests: subjects x runs x criteria.

Each subject (a target on its inputs) answers ``runs`` times; each answer is judged once
per criterion with the PASS/FAIL rubric (reasoning, then a ``Verdict: PASS|FAIL`` line;
the one verdict parser re-asks once, then it is a judge error: excluded, reported, never
a pass). Identical answers are judged once per criterion and the verdict counts for each
run that gave them. A criterion with a ``tool`` fails a run that did not call that tool,
without asking the judge.

With ``adaptive``, ``runs`` is a maximum: answers come in waves of the concurrency, each
criterion's verdicts feed an anytime-valid test (:class:`oxyeval.evaluation.AdaptiveTest`)
in run order, and a subject stops being sampled once every criterion is settled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..._tasks import gather_settled, settle_windowed
from ...errors import OxyError, is_bad_input
from ...evaluation import AdaptiveTest, SampleFinished, SubjectStarted, normalise_whitespace
from ...redact import redact
from ..suite import SuiteRun, runs_window
from .results import Check, Criterion, CriterionResult, PassFailRun, Sample, SubjectResult

if TYPE_CHECKING:
    from ...judge import Judge, JudgeResult
    from ..targets import Target

__all__ = ["Subject", "run_subjects", "subject_result"]


@dataclass
class Subject:
    """What answers, how often, and what its answers are judged against."""

    key: str
    label: str
    target: Target
    criteria: list[Criterion]
    runs: int
    threshold: float
    judge: Judge
    #: Share of the runs made that must get a verdict, or the result is an error.
    min_judged: float = 0.5
    inputs: Mapping[str, Any] = field(default_factory=dict)
    #: What was asked, shown to the judge as the answer's question.
    question: str = ""
    #: How reports group subjects: a chattest prompt's key and the model's; a test
    #: file and its case's name.
    group: str = ""
    name: str = ""
    #: Whether a result passes or fails on its own (chattest: the pass rate against the
    #: threshold); False leaves it to the run's gates (oxy's test files: --min-accuracy
    #: on the overall score, as for consistency tests).
    own_check: bool = True
    #: The config.yml model that answers (a chattest model, a test file's agent's), for
    #: reports that show pass rates per model; "" when there is no one model (a workflow).
    model: str = ""


class _Judging:
    """One subject's verdicts: an answer's verdict per criterion is asked once, however
    many runs gave that answer."""

    def __init__(self, subject: Subject, run: PassFailRun) -> None:
        self.subject = subject
        self.run = run
        self._asked: dict[tuple[str, str], asyncio.Future[JudgeResult]] = {}

    async def verdict(self, criterion: Criterion, text: str) -> JudgeResult:
        key = (criterion.key, normalise_whitespace(text))
        known = self._asked.get(key)
        if known is None:
            known = asyncio.ensure_future(self._ask(criterion, text))
            self._asked[key] = known
        return await asyncio.shield(known)

    async def _ask(self, criterion: Criterion, text: str) -> JudgeResult:
        result = await self.subject.judge.judge(
            {"output": text, "criterion": criterion.text, "input": self.subject.question}
        )
        self.run.judge_calls += result.calls
        return result

    async def check(self, criterion: Criterion, sample: Sample) -> Check | None:
        """The run's verdict on ``criterion``; None when the run has no answer (a failed
        call is a run error, not a verdict)."""
        if sample.text is None:
            return None
        if criterion.tool is not None and criterion.tool not in sample.tools:
            called = ", ".join(sample.tools) or "none"
            return Check(
                sample.run,
                False,
                f"the agent did not call the tool '{criterion.tool}' (called: {called})",
                judged=False,
            )
        result = await self.verdict(criterion, sample.text)
        if result.choice is None:
            return Check(
                sample.run, None, redact(result.reasoning), error=redact(result.error or "")
            )
        return Check(sample.run, result.choice == "PASS", redact(result.reasoning))


async def _sample(subject: Subject, run: int) -> Sample:
    try:
        completion = await subject.target.complete(subject.inputs, run=run)
    except OxyError as exc:
        # A provider outage, a workflow task or a SQL query failing: that run's error.
        # Bad input fails every run alike: it stops the command (exit 2).
        if is_bad_input(exc):
            raise
        return Sample(run, error=redact(str(exc)))
    return Sample(
        run,
        text=redact(completion.text),
        tools=tuple(step.name for step in completion.tool_trace),
        latency_ms=round(completion.latency * 1000, 3),
        input_tokens=completion.usage.input_tokens,
        output_tokens=completion.usage.output_tokens,
        cost=completion.cost,
        cached=completion.cached,
    )


def subject_result(subject: Subject, position: int = 0) -> SubjectResult:
    """A subject's result before any of its runs (``position``: the subject's in the
    plan): one result per criterion, none judged."""
    result = SubjectResult(
        subject.key, subject.label, group=subject.group, name=subject.name, position=position
    )
    result.results = [
        CriterionResult(
            subject.key,
            subject.label,
            c,
            subject.threshold,
            max_runs=subject.runs,
            min_judged=subject.min_judged,
            own_check=subject.own_check,
            model=subject.model,
        )
        for c in subject.criteria
    ]
    return result


class _SubjectRunner:
    def __init__(
        self,
        subject: Subject,
        run: PassFailRun,
        suite: SuiteRun,
        limit: asyncio.Semaphore,
        adaptive: bool,
        alpha: float,
    ) -> None:
        self.subject = subject
        self.run = run
        self.suite = suite
        self.limit = limit
        self.judging = _Judging(subject, run)
        self.result = subject_result(subject)
        self.tests = (
            [AdaptiveTest(subject.threshold, subject.runs, alpha) for _ in subject.criteria]
            if adaptive
            else None
        )

    async def one(self, run: int) -> tuple[Sample, list[Check | None]]:
        async with self.limit:
            sample = await _sample(self.subject, run)
        self.run.model_calls += 1
        self.suite.emit(
            SampleFinished(
                kind="passfail",
                subject=self.subject.key,
                index=run,
                latency_ms=sample.latency_ms,
                error=sample.error,
                cached=sample.cached,
            )
        )
        checks = await asyncio.gather(
            *(self.judging.check(c, sample) for c in self.subject.criteria)
        )
        return sample, list(checks)

    def keep(self, sample: Sample, checks: Sequence[Check | None]) -> None:
        self.result.samples.append(sample)
        for result, check in zip(self.result.results, checks, strict=True):
            if sample.error is not None:
                result.run_errors += 1
            elif check is not None:
                result.checks.append(check)

    async def __call__(self, wave: int) -> SubjectResult:
        total = self.subject.runs
        if self.tests is None:

            async def kept(run: int) -> None:  # kept as it finishes: an interrupt keeps it
                self.keep(*await self.one(run))

            await gather_settled(*(kept(r) for r in range(1, total + 1)))
            self.result.samples.sort(key=lambda s: s.run)
            return self.result
        run = 1
        while run <= total and not all(t.decided for t in self.tests):
            batch = range(run, min(total, run + wave - 1) + 1)
            done = await gather_settled(*(self.one(r) for r in batch))
            for sample, checks in sorted(done, key=lambda d: d[0].run):
                if all(t.decided for t in self.tests):
                    break  # settled within this wave: later runs are not counted
                self.keep(sample, checks)
                for test, check in zip(self.tests, checks, strict=True):
                    if check is not None and check.passed is not None and not test.decided:
                        test.observe(check.passed)
            run = batch[-1] + 1
        for result, test in zip(self.result.results, self.tests, strict=True):
            result.settled = test.decided
        self.run.saved_calls += total - (run - 1)
        return self.result


async def run_subjects(
    subjects: Sequence[Subject],
    suite: SuiteRun,
    into: PassFailRun,
    *,
    concurrency: int = 5,
    adaptive: bool = False,
    alpha: float = 0.05,
    on_subject: Callable[[SubjectResult], Awaitable[None]] | None = None,
) -> PassFailRun:
    """Run every subject (their calls under the run's one budget, else a limit of
    ``concurrency``, and each model's own), judge, and keep each subject's result in
    ``into`` as it finishes (in that order: :meth:`PassFailRun.in_plan_order` puts them
    in plan order)."""
    limit = suite.budget or asyncio.Semaphore(max(1, concurrency))

    async def one(position: int, subject: Subject) -> None:
        suite.emit(
            SubjectStarted(
                kind="passfail", subject=subject.key, label=subject.label, steps=subject.runs
            )
        )
        runner = _SubjectRunner(subject, into, suite, limit, adaptive, alpha)
        runner.result.position = position
        started = time.perf_counter()
        try:
            result = await runner(max(1, concurrency))
        except (asyncio.CancelledError, KeyboardInterrupt):
            # What this subject finished is reported (and stored by the caller), marked.
            runner.result.interrupted = True
            for cut in runner.result.results:
                cut.interrupted = True
            runner.result.duration_s = time.perf_counter() - started
            into.subjects.append(runner.result)
            raise
        result.duration_s = time.perf_counter() - started
        try:
            if on_subject is not None:
                await on_subject(result)
        finally:
            # Kept after its results are stored: what storing them learnt (each one's
            # previous result) goes with it, also to disk (see PassFailRun.subjects).
            into.subjects.append(result)

    try:
        # Subjects start as others end, a window of runs at a time: 1,000 subjects of 100
        # runs hold a few thousand waiting calls, not 100,000 (each a task and a frame).
        most = max((s.runs for s in subjects), default=1)
        window = runs_window(most, max(1, concurrency))
        await settle_windowed(enumerate(subjects), lambda item: one(*item), window)
    except (asyncio.CancelledError, KeyboardInterrupt):
        into.interrupted = True
        raise
    return into
