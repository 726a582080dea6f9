"""What a consistency run produced, as plain data: each test's runs, comparisons and
accuracy, and the run around them; what the reports and the JSON are made of, and the
core's results (kind ``consistency``) the one decision reads."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ...evaluation import (
    AnswerClusters,
    DropResult,
    Previous,
    Result,
    ResultKind,
    Score,
    ThresholdResult,
    answer_clusters,
    register_kind,
)
from ...redact import redact
from ...store.kinds import CONSISTENCY_STATUSES
from ..spill import SpillList, on_disk
from ..status import StoredRun

if TYPE_CHECKING:
    from ...evaluation import Decision

__all__ = [
    "ConsistencyRun",
    "ConsistencyTestResult",
    "DropResult",
    "OutputRecord",
    "Previous",
    "StoredRun",
    "TestResult",
    "TestRun",
    "ThresholdResult",
    "majority_tally",
    "test_result",
]


@dataclass(slots=True)
class OutputRecord:
    run: int  # 1-based
    text: str | None
    error: str | None = None
    latency: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    consistency: float | None = None
    group: int | None = None  # distinct (normalised) text number; comparisons name groups
    #: What the answer cost (None: no known price) and its time to first token (s): in
    #: the test's result (the evaluation core's), not in this record's JSON.
    cost: float | None = None
    ttft: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every key always present (null when it does not apply), so consumers need no guards."""
        failed = self.error is not None
        return {
            "run": self.run,
            "text": None if failed else redact(self.text or ""),
            "error": redact(self.error) if failed else None,
            "group": self.group,
            "consistency": _round(self.consistency),
            "latency_s": _round(self.latency, 4),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


def _unscored_line(result: Result) -> str:
    what = "" if result.status == "interrupted" else "not scored: "  # its error says so
    return f"{what}{result.subject}: {result.error or 'no accuracy'}"


#: Consistency tests as a kind of result: scored against ``--min-accuracy``, never by a
#: threshold of their own.
CONSISTENCY = register_kind(
    ResultKind(
        "consistency",
        CONSISTENCY_STATUSES,
        metric="accuracy",
        noun="test",
        unknown_line=_unscored_line,
    )
)


def _redacted(comparison: dict[str, Any]) -> dict[str, Any]:
    return {k: (redact(v) if isinstance(v, str) else v) for k, v in comparison.items()}


def _round(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(repr=False)
class ConsistencyTestResult:
    """One consistency test (one metric of it) in one file."""

    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"ConsistencyTestResult({self.name!r})"

    __test__ = False  # not a pytest class

    name: str
    file: str
    index: int
    task_description: str | None
    n: int
    pairing: str
    agent_model: str
    judge_model: str
    scores: dict[str, float]
    accuracy: float | None = None
    error: str | None = None
    pairs: int = 0  # run pairs planned among the runs that succeeded
    total_pairs: int = 0  # run pairs the test plans for all n runs
    min_judged: float = 0.0  # share of total_pairs that must get a verdict
    judged_pairs: int = 0
    identical_pairs: int = 0
    judge_calls: int = 0
    outputs: list[OutputRecord] = field(default_factory=list)
    selected: int | None = None
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    duration: float = 0.0
    #: ``time.perf_counter()`` when the test began: with ``duration``, its span in the
    #: run (tests run concurrently, so a report's total is not the sum of durations).
    #: In memory only; None for a run read back from a saved report.
    started: float | None = None
    #: Cut short by Ctrl-C/SIGTERM: ``outputs`` are the runs that finished, ``error``
    #: says how far it got, and ``accuracy`` (if any) covers only the pairs judged.
    interrupted: bool = False
    #: Model calls (agent answers, judge calls) served from the cache, not made.
    cached_calls: int = 0
    #: From the history (None: no earlier scored result, or history off).
    previous: Previous | None = None
    #: ``pairing: cluster``: calls made and saved, and the check of the inferred
    #: verdicts (:class:`~oxyeval.judge.cluster_pairing.ClusterPairing`); else None.
    pairing_check: dict[str, Any] | None = None
    #: ``judge_swap``: pairs judged in both orders and the share whose orders disagreed
    #: (position bias); None when the swap was off.
    judge_swap: dict[str, Any] | None = None
    #: ``--judge-agreement``: a second judge's verdicts on a sample of the judged pairs
    #: and the kappa between the two judges; None when not asked.
    judge_agreement: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.accuracy is not None and self.error is None and not self.interrupted

    @property
    def status(self) -> str:
        """One of the store's ``CONSISTENCY_STATUSES``: what the JSON report, the JUnit
        properties and the history say of this test."""
        return "interrupted" if self.interrupted else ("scored" if self.ok else "error")

    @property
    def unfinished_runs(self) -> int:
        """Runs an interruption cut off before they answered: not failures, so reported
        apart from the runs that failed (0 for a test that was not interrupted)."""
        return max(0, self.n - len(self.outputs)) if self.interrupted else 0

    @property
    def run_errors(self) -> list[OutputRecord]:
        return [o for o in self.outputs if o.error is not None]

    @property
    def judge_errors(self) -> list[dict[str, Any]]:
        return [c for c in self.comparisons if c.get("error")]

    @property
    def failing(self) -> list[dict[str, Any]]:
        best = max(self.scores.values())
        return [c for c in self.comparisons if c.get("verdict") is not None and c["score"] < best]

    @property
    def change(self) -> float | None:
        """Accuracy minus the previous run's, in points (None without both)."""
        if self.accuracy is None or self.previous is None:
            return None
        return (self.accuracy - self.previous.accuracy) * 100

    @property
    def clusters(self) -> AnswerClusters:
        """The answers grouped by the judge's verdicts (the best-scoring label is
        "consistent"): what the runs said, once per cluster, instead of every pair."""
        answers: dict[int, list[int]] = {}
        for o in self.outputs:
            if o.error is None and o.group is not None:
                answers.setdefault(o.group, []).append(o.run)
        best = max(self.scores.values()) if self.scores else None
        verdicts: dict[tuple[int, int], bool | None] = {}
        for c in self.comparisons:
            a, b = c.get("groups") or (None, None)
            if a is None or b is None or a == b:
                continue
            verdicts[(a, b)] = None if c.get("verdict") is None else c.get("score") == best
        return answer_clusters(answers, verdicts)

    @property
    def selected_output(self) -> OutputRecord | None:
        return next((o for o in self.outputs if o.run == self.selected), None)

    def to_dict(self) -> dict[str, Any]:
        sel = self.selected_output
        return {
            "name": self.name,
            "file": self.file,
            "type": "consistency",
            "status": self.status,
            "error": redact(self.error) if self.error else None,
            "task_description": self.task_description,
            "n": self.n,
            "pairing": self.pairing,
            "model": self.agent_model,
            "judge_model": self.judge_model,
            "accuracy": _round(self.accuracy),
            "pairs": self.pairs,
            "total_pairs": self.total_pairs,
            "judged_pairs": self.judged_pairs,
            "min_judged": self.min_judged,
            "identical_pairs": self.identical_pairs,
            "judge_calls": self.judge_calls,
            "cached_calls": self.cached_calls,
            "successful_runs": sum(1 for o in self.outputs if o.error is None),
            "unfinished_runs": self.unfinished_runs,
            "run_errors": [{"run": o.run, "error": redact(o.error or "")} for o in self.run_errors],
            "judge_errors": [
                {"runs": c["runs"], "weight": c["weight"], "error": redact(c["error"])}
                for c in self.judge_errors
            ],
            "outputs": [o.to_dict() for o in self.outputs],
            "selected": None
            if sel is None
            else {
                "run": sel.run,
                "text": redact(sel.text or ""),
                "consistency": _round(sel.consistency),
            },
            # Every judgement once: one entry stands for `weight` run pairs (those between
            # runs of its two text groups), so n=200 with few distinct answers stays small.
            "comparisons": [_redacted(c) for c in self.comparisons],
            "clusters": self.clusters.to_dict(),
            "pairing_check": self.pairing_check,
            "judge_swap": self.judge_swap,
            "judge_agreement": self.judge_agreement,
            "failing_comparisons": [
                {k: v for k, v in _redacted(c).items() if k not in ("error", "groups")}
                for c in self.failing
            ],
            "duration_s": round(self.duration, 3),
        }


def _held_bytes(test: ConsistencyTestResult) -> int:
    """About what a test's result holds in memory: each run's record (about 1.3 KB with
    a short answer, as measured: the run's own objects, not only its fields) and
    comparison, and its texts at up to two bytes a character. Too low an estimate keeps
    several times the budget in memory before the results go to disk."""
    texts = sum(len(o.text or "") + len(o.error or "") for o in test.outputs)
    return 4_000 + 1_300 * len(test.outputs) + 600 * len(test.comparisons) + 2 * texts


def _tests() -> SpillList[ConsistencyTestResult]:
    return SpillList(size=_held_bytes)


@dataclass(repr=False)
class ConsistencyRun:
    """Everything ``oxy test`` produced: per-test results plus the files' warnings."""

    kind: ClassVar[str] = "consistency"

    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"ConsistencyRun({len(self.tests)!r})"

    __test__ = False

    #: Every finished test; past about 32 MB of them, kept on disk (:class:`SpillList`):
    #: 1,000 tests of 100 runs hold no more memory than a hundred.
    tests: SpillList[ConsistencyTestResult] = field(default_factory=_tests)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    interrupted: bool = False
    #: Model calls served from the cache in the whole run (each call once, although a
    #: test with several metrics lists its runs' in each metric's ``cached_calls``).
    cached_calls: int = 0
    #: One entry per history database written (empty: history off).
    history: list[StoredRun] = field(default_factory=list)
    #: The one decision on the run (under the gates it ran with), once it ended.
    decision: Decision | None = None
    #: ``--judge-agreement MODEL``: the second judge that re-judges a sample of pairs.
    agreement_model: str | None = None
    _files_counted: int = field(default=-1, init=False, compare=False)
    _several: bool = field(default=False, init=False, compare=False)

    @property
    def history_errors(self) -> list[str]:
        """Why results are missing from the history, one line per database."""
        return [
            f"history not stored in {h.db}"
            + (f" (only {h.stored} result(s) were)" if h.stored else "")
            + f": {redact(h.error)}"
            + ("" if h.read_error else " (it could still be read: previous results are shown)")
            for h in self.history
            if h.error
        ]

    @property
    def history_unread(self) -> list[str]:
        """Why earlier results could not be read, one line per database (none: every
        test was compared with its previous result, where it had one)."""
        return [f"{h.db}: {redact(h.read_error)}" for h in self.history if h.read_error]

    @property
    def judge_agreement(self) -> dict[str, Any] | None:
        """``--judge-agreement``: the two judges' kappa over every test's sample (None:
        not asked)."""
        from .agreement import agreement_summary

        return agreement_summary([t.judge_agreement for t in self.tests if t.judge_agreement])

    @property
    def accuracies(self) -> list[float | None]:
        return [t.accuracy for t in self.tests]

    @property
    def spilled(self) -> bool:
        """Whether its tests are kept on disk (a report then streams them)."""
        return on_disk(self.tests)

    def label(self, test: ConsistencyTestResult) -> str:
        """Test name, qualified by file when several files ran."""
        return f"{test.file}: {test.name}" if self._several_files() else test.name

    def _several_files(self) -> bool:
        """Counted once per number of tests held: a report labels every test, and each
        pass over a run kept on disk reads it back."""
        count = len(self.tests)
        if self._files_counted != count:
            self._several = len({t.file for t in self.tests}) > 1
            self._files_counted = count
        return self._several

    def as_results(self) -> list[Result]:
        """The tests as the evaluation core's results, for the one decision (named as the
        report names them: by file too when several files ran)."""
        return [test_result(t, self.label(t)) for t in self.tests]


def test_result(t: ConsistencyTestResult, subject: str | None = None) -> Result:
    """One consistency test as the evaluation core's result; ``subject`` defaults to the
    stable ``file::name`` the history stores it under. Tokens and cost are its answers'
    (the judge's calls are the judge's)."""
    answered = [o for o in t.outputs if o.error is None]
    tally = majority_tally(t)
    return Result(
        kind="consistency",
        subject=subject or f"{t.file}::{t.name}",
        status=t.status,
        score=t.accuracy,
        error=t.error,
        previous=t.previous,
        run_errors=len(t.run_errors),
        judge_errors=len(t.judge_errors),
        scores=[Score(metric, value) for metric, value in t.scores.items()],
        output=None if t.selected_output is None else t.selected_output.text,
        latency_ms=round(t.duration * 1000, 3),
        input_tokens=_total(o.input_tokens for o in answered),
        output_tokens=_total(o.output_tokens for o in answered),
        cost_usd=_total(o.cost for o in answered),
        details={} if tally is None else {"tally": list(tally)},
    )


def majority_tally(t: ConsistencyTestResult) -> tuple[int, int] | None:
    """(answers in the largest answer cluster, answers) of a scored test: its majority
    answer rate as a tally, what ``--fail-on-regression`` pairs with the baseline's.
    None when the test was not scored (its clusters would say nothing)."""
    if not t.ok:
        return None
    clusters = t.clusters
    if not clusters.clusters:
        return None
    return (clusters.clusters[0].size, clusters.runs)


def _total(values: Iterable[float | int | None]) -> Any:
    """The sum, or None when any part is unknown (an unknown price is never 0)."""
    items = list(values)
    if not items or any(v is None for v in items):
        return None
    return sum(items)


#: The names of 0.2 (when "test" meant a consistency test), kept for callers' code.
TestRun = ConsistencyRun
TestResult = ConsistencyTestResult
