"""Autoblocks-style test suites: your test cases through your function, each output
scored by evaluators, printed as a table and kept in the history.

    run_test_suite("support-bot", test_cases, answer, [HasAllSubstrings("cites"), ...])

The arguments are Autoblocks' (``id, test_cases, fn, evaluators``, then its options), so
a suite written for its SDK runs with only the import line changed.

``fn`` and every evaluator may be sync (run in a worker thread, so several run at once)
or async; one that raises is reported for that test case and the suite goes on. A
:class:`Threshold` says when a score passes; an :class:`Evaluation` without one has its
score reported and pass undefined (None), never counted as a pass. A suite is a run of
the SDK's one runner (:mod:`._run`), as ``evaluate`` is: the test cases are its subjects,
``fn`` produces their outputs, the evaluators are its checks; whether the suite passed
is the one decision's.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..evaluation import usage_code
from . import _exec_channel
from ._evaluators import BaseTestCase, BaseTestEvaluator, Evaluation, Threshold
from ._grid import (
    GridSearchParams,
    check_params,
    combination_label,
    combinations,
    grid_search_ctx,
    in_combination,
)
from ._results import Measured, case_states, decide_results, sdk_result
from ._suite_models import config_of

if TYPE_CHECKING:
    from ..evaluation import Decision, EventSink, Result

__all__ = [
    "DEFAULT_MAX_TEST_CASE_CONCURRENCY",
    "CaseOutcome",
    "GridSearchResult",
    "SuiteResult",
    "grid_search_ctx",
    "render_suite",
    "run_test_suite",
    "run_test_suite_async",
]

log = logging.getLogger("oxyeval")

#: Test cases through ``fn`` at once unless the suite says otherwise (Autoblocks' default).
DEFAULT_MAX_TEST_CASE_CONCURRENCY = 10


# -- running a suite --------------------------------------------------------------------


@dataclass
class CaseOutcome:
    """One test case: its output (or why ``fn`` failed), each evaluator's evaluation
    (None: it skipped the case) or error, how long ``fn`` took, and whether the
    decision failed it (``fn`` or an evaluator failed, or an evaluation did not pass)."""

    hash: str
    test_case: Any
    output: Any = None
    error: str | None = None
    duration_s: float = 0.0
    evaluations: dict[str, Evaluation | None] = field(default_factory=dict)
    evaluator_errors: dict[str, str] = field(default_factory=dict)
    failed: bool = False


@dataclass
class SuiteResult:
    """What ``run_test_suite`` returns: every test case's outcome, in the order given,
    and the decision over their results (``passed``)."""

    id: str
    evaluator_ids: list[str]
    outcomes: list[CaseOutcome] = field(default_factory=list)
    #: Scores lower than the same test case's previous one under the same evaluator.
    regressions: list[str] = field(default_factory=list)
    decision: Decision | None = None
    #: The grid search combination this run had (None: not a grid search).
    params: dict[str, Any] | None = None
    #: Not run: ``oxy exec --test-suites`` did not select it.
    skipped: bool = False

    @property
    def passed(self) -> bool:
        decision = self.decision
        if decision is None:  # made by hand: decided over the same results
            decision = decide_results([r for o in self.outcomes for r in _results(self.id, o)])
        return decision.passed


def _bounds(threshold: Threshold) -> str:
    """A threshold as messages show it: ``>= 0.8, < 1``."""
    signs = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
    return ", ".join(
        f"{sign} {getattr(threshold, name):g}"
        for name, sign in signs.items()
        if getattr(threshold, name) is not None
    )


def _measured(evaluation: Evaluation) -> Measured:
    """An evaluation as a measurement: its score, its threshold's verdict, its metadata
    as the reason (a lone lower bound is the score's threshold, other bounds are said)."""
    threshold = evaluation.threshold
    if threshold is not None and not threshold.bounded:
        threshold = None  # decides nothing
    details: dict[str, Any] = {}
    lower = None
    if threshold is not None:
        only_lower = threshold.gte is not None and all(
            getattr(threshold, b) is None for b in ("gt", "lt", "lte")
        )
        lower = threshold.gte if only_lower else None
        if lower is None:
            details["threshold"] = _bounds(threshold)
    meta = evaluation.metadata
    if evaluation.assertions:
        details["assertions"] = [
            {"criterion": str(a.criterion), "passed": bool(a.passed), "required": bool(a.required)}
            for a in evaluation.assertions
        ][:100]
    return Measured(
        score=evaluation.score,
        passed=evaluation.passed(),
        reason=None if not meta else json.dumps(dict(meta), default=str)[:2000],
        threshold=None if lower is None else float(lower),
        value=evaluation,
        details=details,
    )


def _results(suite: str, outcome: CaseOutcome) -> list[Result]:
    """The results of a test case's outcome, as the run records them."""
    from ._run import PRODUCE

    latency = round(outcome.duration_s * 1000, 3)
    found = []
    for evaluator_id, evaluation in outcome.evaluations.items():
        if evaluation is not None:
            measured = _measured(evaluation)
            found.append(sdk_result(suite, outcome.hash, evaluator_id, measured, latency))
    for evaluator_id, error in outcome.evaluator_errors.items():
        measured = Measured(error=error)
        found.append(sdk_result(suite, outcome.hash, evaluator_id, measured, latency))
    if outcome.error is not None:
        found.append(sdk_result(suite, outcome.hash, PRODUCE, Measured(error=outcome.error)))
    return found


async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``: awaited when async, else in a worker thread (so sync
    functions that wait on the network run side by side; the thread sees the caller's
    context variables, such as the grid search's combination)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    result = await asyncio.to_thread(fn, *args, **kwargs)
    if inspect.isawaitable(result):  # a sync function that returned a coroutine
        return await result
    return result


def _order_problem(fn: Any, evaluators: Any) -> str | None:
    """Why ``fn`` and ``evaluators`` look swapped (the order before Autoblocks'), or None."""
    if not callable(fn) and isinstance(fn, (list, tuple)) and callable(evaluators):
        return (
            "run_test_suite(id, test_cases, fn, evaluators): the third argument is the "
            "function under test and the fourth the evaluators (Autoblocks' order); this "
            "call passes them the other way round. Pass fn= and evaluators= by keyword."
        )
    return None


def _check(id: str, test_cases: Sequence[Any], evaluators: Sequence[Any], fn: Any) -> list[str]:
    if not isinstance(id, str) or not id.strip():
        raise ValueError(f"run_test_suite: id must be a non-empty string, not {id!r}")
    swapped = _order_problem(fn, evaluators)
    if swapped is not None:
        raise TypeError(swapped)
    if not callable(fn):
        raise TypeError(f"run_test_suite {id!r}: fn must be callable, not {fn!r}")
    if isinstance(test_cases, (str, bytes)) or not isinstance(test_cases, Sequence):
        raise TypeError(
            f"run_test_suite {id!r}: test_cases must be a list of BaseTestCase, "
            f"not {type(test_cases).__name__}"
        )
    if not test_cases:
        raise ValueError(
            f"run_test_suite {id!r}: no test cases given; a suite needs at least one "
            "(an empty list is an error so that a suite that lost its cases never passes)"
        )
    hashes: dict[str, int] = {}
    for i, case in enumerate(test_cases):
        if not isinstance(case, BaseTestCase):
            raise TypeError(
                f"run_test_suite {id!r}: test case {i} is a {type(case).__name__}, not a "
                "BaseTestCase subclass with a hash() method"
            )
        key = case.hash()
        if not isinstance(key, str) or not key:
            raise ValueError(
                f"run_test_suite {id!r}: test case {i}'s hash() must return a non-empty string"
            )
        if key in hashes:
            raise ValueError(
                f"run_test_suite {id!r}: test cases {hashes[key]} and {i} have the same hash "
                f"{key!r}; a hash identifies a test case, so each must be unique"
            )
        hashes[key] = i
    if isinstance(evaluators, (str, bytes)) or not isinstance(evaluators, Sequence):
        raise TypeError(
            f"run_test_suite {id!r}: evaluators must be a list of BaseTestEvaluator, "
            f"not {type(evaluators).__name__}"
        )
    ids: list[str] = []
    for evaluator in evaluators:
        if not isinstance(evaluator, BaseTestEvaluator):
            raise TypeError(f"run_test_suite {id!r}: {evaluator!r} is not a BaseTestEvaluator")
        if not isinstance(getattr(evaluator, "id", None), str) or not evaluator.id:
            raise ValueError(
                f"run_test_suite {id!r}: evaluator {type(evaluator).__name__} has no id"
            )
        if evaluator.id in ids:
            raise ValueError(f"run_test_suite {id!r}: two evaluators have the id {evaluator.id!r}")
        ids.append(evaluator.id)
    return ids


@dataclass(eq=False)
class _Item:
    """One test case as a run holds it: the user's test case, its key (its hash, with
    the repetition's index when it repeats) and what the before-evaluators hook gave."""

    case: Any
    key: str
    hook: Any = None


def _items(test_cases: Sequence[BaseTestCase]) -> list[_Item]:
    """The test cases, each repeated as its ``TestCaseConfig`` says (``<hash>-<i>``)."""
    items: list[_Item] = []
    for case in test_cases:
        config = config_of(case)
        key = case.hash()
        if config is None or config.repeat_num_times is None:
            items.append(_Item(case, key))
        else:
            items += [_Item(case, f"{key}-{i}") for i in range(config.repeat_num_times)]
    return items


#: What ``retry_count`` retries: the function under test failing to reach a service
#: (Autoblocks retries the same: timeouts and refused connections, nothing else).
def _retryable(exc: BaseException) -> bool:
    try:
        import httpx
    except ImportError:  # pragma: no cover - httpx is a dependency
        return False
    return isinstance(exc, (httpx.TimeoutException, httpx.ConnectError))


@dataclass
class GridSearchResult:
    """What ``run_test_suite`` returns for a grid search: one suite result per
    combination (each with its ``params``), in the order they ran; it passed when every
    one did."""

    id: str
    runs: list[SuiteResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(run.passed for run in self.runs)


def _record(result: SuiteResult) -> dict[str, Any]:
    """A suite run as ``oxy exec`` reads it (see :mod:`._exec_channel`)."""
    from ..report.text import shown

    decision = result.decision
    if decision is None:
        decision = decide_results([r for o in result.outcomes for r in _results(result.id, o)])
    counts = {"passed": 0, "failed": 0, "undefined": 0, "errors": 0}
    for outcome in result.outcomes:
        if outcome.error is not None:
            counts["errors"] += 1
        counts["errors"] += len(outcome.evaluator_errors)
        for evaluation in outcome.evaluations.values():
            if evaluation is not None:
                key = {True: "passed", False: "failed", None: "undefined"}[evaluation.passed()]
                counts[key] += 1
    return {
        "id": result.id,
        "params": result.params,
        "code": decision.code,
        "interrupted": decision.interrupted,
        "test_cases": len(result.outcomes),
        "failed_test_cases": sum(1 for o in result.outcomes if o.failed),
        "evaluations": counts,
        "reasons": [shown(line) for line in decision.reasons[:50]],
    }


async def _run_once(
    id: str,
    items: list[_Item],
    evaluators: Sequence[BaseTestEvaluator],
    evaluator_ids: list[str],
    fn: Callable[[Any], Any],
    max_test_case_concurrency: int | None,
    before_evaluators_hook: Callable[[Any, Any], Any] | None,
    retry_count: int,
    params: dict[str, Any] | None,
    *,
    history: bool,
    cache: bool | None,
    events: EventSink | Iterable[EventSink | None] | None,
) -> SuiteResult:
    """One run of the suite (one combination of a grid search, when ``params``)."""
    from ._run import Check, Subject, run_sdk

    def check(evaluator: BaseTestEvaluator) -> Check:
        async def measure(item: _Item, output: Any) -> Measured | None:
            from ._judge_evaluators import in_test

            extra = {} if item.hook is None else {"hook_results": item.hook}
            with in_test(id, item.case.hash()):
                found = await _call(evaluator.evaluate_test_case, item.case, output, **extra)
            if found is not None and not isinstance(found, Evaluation):
                raise TypeError(f"returned {type(found).__name__}, not an Evaluation or None")
            return None if found is None else _measured(found)

        return Check(evaluator.id, measure, evaluator.max_concurrency)

    async def produce(item: _Item) -> Any:
        attempt = 0
        while True:
            try:
                output = await _call(fn, item.case)
                if before_evaluators_hook is not None:
                    item.hook = await _call(before_evaluators_hook, item.case, output)
                return output
            except Exception as exc:
                if attempt >= retry_count or not _retryable(exc):
                    raise
                await asyncio.sleep(min(0.1 * 2**attempt, 5.0))
                attempt += 1

    label = id if params is None else f"{id} [{combination_label(params)}]"
    checks = [check(e) for e in evaluators]
    subjects = [Subject(i.key, i, checks, label=i.key, produce=produce) for i in items]
    with in_combination(params):
        finished = await run_sdk(
            label,
            subjects,
            produce_limit=max_test_case_concurrency,
            history=history,
            cache=cache,
            events=events,
        )
    sizes = [len(o.results) for o in finished.outcomes]
    result = SuiteResult(id, evaluator_ids, regressions=finished.regressions, params=params)
    result.decision = finished.decision
    for outcome, passed in zip(
        finished.outcomes, case_states(finished.decision, sizes), strict=True
    ):
        item = outcome.subject.item
        case = CaseOutcome(
            outcome.subject.key,
            item.case,
            outcome.output,
            outcome.error,
            outcome.duration_s,
            failed=not passed,
        )
        if outcome.error is None:
            for evaluator_id, measured in zip(evaluator_ids, outcome.measured, strict=True):
                if measured is None:
                    case.evaluations[evaluator_id] = None
                elif measured.error is not None:
                    case.evaluator_errors[evaluator_id] = measured.error
                else:
                    case.evaluations[evaluator_id] = measured.value
        result.outcomes.append(case)
    return result


async def run_test_suite_async(
    id: str,
    test_cases: Sequence[BaseTestCase],
    fn: Callable[[Any], Any],
    evaluators: Sequence[BaseTestEvaluator] | None = None,
    max_test_case_concurrency: int | None = DEFAULT_MAX_TEST_CASE_CONCURRENCY,
    before_evaluators_hook: Callable[[Any, Any], Any] | None = None,
    grid_search_params: GridSearchParams | None = None,
    human_review_job: Any = None,
    retry_count: int = 0,
    *,
    print_results: bool = True,
    history: bool = True,
    cache: bool | None = None,
    events: EventSink | Iterable[EventSink | None] | None = None,
) -> SuiteResult | GridSearchResult:
    """Run every test case through ``fn`` (at most ``max_test_case_concurrency`` at once;
    a case whose ``TestCaseConfig`` repeats it, that many times), then
    ``before_evaluators_hook(test_case, output)`` when given (its result reaches each
    evaluator as ``hook_results=``), then every evaluator on the output (each within its
    own ``max_concurrency``), as one SDK run: kept in the project's history
    (``history=False``: not), judges' answers replayed on a rerun (``cache=False``: not),
    ``events`` told as it goes.

    ``grid_search_params`` (``{"name": [values...]}``) runs the suite once per
    combination, each a run of its own that :func:`grid_search_ctx` describes while it
    runs, and returns a :class:`GridSearchResult`. ``retry_count``: how often ``fn`` is
    tried again when it cannot reach a service (a timeout, a refused connection).
    ``human_review_job`` is a request to Autoblocks' platform: accepted, not sent.
    Bad arguments (no test cases, two test cases with one hash...) raise before anything
    runs, and under ``oxy exec`` are reported to it as bad input.
    """
    evaluators = [] if evaluators is None else evaluators
    if not _exec_channel.selected(id if isinstance(id, str) else ""):
        log.info("skipping test suite %r: oxy exec --test-suites does not select it", id)
        return SuiteResult(id, [], skipped=True)
    try:
        evaluator_ids = _check(id, test_cases, evaluators, fn)
        if grid_search_params is not None:
            problem = check_params(id, grid_search_params)
            if problem is not None:
                raise ValueError(problem)
        if isinstance(retry_count, bool) or not isinstance(retry_count, int) or retry_count < 0:
            raise ValueError(
                f"run_test_suite {id!r}: retry_count must be a whole number >= 0, "
                f"not {retry_count!r}"
            )
    except (TypeError, ValueError) as exc:
        _exec_channel.report({"id": str(id), "code": usage_code(), "error": str(exc)})
        raise
    if human_review_job is not None:
        log.warning(
            "test suite %r: human_review_job is ignored: human review is a feature of "
            "Autoblocks' platform, and oxyeval sends nothing there",
            id,
        )
    items = _items(test_cases)
    runs = [None] if grid_search_params is None else combinations(grid_search_params)
    results: list[SuiteResult] = []
    for params in runs:
        result = await _run_once(
            id,
            items,
            evaluators,
            evaluator_ids,
            fn,
            max_test_case_concurrency,
            before_evaluators_hook,
            retry_count,
            params,
            history=history,
            cache=cache,
            events=events,
        )
        _exec_channel.report(_record(result))
        if print_results:
            render_suite(result)
        results.append(result)
    if grid_search_params is None:
        return results[0]
    return GridSearchResult(id, results)


def run_test_suite(
    id: str,
    test_cases: Sequence[BaseTestCase],
    fn: Callable[[Any], Any],
    evaluators: Sequence[BaseTestEvaluator] | None = None,
    max_test_case_concurrency: int | None = DEFAULT_MAX_TEST_CASE_CONCURRENCY,
    before_evaluators_hook: Callable[[Any, Any], Any] | None = None,
    grid_search_params: GridSearchParams | None = None,
    human_review_job: Any = None,
    retry_count: int = 0,
    *,
    print_results: bool = True,
    history: bool = True,
    cache: bool | None = None,
    events: EventSink | Iterable[EventSink | None] | None = None,
) -> SuiteResult | GridSearchResult:
    """:func:`run_test_suite_async` for scripts and tests (inside a running event loop it
    runs in a worker thread with a loop of its own). Its arguments are Autoblocks' in
    Autoblocks' order; like Autoblocks, a failed suite does not end the script: the
    result says whether it passed, and ``oxy exec`` turns it into an exit code."""
    main = run_test_suite_async(
        id,
        test_cases,
        fn,
        evaluators,
        max_test_case_concurrency,
        before_evaluators_hook,
        grid_search_params,
        human_review_job,
        retry_count,
        print_results=print_results,
        history=history,
        cache=cache,
        events=events,
    )
    from ._metric import run_sync

    return run_sync(main)


def render_suite(result: SuiteResult, console: Any = None) -> None:
    """A table of test cases × evaluators (score and PASS/FAIL/-), then per evaluator how
    many passed, failed, were undefined or errored."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ..report import shown

    console = console or Console(stderr=False)
    title = f"test suite {shown(result.id)}"
    if result.params is not None:
        title += f" [{shown(combination_label(result.params))}]"
    table = Table(title=Text(title), title_justify="left")
    table.add_column("test case", overflow="fold")
    for evaluator_id in result.evaluator_ids:
        table.add_column(Text(shown(evaluator_id)), justify="right")
    for outcome in result.outcomes:
        cells = [Text(shown(outcome.hash))]
        for evaluator_id in result.evaluator_ids:
            if outcome.error is not None:
                cells.append(Text("fn error", style="red"))
            elif evaluator_id in outcome.evaluator_errors:
                cells.append(Text("error", style="red"))
            else:
                e = outcome.evaluations.get(evaluator_id)
                if e is None:
                    cells.append(Text("skipped", style="dim"))
                else:
                    verdict = {True: "PASS", False: "FAIL", None: "-"}[e.passed()]
                    cells.append(Text(f"{e.score:.2f} {verdict}"))
        table.add_row(*cells)
    console.print(table)
    for evaluator_id in result.evaluator_ids:
        found = [o.evaluations.get(evaluator_id) for o in result.outcomes]
        passed = sum(1 for e in found if e is not None and e.passed() is True)
        failed = sum(1 for e in found if e is not None and e.passed() is False)
        undefined = sum(1 for e in found if e is not None and e.passed() is None)
        errors = sum(1 for o in result.outcomes if evaluator_id in o.evaluator_errors)
        console.print(
            f"{shown(evaluator_id)}: {passed} passed, {failed} failed, {undefined} undefined, "
            f"{errors} error(s)",
            markup=False,
        )
    for line in result.regressions:
        console.print(f"regression: {shown(line)}", style="yellow", markup=False)
    for outcome in result.outcomes:
        for where, error in (
            [("fn", outcome.error)] if outcome.error else list(outcome.evaluator_errors.items())
        ):
            console.print(
                f"error: {shown(outcome.hash)}: {where}: {shown(error)}", style="red", markup=False
            )
