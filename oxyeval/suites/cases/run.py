"""Running test cases: render, call the model, score, detect regressions, store.

Each execution goes to the history as soon as it is scored (those that finish together
in one transaction), so an interrupted batch (Ctrl-C, a crash, a provider outage) keeps
every finished result; the run itself is marked interrupted and says how many of its
cases finished.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..._tasks import Limit, run_sync
from ...errors import ConfigError, LoadError, ProviderError
from ...evaluation import EventSink, ExactMatch, Expected, SampleFinished, ScoreRecorded, Similarity
from ...project.config import Project, load_project
from ...project.prompts import PromptDef, collect_case_files, load_prompts
from ...project.templates import TemplateRef
from ...providers import GenerateParams, stopped_at_token_limit
from ...redact import redact
from ...store import TestCase
from ...workflow.agent import counted, token_limit_warning
from ...workflow.context import RunContext
from ..history_store import history_location, read_before_writing
from ..prompt_sync import sync_prompt_cases
from ..recorder import Handle, KeptThenCancelled, Recorded, RunRow, Storage
from ..shards import ShardKey
from ..suite import SuiteRun, run_kind
from ..targets import AgentTarget, PromptTarget, Target
from .histories import CaseHistories
from .results import CaseResult, CaseRun
from .scoring import (
    TokenCounter,
    detect_regression,
    output_diff,
    token_counter,
)
from .selection import (
    by_name,
    no_version_error,
    precheck,
    preview_cases,
    run_subject,
    select_cases,
    unknown_names_error,
)
from .storage import earlier_cases, execution_rows, unread_cases
from .stored import api_prompt_defs

if TYPE_CHECKING:
    from ...evaluation import Gates, Result
    from ...store import Store
    from ..shards import Sharding

__all__ = [
    "CaseResult",
    "CaseRun",
    "Cases",
    "history_location",
    "preview_cases",
    "run_cases",
    "run_cases_async",
]


@dataclass(repr=False)
class _VersionRun:
    """One prompt version and its selected cases, with everything a case reuses built once:
    the target (compiled templates and params, or one agent runner for all cases) and
    the tokenizer."""

    prompt: PromptDef
    cases: list[TestCase]
    version: int
    content: Mapping[str, Any]
    target: Target
    counter: TokenCounter
    run_id: str = ""
    handle: Handle = field(default_factory=lambda: Handle(None, None))  # where it is kept
    histories: CaseHistories | None = None
    planned: int = 0  # the cases planned (``cases`` is emptied once they are units)

    @classmethod
    def build(
        cls,
        prompt: PromptDef,
        cases: list[TestCase],
        version: int,
        content: Mapping[str, Any],
        context: RunContext,
    ) -> _VersionRun:
        template = TemplateRef(content["template"])
        target: Target
        if prompt.kind == "agent" and prompt.agent is not None:
            # The agent renders its own system prompt (context, variable defaults), with
            # the case's input for the variables it declares (Agent.template_values).
            target = AgentTarget(context, prompt.agent, template)
        else:
            system = content.get("system")
            target = PromptTarget(
                context,
                content["model"],
                template,
                TemplateRef(system) if system else None,
                GenerateParams(**content.get("params", {})),
            )
        return cls(
            prompt=prompt,
            cases=cases,
            version=version,
            content=content,
            target=target,
            counter=token_counter(str(content.get("model_ref", ""))),
        )


_INLINE_DIFF = 2_000  # characters of expected + actual diffed on the event loop


_EXACT = ExactMatch()


class _Scorer:
    """Similarity by the prompt's method: an embedding model, or the lexical stand-in;
    one scorer per method for the whole run."""

    def __init__(self, context: RunContext) -> None:
        self.context = context
        self._scorers: dict[str, Similarity] = {}

    def check(self, method: str) -> None:
        if method != "lexical":
            self.context.embeddings.get(method)

    def method_name(self, method: str) -> str:
        if method == "lexical":
            return "lexical"
        model_ref = self.context.project.embeddings[method].model_ref
        return f"embedding:{method} ({model_ref})" if model_ref else f"embedding:{method}"

    def scorer(self, method: str) -> Similarity:
        """The similarity scorer of a prompt's method, its label naming the method."""
        scorer = self._scorers.get(method)
        if scorer is None:
            similarity = None if method == "lexical" else self.context.embeddings.get(method)
            scorer = self._scorers[method] = Similarity(
                None if similarity is None else similarity.similarity,
                method=self.method_name(method),
            )
        return scorer


