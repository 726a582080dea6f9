"""Turning a TestRun into a verdict for CI (threshold, exit code) and into output.

JSON keeps oxy's top-level ``accuracy`` (a number for one test, a list for
several) so existing ``jq .accuracy`` pipelines keep working, and adds the detail
oxy never printed: per-test pairs, judge calls, errors and failing comparisons.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import EXIT_FAILED, EXIT_INFRA, EXIT_OK
from ..redact import redact, redact_data
from ..suites.results import TestResult, TestRun, ThresholdResult

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["check_threshold", "exit_code", "render_pretty", "to_json", "write_json"]

_EPS = 1e-9


def check_threshold(
    run: TestRun, min_accuracy: float, mode: str = "average"
) -> ThresholdResult | None:
    """Apply ``--min-accuracy``; None when there is no accuracy to compare (a warning, exit 0)."""
    if mode not in ("average", "all"):
        raise ValueError(f"threshold mode must be 'average' or 'all', not {mode!r}")
    if not run.tests:
        return None
    labelled = [(run.label(t), t.accuracy) for t in run.tests]
    unscored = [(name, acc) for name, acc in labelled if acc is None]
    scored = [acc for _name, acc in labelled if acc is not None]

    def fmt(items: list[tuple[str, float | None]]) -> str:
        return ", ".join(f"{n}: {a:.4f}" if a is not None else f"{n}: no score" for n, a in items)

    if mode == "average":
        value = sum(scored) / len(scored) if scored else None
        passed = value is not None and value + _EPS >= min_accuracy and not unscored
        failing = [(n, a) for n, a in labelled if a is None or a + _EPS < min_accuracy]
        if value is None:
            message = (
                f"No test could be scored, threshold {min_accuracy:.4f} not met: {fmt(unscored)}"
            )
        else:
            verb = "meets" if value + _EPS >= min_accuracy else "below"
            message = f"Average accuracy {value:.4f} {verb} threshold {min_accuracy:.4f}"
            if unscored:
                message += f", but {len(unscored)} test(s) could not be scored: {fmt(unscored)}"
        return ThresholdResult(min_accuracy, mode, passed, value, failing, message)

    failing = [(n, a) for n, a in labelled if a is None or a + _EPS < min_accuracy]
    value = min(scored) if scored and not unscored else None
    passed = not failing
    if passed:
        message = f"All {len(labelled)} test(s) meet threshold {min_accuracy:.4f}"
    else:
        message = f"{len(failing)} test(s) below threshold {min_accuracy:.4f}: {fmt(failing)}"
    return ThresholdResult(min_accuracy, mode, passed, value, failing, message)


def exit_code(run: TestRun, threshold: ThresholdResult | None, *, strict: bool = False) -> int:
    """3 if anything could not be scored (or was interrupted), else 1 below threshold, else 0."""
    if run.interrupted or any(not t.ok for t in run.tests):
        return EXIT_INFRA
    if strict and any(t.run_errors or t.judge_errors for t in run.tests):
        return EXIT_INFRA
    if threshold is not None and not threshold.passed:
        return EXIT_FAILED
    return EXIT_OK


def to_json(
    run: TestRun,
    threshold: ThresholdResult | None = None,
    *,
    code: int | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    accuracies = [None if a is None else round(a, 6) for a in run.accuracies]
    doc: dict[str, Any] = {
        "accuracy": accuracies[0] if len(accuracies) == 1 else accuracies,
        "tests": [t.to_dict() for t in run.tests],
    }
    if threshold is not None:
        doc["threshold"] = threshold.to_dict()
    doc["summary"] = {
        "tests": len(run.tests),
        "scored": sum(1 for t in run.tests if t.ok),
        "errors": sum(1 for t in run.tests if not t.ok),
        "run_errors": sum(len(t.run_errors) for t in run.tests),
        "judge_errors": sum(len(t.judge_errors) for t in run.tests),
        "judge_calls": sum(t.judge_calls for t in run.tests),
        "interrupted": run.interrupted,
        "exit_code": code,
    }
    if run.warnings or run.skipped:
        doc["warnings"] = [redact(w) for w in run.warnings + run.skipped]
    if error is not None:
        doc["error"] = redact(error)
    return doc


def write_json(doc: dict[str, Any], out: TextIO) -> None:
    """Every JSON document a command prints; secrets are scrubbed from the data first."""
    out.write(json.dumps(redact_data(doc), indent=2, ensure_ascii=False))
    out.write("\n")
    out.flush()


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.2f}%"


def _clip(text: str, limit: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _render_test(console: Console, run: TestRun, test: TestResult, quiet: bool) -> None:
    from rich.markup import escape

    label = escape(run.label(test))
    if len({t.file for t in run.tests}) == 1:
        label = f"{escape(test.file)} · {label}"
    console.rule(f"[bold]{label}", align="left", style="dim")
    if test.task_description and not quiet:
        console.print(f"Task: {escape(test.task_description)}")
    if test.ok:
        console.print(f"[bold]Accuracy: {_pct(test.accuracy)}[/]")
    elif test.interrupted and test.accuracy is not None:
        console.print(
            f"[bold yellow]Accuracy: {_pct(test.accuracy)} (partial) — {escape(redact(test.error or ''))}[/]"
        )
    else:
        console.print(f"[bold red]Accuracy: n/a — {escape(redact(test.error or 'not scored'))}[/]")
    ok_runs = len(test.outputs) - len(test.run_errors)
    total = test.total_pairs or test.pairs
    facts = (
        f"{_plural(test.n, 'run')} ({ok_runs} ok) · {test.judged_pairs}/{total} pairs judged · "
        f"{_plural(test.judge_calls, 'judge call')}"
    )
    if test.identical_pairs:
        facts += f" ({test.identical_pairs} identical pairs not sent to the judge)"
    facts += f" · judge: {escape(test.judge_model)} · {test.duration:.1f}s"
    console.print(f"[dim]{facts}[/]")
    if quiet:
        return
    sel = test.selected_output
    if sel is not None:
        console.print(
            f"Most consistent output (run {sel.run}, {_pct(sel.consistency)} of its comparisons consistent):"
        )
        console.print(
            textwrap.indent(_clip(redact(sel.text or "")), "    "), style="cyan", markup=False
        )
    elif test.comparisons:
        why = (
            "no comparison got a verdict from the judge"
            if not any(c.get("verdict") and not c.get("identical") for c in test.comparisons)
            else "the test could not be scored"
        )
        console.print(f"[yellow]No output could be selected: {why}.[/]")
    failing = test.failing
    if failing:
        console.print(f"[yellow]Failing comparisons ({len(failing)}):[/]")
        for comp in failing:
            i, j = comp["runs"]
            extra = f" (stands for {comp['weight']} pairs)" if comp["weight"] > 1 else ""
            console.print(
                f"  run {i} vs run {j}{extra} → {comp['verdict']} (score {comp['score']:g})"
            )
            reasoning = _clip(redact(comp.get("reasoning") or "(no reasoning given)"), 400)
            console.print(textwrap.indent(reasoning, "      "), style="dim", markup=False)
    if test.run_errors:
        console.print(f"[red]Run errors ({len(test.run_errors)} of {test.n}):[/]")
        for error, runs in _grouped((o.error or "", f"run {o.run}") for o in test.run_errors):
            console.print(f"  {escape(runs)}: {escape(redact(error))}")
    if test.judge_errors:
        console.print(f"[red]Judge errors ({len(test.judge_errors)}), excluded from the score:[/]")
        for error, pairs in _grouped(
            (c["error"], "run {} vs run {}".format(*c["runs"])) for c in test.judge_errors
        ):
            console.print(f"  {escape(pairs)}: {escape(redact(error))}")


def _grouped(items: Iterable[tuple[str, str]], shown: int = 5) -> list[tuple[str, str]]:
    """Identical errors once, naming where they happened: 20 runs that timed out are one
    line with the timeout hint, not 20 copies of it."""
    where: dict[str, list[str]] = {}
    for error, place in items:
        where.setdefault(error, []).append(place)
    out = []
    for error, places in where.items():
        names = ", ".join(places[:shown])
        if len(places) > shown:
            names += f" and {len(places) - shown} more"
        out.append((error, names))
    return out


def _headline(run: TestRun, threshold: ThresholdResult | None, code: int | None) -> str:
    """The first line: a green tick only for a passed threshold, a cross for any failure."""
    if run.interrupted:
        cut = sum(1 for t in run.tests if t.interrupted)
        return f"⚠ Eval interrupted; {len(run.tests) - cut} of {len(run.tests)} test(s) finished:"
    bad = sum(1 for t in run.tests if not t.ok)
    if bad:
        return f"❌ Eval finished; {bad} of {len(run.tests)} test(s) could not be scored:"
    if code == EXIT_INFRA:
        runs = sum(len(t.run_errors) for t in run.tests)
        judges = sum(len(t.judge_errors) for t in run.tests)
        return (
            f"❌ Eval finished with {runs} run error(s) and {judges} judge error(s) "
            "(--strict: exit 3); metrics:"
        )
    if threshold is not None:
        if threshold.passed:
            return "✅ Eval finished; threshold met:"
        return "❌ Eval finished below the threshold:"
    return "Eval finished with metrics (no --min-accuracy threshold to pass):"


def render_pretty(
    run: TestRun,
    threshold: ThresholdResult | None,
    console: Console,
    *,
    quiet: bool = False,
    code: int | None = None,
) -> None:
    """``code`` is the exit code the run ends with, so the headline never contradicts it."""
    if not run.tests:
        console.print("No consistency tests found.")
        return
    console.print(_headline(run, threshold, code))
    for test in run.tests:
        _render_test(console, run, test, quiet)
    if len(run.tests) > 1:
        scored = [a for a in run.accuracies if a is not None]
        if scored:
            console.print(
                f"\nAverage accuracy: {_pct(sum(scored) / len(scored))} over {len(scored)} scored test(s)"
            )
    if threshold is not None:
        style = "green" if threshold.passed else "bold red"
        console.print(f"[{style}]{'✓' if threshold.passed else '✗'} {threshold.message}[/]")
