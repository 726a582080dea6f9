"""Judged pass/fail tests for people and machines: chattest's table per prompt (test x
model -> pass rate and PASS/FAIL against the success threshold, then the outputs), and
oxy's ``*.test.yml`` lines (``PASS|FLKY|FAIL  name  (passed/runs)``, then the totals).

Texts a model wrote are passed through :func:`~oxyeval.report.shown`; cells are plain text,
never markup.
"""

from __future__ import annotations

from collections.abc import Iterator
from statistics import fmean
from typing import TYPE_CHECKING, Any

from .text import shown

if TYPE_CHECKING:
    from rich.console import Console

    from ..evaluation import Decision
    from ..suites import CriterionResult, PassFailRun, SubjectResult

__all__ = [
    "chattest_json",
    "passfail_label",
    "render_chattest",
    "render_test_files",
    "test_files_json",
    "unjudged_notes",
]


def _r(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


def passfail_label(result: CriterionResult) -> str:
    """oxy's four-letter verdict: FLKY when the runs disagreed, else PASS or FAIL by the
    threshold; ERR when no run could be judged."""
    if result.status == "error":
        return "ERR "
    if result.rate.flaky:
        return "FLKY"
    return "PASS" if result.passed else "FAIL"


def _result_json(result: CriterionResult) -> dict[str, Any]:
    rate = result.rate
    return {
        "passes": rate.passes,
        "runs": rate.runs,
        "maxRuns": result.max_runs,
        "passRate": None if result.status == "error" else _r(rate.pass_rate),
        "passed": result.passed,
        "threshold": result.threshold,
        "judgeErrors": rate.judge_errors,
        "runErrors": result.run_errors,
        "missingRuns": result.missing,
        "minJudged": result.min_judged,
        "flaky": rate.flaky,
        "consistent": result.consistent,
        "wilson": None
        if rate.wilson is None
        else {"low": _r(rate.wilson.low), "high": _r(rate.wilson.high)},
        "passHatK": _r(rate.pass_hat_k),
        "passAtK": _r(rate.pass_at_k),
        "settled": result.settled,
    }


def _summary(run: PassFailRun) -> dict[str, Any]:
    """The footer's counts (one pass, subject by subject)."""
    tests = passed = failed = errors = 0
    for subject in run.subjects:
        for r in subject.results:
            verdict = r.passed
            tests += 1
            passed += verdict is True
            failed += verdict is False
            errors += r.status == "error"
    return {
        "tests": tests,
        "passed": passed,
        "failed": failed,
        "errors": errors,
        "modelCalls": run.model_calls,
        "judgeCalls": run.judge_calls,
    }


def _calls(run: PassFailRun) -> dict[str, Any]:
    return {
        "modelCalls": run.model_calls,
        "judgeCalls": run.judge_calls,
        "savedCalls": run.saved_calls,
    }


def _document(
    kind: str,
    run: PassFailRun,
    body: dict[str, Any],
    decision: Decision | None,
    count: int | None = None,
) -> Any:
    """``count``: the run's results, known to a caller that counted them; a run whose
    subjects are kept on disk then has its results written as they are read back."""
    from ..evaluation import decide_run
    from .documents import run_document
    from .streaming import listed

    if decision is None:
        decision = decide_run(run)
    results = listed(run.each_result, count or 0, stream=count is not None and run.spilled)
    return run_document(
        kind,
        {**body, **_calls(run)},
        results,
        decision,
        interrupted=run.interrupted,
        history=run.history,
        warnings=run.warnings,
        cached_calls=run.cached_calls,
    )


def _groups(run: PassFailRun) -> dict[str, list[SubjectResult]]:
    groups: dict[str, list[SubjectResult]] = {}
    for subject in run.subjects:
        groups.setdefault(subject.group, []).append(subject)
    return groups


def chattest_json(run: PassFailRun, decision: Decision | None = None) -> dict[str, Any]:
    """``oxy chattest --format json``: the run document (:mod:`.documents`) with, per
    prompt, every (test, model) result and the outputs per model; ``decision``: the one
    the run ends with (by default the ungated one); every key always present."""
    prompts = []
    for key, subjects in _groups(run).items():
        results = [
            {"test": r.criterion.key, "model": s.name, **_result_json(r)}
            for s in subjects
            for r in s.results
        ]
        outputs = {s.name: [x.text for x in s.samples if x.text is not None] for s in subjects}
        prompts.append({"key": key, "results": results, "outputs": outputs})
    return _document("chattest", run, {"prompts": prompts}, decision)


def _tally(result: CriterionResult) -> str:
    """``passes/runs`` and the runs outside them (a run whose answer no judge could
    grade, one that got no answer), so a cell never hides why it has few runs."""
    rate = result.rate
    parts = [f"{rate.passes}/{rate.runs}"]
    if rate.judge_errors:
        parts.append(f"{rate.judge_errors} unjudged")
    if result.run_errors:
        parts.append(f"{result.run_errors} without an answer")
    # Planned runs not made (an interrupt, a cut-short cell): without a verdict too.
    unexplained = result.missing - rate.judge_errors - result.run_errors
    if unexplained > 0:
        parts.append(f"{unexplained} without verdict")
    return ", ".join(parts)


def unjudged_notes(run: PassFailRun) -> list[str]:
    """For each (prompt, model, test) scored with some runs left unjudged: how many, and
    each judge error once with the runs it hit."""
    lines = []
    for subject in run.subjects:
        for result in subject.results:
            failed = [c for c in result.checks if c.passed is None and c.error]
            if not failed or result.status == "error":
                continue
            where: dict[str, list[int]] = {}
            for check in failed:
                where.setdefault(str(check.error), []).append(check.run)
            head = (
                f"{subject.label}: {result.criterion.key}: {len(failed)} run(s) unjudged, "
                "left out of the pass rate"
            )
            for error, runs in where.items():
                shown_runs = ", ".join(map(str, runs[:5])) + (" ..." if len(runs) > 5 else "")
                lines.append(f"{head}: {shown(error)} (run {shown_runs})")
    return lines


def _cell(text: str) -> Any:
    from rich.text import Text

    return Text(shown(text))


def render_chattest(run: PassFailRun, console: Console, *, quiet: bool = False) -> None:
    """Per prompt a table of test x model -> pass rate and PASS/FAIL, then the outputs."""
    from rich.table import Table

    for key, subjects in _groups(run).items():
        table = Table(title=_cell(key), title_justify="left", title_style="bold")
        table.add_column("test", overflow="fold")
        for subject in subjects:
            table.add_column(_cell(subject.name), justify="right", overflow="fold")
        tests = [r.criterion.key for r in subjects[0].results] if subjects else []
        for i, test in enumerate(tests):
            row = [_cell(test)]
            for subject in subjects:
                result = subject.results[i]
                rate = result.rate
                error = result.status == "error"
                shown_rate = (
                    "-" if rate.pass_rate is None or error else f"{rate.pass_rate * 100:.0f}%"
                )
                # chattest's verdict: the pass rate against successThreshold (no FLKY)
                verdict = "ERR" if error else "PASS" if result.passed else "FAIL"
                row.append(_cell(f"{verdict} {shown_rate} ({_tally(result)})"))
            table.add_row(*row)
        console.print(table)
        if not quiet:
            for subject in subjects:
                texts = [s.text for s in subject.samples if s.text is not None]
                errors = [s.error for s in subject.samples if s.error is not None]
                console.print(f"outputs of {subject.name}:", style="bold", markup=False)
                for n, text in enumerate(texts, 1):
                    console.print(f"  {n}. {shown(' '.join(text.split()))[:300]}", markup=False)
                for error in dict.fromkeys(errors):
                    console.print(f"  error: {shown(error)}", style="red", markup=False)
    _footer(run, console)


def _footer(run: PassFailRun, console: Console) -> None:
    s = _summary(run)
    line = (
        f"{s['tests']} test(s): {s['passed']} passed, {s['failed']} failed, {s['errors']} "
        f"error(s) · {s['modelCalls']} model calls, {s['judgeCalls']} judge calls"
    )
    if run.saved_calls:
        line += f" · {run.saved_calls} calls saved by --adaptive"
    console.print(line, style="dim", markup=False)
    for warning in run.warnings:
        console.print(f"warning: {shown(warning)}", style="yellow", markup=False)


def test_files_json(run: PassFailRun, decision: Decision | None = None) -> dict[str, Any]:
    """``oxy test FILE.test.yml --format json``: the run document (:mod:`.documents`)
    with, per case, its verdict, each run's output and verdict with the judge's
    reasoning, and the overall numbers; the gate ``decision`` applied is its own. A run
    whose subjects are kept on disk is written case by case as they are read back."""
    from .streaming import listed

    overall, count = _overall(run)

    def cases() -> Iterator[dict[str, Any]]:
        for subject in run.subjects:
            for result in subject.results:
                yield _case_json(subject, result)

    shown_cases = listed(cases, count, stream=run.spilled)
    body = {"cases": shown_cases, "overall": overall}
    return _document("test-files", run, body, decision, count)  # type: ignore[no-any-return]


def _case_json(subject: SubjectResult, result: CriterionResult) -> dict[str, Any]:
    checks = {c.run: c for c in result.checks}
    runs = []
    for sample in subject.samples:
        check = checks.get(sample.run)
        runs.append(
            {
                "run": sample.run,
                "output": sample.text,
                "error": sample.error,
                "verdict": None
                if check is None or check.passed is None
                else ("PASS" if check.passed else "FAIL"),
                "reasoning": None if check is None else check.reasoning,
                "judgeError": None if check is None else check.error,
                "durationMs": sample.latency_ms,
                "inputTokens": sample.input_tokens,
                "outputTokens": sample.output_tokens,
                "tools": list(sample.tools),
            }
        )
    return {
        "file": subject.group,
        "name": subject.name,
        "verdict": passfail_label(result).strip(),
        **_result_json(result),
        "runsDetail": runs,
    }


def _overall(run: PassFailRun) -> tuple[dict[str, Any], int]:
    """The overall numbers, and how many results they are over: counted in one pass
    (each pass over a run kept on disk reads it back)."""
    rates: list[float] = []
    verdicts: list[bool] = []
    samples = answered = tokens = count = 0
    longest = 0.0
    for subject in run.subjects:
        longest = max(longest, subject.duration_s)
        for s in subject.samples:
            samples += 1
            answered += s.error is None
            tokens += (s.input_tokens or 0) + (s.output_tokens or 0)
        for r in subject.results:
            count += 1
            rate = r.rate.pass_rate
            if r.status != "error" and rate is not None:
                rates.append(rate)
            if r.consistent is not None:
                verdicts.append(r.consistent)
    overall = {
        "score": _r(fmean(rates)) if rates else None,
        # None when no result got a verdict: nothing was seen to agree with itself.
        "consistency": _r(fmean(verdicts)) if verdicts else None,
        "answerRate": _r(answered / samples) if samples else None,
        "tokens": tokens,
        "durationS": _r(longest, 3),
    }
    return overall, count


def render_test_files(run: PassFailRun, console: Console) -> None:
    """One line per case, oxy's way, then the totals."""
    for subject in run.subjects:
        for result in subject.results:
            console.print(
                f"{passfail_label(result)}  {shown(subject.label)}  ({_tally(result)})",
                style={"PASS": "green", "FAIL": "red", "FLKY": "yellow"}.get(
                    passfail_label(result), "red"
                ),
                markup=False,
            )
            for check in result.checks:
                if check.passed is False and not check.judged:
                    console.print(f"      run {check.run}: {shown(check.reasoning)}", markup=False)
            errors = [s.error for s in subject.samples if s.error is not None]
            errors += [c.error for c in result.checks if c.error]
            if result.status == "error" and result.rate.runs:
                errors.append(result.too_few_error())
            for error in dict.fromkeys(errors):
                console.print(f"      error: {shown(error)}", style="red", markup=False)
    o, _count = _overall(run)

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value * 100:.1f}%"

    console.print(
        f"score {pct(o['score'])} · consistency {pct(o['consistency'])} · answer rate "
        f"{pct(o['answerRate'])} · {o['tokens']} tokens · {o['durationS']:.1f}s",
        style="bold",
        markup=False,
    )
    _footer(run, console)
