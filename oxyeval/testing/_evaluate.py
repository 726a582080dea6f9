"""``evaluate`` and ``assert_test``: many metrics over many test cases, concurrently.

Each (test case, metric) pair is measured on a shallow copy of the metric, so one
metric object listed once serves every case and its outcome attributes never mix
between cases. Every pair runs in one event loop (one judge pool for the whole call),
at most ``concurrency`` pairs at a time; a metric that fails is reported as an error
for its pair and never stops the others or counts as a pass.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..redact import clip
from ._cases import ConversationalTestCase, LLMTestCase
from ._metric import run_sync

__all__ = [
    "EvaluationResult",
    "MetricData",
    "TestResult",
    "assert_test",
    "evaluate",
    "render_results",
]

TestCase = LLMTestCase | ConversationalTestCase


@dataclass
class MetricData:
    """One metric's outcome on one test case."""

    name: str
    threshold: float
    success: bool
    score: float | None
    reason: str | None
    strict_mode: bool = False
    evaluation_model: str | None = None
    error: str | None = None


@dataclass
class TestResult:
    """One test case's outcome: passed when every metric succeeded without error."""

    __test__ = False  # not a pytest class

    name: str
    success: bool
    metrics_data: list[MetricData]
    test_case: TestCase
    conversational: bool = False

    @property
    def input(self) -> str | None:
        case = self.test_case
        return case.input if isinstance(case, LLMTestCase) else None

    @property
    def actual_output(self) -> str | None:
        case = self.test_case
        return case.actual_output if isinstance(case, LLMTestCase) else None


@dataclass
class EvaluationResult:
    """What ``evaluate`` returns: one :class:`TestResult` per test case, in order."""

    test_results: list[TestResult] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return all(t.success for t in self.test_results)


async def _measure(metric: Any, case: TestCase) -> MetricData:
    mine = copy.copy(metric)
    error: str | None = None
    try:
        if hasattr(mine, "a_measure"):
            await mine.a_measure(case)
        else:
            await asyncio.to_thread(mine.measure, case)
    except Exception as exc:  # one pair's failure is its result, not the run's
        error = getattr(mine, "error", None) or f"{type(exc).__name__}: {exc}"
    name = getattr(mine, "__name__", None) or type(mine).__name__
    if not isinstance(name, str):
        name = type(mine).__name__
    success = error is None and bool(getattr(mine, "success", False))
    return MetricData(
        name=name,
        threshold=float(getattr(mine, "threshold", 0.5)),
        success=success,
        score=None if error else getattr(mine, "score", None),
        reason=getattr(mine, "reason", None),
        strict_mode=bool(getattr(mine, "strict_mode", False)),
        evaluation_model=getattr(mine, "evaluation_model", getattr(mine, "model", None)),
        error=error,
    )


async def a_evaluate(
    test_cases: Sequence[TestCase], metrics: Sequence[Any], concurrency: int
) -> EvaluationResult:
    """:func:`evaluate` without printing, for async callers."""
    gate = asyncio.Semaphore(concurrency)

    async def one(metric: Any, case: TestCase) -> MetricData:
        async with gate:
            return await _measure(metric, case)

    jobs = [[one(m, case) for m in metrics] for case in test_cases]
    rows = await asyncio.gather(*(asyncio.gather(*row) for row in jobs))
    results = []
    for i, (case, data) in enumerate(zip(test_cases, rows, strict=True)):
        results.append(
            TestResult(
                name=f"test_case_{i}",
                success=all(d.success for d in data),
                metrics_data=list(data),
                test_case=case,
                conversational=isinstance(case, ConversationalTestCase),
            )
        )
    return EvaluationResult(results)


def _check(test_cases: Any, metrics: Any, concurrency: Any) -> None:
    if isinstance(test_cases, (LLMTestCase, ConversationalTestCase)):
        raise TypeError("test_cases must be a list of test cases, got a single test case")
    for i, case in enumerate(test_cases):
        if not isinstance(case, (LLMTestCase, ConversationalTestCase)):
            raise TypeError(
                f"test_cases[{i}] must be an LLMTestCase or ConversationalTestCase, got "
                f"{type(case).__name__}"
            )
    for i, metric in enumerate(metrics):
        if not (hasattr(metric, "a_measure") or hasattr(metric, "measure")):
            raise TypeError(f"metrics[{i}] has no measure method: {type(metric).__name__}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")


def _cell(text: str | None, limit: int = 160) -> str:
    return clip(" ".join((text or "").split()), limit)


