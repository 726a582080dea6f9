"""What ``oxy cases run`` produces: one :class:`CaseResult` per case (the Testing API's
TestCaseExecution, by :meth:`CaseResult.to_dict`) and the :class:`CaseRun` that holds them
and decides the exit code. Apart from the runner so reports and the CLI read results
without the machinery that makes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..._pickled import as_values
from ...evaluation import Previous, Result, ResultKind, Score, register_kind
from ...store.kinds import EXECUTION_STATUSES
from ..spill import SpillList, on_disk, put_in_place
from ..status import StoredRun

if TYPE_CHECKING:
    from ...evaluation import Decision
    from ...store import Execution, NewExecution

__all__ = ["CaseResult", "CaseRun"]


def _failed_line(result: Result) -> str:
    score = "-" if result.score is None else f"{result.score:.3f}"
    return f"failed: {result.subject}: score {score} below its threshold {result.details['threshold']:g}"


_SHARED_DETAILS: dict[float, dict[str, float]] = {}


def _details(threshold: float) -> dict[str, float]:
    """A slim result's details, one dict per threshold for all the cases that share it
    (read, never changed: the decision of 100,000 cases holds a handful)."""
    found = _SHARED_DETAILS.get(threshold)
    if found is None:
        found = _SHARED_DETAILS[threshold] = {"threshold": threshold}
    return found


#: Test cases as a kind of result: each judged against its own threshold; a case with no
#: expected output yet is pending, neither pass nor failure.
CASES = register_kind(
    ResultKind(
        "cases",
        EXECUTION_STATUSES,
        unknown=frozenset({"error"}),
        neutral=frozenset({"pending"}),
        metric="score",
        noun="case",
        unknown_line=lambda r: f"error: {r.subject}: {r.error or ''}",
        failed_line=_failed_line,
    )
)


def _scores(r: CaseResult) -> list[Score]:
    """A judged case's measurements: its score against its threshold (what passes it),
    and the exact and semantic comparisons it is made of."""
    scores = [Score("score", r.score, passed=r.passed, threshold=r.threshold)]
    scores.append(Score("exact_match", 1.0 if r.exact_match else 0.0))
    if r.semantic_score is not None:
        scores.append(Score("similarity", r.semantic_score, label=r.similarity_method or None))
    return scores


@as_values
@dataclass(slots=True)
class CaseResult:
    """One TestCaseExecution of this run, or an error. Its JSON is the stored row's
    (:meth:`as_execution`, then :func:`oxyeval.report.cases.execution_json`), so a live
    run and the history say the same of it."""

    case_id: str
    name: str
    prompt_id: str
    prompt_version: int
    actual_output: str | None = None
    expected_output: str | None = None
    passed: bool = False
    score: float | None = None
    exact_match: bool = False
    semantic_score: float | None = None
    similarity_method: str = ""
    length_diff: int | None = None
    token_diff: int | None = None
    token_method: str = ""
    output_diff: list[dict[str, str]] = field(default_factory=list)
    is_regression: bool = False
    regression_type: str | None = None
    regression_types: list[str] = field(default_factory=list)
    regression_reasons: list[str] = field(default_factory=list)
    latency_ms: float | None = None
    run_duration_ms: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    threshold: float = 0.8
    error: str | None = None
    #: What failed, when ``error``: "input" (the case's input does not fit the prompt's
    #: templates: bad input), "provider" (the model call), "scoring" (the similarity).
    error_kind: str | None = None
    execution_id: str | None = None
    created_at: str | None = None
    pending: bool = False  # no expected output yet: shown and kept, not judged
    finish_reason: str | None = None  # why the model stopped, as the vendor spelled it
    cached: bool = False  # the answer was replayed from the cache (--cache), no call made
    #: The same case's previous scored result in the history (what a drop is measured against).
    previous: Previous | None = None
    #: What the call cost (None: no known price) and its time to first token (a streamed
    #: call): kept in the history's results row and the result, not in the execution JSON.
    cost_usd: float | None = None
    ttft_ms: float | None = None
    #: ``time.perf_counter()`` when the case began: with ``run_duration_ms``, its span in
    #: the run (cases run concurrently, so a report's total is not the sum). Not stored.
    started: float | None = None
    #: Where the case stands in the run's plan (what the report is put in order by).
    position: int = 0
    #: Its previous result (:attr:`previous`) is yet to be read when it is written: not
    #: for a case with no judged execution when the run began (it has none), nor for one
    #: whose previous result was read with its history. Not stored.
    previous_unread: bool = True

    @property
    def status(self) -> str:
        """One of the store's ``EXECUTION_STATUSES``, as this result is recorded."""
        if self.error is not None:
            return "error"
        if self.pending:
            return "pending"
        return "passed" if self.passed else "failed"

    def as_result(self, *, slim: bool = False) -> Result:
        """This execution as the evaluation core's result (kind ``cases``); ``slim``:
        without its answer and named scores, what the decision of a large run holds for
        every case (it reads neither)."""
        judged = self.status in ("passed", "failed")
        return Result(
            previous=self.previous,
            kind="cases",
            subject=self.case_id,
            case=self.case_id,
            status=self.status,
            passed=self.passed if judged else None,
            score=self.score,
            error=self.error,
            regressions=(
                tuple(self.regression_reasons) or (", ".join(self.regression_types),)
                if self.is_regression
                else ()
            ),
            details=_details(self.threshold) if slim else {"threshold": self.threshold},
            scores=_scores(self) if judged and not slim else [],
            latency_ms=self.latency_ms,
            ttft_ms=self.ttft_ms,
            cost_usd=self.cost_usd,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            output=None if slim else self.actual_output,
        )

    def new_execution(
        self, run_id: str | None = None, *, id: str | None = None, created_at: str | None = None
    ) -> NewExecution:
        """This result as the execution the history records (the one mapping from a live
        result to a stored row), under ``id`` and ``created_at`` when the caller chose
        them (else the store does). An error keeps what it got before it failed (an
        answer whose scoring failed keeps the answer), never a score."""
        from ...store import NewExecution

        common: dict[str, Any] = {
            "id": id,
            "created_at": created_at,
            "test_case_id": self.case_id,
            "run_id": run_id or None,
            "status": self.status,
            "prompt_version": self.prompt_version,
            "actual_output": self.actual_output,
            "expected_output": self.expected_output,
            "run_duration_ms": self.run_duration_ms,
            "latency_ms": self.latency_ms,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "finish_reason": self.finish_reason,
            "error": self.error,
            "cost_usd": self.cost_usd,
            "ttft_ms": self.ttft_ms,
        }
        if self.status == "error":
            return NewExecution(**common)
        return NewExecution(
            **common,
            score=self.score,
            output_diff=self.output_diff,
            exact_match=self.exact_match,
            semantic_score=self.semantic_score,
            similarity_method=self.similarity_method,
            length_diff=self.length_diff,
            token_diff=self.token_diff,
            token_method=self.token_method,
            is_regression=self.is_regression,
            regression_type=self.regression_type,
            regression_types=self.regression_types,
        )

    def as_execution(self, run_id: str | None = None) -> Execution:
        """This result as the history row it was recorded as (``run_id``: its run's, see
        :attr:`CaseRun.runs`): one shape for a live execution and a stored one. A run of
        ``oxy cases`` is its own prompt execution, so ``execution_id`` (the Testing API's
        reference to the prompt execution) is the execution's id, as the store records
        it; neither is known before the result is committed (empty then)."""
        from ...store import Execution

        own_id = self.execution_id or ""
        return Execution(
            id=own_id,
            test_case_id=self.case_id,
            run_id=run_id,
            execution_id=own_id,
            status=self.status,
            score=self.score,
            actual_output=self.actual_output,
            expected_output=self.expected_output,
            # An execution that errored is recorded without a diff: none was made.
            output_diff=None if self.error is not None else self.output_diff,
            exact_match=self.exact_match,
            semantic_score=self.semantic_score,
            similarity_method=self.similarity_method,
            length_diff=self.length_diff,
            token_diff=self.token_diff,
            token_method=self.token_method,
            is_regression=self.is_regression,
            regression_type=self.regression_type,
            regression_types=tuple(self.regression_types),
            prompt_version=self.prompt_version,
            run_duration_ms=self.run_duration_ms,
            latency_ms=self.latency_ms,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            finish_reason=self.finish_reason,
            error=self.error,
            created_at=self.created_at or "",
            cost_usd=self.cost_usd,
        )


