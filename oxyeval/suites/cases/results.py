"""What ``oxy cases run`` produces: one :class:`CaseResult` per case (the seed's
TestCaseExecution, by :meth:`CaseResult.to_dict`) and the :class:`CaseRun` that holds them
and decides the exit code. Apart from the runner so reports and the CLI read results
without the machinery that makes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ...errors import EXIT_FAILED, EXIT_INFRA, EXIT_OK
from ...redact import redact

__all__ = ["CaseResult", "CaseRun"]


@dataclass
class CaseResult:
    """One TestCaseExecution of this run, or an error (its seed camelCase shape is
    :func:`oxyeval.report.cases.case_result_json`)."""

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
    execution_id: str | None = None
    created_at: str | None = None
    pending: bool = False  # no expected output yet: shown and kept, not judged
    finish_reason: str | None = None  # why the model stopped, as the vendor spelled it
    cached: bool = False  # the answer was replayed from the cache (--cache), no call made
    #: ``time.perf_counter()`` when the case began: with ``run_duration_ms``, its span in
    #: the run (cases run concurrently, so a report's total is not the sum). Not stored.
    started: float | None = None


@dataclass(repr=False)
class CaseRun:
    db: Path | str  # the SQLite file, or the PostgreSQL URL without its password
    results: list[CaseResult] = field(default_factory=list)
    runs: dict[str, str] = field(default_factory=dict)  # prompt id -> run id
    versions: dict[str, int] = field(default_factory=dict)  # prompt id -> version run
    planned: int = 0
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    cached_calls: int = 0  # model calls served from the cache (--cache), not made

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

    def exit_code(self, *, fail_on_regression: bool = False) -> int:
        """The run's verdict for CI. A case that could not run, or an interrupted run,
        leaves the outcome unknown: 3, whatever else failed. Else 1 when a case failed
        (or regressed, with ``fail_on_regression``), else 0. Pending cases (no expected
        output yet) never fail a run."""
        if self.errors or self.interrupted:
            return EXIT_INFRA
        if self.failed or (fail_on_regression and self.regressions):
            return EXIT_FAILED
        return EXIT_OK

    def failure_reasons(self, *, fail_on_regression: bool = False) -> list[str]:
        """Why :meth:`exit_code` is not 0, one line per case (secrets scrubbed): what a
        CI log shows on stderr whatever the output format. An interruption is the
        caller's to describe (it knows the signal)."""
        lines = [f"error: {r.case_id}: {redact(r.error or '')}" for r in self.errors]
        for r in self.failed:
            score = "-" if r.score is None else f"{r.score:.3f}"
            lines.append(f"failed: {r.case_id}: score {score} below its threshold {r.threshold:g}")
        if fail_on_regression:
            for r in self.regressions:
                why = "; ".join(r.regression_reasons) or ", ".join(r.regression_types)
                lines.append(f"regression: {r.case_id}: {redact(why)}")
        return lines
