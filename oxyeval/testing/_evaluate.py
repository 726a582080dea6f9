"""``evaluate`` and ``assert_test``: many metrics over many test cases, as one SDK run.

Both are thin over the SDK's runner (:mod:`._run`): each test case a subject whose output
it carries, each metric a check. Each (test case, metric) pair is measured on a shallow
copy of the metric, so one metric object listed once serves every case and its outcome
attributes never mix between cases; a metric that fails is reported as an error for its
pair and never stops the others or counts as a pass. Whether a test case, an
``evaluate`` or an ``assert_test`` passed is read off the one decision over the results.
"""

from __future__ import annotations

import asyncio
import copy
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..redact import clip
from ._cases import ConversationalTestCase, LLMTestCase, Turn
from ._configs import Settings
from ._hyperparameters import hyperparameters_of, log_hyperparameters
from ._metric import run_sync
from ._results import Measured, case_states, decide_results, sdk_result, shown_case

if TYPE_CHECKING:
    from ..evaluation import Decision, EventSink
    from ._configs import AsyncConfig, CacheConfig, DisplayConfig, ErrorConfig
    from ._run import Check, Finished, Subject

__all__ = [
    "EvaluationResult",
    "MetricData",
    "TestResult",
    "a_evaluate",
    "assert_test",
    "evaluate",
    "log_hyperparameters",
    "render_results",
]

TestCase = LLMTestCase | ConversationalTestCase


@dataclass
class MetricData:
    """One metric's outcome on one test case; ``success`` is the metric's own check
    (score at least its threshold, without error)."""

    name: str
    threshold: float
    success: bool
    score: float | None
    reason: str | None
    strict_mode: bool = False
    evaluation_model: str | None = None
    error: str | None = None
    evaluation_cost: float | None = None
    verbose_logs: str | None = None


@dataclass
class TestResult:
    """One test case's outcome: it passed when the decision found none of its metrics
    failing or unscored."""

    __test__ = False  # not a pytest class

    name: str
    success: bool
    metrics_data: list[MetricData]
    test_case: TestCase
    conversational: bool = False

    index: int | None = None

    def _field(self, name: str) -> Any:
        case = self.test_case
        return getattr(case, name, None) if isinstance(case, LLMTestCase) else None

    @property
    def input(self) -> str | None:
        return self._field("input")  # type: ignore[no-any-return]

    @property
    def actual_output(self) -> str | None:
        return self._field("actual_output")  # type: ignore[no-any-return]

    @property
    def expected_output(self) -> str | None:
        return self._field("expected_output")  # type: ignore[no-any-return]

    @property
    def context(self) -> list[str] | None:
        return self._field("context")  # type: ignore[no-any-return]

    @property
    def retrieval_context(self) -> list[str] | None:
        return self._field("retrieval_context")  # type: ignore[no-any-return]

    @property
    def metadata(self) -> dict[str, Any] | None:
        return self.test_case.metadata

    @property
    def multimodal(self) -> bool:
        return bool(getattr(self.test_case, "multimodal", False))

    @property
    def turns(self) -> list[Any] | None:
        case = self.test_case
        return list(case.turns) if isinstance(case, ConversationalTestCase) else None


def _case_key(case: TestCase) -> str:
    """A test case's name in the history, what a later run's same case is found by: its
    input; a conversation's first input (a place in a list would tie unrelated
    conversations together when the list changes)."""
    if isinstance(case, LLMTestCase):
        return shown_case(case.name or case.input)
    if case.name:
        return f"{shown_case(case.name)} (conversation)"
    first = case.turns[0]
    text = first.content if isinstance(first, Turn) else first.input
    return f"{shown_case(text)} (conversation)"


def _measured(data: MetricData) -> Measured:
    return Measured(
        score=data.score,
        passed=None if data.error else data.success,
        reason=data.reason,
        error=data.error,
        threshold=data.threshold,
        value=data,
    )


@dataclass
class EvaluationResult:
    """What ``evaluate`` returns: one :class:`TestResult` per test case, in order; the
    decision over their results (``success``), and the regressions the history showed.
    """

    test_results: list[TestResult] = field(default_factory=list)
    decision: Decision | None = None
    #: Scores lower than the same test case's previous one under the same metric.
    regressions: list[str] = field(default_factory=list)
    #: What the run was made with (``hyperparameters=``, ``log_hyperparameters``).
    hyperparameters: dict[str, str] = field(default_factory=dict)
    #: DeepEval's links to its hosted dashboard: there is none here.
    confident_link: str | None = None
    test_run_id: str | None = None

    def __post_init__(self) -> None:
        if self.decision is None:  # made by hand: decided over the same results
            results = [
                sdk_result("evaluate", _case_key(t.test_case), d.name, _measured(d))
                for t in self.test_results
                for d in t.metrics_data
            ]
            self.decision = decide_results(results)

    @property
    def success(self) -> bool:
        assert self.decision is not None
        return self.decision.passed


