"""What an A/B test produces: each branch's executions, its summary over the iterations,
and the case's ranking with its winner.

Field names follow the Testing API's TestBranchExecution and runABTest result (snake_case here,
camelCase in JSON, see :mod:`oxyeval.report`); what goes beyond that API (iterations,
confidence intervals, the Pareto front) sits beside them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ...evaluation import Interval, Previous, Result, ResultKind, Score, register_kind
from ..spill import SpillList, on_disk, put_in_place
from ..status import StoredRun

if TYPE_CHECKING:
    from ...evaluation import Decision
    from ...store import NewBranchExecution, TestBranch

__all__ = ["AB", "ABCaseResult", "ABRun", "BranchOutcome", "BranchSummary"]


def _unknown_line(result: Result) -> str:
    return f"error: case {result.case} · branch {result.subject}: {result.error or result.status}"


#: The result kind of an A/B execution: ``success`` or ``error`` (outcome unknown: exit 3,
#: the comparison misses data). A quality under the pass mark is reported, never a gate:
#: an A/B run compares branches, it does not require one to pass.
AB = register_kind(
    ResultKind(
        name="ab",
        statuses=("success", "error", "interrupted"),
        checks_gate=False,
        metric="quality",
        noun="branch",
        unknown_line=_unknown_line,
    )
)

#: The Testing API's quality threshold for a branch's pass rate.
PASS_QUALITY = 0.7


@dataclass
class BranchOutcome:
    """One branch's execution in one iteration, measured (never invented: a value the
    provider did not give is None)."""

    branch_id: str
    iteration: int
    status: str = "success"  # success | error
    output: str = ""
    error: str | None = None
    latency_ms: float | None = None
    time_to_first_token: float | None = None  # ms
    tokens_per_second: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    estimated_cost: float | None = None
    quality_score: float | None = None
    similarity_score: float | None = None
    clarity_score: float | None = None
    valid_json: bool = False
    consistency_hash: str | None = None
    cached: bool = False
    execution_id: str | None = None  # the stored execution's id, once stored
    #: The branch's previous scored execution in the history (what a drop is measured against).
    previous: Previous | None = None
    #: The quality judge's calls for this answer and their cost (USD; None: unpriced),
    #: apart from the branch's own; its error when it gave no grade.
    judge_calls: int = 0
    judge_cost: float | None = 0.0
    judge_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "success"

    @property
    def passed(self) -> bool | None:
        """A successful execution graded at least :data:`PASS_QUALITY`; None when it was
        not graded (an error, no quality score). Stored with the execution, so the
        history counts passes by this one rule."""
        if not self.ok or self.quality_score is None:
            return None
        return self.quality_score >= PASS_QUALITY

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def new_execution(
        self, test_case_id: str, prompt_version: int, details: dict[str, Any]
    ) -> NewBranchExecution:
        from dataclasses import fields

        from ...store import NewBranchExecution

        # The measured fields share their names with the store's row; the rest is given.
        same = {
            f.name: getattr(self, f.name)
            for f in fields(NewBranchExecution)
            if hasattr(self, f.name)
        }
        same.update(
            test_case_id=test_case_id,
            prompt_version=prompt_version,
            judge_cost=self.judge_cost if self.judge_calls else None,
            details={**details, "judgeCalls": self.judge_calls, "judgeError": self.judge_error},
        )
        return NewBranchExecution(**same)

    def as_result(self, test_case_id: str, branch: TestBranch, *, slim: bool = False) -> Result:
        """The core's shape, for events and readers of every kind; ``slim``: without its
        answer, named scores and details, what the decision of a large run holds for
        every execution (it reads none of them)."""
        common: dict[str, Any] = {
            "previous": self.previous,
            "kind": "ab",
            "subject": branch.id,
            "status": self.status,
            "passed": self.passed,
            "score": self.quality_score,
            "case": test_case_id,
            "branch": branch.id,
            "repeat": self.iteration,
            "error": self.error,
        }
        if slim:
            return Result(**common)
        scores = [
            Score(metric, value)
            for metric, value in (
                ("quality", self.quality_score),
                ("similarity", self.similarity_score),
                ("clarity", self.clarity_score),
            )
            if value is not None
        ]
        return Result(
            **common,
            latency_ms=self.latency_ms,
            ttft_ms=self.time_to_first_token,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.estimated_cost,
            output=self.output,
            scores=scores,
            details={
                "branchName": branch.name,
                "model": branch.model,
                "tokensPerSecond": self.tokens_per_second,
                "validJson": self.valid_json,
                "consistencyHash": self.consistency_hash,
                "judgeCalls": self.judge_calls,
                "judgeCostUsd": self.judge_cost if self.judge_calls else None,
                "judgeError": self.judge_error,
            },
        )


@dataclass
class BranchSummary:
    """A branch over the run's iterations: its executions, the means the ranking used,
    their 95% intervals (with iterations), and where it ranked."""

    branch: TestBranch
    outcomes: list[BranchOutcome] = field(default_factory=list)
    rank: int = 0
    quality_score: float | None = None
    latency_ms: float | None = None
    time_to_first_token: float | None = None
    tokens_per_second: float | None = None
    estimated_cost: float | None = None
    #: The winner criterion's value for this branch (quality, latency, cost, value or
    #: the balanced score), over the iterations' mean metrics.
    criterion_score: float | None = None
    intervals: dict[str, Interval] = field(default_factory=dict)
    pareto_optimal: bool = True
    dominated_by: tuple[str, ...] = ()  # branch names

    @property
    def ok(self) -> bool:
        """At least one execution succeeded (a branch whose every call failed ranks last)."""
        return any(o.ok for o in self.outcomes)

    @property
    def errors(self) -> int:
        return sum(not o.ok for o in self.outcomes)

    @property
    def last(self) -> BranchOutcome | None:
        return self.outcomes[-1] if self.outcomes else None


@dataclass
class ABCaseResult:
    """One test case's A/B test: the Testing API's runABTest result, and the iterations' verdict."""

    test_case_id: str
    case_name: str
    prompt_id: str
    prompt_version: int
    criteria: str
    iterations: int
    branches: list[BranchSummary] = field(default_factory=list)  # by rank
    winner: BranchSummary | None = None
    #: The branch ranked first on the criteria, beyond the noise or not: the Testing
    #: API's ``winner`` (its clients read one whenever a branch ranked), while the CLI
    #: and the run documents call a winner only beyond the noise (``winner``).
    leader: BranchSummary | None = None
    #: {branch name: iterations it won} (iterations > 1).
    winner_distribution: dict[str, int] = field(default_factory=dict)
    #: With iterations > 1: whether the winner's interval for the criterion's score does
    #: not overlap the runner-up's (None with one iteration: nothing to tell noise from).
    significant: bool | None = None
    #: Iterations every branch finished (fewer than ``iterations`` after an interrupt).
    iterations_done: int = 0
    notes: list[str] = field(default_factory=list)
    run_id: str | None = None
    interrupted: bool = False
    #: Where the case stands in the run's plan (what the report is put in order by).
    position: int = 0

    @property
    def executions(self) -> list[BranchOutcome]:
        return [o for b in self.branches for o in b.outcomes]


