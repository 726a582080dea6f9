"""``oxy test``'s report for people: a headline that never contradicts the exit code,
then per test its accuracy, the most consistent output, failing comparisons and errors.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..evaluation import moment, percent
from ..redact import clip
from .text import shown

if TYPE_CHECKING:
    from rich.console import Console

    from ..evaluation import Decision
    from ..suites.consistency.results import (
        ConsistencyRun,
        ConsistencyTestResult,
        OutputRecord,
    )

__all__ = [
    "cached_calls_line",
    "change_text",
    "judge_agreement_line",
    "judge_swap_line",
    "pairing_check_line",
    "points",
    "render_pretty",
]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def cached_calls_line(calls: int) -> str:
    """The line that says a run's model calls were served from the cache, so a reader of
    a cheap rerun knows the judge (or the model) was not asked (``oxy test``, ``oxy run``)."""
    return f"{_plural(calls, 'model call')} served from the cache (--no-cache to make every call)"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else percent(value)


def _clip(text: str, limit: int = 600) -> str:
    return clip(text.strip(), limit, total=True)


def points(change: float) -> str:
    """``−6.1 pts``: a change of accuracy in percentage points, signed (a true minus)."""
    shown = "±0.0" if abs(change) < 0.05 else f"{change:+.1f}".replace("-", "−")
    return f"{shown} pts"


def change_text(test: ConsistencyTestResult) -> str:
    """`` (−6.1 pts vs 2026-11-20 10:04 UTC)``: the accuracy's change against the
    previous run of the same test (empty without one)."""
    change = test.change
    if change is None or test.previous is None:
        return ""
    return f" ({points(change)} vs {moment(test.previous.at)})"


def pairing_check_line(check: dict[str, object]) -> str:
    """``pairing: cluster`` in one line: the calls saved and what the check found."""
    line = (
        f"pairing: cluster · {check['judged']} of {check['allPairsCalls']} judge calls made "
        f"({check['callsSaved']} saved) · {check['checked']} inferred pair(s) checked"
    )
    wrong = check.get("disagreements") or []
    if wrong:
        runs = ", ".join("run {} vs run {}".format(*d["runs"]) for d in wrong[:5])  # type: ignore[index]
        line += (
            f" · {len(wrong)} disagree with the clusters ({runs}): the judge is not "  # type: ignore[arg-type]
            "transitive here, prefer pairing: all"
        )
    else:
        line += ", all agree with the clusters"
    return line


def judge_swap_line(swap: dict[str, object], judge: str) -> str:
    """``judge_swap`` in one line: the judge's share of pairs whose two orders disagreed."""
    pairs, biased, share = swap["pairs"], swap["disagreements"], swap["share"]
    said = f"{share * 100:.1f}%" if isinstance(share, float | int) else "n/a"
    line = (
        f"judge swap ({judge}): {biased} of {pairs} pair(s) judged in both orders "
        f"disagreed ({said} position bias)"
    )
    if biased:
        line += ", counted as judge errors"
    return line


def judge_agreement_line(summary: dict[str, Any]) -> str:
    """``--judge-agreement`` in one line: the two judges' kappa over the pairs re-judged."""
    found = summary.get("agreement")
    line = f"Judge agreement with {summary['model']}: "
    if found is None:
        return line + f"no pair compared ({summary['errors']} second-judge error(s))"
    kappa, interval = found["kappa"], found["interval"]
    said = "kappa n/a (one label only)" if kappa is None else f"kappa {kappa:.3f}"
    if interval is not None:
        said += f" (95% interval {interval['low']:.3f} to {interval['high']:.3f})"
    line += f"{said}, {found['observed']:.1%} raw, over {summary['compared']} pair(s)"
    if summary["errors"]:
        line += f"; {summary['errors']} second-judge error(s) left out"
    return line