def render_results(result: EvaluationResult) -> None:
    """The rich table: one row per (test case, metric), then a summary line."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title="oxyeval: metric results", show_lines=False)
    for column in ("test case", "metric", "score", "result", "reason"):
        table.add_column(column, overflow="fold")
    for test in result.test_results:
        label = test.input if test.input is not None else f"{len(test.test_case.turns)} turns"  # type: ignore[union-attr]
        for data in test.metrics_data:
            if data.error:
                verdict, style, why = "error", "bold yellow", data.error
            elif data.success:
                verdict, style, why = "pass", "green", data.reason
            else:
                verdict, style, why = "fail", "bold red", data.reason
            score = "-" if data.score is None else f"{data.score:.2f}"
            table.add_row(
                Text(f"{test.name}: {_cell(label, 40)}"),
                Text(data.name),
                Text(f"{score} (≥{data.threshold:g})"),
                Text(verdict, style=style),
                Text(_cell(why)),
            )
    console = Console()
    console.print(table)
    cases = result.test_results
    pairs = [d for t in cases for d in t.metrics_data]
    errors = sum(1 for d in pairs if d.error)
    passed = sum(1 for d in pairs if d.success)
    console.print(
        Text(
            f"{sum(t.success for t in cases)} of {len(cases)} test cases passed; metrics: "
            f"{passed} passed, {len(pairs) - passed - errors} failed, {errors} errors"
        )
    )


def evaluate(
    test_cases: Sequence[TestCase],
    metrics: Sequence[Any],
    *,
    concurrency: int = 8,
    print_results: bool = True,
    identifier: str = "evaluate",
    history: bool = True,
) -> EvaluationResult:
    """Measure every metric on every test case, at most ``concurrency`` at a time;
    print a table (``print_results``) and return the outcome per test case. Inside a
    project the evaluations are kept in its history as a run of ``identifier``
    (``history=False``: not), each score compared with the same case's previous one."""
    if isinstance(test_cases, (LLMTestCase, ConversationalTestCase)):
        raise TypeError("test_cases must be a list of test cases, got a single test case")
    test_cases, metrics = list(test_cases), list(metrics)
    _check(test_cases, metrics, concurrency)
    result = run_sync(a_evaluate(test_cases, metrics, concurrency))
    _record(result)
    regressions = _store(identifier, result) if history else []
    if print_results:
        render_results(result)
        for line in regressions:
            print(f"regression: {line}")
    return result


def _store(identifier: str, result: EvaluationResult) -> list[str]:
    from ._history import Evaluated, store_evaluations

    rows = []
    for test in result.test_results:
        case = test.input if test.input is not None else f"{test.name} (conversation)"
        for data in test.metrics_data:
            rows.append(
                Evaluated(
                    case=clip(" ".join(case.split()), 200),
                    metric=data.name,
                    score=data.score,
                    passed=None if data.error else data.success,
                    reason=data.reason,
                    error=data.error,
                    threshold=data.threshold,
                )
            )
    store_evaluations(identifier, rows)
    return [f"{r.case} / {r.metric}: {m}" for r in rows for m in r.regressions]


#: What evaluate() and assert_test() measured in this process, for the pytest plugin's
#: summary; bounded, so a long session cannot grow it without end.
RECORDED: list[MetricData] = []
MAX_RECORDED = 100_000
#: What assert_test() measured, with the test case's input: the pytest plugin keeps these
#: in the history at the end of the session (evaluate() keeps its own).
ASSERTED: list[tuple[str, MetricData]] = []


def _record(result: EvaluationResult) -> None:
    room = MAX_RECORDED - len(RECORDED)
    if room > 0:
        RECORDED.extend([d for t in result.test_results for d in t.metrics_data][:room])


def assert_test(test_case: TestCase, metrics: Sequence[Any]) -> None:
    """Measure ``metrics`` on ``test_case``; raise AssertionError naming each metric that
    failed (score, threshold, reason) or could not score (its error)."""
    metrics = list(metrics)
    _check([test_case], metrics, 1)
    result = run_sync(a_evaluate([test_case], metrics, max(1, len(metrics))))
    _record(result)
    if len(ASSERTED) < MAX_RECORDED:
        test = result.test_results[0]
        label = test.input if test.input is not None else f"{len(test_case.turns)} turns"  # type: ignore[union-attr]
        ASSERTED.extend((clip(" ".join(label.split()), 200), d) for d in test.metrics_data)
    failed = []
    for data in result.test_results[0].metrics_data:
        if data.error:
            failed.append(f"{data.name}: error: {data.error}")
        elif not data.success:
            score = "none" if data.score is None else f"{data.score:.2f}"
            failed.append(
                f"{data.name}: score {score} < threshold {data.threshold:g}"
                + (f" (reason: {data.reason})" if data.reason else "")
            )
    if failed:
        raise AssertionError("metrics failed: " + "; ".join(failed))
