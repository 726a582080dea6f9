"""One decision for every kind of test: results and gates in, an exit code and its reasons out.

Below the reports on purpose: the CLI's pretty, JSON and JUnit output render a
:class:`Decision`; the SDK's ``assert_test`` and a pytest plugin call :func:`decide`
without importing any reporting. Precedence, the same for every kind: 3 when an outcome
is unknown (a result that could not be scored, an interrupted run, a drop check that
could not read the history, errors under ``--strict``); else 1 when a gate failed (the
threshold, a drop, a result's own check, a regression under ``fail_on_regression``);
else 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..errors import EXIT_FAILED, EXIT_INFRA, EXIT_INPUT, EXIT_OK, OxyError
from ..redact import redact
from .gates import (
    DropResult,
    Gates,
    PassRateResult,
    ThresholdResult,
    _words,
    check_drop,
    check_pass_rate,
    check_threshold,
    percent,
)
from .kinds import result_kind
from .regression_gate import INCONCLUSIVE_POLICIES, RegressionCheck, check_regression
from .result import Result

__all__ = [
    "Decision",
    "Headline",
    "Outcome",
    "decide",
    "decide_run",
    "error_code",
    "gate_option_error",
    "gated_code",
    "interrupted_code",
    "usage_code",
    "with_artifact_failure",
]

#: :attr:`Decision.headline`'s values.
Headline = Literal[
    "interrupted",
    "unknown",
    "infra",
    "history_unread",
    "below",
    "below_pass_rate",
    "dropped",
    "regressed",
    "failed",
    "met",
    "no_drop",
    "no_baseline",
    "empty",
    "ungated",
]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the decision made of one result: ``passed``, ``failed``, ``unknown`` (not
    scored, interrupted) or ``neutral`` (pending: neither); for a failure, the line of
    each check it failed (its own, a drop, a regression under ``fail_on_regression``).

    ``below`` (under a failed ``--min-accuracy``, the result is one of those below it)
    and ``strict`` (its run or judge errors under ``--strict``) fail the result too, but
    are said run-wide by the threshold's message and the strict note, so they are not
    among :attr:`reasons`: a report that shows one result (a JUnit testcase) reads them
    here instead of working them out again."""

    subject: str
    state: str
    failed: str | None = None
    dropped: str | None = None
    regression: str | None = None
    below: str | None = None
    strict: str | None = None

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(r for r in (self.failed, self.dropped, self.regression) if r)


@dataclass(frozen=True)
class Decision:
    """The exit code of a gated run and why, in the order a CI log prints them:
    ``warnings`` (a gate that could not apply), ``strict_note`` (errors that --strict
    turned into exit 3), ``unscored`` (one line per result whose outcome is unknown),
    ``failed`` (results that failed their own check or regressed), then the threshold's
    and the drop's own messages when they failed."""

    code: int
    threshold: ThresholdResult | None = None
    drop: DropResult | None = None
    #: ``--min-pass-rate``'s check (None: not asked for).
    pass_rate: PassRateResult | None = None
    warnings: tuple[str, ...] = ()
    #: Why an empty selection failed the gates (exit 1; ``--allow-empty`` passes it).
    empty: str | None = None
    strict_note: str | None = None
    unscored: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    outcomes: tuple[Outcome, ...] = ()
    interrupted: bool = False
    #: The gates decided on, so a report can say which rules applied.
    gates: Gates = field(default_factory=Gates)
    #: ``--fail-on-regression``'s paired test against the baseline run (None: not asked).
    regression: RegressionCheck | None = None

    @property
    def passed(self) -> bool:
        return self.code == EXIT_OK

    @property
    def headline(self) -> Headline:
        """What a report's first line says, in the order the exit code's causes win:
        ``interrupted``; ``unknown`` (a result could not be scored); ``infra`` (exit 3
        for another cause: errors under ``--strict``, a run stopped by a provider);
        ``history_unread`` (a drop check that could not read the history); ``below``
        (the threshold failed); ``dropped``; ``regressed`` (``--fail-on-regression``'s
        paired test failed the run); ``failed`` (exit 1 for a result's own check); then, passing, ``met`` (a threshold), ``no_drop`` (a drop check that
        compared with earlier runs), ``no_baseline`` (a drop check with nothing earlier to
        compare with: a first run proves nothing) or ``ungated``. Read by the pretty report so it never contradicts the code."""
        if self.interrupted:
            return "interrupted"
        if self.empty is not None:
            return "empty"
        if any(o.state == "unknown" for o in self.outcomes):
            return "unknown"
        if self.code == EXIT_INFRA:
            return "infra"
        if self.drop is not None and not self.drop.checked:
            return "history_unread"
        if self.regression is not None and not self.regression.checked:
            return "history_unread"
        if self.threshold is not None and not self.threshold.passed:
            return "below"
        if self.pass_rate is not None and not self.pass_rate.passed:
            return "below_pass_rate"
        if self.drop is not None and not self.drop.passed:
            return "dropped"
        if self.regression is not None and not self.regression.passed:
            return "regressed"
        if self.code == EXIT_FAILED:
            return "failed"
        if self.threshold is not None:
            return "met"
        if self.drop is not None:
            return "no_drop" if self.drop.compared else "no_baseline"
        return "ungated"

    @property
    def reasons(self) -> list[str]:
        """Every sentence that explains a non-zero code, in print order."""
        lines = [self.strict_note] if self.strict_note else []
        if self.empty is not None:
            lines.append(self.empty)
        lines += self.unscored
        lines += self.failed
        for check in (self.threshold, self.pass_rate, self.drop, self.regression):
            if check is not None and not check.passed:
                lines.append(check.message)
        return lines

    @property
    def failures(self) -> dict[str, list[str]]:
        """Per subject, the reasons it failed besides the threshold, for JUnit."""
        return {o.subject: list(o.reasons) for o in self.outcomes if o.reasons}


