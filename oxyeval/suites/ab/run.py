"""Running A/B tests: one rendered prompt, several model configurations, ranked.

Every branch of a case gets the same messages (the case's input through the prompt
version's templates); each call is streamed, so its time to first token is measured,
and stored the moment it is scored: an interrupted run keeps every finished execution.
Iterations repeat the whole comparison; the calls of all iterations and cases share one
concurrency limit (and each model's own), so 5 branches x 20 iterations take about as
long as 100 calls at that concurrency.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..._tasks import Limit, gather_settled, run_sync
from ...errors import ConfigError, ProviderError
from ...evaluation import (
    EventSink,
    ExactMatch,
    Expected,
    SampleFinished,
    SubjectStarted,
    clarity_score,
    consistency_hash,
    valid_json,
)
from ...project.config import Project, load_project
from ...project.prompts import PromptDef, collect_case_files, load_prompts
from ...redact import redact
from ...workflow.context import RunContext
from ..recorder import KeptThenCancelled, Recorded, RunRow, Stamp, Storage
from ..shards import ShardKey
from ..suite import SuiteRun, run_kind
from .plan import CasePlan, check_options, plan_cases
from .ranking import DEFAULT_CRITERIA
from .results import ABCaseResult, ABRun, BranchOutcome
from .summary import summarise

if TYPE_CHECKING:
    from ...evaluation import Gates, Result
    from ...store import Store, TestBranch
    from ..history_store import RunStore
    from ..shards import Sharding

__all__ = [
    "AB",
    "run_ab_test",
    "run_ab_test_async",
    "run_ab_tests",
    "run_ab_tests_async",
]

_EXACT = ExactMatch()


async def _call(
    plan: CasePlan, branch: TestBranch, iteration: int, context: RunContext
) -> BranchOutcome:
    outcome = BranchOutcome(branch_id=branch.id, iteration=iteration)
    model = plan.models[branch.id]
    try:
        completion = await model.generate(
            plan.messages, run=iteration + 1, cache=context.answers, stream=True
        )
    except ProviderError as exc:
        outcome.status, outcome.error = "error", redact(str(exc))
        return outcome
    text = redact(completion.text)
    outcome.output = text
    outcome.cached = completion.cached
    outcome.latency_ms = round(completion.latency * 1000, 3) if not completion.cached else None
    if completion.time_to_first_token is not None:
        outcome.time_to_first_token = round(completion.time_to_first_token * 1000, 3)
    tps = completion.tokens_per_second
    outcome.tokens_per_second = None if tps is None else round(tps, 3)
    outcome.input_tokens = completion.usage.input_tokens
    outcome.output_tokens = completion.usage.output_tokens
    outcome.estimated_cost = completion.cost
    outcome.clarity_score = clarity_score(text)
    outcome.valid_json = valid_json(text)
    outcome.consistency_hash = consistency_hash(text)
    expected = plan.case.expected_output
    if expected is not None:
        against = Expected(output=expected)
        try:
            exact = (await _EXACT.score(text, against)).value == 1.0
            similar = await plan.scorer.score(text, against)
        except (ProviderError, ValueError) as exc:
            outcome.status = "error"
            outcome.error = redact(f"scoring the answer of branch '{branch.name}' failed: {exc}")
            return outcome
        outcome.similarity_score = similar.value
        outcome.quality_score = 1.0 if exact else similar.value
        if plan.judge is not None and not exact:
            await _judged(plan, outcome, expected)
    return outcome


async def _judged(plan: CasePlan, outcome: BranchOutcome, expected: str) -> None:
    """Quality as the judge grades the answer against the expected output (1-5 mapped to
    0..1); the judge's calls and their cost are the outcome's, apart from the branch's."""
    assert plan.judge is not None
    question = next((m.content for m in reversed(plan.messages) if m.role == "user"), "")
    verdict = await plan.judge.judge(
        {
            "output": outcome.output,
            "criterion": f"The answer matches this expected answer: {expected}",
            "input": question,
        }
    )
    outcome.judge_calls = verdict.calls
    outcome.judge_cost = verdict.cost
    if verdict.choice is None:
        outcome.quality_score = None  # no grade: unknown, never the similarity passed off
        outcome.judge_error = redact(verdict.error or "the judge gave no verdict")
        return
    outcome.quality_score = plan.judge.rubric.values[verdict.choice]


