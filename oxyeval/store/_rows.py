"""Typed rows: what the repositories return (frozen, snake_case) and the inputs they take
(those of ``oxy test`` and ``oxy run`` results are in ``_result_rows``).

Derived numbers (pass rate, averages) are properties computed from the stored sums, so a
row never disagrees with itself. Shaping for an API (the Testing API's camelCase) is not done
here: see ``oxyeval.report.cases``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._pickled import as_values

__all__ = [
    "CaseHistory",
    "CaseStats",
    "Execution",
    "ExecutionSummary",
    "HistoryPoint",
    "NewExecution",
    "Prompt",
    "PromptVersion",
    "Run",
    "TestCase",
    "TrendPoint",
    "WorkflowRunRecord",
    "WorkflowTask",
]


def pass_rate(passes: int, runs: int) -> float | None:
    """Percent (0-100, the Testing API's unit); None when nothing was judged."""
    return None if runs == 0 else 100.0 * passes / runs


def average(total: float, count: int) -> float | None:
    return None if count == 0 else total / count


@dataclass(frozen=True)
class Prompt:
    id: str
    name: str
    source: str
    created_at: str


@dataclass(frozen=True)
class PromptVersion:
    prompt_id: str
    version: int
    content_hash: str
    created_at: str


@dataclass(frozen=True, slots=True)
class TestCase:
    """A test case with its maintained aggregates (judged executions only)."""

    __test__ = False  # not a pytest class

    id: str
    prompt_id: str
    name: str
    description: str | None
    input: dict[str, Any]
    expected_output: str | None
    threshold: float | None
    source_file: str | None
    created_at: str
    updated_at: str
    deleted_at: str | None = None
    total_runs: int = 0
    pass_count: int = 0
    score_sum: float = 0.0
    scored_runs: int = 0
    length_sum: int = 0
    last_run: str | None = None
    last_passed: bool | None = None

    @property
    def pass_rate(self) -> float | None:
        return pass_rate(self.pass_count, self.total_runs)

    @property
    def avg_score(self) -> float | None:
        return average(self.score_sum, self.scored_runs)

    @property
    def avg_length(self) -> float | None:
        return average(self.length_sum, self.total_runs)


@dataclass(frozen=True, kw_only=True)
class NewExecution:
    """One execution to record. ``status`` says what happened; only passed and failed
    executions count in a case's aggregates (pending: no expected output yet; error: no
    usable output, the reason in ``error``).

    ``expected_output`` None means "the case's current one" (snapshotted at write time);
    ``length_diff`` None means len(actual) - len(expected) when there is an output.
    """

    test_case_id: str
    status: str
    prompt_version: int
    actual_output: str | None = None
    run_id: str | None = None
    execution_id: str | None = None
    score: float | None = None
    expected_output: str | None = None
    output_diff: Any = None
    exact_match: bool = False
    semantic_score: float | None = None
    similarity_method: str = ""
    length_diff: int | None = None
    token_diff: int | None = None
    token_method: str = ""
    is_regression: bool = False
    regression_type: str | None = None
    regression_types: tuple[str, ...] | list[str] = ()
    run_duration_ms: float = 0.0
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    error: str | None = None
    created_at: str | None = None
    id: str | None = None
    #: Kept in the execution's ``results`` row, not in ``executions``: what
    #: the call cost (None: no known price) and its time to first token (streamed calls).
    cost_usd: float | None = None
    ttft_ms: float | None = None


@dataclass(frozen=True)
class Execution:
    id: str
    test_case_id: str
    run_id: str | None
    execution_id: str
    status: str
    score: float | None
    actual_output: str | None
    expected_output: str | None
    output_diff: Any
    exact_match: bool
    semantic_score: float | None
    similarity_method: str
    length_diff: int | None
    token_diff: int | None
    token_method: str
    is_regression: bool
    regression_type: str | None
    regression_types: tuple[str, ...]
    prompt_version: int
    run_duration_ms: float
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None
    error: str | None
    created_at: str
    #: What the call cost in USD (kept in its ``results`` row; None: no known price).
    cost_usd: float | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def pending(self) -> bool:
        return self.status == "pending"


@dataclass(frozen=True)
class Run:
    """A run with its results counted, the same way for every kind (``results.outcome``):
    ``passed`` and ``failed`` by their own check, ``errors`` those whose outcome is
    unknown, ``pending`` those their kind calls neutral; ``results`` all of them;
    ``average_score`` over the scored ones whose outcome is known (an interrupted test's
    partial score is not averaged). ``statuses`` counts them by their kind's own status
    words; ``regressions`` is what only test cases have (their executions).
    """

    id: str
    kind: str
    group_id: str | None
    subject: str | None
    prompt_id: str | None
    prompt_version: int | None
    started_at: str
    finished_at: str | None
    status: str
    total: int
    done: int
    pid: int | None
    host: str | None
    passed: int = 0
    failed: int = 0
    pending: int = 0
    errors: int = 0
    regressions: int = 0
    results: int = 0
    scored: int = 0
    score_sum: float = 0.0
    statuses: Mapping[str, int] = field(default_factory=dict, hash=False)

    @property
    def average_score(self) -> float | None:
        return average(self.score_sum, self.scored)


@dataclass(frozen=True)
class ExecutionSummary:
    """A recent execution or a regression in a case's statistics (no output text)."""

    id: str
    status: str
    score: float | None
    prompt_version: int
    created_at: str
    regression_type: str | None = None
    regression_types: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass(frozen=True)
class TrendPoint:
    date: str  # UTC day, YYYY-MM-DD
    total_runs: int
    passes: int
    score_sum: float
    scored: int

    @property
    def pass_rate(self) -> float | None:
        return pass_rate(self.passes, self.total_runs)

    @property
    def avg_score(self) -> float | None:
        return average(self.score_sum, self.scored)


@dataclass(frozen=True)
class CaseStats:
    test_case_id: str
    total_runs: int
    pass_rate: float | None
    avg_score: float | None
    recent_runs: tuple[ExecutionSummary, ...]
    regressions: tuple[ExecutionSummary, ...]  # newest first, capped (see regression_count)
    regression_count: int
    trend: tuple[TrendPoint, ...]


@dataclass(frozen=True)
class CaseActivity:
    """Every execution of a case, judged or not (from the results rollup): what the
    judged-only aggregates (``total_runs``, ``last_run``) leave out, so a case that ran
    seven times without an expected output does not read as never run."""

    executions: int
    passed: int
    failed: int
    errors: int
    last_day: str | None  # YYYY-MM-DD (UTC) of its latest execution

    @property
    def pending(self) -> int:
        return self.executions - self.passed - self.failed - self.errors


@as_values
@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """What regression detection needs of one earlier judged execution."""

    id: str
    status: str
    score: float | None
    actual_length: int | None
    length_diff: int | None
    exact_match: bool
    semantic_score: float | None
    is_regression: bool
    prompt_version: int
    created_at: str


@as_values
@dataclass(frozen=True, slots=True)
class CaseHistory:
    """Regression-detection inputs, from one snapshot; pass rate as a 0..1 fraction.

    ``recent_scores`` and ``recent_lengths`` are what detection compares with (the newest
    comparable executions' scores, and their lengths where they have an output), always
    filled; ``recent``, those executions in full, only by the reads that walk them."""

    total_runs: int
    historical_pass_rate: float | None
    avg_score: float | None
    avg_length: float | None
    recent: tuple[HistoryPoint, ...] = ()
    recent_scores: tuple[float | None, ...] = ()
    recent_lengths: tuple[int, ...] = ()


@dataclass(frozen=True)
class WorkflowTask:
    path: str
    name: str
    type: str
    status: str
    started_ms: float | None
    duration_ms: float | None
    output: Any
    error: str | None


@dataclass(frozen=True)
class WorkflowRunRecord:
    run: Run
    workflow: str
    variables: dict[str, Any]
    output: Any
    error: str | None
    duration_ms: float
    tasks: tuple[WorkflowTask, ...]