class _Skipped(Exception):
    """The test case lacks a field the metric reads, and the run skips such pairs."""


async def _measure(metric: Any, case: TestCase, skip_missing: bool = False) -> MetricData:
    from ._metric import MissingTestCaseParamsError

    mine = copy.copy(metric)
    error: str | None = None
    try:
        if hasattr(mine, "a_measure"):
            await mine.a_measure(case)
        else:
            await asyncio.to_thread(mine.measure, case)
    except MissingTestCaseParamsError as exc:
        if skip_missing:
            raise _Skipped from None
        error = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # one pair's failure is its result, not the run's
        error = getattr(mine, "error", None) or f"{type(exc).__name__}: {exc}"
    name = getattr(mine, "__name__", None) or type(mine).__name__
    if not isinstance(name, str):
        name = type(mine).__name__
    success = error is None and _successful(mine)
    from ._judge import model_label

    judge = getattr(mine, "evaluation_model", getattr(mine, "model", None))
    return MetricData(
        name=name,
        threshold=float(getattr(mine, "threshold", 0.5)),
        success=success,
        score=None if error else getattr(mine, "score", None),
        reason=getattr(mine, "reason", None),
        strict_mode=bool(getattr(mine, "strict_mode", False)),
        evaluation_model=model_label(judge),
        error=error,
    )


def _successful(metric: Any) -> bool:
    """A measured metric's own verdict: its ``is_successful()`` as DeepEval reads it,
    else its ``success``; a hand-written one that raises is no pass."""
    check = getattr(metric, "is_successful", None)
    if callable(check):
        try:
            return bool(check())
        except Exception:  # a custom metric's own bug: not a pass
            return False
    return bool(getattr(metric, "success", False))


def _metric_name(metric: Any) -> str:
    name = getattr(metric, "__name__", None)
    return name if isinstance(name, str) and name else type(metric).__name__


def _checks(metrics: Sequence[Any], skip_missing: bool = False) -> list[Check]:
    from ._run import Check

    def check(metric: Any) -> Check:
        name = _metric_name(metric)

        async def measure(case: TestCase, _output: Any) -> Measured | None:
            try:
                return _measured(await _measure(metric, case, skip_missing))
            except _Skipped:
                return None
            except Exception as exc:  # not even measurable (a bad threshold): its error
                error = f"{type(exc).__name__}: {exc}"
                return _measured(MetricData(name, 0.5, False, None, None, error=error))

        return Check(name, measure)

    return [check(m) for m in metrics]


def _subjects(
    test_cases: Sequence[TestCase], metrics: Sequence[Any], skip_missing: bool = False
) -> list[Subject]:
    from ._run import Subject

    checks = _checks(metrics, skip_missing)
    return [
        Subject(_case_key(case), case, checks, label=f"test_case_{i}")
        for i, case in enumerate(test_cases)
    ]


def _evaluation(test_cases: Sequence[TestCase], finished: Finished) -> EvaluationResult:
    """The run's outcomes as DeepEval's shape, each case's success read off the decision."""
    outcomes = finished.outcomes
    states = case_states(finished.decision, [len(o.results) for o in outcomes])
    tests = []
    for i, (case, outcome, passed) in enumerate(zip(test_cases, outcomes, states, strict=True)):
        data = [m.value for m in outcome.measured if m is not None]
        tests.append(
            TestResult(
                name=case.name or f"test_case_{i}",
                success=passed,
                metrics_data=data,
                test_case=case,
                conversational=isinstance(case, ConversationalTestCase),
                index=i,
            )
        )
    return EvaluationResult(tests, finished.decision, finished.regressions)


