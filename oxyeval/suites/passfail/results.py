"""What a judged pass/fail test produces: each run's output, each output's verdict per
criterion, and per (subject, criterion) a pass rate against a threshold.

One shape for chattest prompts and oxy's ``*.test.yml`` cases: a *subject* is what
answers (a prompt on a model, an agent, a workflow), a *criterion* what its answers are
judged against (a test in plain language, an expected answer, and optionally a tool the
agent must have called).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...evaluation import Decision, PassRate, Previous, Result, ResultKind, Score, register_kind
from ..spill import SpillList, on_disk, put_in_place
from ..status import StoredRun

__all__ = [
    "PASSFAIL",
    "Check",
    "Criterion",
    "CriterionResult",
    "PassFailRun",
    "Sample",
    "SubjectResult",
]


def _failed_line(result: Result) -> str:
    rate = "-" if result.score is None else f"{result.score * 100:.0f}%"
    need = result.details.get("threshold")
    against = "" if need is None else f" (needs {need * 100:.0f}%)"
    label, key = result.details.get("label"), result.details.get("criterionKey")
    shown = f"{label}: {key}" if label and key else result.subject
    return f"failed: {shown}: pass rate {rate}{against}"


#: The result kind of one (subject, criterion): ``scored``, or ``error`` when too few runs
#: could be judged (fewer than ``min_judged`` of those made, none at all included: every
#: call or every verdict failed: outcome unknown, exit 3).
PASSFAIL = register_kind(
    ResultKind(
        name="passfail",
        statuses=("scored", "error", "interrupted"),
        metric="pass rate",
        noun="test",
        failed_line=_failed_line,
    )
)


@dataclass(frozen=True)
class Criterion:
    """What outputs are judged against: ``text`` goes to the judge as the criterion;
    ``key`` names it in reports; ``tool``, when set, must appear among the run's tool
    calls (checked without the judge: a run that did not call it fails)."""

    key: str
    text: str
    tool: str | None = None


@dataclass(slots=True)
class Sample:
    """One run's output (or why there is none)."""

    run: int
    text: str | None = None
    error: str | None = None
    tools: tuple[str, ...] = ()
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    cached: bool = False


@dataclass(slots=True)
class Check:
    """One run's verdict on one criterion: True PASS, False FAIL, None a judge error
    (excluded from the pass rate, reported, never a pass)."""

    run: int
    passed: bool | None
    reasoning: str = ""
    error: str | None = None
    judged: bool = True  # False: decided without the judge (a missing tool call)


@dataclass
class CriterionResult:
    """One (subject, criterion): its checks, pass rate and verdict against the threshold."""

    subject: str
    label: str
    criterion: Criterion
    threshold: float
    checks: list[Check] = field(default_factory=list)
    max_runs: int = 0
    #: With --adaptive: "pass" / "fail" when sampling stopped on a settled decision.
    settled: str | None = None
    run_errors: int = 0
    #: False: no pass/fail of its own in the core's Result (the run's gates decide).
    own_check: bool = True
    #: Its subject was cut short before every run finished.
    interrupted: bool = False
    #: The model that answered (see :attr:`Subject.model`).
    model: str = ""
    #: Its previous scored result in the history (what a drop is measured against).
    previous: Previous | None = None
    #: Share of the runs made that must get a verdict, or the result is an error: a pass
    #: rate of 1 judged run out of 3 says nothing.
    min_judged: float = 0.0

    @property
    def rate(self) -> PassRate:
        return PassRate.of([c.passed for c in sorted(self.checks, key=lambda c: c.run)])

    @property
    def made(self) -> int:
        """Runs that ended, with a verdict or without (a failed call, a judge error)."""
        return len(self.checks) + self.run_errors

    @property
    def missing(self) -> int:
        """Runs of the planned ones without a verdict: failed, unjudged or not made (an
        adaptive run's settled decision needs no more: those are not missing)."""
        planned = self.made if self.settled is not None else max(self.max_runs, self.made)
        return planned - self.rate.runs

    @property
    def too_few(self) -> bool:
        """Fewer runs got a verdict than ``min_judged`` of those made asks (none at all
        included): no pass rate is claimed from them."""
        judged = self.rate.runs
        return judged == 0 or judged + 1e-9 < self.min_judged * self.made

    @property
    def passed(self) -> bool | None:
        """The settled adaptive decision, else the pass rate against the threshold; None
        when too few runs were judged."""
        if self.settled is not None:
            return self.settled == "pass"
        if self.too_few:
            return None
        return self.rate.passed(self.threshold)

    @property
    def status(self) -> str:
        if self.interrupted:
            return "interrupted"
        return "error" if self.too_few and self.settled is None else "scored"

    @property
    def consistent(self) -> bool | None:
        """Every judged run gave the same verdict; None when too few were judged to say."""
        if self.status == "error":
            return None
        return not self.rate.flaky

    def too_few_error(self) -> str:
        """Why the result has no pass rate, when it is an error."""
        judged, made = self.rate.runs, self.made
        if self.interrupted and made == 0:
            return "interrupted before any of its runs finished"
        reasons = [c.error for c in self.checks if c.error]
        cause = f": {reasons[0]}" if reasons else ""
        if judged == 0:
            return f"no run of {made} got a verdict{cause}"
        return (
            f"only {judged} of {made} runs got a verdict (min_judged is "
            f"{self.min_judged:.0%}), too few for a pass rate{cause}"
        )

    def as_result(self, outputs: dict[int, str] | None = None) -> Result:
        rate = self.rate
        errors = [c.error for c in self.checks if c.error]
        claimed = None if self.status == "error" else rate.pass_rate  # none from too few
        scores = [Score("pass_rate", claimed, passed=self.passed, threshold=self.threshold)]
        details: dict[str, Any] = {
            "label": self.label,
            "model": self.model or None,
            "criterion": self.criterion.text,
            "criterionKey": self.criterion.key,
            "tool": self.criterion.tool,
            "threshold": self.threshold,
            "passes": rate.passes,
            "runs": rate.runs,
            "maxRuns": self.max_runs,
            "judgeErrors": rate.judge_errors,
            "missingRuns": self.missing,
            "minJudged": self.min_judged,
            "flaky": rate.flaky,
            "wilson": None
            if rate.wilson is None
            else {"low": rate.wilson.low, "high": rate.wilson.high},
            "passHatK": rate.pass_hat_k,
            "passAtK": rate.pass_at_k,
            "settled": self.settled,
        }
        if outputs is not None:
            details["outputs"] = {str(k): v for k, v in sorted(outputs.items())}
        return Result(
            previous=self.previous,
            kind="passfail",
            subject=f"{self.subject}::{self.criterion.key}",
            status=self.status,
            passed=self.passed if self.own_check else None,
            score=claimed,
            error=(
                ("; ".join(dict.fromkeys(errors)) or self.too_few_error())
                if not rate.runs
                else self.too_few_error()
                if self.status == "error"
                else None
            ),
            scores=scores,
            details=details,
            run_errors=self.run_errors,
            judge_errors=rate.judge_errors,
        )