def _render_test(
    console: Console, run: ConsistencyRun, test: ConsistencyTestResult, quiet: bool
) -> None:
    from rich.markup import escape

    plain = run.label(test)
    if len({t.file for t in run.tests}) == 1:
        plain = f"{test.file} · {plain}"
    if len(plain) + 4 <= console.width:
        console.rule(f"[bold]{escape(plain)}", align="left", style="dim")
    else:  # a rule would cut a long name short: the name whole, wrapped, in bold
        console.print(f"[bold]{escape(plain)}[/]")
    if test.task_description and not quiet:
        console.print(f"Task: {escape(test.task_description)}")
    if test.ok:
        console.print(
            f"[bold]Accuracy: {_pct(test.accuracy)}[/]{change_text(test)} [dim]{_ACCURACY}[/]"
        )
    elif test.interrupted and test.accuracy is not None:
        console.print(
            f"[bold yellow]Accuracy: {_pct(test.accuracy)} (partial) — {escape(shown(test.error or ''))}[/]"
        )
    else:
        error = test.error or "not scored"
        if test.run_errors and not quiet:  # listed below, once
            error = error.split("; first error: ")[0] + " (run errors below)"
        console.print(f"[bold red]Accuracy: n/a — {escape(shown(error))}[/]")
    ok_runs = len(test.outputs) - len(test.run_errors)
    cut = f", {test.unfinished_runs} cut short" if test.unfinished_runs else ""
    total = test.total_pairs or test.pairs
    facts = (
        f"{_plural(test.n, 'run')} ({ok_runs} ok{cut}) · {test.judged_pairs}/{total} pairs judged · "
        f"{_plural(test.judge_calls, 'judge call')}"
    )
    if test.identical_pairs:
        facts += f" ({_plural(test.identical_pairs, 'identical pair')} not sent to the judge)"
    if test.cached_calls:
        facts += f" · {_plural(test.cached_calls, 'call')} from the cache"
    facts += f" · judge: {escape(test.judge_model)} · {test.duration:.1f}s"
    console.print(f"[dim]{facts}[/]")
    if test.pairing_check is not None:
        console.print(pairing_check_line(test.pairing_check), markup=False)
    if test.judge_swap is not None:
        console.print(judge_swap_line(test.judge_swap, test.judge_model), markup=False)
    if quiet:
        return
    sel = test.selected_output
    if sel is not None:
        console.print(
            f"Most consistent output (run {sel.run}, {_pct(sel.consistency)} of its comparisons consistent):"
        )
        console.print(
            textwrap.indent(_clip(shown(sel.text or "")), "    "), style="cyan", markup=False
        )
    elif test.comparisons:
        why = (
            "no comparison got a verdict from the judge"
            if not any(c.get("verdict") and not c.get("identical") for c in test.comparisons)
            else "the test could not be scored"
        )
        console.print(f"[yellow]No output could be selected: {why}.[/]")
    if test.failing:
        _render_disagreements(console, test)
    if test.run_errors:
        console.print(f"[red]Run errors ({len(test.run_errors)} of {test.n}):[/]")
        for error, runs in _grouped((o.error or "", f"run {o.run}") for o in test.run_errors):
            console.print(f"  {escape(runs)}: {escape(shown(error))}")
    if test.judge_errors:
        console.print(f"[red]Judge errors ({len(test.judge_errors)}), excluded from the score:[/]")
        for error, pairs in _grouped(
            (c["error"], "run {} vs run {}".format(*c["runs"])) for c in test.judge_errors
        ):
            console.print(f"  {escape(pairs)}: {escape(shown(error))}")


#: What a consistency test's accuracy measures, said beside it.
_ACCURACY = "(how often two runs' answers agree, pair by pair)"


def _render_disagreements(console: Console, test: ConsistencyTestResult) -> None:
    """The answers the judge found inconsistent, grouped: answers it found consistent
    with each other are one group (its runs, one wording and how many others), then
    each reason once with the groups it set apart. What disagrees and why, without
    verdict letters or pair weights to decode."""
    failing = test.failing
    # Each distinct answer: its text group, or the run alone when no group is known.
    answer = {o.run: o.group if o.group is not None else -o.run for o in test.outputs}

    def ends(c: dict[str, Any]) -> list[int]:
        groups = c.get("groups")
        return list(groups) if groups else [answer.get(r, -r) for r in c["runs"]]

    # The test's answer clusters (consistent pairs join answers), each named by its
    # smallest answer number.
    parent = {a: min(c.answers) for c in test.clusters.clusters for a in c.answers}

    def root(g: int) -> int:
        return parent.get(g, g)

    if any(len({root(g) for g in ends(c)}) == 1 for c in failing):
        parent.clear()  # agreement was not transitive here: each distinct answer alone
    members: dict[int, list[OutputRecord]] = {}
    for o in test.outputs:
        members.setdefault(root(answer[o.run]), []).append(o)
    involved = sorted({root(g) for c in failing for g in ends(c)}, key=lambda g: (g < 0, abs(g)))
    number = {g: i for i, g in enumerate(involved, 1)}
    pairs = sum(int(c.get("weight") or 1) for c in failing)
    total = test.total_pairs or test.pairs
    console.print(f"[yellow]Answers that disagree ({pairs} of {total} pairs of runs):[/]")
    for g in involved:
        outputs = members.get(g, [])
        which = [o.run for o in outputs] or [-g]
        who = f"run {which[0]}" if len(which) == 1 else "runs " + ", ".join(map(str, which))
        wordings = {" ".join(shown(o.text or "").split()) for o in outputs}
        text = " ".join(shown(outputs[0].text or "").split()) if outputs else ""
        more = f" (and {len(wordings) - 1} other wording(s))" if len(wordings) > 1 else ""
        console.print(f"  [{number[g]}] {who}: {_clip(text, 200)}{more}", markup=False)
    reasons: dict[str, set[tuple[int, int]]] = {}
    for c in failing:
        a, b = sorted(number[root(g)] for g in ends(c))
        reasons.setdefault(str(c.get("reasoning") or "(no reasoning given)"), set()).add((a, b))
    for why, between in reasons.items():
        console.print(f"  {_between(sorted(between))}:", markup=False)
        console.print(textwrap.indent(_clip(shown(why), 400), "      "), style="dim", markup=False)