async def a_evaluate(
    test_cases: Sequence[TestCase],
    metrics: Sequence[Any] | None = None,
    concurrency: int = 8,
    *,
    identifier: str | None = None,
    history: bool = True,
    cache: bool | None = None,
    events: EventSink | Iterable[EventSink | None] | None = None,
    skip_on_missing_params: bool = False,
    hyperparameters: Mapping[str, Any] | None = None,
) -> EvaluationResult:
    """:func:`evaluate` without printing or raising, for async callers."""
    from ._run import run_sdk

    if isinstance(test_cases, (LLMTestCase, ConversationalTestCase)):
        raise TypeError("test_cases must be a list of test cases, got a single test case")
    test_cases, metrics = list(test_cases), list(metrics or [])
    _check(test_cases, metrics, concurrency)
    finished = await run_sdk(
        identifier or "evaluate",
        _subjects(test_cases, metrics, skip_on_missing_params),
        concurrency=concurrency,
        history=history,
        cache=cache,
        events=events,
    )
    result = _evaluation(test_cases, finished)
    result.hyperparameters = hyperparameters_of(hyperparameters)
    return result


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
    metrics: Sequence[Any] | None = None,
    *,
    hyperparameters: Mapping[str, Any] | None = None,
    identifier: str | None = None,
    async_config: AsyncConfig | None = None,
    display_config: DisplayConfig | None = None,
    cache_config: CacheConfig | None = None,
    error_config: ErrorConfig | None = None,
    metric_collection: str | None = None,
    official: bool = False,
    concurrency: int | None = None,
    print_results: bool | None = None,
    history: bool = True,
    cache: bool | None = None,
    events: EventSink | Iterable[EventSink | None] | None = None,
) -> EvaluationResult:
    """Measure every metric on every test case, several at a time (``concurrency``,
    else ``async_config.max_concurrent``, else 8); print a table (``print_results``, or
    ``display_config.print_results``) and return the outcome per test case.

    A metric that could not score (its judge failed) raises :class:`MetricError` once
    the run has finished and been kept, as DeepEval's ``evaluate`` raises; with
    ``error_config=ErrorConfig(ignore_errors=True)`` it is reported as an error and
    the result returned (its test case did not pass). ``skip_on_missing_params``: a
    metric whose test case lacks a field it reads is skipped for that case.

    Inside a project this is a run of ``identifier`` in its history (``history=False``:
    not): each score compared with the same case's previous one, and the judges' answers
    kept, so a rerun of unchanged test cases asks the judge nothing (``cache=False``,
    or ``cache_config=CacheConfig(use_cache=False)``: neither kept nor replayed).
    ``events`` subscribe to the run's events. ``metric_collection`` and ``official``
    name things on DeepEval's hosted service: they must be left unset here."""
    if metric_collection is not None:
        raise ValueError(
            "metric_collection names metrics kept on Confident AI; oxyeval runs the "
            "metrics you pass in metrics=[...]"
        )
    if isinstance(test_cases, (LLMTestCase, ConversationalTestCase)):
        raise TypeError("test_cases must be a list of test cases, got a single test case")
    test_cases, metrics = list(test_cases), list(metrics or [])
    settings = Settings.of(
        async_config, display_config, cache_config, error_config, concurrency, print_results, cache
    )
    _check(test_cases, metrics, settings.concurrency)
    subjects = _subjects(test_cases, metrics, settings.errors.skip_on_missing_params)
    return _evaluate_subjects(
        test_cases, subjects, settings, identifier or "evaluate", history, events, hyperparameters
    )


def _evaluate_subjects(
    cases: list[TestCase],
    subjects: list[Subject],
    settings: Settings,
    identifier: str,
    history: bool = True,
    events: EventSink | Iterable[EventSink | None] | None = None,
    hyperparameters: Mapping[str, Any] | None = None,
) -> EvaluationResult:
    """Run ``subjects`` (``cases``' own) as one SDK run; print, record, and raise on a
    metric that could not score unless the settings ignore errors."""
    from ._metric import MetricError
    from ._run import run_sdk

    logged = hyperparameters_of(hyperparameters)
    finished = run_sync(
        run_sdk(
            identifier,
            subjects,
            concurrency=settings.concurrency,
            history=history,
            cache=settings.cache,
            events=events,
        )
    )
    result = _evaluation(cases, finished)
    result.hyperparameters = logged
    _record(result)
    if settings.print_results:
        render_results(result)
        for line in result.regressions:
            print(f"regression: {line}")
    if not settings.errors.ignore_errors:
        errors = [
            f"{t.name} / {d.name}: {d.error}"
            for t in result.test_results
            for d in t.metrics_data
            if d.error
        ]
        if errors:
            more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
            raise MetricError(
                f"{len(errors)} metric(s) could not score: "
                + "; ".join(errors[:3])
                + more
                + ". Pass error_config=ErrorConfig(ignore_errors=True) to report them and "
                "go on."
            )
    return result