async def _run_one(
    plan: _VersionRun, case: TestCase, *, scorer: _Scorer, store: Store
) -> CaseResult:
    """One case rendered, answered and scored, its regressions found against the history
    (``store``); a failure is the case's error (kept in the history too, status error:
    an outage is visible there, and never counted as a failed case)."""
    prompt, version = plan.prompt, plan.version
    started = time.perf_counter()
    threshold = prompt.threshold if case.threshold is None else float(case.threshold)
    result = CaseResult(
        case_id=case.id,
        name=case.name,
        prompt_id=prompt.id,
        prompt_version=version,
        expected_output=case.expected_output,
        threshold=threshold,
        started=started,
        previous_unread=case.total_runs > 0,
    )
    try:
        completion = await plan.target.complete(case.input or {})
    except LoadError as exc:
        # A case created through the API may not fit the template: that case fails to run,
        # the others go on.
        result.error = f"case {result.case_id!r}: its input does not fit prompt version {version}: {exc.diagnostics[0].message}"
        result.error_kind = "input"
        return result
    except ProviderError as exc:
        result.error = str(exc)
        result.error_kind = "provider"
        result.run_duration_ms = (time.perf_counter() - started) * 1000
        return result
    # Already scrubbed where the answer entered (Model.generate); scrubbed again here
    # because this is what the history database stores.
    actual = redact(completion.text)
    expected = result.expected_output
    result.actual_output = actual
    result.finish_reason = completion.finish_reason
    result.cached = completion.cached
    result.latency_ms = round(completion.latency * 1000, 3)
    result.input_tokens = completion.usage.input_tokens
    result.output_tokens = completion.usage.output_tokens
    result.cost_usd = completion.cost
    if completion.time_to_first_token is not None:
        result.ttft_ms = round(completion.time_to_first_token * 1000, 3)
    if expected is not None:
        against = Expected(output=expected)
        result.exact_match = (await _EXACT.score(actual, against)).value == 1.0
        try:
            # Equal texts: similarity 1 by definition, no embedding call.
            similar = await scorer.scorer(prompt.similarity).score(actual, against)
        except (ProviderError, ValueError) as exc:
            result.error = redact(f"scoring case {result.case_id!r} failed: {exc}")
            result.error_kind = "scoring"
            result.run_duration_ms = (time.perf_counter() - started) * 1000
            return result
        # In 0..1 (a negative cosine counts as 0: see the Similarity scorer).
        result.semantic_score = similar.value
        result.similarity_method = similar.label or ""
        result.score = 1.0 if result.exact_match else result.semantic_score
        result.passed = result.exact_match or result.score >= threshold
        result.length_diff = len(actual) - len(expected)
        result.token_diff = plan.counter.count(actual) - plan.counter.count(expected)
        result.token_method = plan.counter.method
        if len(expected) + len(actual) <= _INLINE_DIFF:
            result.output_diff = output_diff(expected, actual)
        else:  # quadratic in the worst case: off the event loop, so other cases keep going
            result.output_diff = await asyncio.to_thread(output_diff, expected, actual)
        if plan.histories is not None and result.similarity_method == plan.histories.method:
            history, result.previous, read = await plan.histories.get(case, expected)
            result.previous_unread = not read  # read with its history: its write reads none
        else:  # the store is synchronous: off the event loop, so other cases keep going
            (history,) = await asyncio.to_thread(
                store.stats.baselines,
                [(result.case_id, (expected, result.similarity_method))],
                prompt.recent,
            )
        past_rate = history.historical_pass_rate
        scores, lengths = history.recent_scores, history.recent_lengths
    else:
        result.pending = True
        result.similarity_method = "none (no expected output)"
        past_rate, scores, lengths = None, (), ()
    regression = detect_regression(
        passed=result.passed,
        score=result.score,
        length=len(actual),
        historical_pass_rate=past_rate,
        recent_scores=scores,
        recent_lengths=lengths,
    )
    result.is_regression = regression.is_regression
    result.regression_type = regression.type
    result.regression_types = regression.types
    result.regression_reasons = regression.reasons
    result.run_duration_ms = round((time.perf_counter() - started) * 1000, 3)
    return result