def gated_code(
    base: int,
    threshold: ThresholdResult | None,
    drop: DropResult | None,
    pass_rate: PassRateResult | None = None,
    regression: RegressionCheck | None = None,
) -> int:
    """The precedence every kind shares: ``base`` (3 unknown outcome, 1 a result failed
    its own check, else 0) with the run-wide gates over it. 3 wins (a drop or regression
    check that could not read the history is an unknown outcome too), then any failure,
    then 0."""
    if base == EXIT_INFRA or any(c is not None and not c.checked for c in (drop, regression)):
        return EXIT_INFRA
    if base == EXIT_FAILED:
        return EXIT_FAILED
    if any(c is not None and not c.passed for c in (threshold, drop, pass_rate, regression)):
        return EXIT_FAILED
    return EXIT_OK


def error_code(error: BaseException) -> int:
    """The exit code of what stopped a command or a run: an oxyeval error says what it
    is (2 bad input, 3 a provider or the infrastructure); anything else (a bug, an
    unexpected exception) leaves the outcome unknown, 3. The one such mapping, so a
    command, a saved report and the SDK never disagree on an error's code."""
    return error.exit_code if isinstance(error, OxyError) else EXIT_INFRA


def interrupted_code() -> int:
    """SIGINT/SIGTERM before the run could decide: its outcome is unknown."""
    return EXIT_INFRA


def usage_code() -> int:
    """A command line that cannot run (an unknown option, options that conflict): bad
    input, like a bad file."""
    return EXIT_INPUT


def with_artifact_failure(code: int) -> int:
    """``code`` once a report file asked for (``--junit``) could not be written: a run
    that passed becomes 3 (CI must not read a missing report as green); a failure keeps
    its own code."""
    return EXIT_INFRA if code == EXIT_OK else code


def gate_option_error(gates: Gates) -> str | None:
    """Why the gate options are unusable (exit 2), or None."""
    if gates.min_accuracy is not None and not 0.0 <= gates.min_accuracy <= 1.0:
        return (
            "--min-accuracy must be between 0 and 1 (a share, e.g. 0.8 for 80%), "
            f"got {gates.min_accuracy:g}"
        )
    if gates.fail_on_drop is not None and not 0.0 <= gates.fail_on_drop <= 100.0:
        return (
            "--fail-on-drop is in percentage points between 0 and 100 (e.g. 5 fails a test "
            f"that falls from 90% to under 85%), got {gates.fail_on_drop:g}"
        )
    if gates.min_pass_rate is not None and not 0.0 <= gates.min_pass_rate <= 1.0:
        return (
            "--min-pass-rate must be between 0 and 1 (a share of the results with a check "
            f"of their own, e.g. 0.9 for 90%), got {gates.min_pass_rate:g}"
        )
    if gates.inconclusive not in INCONCLUSIVE_POLICIES:
        return f"--inconclusive is pass or fail, got {gates.inconclusive!r}"
    return None