def evaluate_pairs(
    pairs: Sequence[tuple[LLMTestCase, list[Any]]],
    *,
    identifier: str,
    hyperparameters: Mapping[str, Any] | None = None,
    async_config: AsyncConfig | None = None,
    display_config: DisplayConfig | None = None,
    cache_config: CacheConfig | None = None,
    error_config: ErrorConfig | None = None,
) -> EvaluationResult:
    """Test cases each scored by its own metrics (traced spans), as one run."""
    from ._tracing import subjects_for

    settings = Settings.of(async_config, display_config, cache_config, error_config)
    cases, subjects = subjects_for(pairs)
    return _evaluate_subjects(
        cases, subjects, settings, identifier, hyperparameters=hyperparameters
    )


#: What evaluate() and assert_test() measured in this process, for the pytest plugin's
#: summary; bounded, so a long session cannot grow it without end.
RECORDED: list[MetricData] = []
MAX_RECORDED = 100_000


def _record(result: EvaluationResult) -> None:
    room = MAX_RECORDED - len(RECORDED)
    if room > 0:
        RECORDED.extend([d for t in result.test_results for d in t.metrics_data][:room])


def _skip_missing() -> bool:
    """``--oxy-skip-on-missing-params`` of the pytest session running, if any."""
    import sys

    plugin = sys.modules.get("oxyeval.testing._pytest")
    return bool(plugin.skip_missing()) if plugin is not None else False


def _session_run() -> Any:
    """The pytest session's run of ``assert_test`` s, when the plugin is running one."""
    import sys

    plugin = sys.modules.get("oxyeval.testing._pytest")
    return plugin.live_run() if plugin is not None else None


def _failure_message(result: TestResult) -> str | None:
    """DeepEval's words for a failed test case: each metric that failed or erred (None:
    none did, the decision failed it for another reason)."""
    parts = [
        f"{d.name} (score: {d.score}, threshold: {d.threshold}, strict: {d.strict_mode}, "
        f"error: {d.error}, reason: {d.reason})"
        for d in result.metrics_data
        if d.error is not None or not d.success
    ]
    return f"Metrics: {', '.join(parts)} failed." if parts else None


def assert_test(
    test_case: TestCase | None = None,
    metrics: Sequence[Any] | None = None,
    golden: Any = None,
    run_async: bool = True,
    classifiers: Sequence[Any] | None = None,
) -> None:
    """Measure ``metrics`` on ``test_case`` and raise AssertionError, in DeepEval's
    words, naming each metric that failed (score, threshold, reason) or could not
    score (its error); a ``flaky`` test case warns instead. Whether it passed is read
    off the one decision. Under pytest every ``assert_test`` of the session is one run
    in the project's history ("pytest"); elsewhere each call is a run of its own.

    ``golden=`` instead of a test case: the trace the test just ran (``@observe``) is
    the test case, ``metrics`` scoring it whole and each span scored by its own."""
    __tracebackhide__ = True  # pytest shows the test's line, not this function's
    from ._run import run_sdk

    if classifiers:
        raise ValueError("classifiers are not supported by oxyeval's assert_test")
    if test_case is None:
        if golden is None:
            raise ValueError("assert_test needs a test_case, or a golden with a traced run")
        from ._tracing import trace_subjects

        cases, subjects = trace_subjects(golden, list(metrics or []))
    else:
        metrics = list(metrics or [])
        if not metrics:
            raise ValueError("assert_test needs at least one metric")
        _check([test_case], metrics, 1)
        cases, subjects = [test_case], _subjects([test_case], metrics, _skip_missing())
    session = _session_run()
    if session is not None:
        finished = session.measure(subjects)
    else:
        width = max(1, sum(len(s.checks) for s in subjects)) if run_async else 1
        finished = run_sync(run_sdk("assert_test", subjects, concurrency=width))
    result = _evaluation(cases, finished)
    _record(result)
    if finished.decision.passed:
        return
    failed = [t for t in result.test_results if not t.success]
    message = " ".join(m for m in map(_failure_message, failed) if m) or (
        "metrics failed: " + "; ".join(finished.decision.reasons)
    )
    if all(getattr(t.test_case, "flaky", False) for t in failed) and failed:
        warnings.warn(f"Flaky test case failed (no assertion raised): {message}", stacklevel=2)
        return
    raise AssertionError(message)