def _held_bytes(r: CaseResult) -> int:
    """About what a result holds in memory (1.6 KB measured with a one-word answer): its
    answer and expected text, each also in its diff, at up to two bytes a character."""
    return 1_600 + 4 * (len(r.actual_output or "") + len(r.expected_output or ""))


def _results() -> SpillList[CaseResult]:
    return SpillList(size=_held_bytes, place=_position)


def _position(r: CaseResult) -> int:
    return r.position


@dataclass(repr=False)
class CaseRun:
    kind: ClassVar[str] = "cases"
    db: Path | str  # the SQLite file, or the PostgreSQL URL without its password
    #: Every finished case; past about 32 MB of them, kept on disk (:class:`SpillList`).
    results: SpillList[CaseResult] = field(default_factory=_results)
    runs: dict[str, str] = field(default_factory=dict)  # prompt id -> run id
    versions: dict[str, int] = field(default_factory=dict)  # prompt id -> version run
    planned: int = 0
    interrupted: bool = False
    #: The one decision on the run (under the gates it ran with), once it ended.
    decision: Decision | None = None
    warnings: list[str] = field(default_factory=list)
    cached_calls: int = 0  # model calls served from the cache (--cache), not made
    #: One entry per history database written.
    history: list[StoredRun] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"CaseRun({len(self.results)} results)"

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if r.error is None and not r.passed and not r.pending]

    @property
    def pending(self) -> list[CaseResult]:
        return [r for r in self.results if r.pending]

    @property
    def errors(self) -> list[CaseResult]:
        return [r for r in self.results if r.error is not None]

    @property
    def regressions(self) -> list[CaseResult]:
        return [r for r in self.results if r.is_regression]

    @property
    def passed(self) -> list[CaseResult]:
        return [r for r in self.results if r.passed and r.error is None]

    def as_results(self) -> list[Result]:
        """The cases as the evaluation core's results (slim when the run is large enough
        to keep its results on disk)."""
        slim = on_disk(self.results)
        return [r.as_result(slim=slim) for r in self.results]

    def in_plan_order(self) -> None:
        """The results put in plan order; kept on disk, they are not read back for it."""
        put_in_place(self.results, _position)

    def decision_results(self) -> list[Result]:
        """What the one decision reads: the results without answers or named scores."""
        return [r.as_result(slim=True) for r in self.results]

    @property
    def regression_count(self) -> int:
        return sum(1 for r in self.results if r.is_regression)