def _below_line(result: Result, threshold: ThresholdResult | None, metric: str) -> str | None:
    """Why ``result`` fails a failed threshold: it is one of those below it (in average
    mode only when the average failed too, which the line then quotes)."""
    if threshold is None or threshold.passed:
        return None
    if result.subject not in {name for name, _score in threshold.failing}:
        return None
    score = "no score" if result.score is None else percent(result.score)
    line = f"{metric} {score} below threshold {percent(threshold.min_accuracy)}"
    if threshold.mode == "average":
        line += f" (--threshold-mode average: {threshold.message})"
    return line


def _outcome(
    result: Result,
    gates: Gates,
    dropped: dict[str, str],
    threshold: ThresholdResult | None,
    metric: str,
    pass_rate: PassRateResult | None = None,
) -> Outcome:
    kind = result_kind(result.kind)
    if result.status in kind.unknown:
        return Outcome(result.subject, "unknown")
    if result.status in kind.neutral:
        return Outcome(result.subject, "neutral")
    failed = kind.failed_line(result) if result.passed is False and kind.checks_gate else None
    under_rate = None
    if pass_rate is not None:
        # Under --min-pass-rate a failed check fails the run only through the rate, which
        # says so once: this result fails only when the rate does.
        if result.passed is False and not pass_rate.passed:
            under_rate = f"{kind.failed_line(result)} (--min-pass-rate: {pass_rate.message})"
        failed = None
    regression = None
    if gates.fail_on_regression and result.regressions:
        regression = f"regression: {result.subject}: {redact('; '.join(result.regressions))}"
    drop = dropped.get(result.subject)
    below = _below_line(result, threshold, metric) or under_rate
    strict = None
    if gates.strict and (result.run_errors or result.judge_errors):
        strict = (
            f"--strict: {result.run_errors} run error(s) and {result.judge_errors} judge error(s)"
        )
    state = "failed" if failed or drop or regression or below or strict else "passed"
    return Outcome(result.subject, state, failed, drop, regression, below, strict)


def _gate_names(gates: Gates) -> str:
    names = []
    if gates.min_accuracy is not None:
        names.append(f"--min-accuracy {gates.min_accuracy:g}")
    if gates.fail_on_drop is not None:
        names.append(f"--fail-on-drop {gates.fail_on_drop:g}")
    if gates.min_pass_rate is not None:
        names.append(f"--min-pass-rate {gates.min_pass_rate:g}")
    return ", ".join(names)