@dataclass
class SubjectResult:
    """A subject's runs and its results, one per criterion."""

    key: str
    label: str
    samples: list[Sample] = field(default_factory=list)
    results: list[CriterionResult] = field(default_factory=list)
    group: str = ""
    name: str = ""
    duration_s: float = 0.0
    #: Cut short by Ctrl-C or SIGTERM: its results hold the runs that finished.
    interrupted: bool = False
    #: Where the subject stands in the run's plan (what the report is put in order by).
    position: int = 0

    @property
    def answered(self) -> int:
        return sum(s.error is None for s in self.samples)


def _held_bytes(subject: SubjectResult) -> int:
    """About what a subject's result holds in memory: each run's sample and verdicts
    (about 400 bytes with short texts), and its texts at up to two bytes a character."""
    texts = sum(len(s.text or "") + len(s.error or "") for s in subject.samples)
    reasons = sum(len(c.reasoning) for r in subject.results for c in r.checks)
    return 2_000 + 400 * len(subject.samples) + 2 * (texts + reasons)


def _position(subject: SubjectResult) -> int:
    return subject.position


def _subjects() -> SpillList[SubjectResult]:
    return SpillList(size=_held_bytes, place=_position)


@dataclass
class PassFailRun:
    """A run of judged pass/fail tests: every subject's results, and what the command
    reports around them."""

    kind: ClassVar[str] = "passfail"

    #: Every finished subject; past about 32 MB of them, kept on disk (:class:`SpillList`):
    #: 1,000 subjects of 100 runs hold no more memory than a hundred.
    subjects: SpillList[SubjectResult] = field(default_factory=_subjects)
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    judge_calls: int = 0
    model_calls: int = 0
    saved_calls: int = 0  # with --adaptive: runs not made because decisions settled
    #: The one decision on the run (under the gates it ran with), once it ended.
    decision: Decision | None = None
    #: One entry per history database written (empty: none kept).
    history: list[StoredRun] = field(default_factory=list)
    #: Model calls the cache served instead of the model, in the whole run.
    cached_calls: int = 0

    @property
    def results(self) -> list[CriterionResult]:
        return [r for s in self.subjects for r in s.results]

    @property
    def spilled(self) -> bool:
        """Whether its subjects are kept on disk (a report then streams them)."""
        return on_disk(self.subjects)

    def in_plan_order(self) -> None:
        """The subjects in plan order (they finish in any order); kept on disk, they are
        not read back for it."""
        put_in_place(self.subjects, _position)

    def as_results(self) -> list[Result]:
        """Every (subject, criterion) as the core's result, for the one decision."""
        return list(self.each_result())

    def each_result(self) -> Iterator[Result]:
        """:meth:`as_results` one at a time, read subject by subject (a report of a run
        kept on disk streams them)."""
        for subject in self.subjects:
            for r in subject.results:
                yield r.as_result()