def _held_bytes(result: ABCaseResult) -> int:
    """About what a case's result holds in memory: each execution (about 1 KB with a
    short answer) and its answer's text at up to two bytes a character."""
    outcomes = [o for b in result.branches for o in b.outcomes]
    return 4_000 + sum(1_000 + 2 * len(o.output) for o in outcomes)


def _position(result: ABCaseResult) -> int:
    return result.position


def _results() -> SpillList[ABCaseResult]:
    return SpillList(size=_held_bytes, place=_position)


@dataclass
class ABRun:
    """An ``oxy ab run``: one result per case, with what the command reports around them."""

    kind: ClassVar[str] = "ab"

    criteria: str
    iterations: int
    #: Each case's result once it finished; past about 32 MB of them, kept on disk
    #: (:class:`SpillList`): 100,000 executions hold no more memory than a few thousand.
    results: SpillList[ABCaseResult] = field(default_factory=_results)
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    #: The one decision on the run (under the gates it ran with), once it ended.
    decision: Decision | None = None
    db: Any = None
    cached_calls: int = 0
    #: One entry per history database written.
    history: list[StoredRun] = field(default_factory=list)

    @property
    def executions(self) -> list[BranchOutcome]:
        return list(self._each())

    def _each(self) -> Iterator[BranchOutcome]:
        """Every execution, case by case (read back from disk one case at a time)."""
        for r in self.results:
            for b in r.branches:
                yield from b.outcomes

    @property
    def judge_calls(self) -> int:
        return sum(o.judge_calls for o in self._each())

    @property
    def judge_cost(self) -> float | None:
        """USD of the quality judge's calls over the run; None when one was unpriced."""
        costs = [o.judge_cost for o in self._each() if o.judge_calls]
        return None if None in costs else sum(c for c in costs if c is not None)

    def as_results(self) -> list[Result]:
        """Every execution as the core's result, for the one decision."""
        return list(self.each_result())

    def each_result(self, *, slim: bool = False) -> Iterator[Result]:
        """:meth:`as_results` one at a time (a report of 100,000 executions streams them)."""
        for r in self.results:
            for b in r.branches:
                for o in b.outcomes:
                    yield o.as_result(r.test_case_id, b.branch, slim=slim)

    def decision_results(self) -> list[Result]:
        """What the one decision reads: the executions without answers, named scores or
        details (100,000 whole ones held about 150 MB while it was made)."""
        return list(self.each_result(slim=True))

    @property
    def execution_count(self) -> int:
        return sum(len(b.outcomes) for r in self.results for b in r.branches)

    @property
    def spilled(self) -> bool:
        """Whether its results are kept on disk."""
        return on_disk(self.results)

    def in_plan_order(self) -> None:
        """The cases in the order they were planned (they finish in any order); kept on
        disk, they are not read back for it."""
        put_in_place(self.results, _position)
