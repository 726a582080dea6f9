"""The rows of A/B branches: a branch (:class:`TestBranch`), what the engine
hands the store for one run of it (:class:`NewBranchExecution`) and what is read back
(:class:`BranchExecution`).

Snake_case versions of the Testing API's TestBranch and TestBranchExecution; the camelCase JSON
is the report's job. A branch's aggregates are properties over counters kept at write
time, so a row never disagrees with itself and reading one never scans its executions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BranchExecution", "NewBranchExecution", "TestBranch"]


def _avg(total: float, n: int) -> float | None:
    return total / n if n else None


@dataclass(frozen=True)
class TestBranch:
    """One model configuration of a test case, with its counters.

    ``source_file`` is the YAML file it was synced from (None: made through the API); the
    counters are over its executions (successful and errored) since it was created,
    whatever its settings were then.
    """

    __test__ = False  # not a pytest class

    id: str
    test_case_id: str
    name: str
    description: str | None
    provider: str | None
    model: str
    temperature: float
    max_tokens: int
    top_p: float
    is_control: bool
    is_active: bool
    other_params: dict[str, Any]
    source_file: str | None
    created_at: str
    updated_at: str
    deleted_at: str | None = None
    total_runs: int = 0  # successful + errored executions
    errors: int = 0
    latency_n: int = 0
    latency_sum: float = 0.0
    cost_n: int = 0
    cost_sum: float = 0.0
    quality_n: int = 0
    quality_sum: float = 0.0
    passes: int = 0
    tps_n: int = 0
    tps_sum: float = 0.0
    hashed_runs: int = 0  # successful executions with an output hash
    top_hash_runs: int = 0  # how many of them share the most common hash

    @property
    def successes(self) -> int:
        return self.total_runs - self.errors

    @property
    def avg_latency(self) -> float | None:
        """Milliseconds, over successful executions (an error's latency says nothing of
        the branch's speed)."""
        return _avg(self.latency_sum, self.latency_n)

    @property
    def avg_cost(self) -> float | None:
        """USD, over successful executions with a known price; None when none was priced
        (an unknown price is never counted as free)."""
        return _avg(self.cost_sum, self.cost_n)

    @property
    def avg_quality_score(self) -> float | None:
        return _avg(self.quality_sum, self.quality_n)

    @property
    def avg_tokens_per_sec(self) -> float | None:
        return _avg(self.tps_sum, self.tps_n)

    @property
    def pass_rate(self) -> float | None:
        """Percent (0..100, as cases' passRate): successful executions their writer said
        passed (``passed`` of :class:`NewBranchExecution`); None when none succeeded."""
        return 100.0 * self.passes / self.successes if self.successes > 0 else None

    @property
    def consistency_score(self) -> float | None:
        """0..1: the share of successful executions whose (whitespace-normalised) output is
        the branch's most common one; 1.0 = every run said the same thing. None when no
        successful execution had an output hash."""
        return self.top_hash_runs / self.hashed_runs if self.hashed_runs else None


@dataclass(frozen=True, kw_only=True)
class NewBranchExecution:
    """One execution of a branch, as measured by the engine (never invented: a value not
    measured is None; an unknown price is None, never 0)."""

    branch_id: str
    test_case_id: str
    status: str  # success | error
    output: str = ""  # "" on error
    error: str | None = None
    latency_ms: float | None = None
    time_to_first_token: float | None = None  # ms
    tokens_per_second: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    estimated_cost: float | None = None  # USD
    quality_score: float | None = None
    similarity_score: float | None = None
    clarity_score: float | None = None
    valid_json: bool = False
    consistency_hash: str | None = None
    prompt_version: int = 1
    iteration: int = 0  # 0-based, with --iterations
    judge_cost: float | None = None  # USD of the judge's own calls, apart from the branch's
    cached: bool = False
    details: dict[str, Any] = field(default_factory=dict)  # branch_name, model, criteria...
    #: Whether the execution passed, as the A/B kind decided it (its quality threshold):
    #: None when it was not judged (an error, no grade). Stored as given: what a branch's
    #: pass rate and the result's ``passed`` count.
    passed: bool | None = None


@dataclass(frozen=True)
class BranchExecution:
    """A stored execution of a branch (a result of kind ``ab``, read back)."""

    id: str
    run_id: str | None
    execution_id: str | None  # the Testing API's prompt execution: none is recorded apart
    branch_id: str
    test_case_id: str
    status: str
    output: str
    error: str | None
    latency_ms: float | None
    time_to_first_token: float | None
    tokens_per_second: float | None
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    estimated_cost: float | None
    quality_score: float | None
    similarity_score: float | None
    clarity_score: float | None
    valid_json: bool
    consistency_hash: str | None
    prompt_version: int
    iteration: int
    judge_cost: float | None
    cached: bool
    details: dict[str, Any]
    created_at: str