def _details(plan: CasePlan, branch: TestBranch, criteria: str) -> dict[str, Any]:
    return {
        "branchName": branch.name,
        "provider": branch.provider,
        "model": branch.model,
        "criteria": criteria,
        "similarityMethod": plan.scorer.method,
    }


def _branch_rows(store: RunStore, run_id: str, items: Sequence[tuple[Result, Any]]) -> Any:
    """Branch executions (with their result rows), those finishing together in one
    transaction: a burst of 100 costs a few commits, not 100. Each one's id and time
    come back (what the run reads of a stored execution), written by the history's
    writer process in a large run."""
    stamps = store.branches.record_many(run_id, [execution for _r, execution in items])
    return [Stamp(i, at) for i, at in stamps]


class AB:
    """A/B tests as a kind on the run pipeline: one run row per case, each case a unit
    whose (branch, iteration) calls share the run's one concurrency limit (and each
    model's own); each execution stored the moment it is scored."""

    name = "ab"
    storage = Storage(write=_branch_rows, full=True)

    def __init__(
        self,
        paths: Sequence[str | Path],
        *,
        project_dir: str | None,
        cases: Sequence[str] | None,
        branch_ids: Sequence[str] | None,
        prompt_version: int | None,
        concurrency: int,
        on_execution: Callable[[ABCaseResult, BranchOutcome], None] | None,
        explicit: bool,
        run: ABRun,
    ) -> None:
        self.paths = paths
        self.project_dir = project_dir
        self.cases = cases
        self.branch_ids = branch_ids
        self.prompt_version = prompt_version
        self.on_execution = on_execution
        self.explicit = explicit
        self.run = run
        self._limit = Limit(max(1, concurrency))  # the run's budget, once planned
        self._context: RunContext | None = None
        self._unlisted: dict[int, CasePlan] = {}  # planned cases whose result is not listed yet

    async def plan(self, suite: SuiteRun) -> list[CasePlan]:
        self._limit = suite.budget or self._limit
        project, prompts = _project_and_prompts(self.paths, self.project_dir)
        location = suite.histories.location(project)
        if location is not None:
            self.run.db = location.path if location.path is not None else location.display
        self.run.history = suite.recorder.notes  # one entry per history, once it opens
        context = self._context = suite.context(project)
        store = cast("Store", await suite.store(project))
        plans = await plan_cases(
            store,
            project,
            prompts,
            context,
            cases=self.cases,
            branch_ids=self.branch_ids,
            prompt_version=self.prompt_version,
            criteria=self.run.criteria,
            iterations=self.run.iterations,
            explicit=self.explicit,
        )
        if not plans:
            raise ConfigError(
                "no test case has branches to compare; declare branches: in a *.prompt.yml "
                "(for every case) or on a case"
            )
        plans = suite.shard(
            plans,
            lambda p: ShardKey(
                p.case.source_file or p.prompt_id,
                p.case.name,
                len(p.branches) * self.run.iterations,
            ),
            [project],
        )
        # A large run's executions go to the history's writer process: started now, it
        # is ready by the first batch.
        store.expect_executions(sum(len(p.branches) for p in plans) * self.run.iterations)
        for position, plan in enumerate(plans):
            plan.result.position = position
            plan.handle = suite.add(
                project,
                RunRow(
                    key=plan.case.id,
                    subject=plan.case.id,
                    prompt_id=plan.prompt_id,
                    prompt_version=plan.version,
                ),
                count=len(plan.branches) * self.run.iterations,
            )
        # Each case's result joins the run's once the case is summarised (kept on disk
        # past a budget, so it must be whole by then); those that never ran, on a stop.
        self._unlisted = {plan.result.position: plan for plan in plans}
        return plans

    def runs_of(self, plan: CasePlan) -> int:
        """A case's calls (its branches times the iterations): how many cases the run
        starts at once (see SuiteRun.run)."""
        return len(plan.branches) * self.run.iterations

    async def execute(self, plan: CasePlan, suite: SuiteRun) -> None:
        steps = len(plan.branches) * self.run.iterations
        suite.emit(SubjectStarted(kind="ab", subject=plan.case.id, label=plan.case.id, steps=steps))
        plan.result.run_id = await suite.recorder.run_id(plan.handle)
        try:
            await gather_settled(
                *(
                    self._one(suite, plan, branch, i)
                    for i in range(self.run.iterations)
                    for branch in plan.branches
                )
            )
        except (asyncio.CancelledError, KeyboardInterrupt):
            plan.result.interrupted = True
            raise
        finally:
            summarise(plan.result, plan.branches, plan.outcomes)
            if self._unlisted.pop(plan.result.position, None) is not None:
                self.run.results.append(plan.result)

    async def _one(self, suite: SuiteRun, plan: CasePlan, branch: TestBranch, i: int) -> None:
        assert self._context is not None
        async with self._limit:
            outcome = await _call(plan, branch, i, self._context)
        new = outcome.new_execution(
            plan.case.id, plan.version, _details(plan, branch, self.run.criteria)
        )
        suite.emit(
            SampleFinished(
                kind="ab",
                subject=plan.case.id,
                index=i,
                latency_ms=outcome.latency_ms,
                error=outcome.error,
                cached=outcome.cached,
            )
        )
        try:
            recorded = await suite.keep(plan.handle, outcome.as_result(plan.case.id, branch), new)
        except KeptThenCancelled as stop:  # stored: reported too
            self._kept(plan, branch, outcome, stop.recorded)
            raise
        self._kept(plan, branch, outcome, recorded)

    def _kept(
        self, plan: CasePlan, branch: TestBranch, outcome: BranchOutcome, recorded: Recorded
    ) -> None:
        outcome.previous = recorded.result.previous
        if recorded.stored is not None:
            outcome.execution_id = recorded.stored.id
        plan.outcomes.setdefault(branch.id, []).append(outcome)
        if self.on_execution is not None:
            self.on_execution(plan.result, outcome)

    def stopped(self, suite: SuiteRun) -> None:
        """Calls that had not finished are not reported: each case says how many iterations
        every branch finished (none, for a case that never started: see in_order)."""

    def in_order(self, suite: SuiteRun) -> None:
        """The cases that never ran (the run stopped or failed first) listed, cut short
        with no iteration, then every case in plan order, before the decision."""
        for position in sorted(self._unlisted):
            plan = self._unlisted.pop(position)
            plan.result.interrupted = True
            summarise(plan.result, plan.branches, plan.outcomes)
            self.run.results.append(plan.result)
        self.run.in_plan_order()

    def finished(self, suite: SuiteRun) -> None:
        """Put in order before the decision (:meth:`in_order`)."""