def _warn_token_limits(
    run: CaseRun, plans: Sequence[_VersionRun], cuts: Mapping[str, list[str]]
) -> None:
    """One warning per prompt for the cases whose answer stopped at the token limit
    (``cuts``: their names by prompt, noted as they finished)."""
    for plan in plans:
        cut = cuts.get(plan.prompt.id)
        if not cut:
            continue
        model = plan.target.model
        which = counted(cut, plan.planned, "case") if plan.planned > 1 else f"case '{cut[0]}'"
        text = token_limit_warning(
            f"prompt '{plan.prompt.id}' v{plan.version}", which, model, plan.target.max_tokens
        )
        run.warnings.append(f"{text}; `oxy cases accept` adopts such an output only with --force")


def _api_prompts(location: Any, project: Project, declared: Sequence[PromptDef]) -> list[PromptDef]:
    reader = read_before_writing(location)
    if reader is None:
        return []
    try:
        return api_prompt_defs(reader, project, [p.id for p in declared])
    finally:
        reader.close()


def _shard(plans: list[_VersionRun], suite: SuiteRun, project: Project) -> list[_VersionRun]:
    """The prompt versions with only this shard's cases (each named by its file, or its
    prompt when it was made through the API, and its name); a prompt none of whose
    cases fall here is left out."""
    cases = [(plan, case) for plan in plans for case in plan.cases]
    mine = suite.shard(
        cases,
        lambda pair: ShardKey(pair[1].source_file or pair[0].prompt.id, pair[1].name),
        [project],
    )
    kept = {id(case) for _plan, case in mine}
    for plan in plans:
        plan.cases = [case for case in plan.cases if id(case) in kept]
    return [plan for plan in plans if plan.cases]