def _between(pairs: list[tuple[int, int]]) -> str:
    """``[2] vs [1], [3]`` when one answer is in every pair (an outlier), else each pair."""
    common = set(pairs[0]).intersection(*map(set, pairs[1:]))
    if len(pairs) > 1 and common:
        odd = min(common)
        others = sorted({b if a == odd else a for a, b in pairs})
        return f"[{odd}] vs " + ", ".join(f"[{o}]" for o in others)
    return ", ".join(f"[{a}] vs [{b}]" for a, b in sorted(pairs))


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


def _headline(run: ConsistencyRun, decision: Decision) -> str:
    """The first line, as the decision's :attr:`~Decision.headline` says: a green tick
    only for a passed gate, a cross for any failure; the run gives the counts shown."""
    state = decision.headline
    if state == "interrupted":
        cut = sum(1 for t in run.tests if t.interrupted)
        return f"⚠ Eval interrupted; {len(run.tests) - cut} of {len(run.tests)} test(s) finished:"
    if state == "empty":
        return "❌ Nothing was tested, and a gate was given:"
    if state == "unknown":
        bad = sum(1 for o in decision.outcomes if o.state == "unknown")
        return f"❌ Eval finished; {bad} of {len(run.tests)} test(s) could not be scored:"
    if state == "infra":
        runs = sum(len(t.run_errors) for t in run.tests)
        judges = sum(len(t.judge_errors) for t in run.tests)
        return (
            f"❌ Eval finished with {runs} run error(s) and {judges} judge error(s) "
            f"(--strict: exit {decision.code}); metrics:"
        )
    if state == "history_unread":
        return "❌ Eval finished, but --fail-on-drop could not read the history; metrics:"
    if state == "below":
        return "❌ Eval finished below the threshold:"
    if state == "dropped":
        return "❌ Eval finished; accuracy dropped against the previous run:"
    if state == "regressed":
        return "❌ Eval finished; the tests regressed against the baseline run:"
    if state == "failed":
        bad = sum(1 for o in decision.outcomes if o.state == "failed")
        return f"❌ Eval finished; {bad} of {len(run.tests)} test(s) failed:"
    if state == "met":
        return "✅ Eval finished; threshold met:"
    if state == "no_drop":
        return "✅ Eval finished; no accuracy dropped against the previous run:"
    if state == "no_baseline":
        return "Eval finished with metrics (no earlier run to compare --fail-on-drop with):"
    return "Eval finished with metrics (no --min-accuracy threshold to pass):"


def render_pretty(
    run: ConsistencyRun,
    decision: Decision | None,
    console: Console,
    *,
    quiet: bool = False,
) -> None:
    """``decision`` is the run's (:func:`oxyeval.report.verdict.decide`), with the exit
    code the command ends with, so the headline and the gate lines never contradict it;
    None: the run ungated (``Gates()``)."""
    if not run.tests:
        console.print("No consistency tests found.")
        return
    if decision is None:
        from .verdict import Gates, decide

        decision = decide(run, Gates())
    console.print(_headline(run, decision))
    for test in run.tests:
        _render_test(console, run, test, quiet)
    if len(run.tests) > 1:
        scored = [a for a in run.accuracies if a is not None]
        if scored:
            console.print(
                f"\nAverage accuracy: {_pct(sum(scored) / len(scored))} over {len(scored)} scored test(s)"
            )
    if run.cached_calls:
        console.print(cached_calls_line(run.cached_calls), style="dim", markup=False)
    agreement = run.judge_agreement
    if agreement is not None:
        console.print(judge_agreement_line(agreement), markup=False)
    regression = decision.regression
    if regression is not None and regression.passed and regression.outcome != "not_regressed":
        # Inconclusive passed by policy, or no baseline: said once, as the warning.
        regression = None
    for check in (decision.threshold, decision.drop, regression):
        if check is not None:
            style = "green" if check.passed else "bold red"
            mark = "✓" if check.passed else "✗"
            console.print(f"{mark} {check.message}", style=style, markup=False)