async def _run(
    run: ABRun,
    paths: Sequence[str | Path],
    *,
    project_dir: str | None,
    cases: Sequence[str] | None,
    branch_ids: Sequence[str] | None,
    prompt_version: int | None,
    db: str | Path | None,
    concurrency: int,
    environ: Mapping[str, str] | None,
    cache: bool | None,
    events: EventSink | None,
    on_execution: Callable[[ABCaseResult, BranchOutcome], None] | None,
    explicit: bool,
    gates: Gates | None = None,
    sharding: Sharding | None = None,
) -> None:
    kind = AB(
        paths,
        project_dir=project_dir,
        cases=cases,
        branch_ids=branch_ids,
        prompt_version=prompt_version,
        concurrency=concurrency,
        on_execution=on_execution,
        explicit=explicit,
        run=run,
    )
    await run_kind(
        kind,
        db=db,
        environ=environ,
        cache=cache,
        events=events,
        gates=gates,
        concurrency=max(1, concurrency),
        sharding=sharding,
    )


def _project_and_prompts(
    paths: Sequence[str | Path], project_dir: str | None
) -> tuple[Project, list[PromptDef]]:
    start = Path(paths[0]) if paths else None
    project = load_project(start, project_dir=project_dir)
    prompts = load_prompts(project, collect_case_files(project, [str(p) for p in paths]))
    return project, prompts