class Cases:
    """Test cases as a kind on the run pipeline: one run row per prompt version (sharing a
    group id when there are several), each case a unit; each execution stored as soon as
    it is scored, so an interrupted run keeps every finished result."""

    name = "cases"
    storage = Storage(write=execution_rows, previous=earlier_cases, full=True, unread=unread_cases)

    def __init__(
        self,
        paths: Sequence[str | Path],
        *,
        project_dir: str | None,
        cases: Sequence[str] | None,
        version: int | None,
        concurrency: int,
        on_result: Callable[[CaseResult], None] | None,
        run: CaseRun,
    ) -> None:
        self.paths = paths
        self.project_dir = project_dir
        self.names = cases
        self.version = version
        self.concurrency = concurrency
        self.on_result = on_result
        self.run = run
        self.plans: list[_VersionRun] = []
        self._store: Store | None = None
        self._scorer: _Scorer | None = None
        self._limit = Limit(max(1, concurrency))  # the run's budget, once planned
        # Noted as results are kept, so the end of a large run reads none back from disk:
        # the cases cut at the token limit, and whether they finished out of plan order.
        self._cuts: dict[str, list[str]] = {}

    async def plan(self, suite: SuiteRun) -> list[tuple[_VersionRun, TestCase, int]]:
        paths = self.paths
        start = Path(paths[0]) if paths else None
        project = load_project(start, project_dir=self.project_dir)
        prompts = load_prompts(project, collect_case_files(project, [str(p) for p in paths]))
        location = suite.histories.location(project)
        assert location is not None  # a bad location raised: bad input
        if not paths:  # the whole project: prompts made through the API too
            prompts += await asyncio.to_thread(_api_prompts, location, project, prompts)
        if not prompts:
            raise ConfigError(f"no *.prompt.yml or *.cases.yml files under {project.root}")
        self.run.db = location.path if location.path is not None else location.display
        self.run.history = suite.recorder.notes  # one entry per history, once it opens
        # Given files: run what they declare. No paths: the whole project, API cases too.
        only_files = (
            {project.relative(f) for f in collect_case_files(project, [str(p) for p in paths])}
            if paths
            else None
        )
        models, similarities = await asyncio.to_thread(
            precheck, location, project, prompts, self.names, self.version, only_files
        )
        self._limit = suite.budget or self._limit
        context = suite.context(project)
        scorer = self._scorer = _Scorer(context)
        # every key the run needs, found before the history is created or changed
        context.models.check(sorted(m for m in models if m in project.models))
        for method in sorted(similarities):
            scorer.check(method)
        store = self._store = cast("Store", await suite.store(project))
        self.plans = self._plan_versions(store, project, prompts, context, only_files)
        if suite.sharding is not None:
            self.plans = _shard(self.plans, suite, project)
        units = []
        for plan in self.plans:
            plan.handle = suite.add(
                project,
                RunRow(
                    key=plan.prompt.id,
                    subject=run_subject(plan.prompt, project.root) or "",
                    prompt_id=plan.prompt.id,
                    prompt_version=plan.version,
                ),
                count=len(plan.cases),
            )
            self.run.versions[plan.prompt.id] = plan.version
            self.run.planned += len(plan.cases)
            first = len(units)
            units.extend((plan, case, first + i) for i, case in enumerate(plan.cases))
            # the units hold the cases now: each is freed once it has run
            plan.planned, plan.cases = len(plan.cases), []
        return units

    def _plan_versions(
        self,
        store: Store,
        project: Project,
        prompts: Sequence[PromptDef],
        context: RunContext,
        only_files: set[str] | None,
    ) -> list[_VersionRun]:
        """Sync the prompts and plan each prompt version's selected cases."""
        stale = store.runs.mark_stale()
        if stale:
            self.run.warnings.append(
                f"{len(stale)} earlier run(s) had been interrupted; their finished results are kept"
            )
        # That many executions follow: a large run's writer process starts now (_writer).
        store.expect_executions(sum(len(prompt.cases) for prompt in prompts))
        plans: list[_VersionRun] = []
        all_names: dict[str, TestCase] = {}
        found: set[str] = set()
        version = self.version
        for prompt in prompts:
            # The run goes on from the stored cases: the declared ones (and the parsed
            # files behind them) are let go, 100,000 cases' worth of them in a big run.
            current, stored_cases = sync_prompt_cases(store, project, prompt, release=True)
            all_names.update(by_name(stored_cases))
            selected = select_cases(stored_cases, self.names, only_files, found)
            if not selected:
                continue
            chosen_version = current if version is None else version
            content = (
                prompt.content(project)
                if version is None
                else store.prompts.get_version(prompt.id, version)
            )
            if content is None:
                raise no_version_error(
                    prompt, version or 0, [v.version for v in store.prompts.versions(prompt.id)]
                )
            if content["model"] not in project.models:
                raise ConfigError(
                    f"prompt '{prompt.id}' version {chosen_version} uses model "
                    f"'{content['model']}', which config.yml no longer defines"
                )
            context.models.check([content["model"]])
            assert self._scorer is not None
            self._scorer.check(prompt.similarity)
            plan = _VersionRun.build(prompt, selected, chosen_version, content, context)
            method = self._scorer.scorer(prompt.similarity).method
            plan.histories = CaseHistories(store, selected, method, prompt.recent)
            plans.append(plan)
        error = unknown_names_error(self.names, found, all_names, only_files)
        if error is not None:
            raise error
        return plans

    async def execute(self, unit: tuple[_VersionRun, TestCase, int], suite: SuiteRun) -> None:
        plan, case, position = unit
        assert self._store is not None and self._scorer is not None
        if not plan.run_id:
            plan.run_id = await suite.recorder.run_id(plan.handle) or ""
            if plan.run_id:
                self.run.runs[plan.prompt.id] = plan.run_id
        # --concurrency counts cases being answered and scored; a scored case gives its
        # slot up before it is stored, so finished cases are written many to a
        # transaction while the next ones are asked.
        async with self._limit:
            result = await _run_one(plan, case, scorer=self._scorer, store=self._store)
            result.position = position
            # What the history and the decision read; answers and named scores only
            # for subscribers (the case's own record keeps both).
            outcome = result.as_result(slim=not suite.events)
            self._told(suite, result, outcome)
        try:
            recorded = await suite.keep(plan.handle, outcome, result)
        except KeptThenCancelled as stop:  # stored: reported too
            self._kept(result, stop.recorded)
            raise
        self._kept(result, recorded)

    def _told(self, suite: SuiteRun, result: CaseResult, outcome: Result) -> None:
        if not suite.events:  # nobody listens: no event made
            return
        suite.emit(
            SampleFinished(
                kind="cases",
                subject=result.case_id,
                latency_ms=result.latency_ms,
                error=result.error,
                cached=result.cached,
            )
        )
        for score in outcome.scores:
            suite.emit(
                ScoreRecorded(
                    kind="cases",
                    subject=result.case_id,
                    metric=score.metric,
                    value=score.value,
                    label=score.label,
                )
            )

    def _kept(self, result: CaseResult, recorded: Recorded) -> None:
        result.previous = recorded.result.previous
        stored = recorded.stored
        if stored is not None:
            result.execution_id = stored.id
            result.created_at = stored.created_at
        self.run.results.append(result)
        if stopped_at_token_limit(result.finish_reason):
            self._cuts.setdefault(result.prompt_id, []).append(result.name)
        if self.on_result is not None:
            self.on_result(result)

    def stopped(self, suite: SuiteRun) -> None:
        """Cases that had not finished are not reported: the run says how many did."""

    def in_order(self, suite: SuiteRun) -> None:
        """The cases in plan order, before the decision pairs each with its outcome."""
        self.run.in_plan_order()

    def finished(self, suite: SuiteRun) -> None:
        """The run rows and the token-limit warnings."""
        self.run.runs.update(suite.recorder.run_ids)
        _warn_token_limits(self.run, self.plans, self._cuts)


