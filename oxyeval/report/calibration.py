"""``oxy judge calibrate``'s report: a judge's agreement with a human-labelled set (pretty
and JSON), and the calibrations kept in the history, per judge model and prompt version."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..redact import redact
from .documents import document

if TYPE_CHECKING:
    from rich.console import Console

    from ..store import CalibrationRow
    from ..suites import Calibration

__all__ = [
    "calibration_history_json",
    "calibration_json",
    "render_calibration",
    "render_calibration_history",
]


def calibration_json(cal: Calibration) -> dict[str, Any]:
    body = cal.to_dict()
    body["verdicts"] = [
        {**v, "error": None if v["error"] is None else redact(v["error"])} for v in cal.verdicts
    ]
    return document("judgeCalibration", body)


def calibration_history_json(rows: Sequence[CalibrationRow], db: str) -> dict[str, Any]:
    return document("judgeCalibrations", {"db": db, "calibrations": [r.to_dict() for r in rows]})


def _kappa_text(kappa: float | None, low: float | None, high: float | None) -> str:
    if kappa is None:
        return "kappa n/a (both raters used one label only)"
    said = f"kappa {kappa:.3f}"
    if low is not None and high is not None:
        said += f" (95% interval {low:.3f} to {high:.3f})"
    return said


def render_calibration(cal: Calibration, console: Console) -> None:
    say = console.print
    say(
        f"Judge {cal.judge_model} (prompt {cal.prompt_version}) on {cal.file}: "
        f"{cal.judged} of {cal.items} item(s) judged",
        markup=False,
    )
    k = cal.kappa
    if k is None:
        say("No agreement: the judge gave no verdict.", markup=False)
    else:
        low = None if k.interval is None else k.interval.low
        high = None if k.interval is None else k.interval.high
        say(
            f"Agreement with the labels: {k.observed:.1%} raw, {_kappa_text(k.value, low, high)}",
            markup=False,
        )
        say("Confusion (rows: the label given, columns: the judge's):", markup=False)
        labels = sorted({a for a, _ in k.confusion} | {b for _, b in k.confusion})
        say("        " + "".join(f"{b:>8}" for b in labels), markup=False)
        for a in labels:
            cells = "".join(f"{k.confusion.get((a, b), 0):>8}" for b in labels)
            say(f"  {a:<6}{cells}", markup=False)
    wrong = [v for v in cal.verdicts if v["judge"] is not None and v["judge"] != v["human"]]
    for v in wrong[:10]:
        say(f"  {v['where']}: labelled {v['human']}, judged {v['judge']}", markup=False)
    if len(wrong) > 10:
        say(f"  and {len(wrong) - 10} more disagreement(s)", markup=False)
    for v in cal.errors[:5]:
        say(f"  {v['where']}: judge error: {redact(v['error'])}", markup=False)


def render_calibration_history(rows: Sequence[CalibrationRow], db: str, console: Console) -> None:
    if not rows:
        console.print(f"No judge calibration in {db} yet.", markup=False)
        return
    console.print(f"Judge calibrations in {db}, newest first:", markup=False)
    for r in rows:
        console.print(
            f"  {r.created_at[:16].replace('T', ' ')}  {r.judge_model}  prompt "
            f"{r.prompt_version}  {r.file}  {r.judged}/{r.items} judged  "
            f"{_kappa_text(r.kappa, r.kappa_low, r.kappa_high)}",
            markup=False,
        )