async def run_ab_tests_async(
    paths: Sequence[str | Path] = (),
    *,
    project_dir: str | None = None,
    cases: Sequence[str] | None = None,
    criteria: str = DEFAULT_CRITERIA,
    iterations: int = 1,
    prompt_version: int | None = None,
    db: str | Path | None = None,
    concurrency: int = 10,
    environ: Mapping[str, str] | None = None,
    cache: bool | None = None,
    events: EventSink | None = None,
    on_execution: Callable[[ABCaseResult, BranchOutcome], None] | None = None,
    into: ABRun | None = None,
    sharding: Sharding | None = None,
    gates: Gates | None = None,
) -> ABRun:
    """A/B tests of every case with branches in the given prompt/cases files (default: the
    whole project), or of the ``cases`` named (a case name or its id); ``run.decision`` is
    the one decision under ``gates``.

    ``criteria``: best_quality (default), fastest, cheapest, best_value or balanced.
    ``iterations`` > 1 repeats each comparison and reports the winner distribution, 95%
    intervals and whether the winner is significant. ``cache=True`` replays answers of an
    identical earlier call (iteration k's for iteration k)."""
    check_options(criteria, iterations)
    run = into if into is not None else ABRun(criteria=criteria, iterations=iterations)
    run.criteria, run.iterations = criteria, iterations
    await _run(
        run,
        paths,
        project_dir=project_dir,
        cases=cases,
        branch_ids=None,
        prompt_version=prompt_version,
        db=db,
        concurrency=concurrency,
        environ=environ,
        cache=cache,
        events=events,
        on_execution=on_execution,
        explicit=bool(cases),
        gates=gates,
        sharding=sharding,
    )
    return run


def run_ab_tests(paths: Sequence[str | Path] = (), **options: Any) -> ABRun:
    """:func:`run_ab_tests_async` for scripts; in a notebook or async code, await that."""
    return run_sync(run_ab_tests_async(paths, **options), "run_ab_tests_async")


async def run_ab_test_async(
    test_case_id: str,
    branch_ids: Sequence[str] | None = None,
    *,
    prompt_version: int | None = None,
    winner_criteria: str = DEFAULT_CRITERIA,
    iterations: int = 1,
    project_dir: str | None = None,
    db: str | Path | None = None,
    concurrency: int = 10,
    environ: Mapping[str, str] | None = None,
    cache: bool | None = None,
    events: EventSink | None = None,
) -> ABCaseResult:
    """The Testing API's ``runABTest(testCaseId, branchIds, promptVersion?, winnerCriteria)``:
    the given branches (default: the case's active ones) on one case, ranked."""
    check_options(winner_criteria, iterations)
    run = ABRun(criteria=winner_criteria, iterations=iterations)
    await _run(
        run,
        (),
        project_dir=project_dir,
        cases=[test_case_id],
        branch_ids=branch_ids,
        prompt_version=prompt_version,
        db=db,
        concurrency=concurrency,
        environ=environ,
        cache=cache,
        events=events,
        on_execution=None,
        explicit=True,
    )
    return run.results[0]


def run_ab_test(
    test_case_id: str, branch_ids: Sequence[str] | None = None, **options: Any
) -> ABCaseResult:
    """:func:`run_ab_test_async` for scripts."""
    return run_sync(run_ab_test_async(test_case_id, branch_ids, **options), "run_ab_test_async")