async def run_cases_async(
    paths: Sequence[str | Path] = (),
    *,
    project_dir: str | None = None,
    cases: Sequence[str] | None = None,
    version: int | None = None,
    db: str | Path | None = None,
    concurrency: int = 8,
    environ: Mapping[str, str] | None = None,
    into: CaseRun | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
    cache: bool | None = None,
    events: EventSink | None = None,
    gates: Gates | None = None,
    sharding: Sharding | None = None,
) -> CaseRun:
    """Run the test cases of the given prompt/cases files (default: the whole project;
    ``sharding``: one shard's share of them, see :mod:`oxyeval.suites.shards`).

    ``cache=True`` (``--cache``) replays answers kept in the history from an identical
    earlier call; by default every case calls its model and keeps the answer for a later
    ``cache=True`` run; with False nothing is kept (see :mod:`oxyeval.suites.run_cache`).
    ``events`` hears the run as it happens (:mod:`oxyeval.evaluation.events`);
    ``run.decision`` is the one decision under ``gates``."""
    run = into if into is not None else CaseRun(db=Path("."))
    kind = Cases(
        paths,
        project_dir=project_dir,
        cases=cases,
        version=version,
        concurrency=concurrency,
        on_result=on_result,
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
    return run


def run_cases(
    paths: Sequence[str | Path] = (),
    *,
    project_dir: str | None = None,
    cases: Sequence[str] | None = None,
    version: int | None = None,
    db: str | Path | None = None,
    concurrency: int = 8,
    environ: Mapping[str, str] | None = None,
    into: CaseRun | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
    cache: bool | None = None,
    events: EventSink | None = None,
    gates: Gates | None = None,
    sharding: Sharding | None = None,
) -> CaseRun:
    """:func:`run_cases_async` for scripts; in a notebook or async code, await that."""
    return run_sync(
        run_cases_async(
            paths,
            project_dir=project_dir,
            cases=cases,
            version=version,
            db=db,
            concurrency=concurrency,
            environ=environ,
            into=into,
            on_result=on_result,
            cache=cache,
            events=events,
            gates=gates,
            sharding=sharding,
        ),
        "run_cases_async",
    )
