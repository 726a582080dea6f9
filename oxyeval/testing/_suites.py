"""Autoblocks-style test suites: your test cases through your function, each output
scored by evaluators, printed as a table and kept in the history.

    run_test_suite("support-bot", test_cases, [HasAllSubstrings("cites"), ...], fn=answer)

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._evaluators import BaseTestCase, BaseTestEvaluator, Evaluation, Threshold
from ._results import Measured, case_states, decide_results, sdk_result

if TYPE_CHECKING:
    from ..evaluation import Decision, EventSink, Result

__all__ = [
    "CaseOutcome",
    "SuiteResult",
    "render_suite",
    "run_test_suite",
    "run_test_suite_async",
]


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


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``: awaited when async, else in a worker thread (so sync functions that
    wait on the network run side by side)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    result = await asyncio.to_thread(fn, *args)
    if inspect.isawaitable(result):  # a sync function that returned a coroutine
        return await result
    return result


def _check(id: str, test_cases: Sequence[Any], evaluators: Sequence[Any], fn: Any) -> list[str]:
    if not isinstance(id, str) or not id.strip():
        raise ValueError(f"run_test_suite: id must be a non-empty string, not {id!r}")
    if not callable(fn):
        raise TypeError(f"run_test_suite: fn must be callable, not {fn!r}")
    hashes: dict[str, int] = {}
    for i, case in enumerate(test_cases):
        if not isinstance(case, BaseTestCase):
            raise TypeError(
                f"run_test_suite: test case {i} is a {type(case).__name__}, not a BaseTestCase "
                "subclass with a hash() method"
            )
        key = case.hash()
        if not isinstance(key, str) or not key:
            raise ValueError(
                f"run_test_suite: test case {i}'s hash() must return a non-empty string"
            )
        if key in hashes:
            raise ValueError(
                f"run_test_suite: test cases {hashes[key]} and {i} have the same hash {key!r}; "
                "a hash identifies a test case, so each must be unique"
            )
        hashes[key] = i
    ids: list[str] = []
    for evaluator in evaluators:
        if not isinstance(evaluator, BaseTestEvaluator):
            raise TypeError(f"run_test_suite: {evaluator!r} is not a BaseTestEvaluator")
        if not getattr(evaluator, "id", None):
            raise ValueError(f"run_test_suite: evaluator {type(evaluator).__name__} has no id")
        if evaluator.id in ids:
            raise ValueError(f"run_test_suite: two evaluators have the id {evaluator.id!r}")
        ids.append(evaluator.id)
    return ids


async def run_test_suite_async(
    id: str,
    test_cases: Sequence[BaseTestCase],
    evaluators: Sequence[BaseTestEvaluator],
    fn: Callable[[Any], Any],
    max_test_case_concurrency: int | None = None,
    *,
    print_results: bool = True,
    history: bool = True,
    cache: bool | None = None,
    events: EventSink | Iterable[EventSink | None] | None = None,
) -> SuiteResult:
    """Run every test case through ``fn`` (at most ``max_test_case_concurrency`` at once),
    then every evaluator on its output (each within its own ``max_concurrency``), as one
    SDK run: kept in the project's history (``history=False``: not), judges' answers
    replayed on a rerun (``cache=False``: not), ``events`` told as it goes."""
    from ._run import Check, Subject, run_sdk

    evaluator_ids = _check(id, test_cases, evaluators, fn)

    def check(evaluator: BaseTestEvaluator) -> Check:
        async def measure(case: Any, output: Any) -> Measured | None:
            found = await _call(evaluator.evaluate_test_case, case, output)
            if found is not None and not isinstance(found, Evaluation):
                raise TypeError(f"returned {type(found).__name__}, not an Evaluation or None")
            return None if found is None else _measured(found)

        return Check(evaluator.id, measure, evaluator.max_concurrency)

    async def produce(case: BaseTestCase) -> Any:
        return await _call(fn, case)

    checks = [check(e) for e in evaluators]
    subjects = [Subject(c.hash(), c, checks, label=c.hash(), produce=produce) for c in test_cases]
    finished = await run_sdk(
        id,
        subjects,
        produce_limit=max_test_case_concurrency,
        history=history,
        cache=cache,
        events=events,
    )
    sizes = [len(o.results) for o in finished.outcomes]
    result = SuiteResult(id, evaluator_ids, regressions=finished.regressions)
    result.decision = finished.decision
    for outcome, passed in zip(
        finished.outcomes, case_states(finished.decision, sizes), strict=True
    ):
        case = CaseOutcome(
            outcome.subject.key,
            outcome.subject.item,
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
    if print_results:
        render_suite(result)
    return result


def run_test_suite(
    id: str,
    test_cases: Sequence[BaseTestCase],
    evaluators: Sequence[BaseTestEvaluator],
    fn: Callable[[Any], Any],
    max_test_case_concurrency: int | None = None,
    *,
    print_results: bool = True,
    history: bool = True,
    cache: bool | None = None,
    events: EventSink | Iterable[EventSink | None] | None = None,
) -> SuiteResult:
    """:func:`run_test_suite_async` for scripts and tests (inside a running event loop it
    runs in a worker thread with a loop of its own)."""
    main = run_test_suite_async(
        id,
        test_cases,
        evaluators,
        fn,
        max_test_case_concurrency,
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
    table = Table(title=Text(f"test suite {shown(result.id)}"), title_justify="left")
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
