"""``oxy test``'s verdict on a run, as a library call: the exit code and every reason.

The CLI (``oxy test``, ``oxy report``) prints what :func:`decide` returns; a Python
caller (a pytest plugin, a notebook, the SDK) gets the same code and the same sentences
without the command line: ``decide(run, Gates(min_accuracy=0.8, strict=True))``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import EXIT_INFRA, EXIT_OK, OxyError
from ..redact import redact
from .threshold import check_drop, check_threshold, exit_code

if TYPE_CHECKING:
    from ..suites.results import DropResult, TestRun, ThresholdResult

__all__ = ["Gates", "Verdict", "decide", "gate_option_error"]


@dataclass(frozen=True)
class Gates:
    """What the run must meet: ``--min-accuracy``/``--threshold-mode``, ``--strict``,
    ``--fail-on-drop`` (points)."""

    min_accuracy: float | None = None
    threshold_mode: str = "average"
    strict: bool = False
    fail_on_drop: float | None = None


@dataclass(frozen=True)
class Verdict:
    """The exit code of a gated run and why, in the order ``oxy test`` prints them:
    ``warnings`` (a gate that could not apply), ``strict_note`` (errors that --strict
    turned into exit 3), ``unscored`` (one line per test not scored, when the code is
    not 0), then the threshold's and the drop's own messages when they failed."""

    code: int
    threshold: ThresholdResult | None = None
    drop: DropResult | None = None
    warnings: tuple[str, ...] = ()
    strict_note: str | None = None
    unscored: tuple[str, ...] = ()
    #: Per test name, the reasons it failed besides the threshold (a drop), for JUnit.
    failures: dict[str, list[str]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.code == EXIT_OK

    @property
    def reasons(self) -> list[str]:
        """Every sentence that explains a non-zero code, in print order."""
        lines = [self.strict_note] if self.strict_note else []
        lines += self.unscored
        for check in (self.threshold, self.drop):
            if check is not None and not check.passed:
                lines.append(check.message)
        return lines


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
    return None


def decide(run: TestRun, gates: Gates, *, error: BaseException | None = None) -> Verdict:
    """Gate ``run``. ``error`` is what stopped the run after some tests finished: its
    exit code wins (2 bad input, else 3)."""
    warnings: list[str] = []
    threshold = None
    if gates.min_accuracy is not None:
        threshold = check_threshold(run, gates.min_accuracy, gates.threshold_mode)
        if threshold is None:
            warnings.append(
                "warning: --min-accuracy given but no accuracy metrics were produced; not gating"
            )
    drop = None
    if gates.fail_on_drop is not None:
        unread = run.history_unread  # read but not written: earlier results still decide
        drop = check_drop(
            run, gates.fail_on_drop, history_ok=not unread, why="; ".join(unread) or None
        )
    code = exit_code(run, threshold, strict=gates.strict, drop=drop)
    strict_note = None
    scored = all(t.ok for t in run.tests) and not run.interrupted
    if gates.strict and code == EXIT_INFRA and scored and (drop is None or drop.checked):
        runs = sum(len(t.run_errors) for t in run.tests)
        judges = sum(len(t.judge_errors) for t in run.tests)
        strict_note = (
            f"strict: {runs} run error(s) and {judges} judge error(s) -> exit {EXIT_INFRA} "
            "(without --strict they are reported and the scores stand)"
        )
    if error is not None:
        code = error.exit_code if isinstance(error, OxyError) else EXIT_INFRA
    unscored: list[str] = []
    if code != EXIT_OK:  # every non-zero exit says why, once per test
        for test in run.tests:
            if not test.ok:
                what = "" if test.interrupted else "not scored: "  # its error says interrupted
                unscored.append(f"{what}{run.label(test)}: {redact(test.error or 'no accuracy')}")
    failures: dict[str, list[str]] = {}
    for name, accuracy, previous in drop.dropped if drop is not None else []:
        change = (accuracy - previous.accuracy) * 100
        failures.setdefault(name, []).append(
            f"accuracy fell {-change:.1f} points against its previous run "
            f"(--fail-on-drop {gates.fail_on_drop:g})"
        )
    return Verdict(
        code=code,
        threshold=threshold,
        drop=drop,
        warnings=tuple(warnings),
        strict_note=strict_note,
        unscored=tuple(unscored),
        failures=failures,
    )