def decide(
    results: Sequence[Result],
    gates: Gates,
    *,
    interrupted: bool = False,
    history_unread: Sequence[str] = (),
    error: BaseException | None = None,
    kind: str | None = None,
) -> Decision:
    """Gate ``results`` (of one kind). ``history_unread``: why earlier results could not
    be read (a drop check then cannot decide); ``error``: what stopped the run after
    some results finished, whose exit code wins (2 bad input, else 3); ``kind``: the
    kind of result, for the wording when there may be none."""
    metric, _noun = _words(results, kind)
    warnings: list[str] = []
    threshold = None
    if gates.min_accuracy is not None:
        threshold = check_threshold(results, gates.min_accuracy, gates.threshold_mode, kind=kind)
        if threshold is None and (results or gates.allow_empty):
            warnings.append(
                f"warning: --min-accuracy given but no {metric} metrics were produced; not gating"
            )
    drop = None
    dropped: dict[str, str] = {}
    if gates.fail_on_drop is not None:
        drop = check_drop(
            results,
            gates.fail_on_drop,
            history_ok=not history_unread,
            why="; ".join(history_unread) or None,
            kind=kind,
        )
        for name, score, previous in drop.dropped:
            change = (score - previous.accuracy) * 100
            dropped[name] = (
                f"{metric} fell {-change:.1f} points against its previous run "
                f"(--fail-on-drop {gates.fail_on_drop:g})"
            )
    pass_rate = None
    if gates.min_pass_rate is not None and (results or not gates.allow_empty):
        pass_rate = check_pass_rate(results, gates.min_pass_rate, kind=kind)
        if pass_rate.value is None and results:
            warnings.append(f"warning: {pass_rate.message}; not gating")
            pass_rate = None
    regression = None
    if gates.fail_on_regression and (results or not gates.allow_empty):
        regression = check_regression(
            results,
            inconclusive=gates.inconclusive,
            history_ok=not history_unread,
            why="; ".join(history_unread) or None,
        )
        if regression.outcome == "inconclusive" and regression.passed:
            warnings.append(f"warning: {regression.message}")
        elif regression.outcome == "no_baseline" and results:
            warnings.append(f"warning: {regression.message}; not gating")
    outcomes = tuple(_outcome(r, gates, dropped, threshold, metric, pass_rate) for r in results)
    unknown = [r for r, o in zip(results, outcomes, strict=True) if o.state == "unknown"]
    soft = gates.strict and any(r.run_errors or r.judge_errors for r in results)
    # Failed on its own (its check, a regression), not only by a drop: the drop decides apart.
    own_failure = any(o.failed or o.regression for o in outcomes)
    base = EXIT_INFRA if interrupted or unknown or soft else EXIT_FAILED if own_failure else EXIT_OK
    code = gated_code(base, threshold, drop, pass_rate if results else None, regression)
    strict_note = None
    if (
        soft
        and not interrupted
        and not unknown
        and (drop is None or drop.checked)
        and (regression is None or regression.checked)
    ):
        runs = sum(r.run_errors for r in results)
        judges = sum(r.judge_errors for r in results)
        strict_note = (
            f"strict: {runs} run error(s) and {judges} judge error(s) -> exit {EXIT_INFRA} "
            "(without --strict they are reported and the scores stand)"
        )
    empty = None
    if gates.gating and not results and not interrupted and not gates.allow_empty:
        empty = (
            f"nothing was tested, so the gates ({_gate_names(gates)}) cannot pass: check "
            "the files and folders given (--allow-empty lets an empty selection pass)"
        )
        code = max(code, EXIT_FAILED)
    if error is not None:
        code = error_code(error)
    unscored: tuple[str, ...] = ()
    if code != EXIT_OK:  # every non-zero exit says why, once per result
        unscored = tuple(redact(result_kind(r.kind).unknown_line(r)) for r in unknown)
    # Own checks first, then regressions (a CI log groups them); a drop is said once, by
    # the drop's own message.
    failed = tuple(o.failed for o in outcomes if o.failed) + tuple(
        o.regression for o in outcomes if o.regression
    )
    return Decision(
        code=code,
        threshold=threshold,
        drop=drop,
        pass_rate=pass_rate if results else None,
        warnings=tuple(warnings),
        strict_note=strict_note,
        unscored=unscored,
        failed=failed,
        outcomes=outcomes,
        interrupted=interrupted,
        gates=gates,
        empty=empty,
        regression=regression,
    )


class DecidableRun(Protocol):
    """What every kind's run object offers the decision: its kind, its results (those
    cut short included) and whether a signal stopped it. A consistency run also says
    why earlier results could not be read (``history_unread``). A run may also offer
    ``decision_results()``: the same results without what the decision never reads
    (answers, named scores), cheaper for a run of thousands."""

    kind: str
    interrupted: bool

    def as_results(self) -> list[Result]: ...


def decide_run(
    run: DecidableRun, gates: Gates | None = None, *, error: BaseException | None = None
) -> Decision:
    """:func:`decide` on a run object of any kind (a library call's return, a saved
    run read back): what a script asks for instead of working out an exit code."""
    slim = getattr(run, "decision_results", None)
    return decide(
        slim() if callable(slim) else run.as_results(),
        gates or Gates(),
        interrupted=bool(run.interrupted),
        history_unread=tuple(getattr(run, "history_unread", ())),
        error=error,
        kind=run.kind,
    )
