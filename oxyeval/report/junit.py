"""``--junit FILE``: each kind of run as JUnit XML (:mod:`.junit_xml` is the format).

Which element a test gets is read from the run's :class:`~oxyeval.evaluation.Decision`
(the one that gives the exit code), never worked out here, so the XML cannot disagree
with the exit code.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..evaluation import percent
from .junit_xml import (
    Case,
    Suite,
    classname,
    clip_text,
    failure_of,
    number,
    outcomes_of,
    render,
    run_time,
    span,
    stopped,
    unique,
    xml_text,
)
from .text import shown

if TYPE_CHECKING:
    from ..evaluation import Decision, Outcome
    from ..suites import ABRun, PassFailRun
    from ..suites.cases.results import CaseResult, CaseRun
    from ..suites.consistency.results import ConsistencyRun, ConsistencyTestResult
    from .saved import SavedRun

__all__ = [
    "ab_junit",
    "cases_junit",
    "consistency_junit",
    "error_junit",
    "passfail_junit",
    "saved_junit",
    "xml_text",
]


def consistency_junit(
    run: ConsistencyRun,
    decision: Decision | None = None,
    *,
    error: str | None = None,
    timestamp: datetime | None = None,
    hostname: str | None = None,
) -> str:
    """``oxy test --junit``: one suite per file, one testcase per consistency test.

    ``decision`` is the run's (:func:`oxyeval.report.verdict.decide`): each testcase's
    error or failure is its outcome's, the exit code and threshold properties are its
    (None: the run ungated, and no exit code is written). ``error`` is what stopped the
    run (a run that failed before any test finished still gets a file, with one error
    testcase saying why).
    """
    given = decision is not None
    if decision is None:
        from .verdict import Gates, decide

        decision = decide(run, Gates())
    threshold = decision.threshold
    outcomes = outcomes_of([run.label(t) for t in run.tests], decision)
    by_file: dict[str, list[tuple[ConsistencyTestResult, Outcome | None]]] = {}
    for test, found in zip(run.tests, outcomes, strict=True):
        by_file.setdefault(test.file, []).append((test, found))
    files: dict[str, Suite] = {}
    for file, pairs in by_file.items():
        tests = [test for test, _found in pairs]
        suite = files[file] = Suite(
            name=file, package="oxy.test", time=span((t.started, t.duration) for t in tests)
        )
        for (test, found), name in zip(pairs, unique(t.name for t in tests), strict=True):
            suite.cases.append(_test_case(test, name, found))
            suite.properties.extend(_test_properties(name, test))
            suite.out.append(_test_summary(name, test))
            suite.err.extend(
                f"{name}: run {o.run}: {clip_text(o.error or '', 500)}" for o in test.run_errors
            )
            suite.err.extend(
                f"{name}: judge, runs {c.get('runs')}: {clip_text(str(c.get('error')), 500)}"
                for c in test.judge_errors
            )
    suites = list(files.values())
    cut_between = run.interrupted and not any(t.interrupted for t in run.tests)
    if not suites or error is not None or cut_between:
        # What stopped the run is a testcase of its own, so the CI server shows it red.
        suite = Suite(name="oxy test", package="oxy.test")
        if error is not None:
            suite.cases.append(Case("oxy test", "oxy.test", 0.0, error=("RunError", error, error)))
        if cut_between:
            why = (
                f"interrupted after {len(run.tests)} test(s) finished; "
                "tests not reached are not in this report"
            )
            suite.cases.append(
                Case("interrupted", "oxy.test", 0.0, error=("Interrupted", why, why))
            )
        suites.append(suite)
    run_props = [
        ("oxy.command", "oxy test"),
        ("oxy.interrupted", str(run.interrupted).lower()),
        ("oxy.duration_s", run_time(suites, span((t.started, t.duration) for t in run.tests))),
        ("oxy.cached_calls", str(run.cached_calls)),
    ]
    if given:
        run_props.append(("oxy.exit_code", str(decision.code)))
    if threshold is not None:
        run_props += [
            ("oxy.threshold.min_accuracy", number(threshold.min_accuracy)),
            ("oxy.threshold.mode", threshold.mode),
            ("oxy.threshold.passed", str(threshold.passed).lower()),
            ("oxy.threshold.value", number(threshold.value)),
        ]
    for suite in suites:
        suite.properties[:0] = run_props
        if threshold is not None and not threshold.passed:
            suite.err.append(threshold.message)
        suite.err.extend(run.warnings + run.skipped)
    return render(suites, timestamp, hostname)


def _test_case(test: ConsistencyTestResult, name: str, outcome: Outcome | None) -> Case:
    """The testcase of one test as its outcome says: an unknown outcome is an
    ``<error>``, a failed one a ``<failure>`` naming every check it failed."""
    case = Case(name=name, classname=classname(test.file), time=test.duration)
    if outcome is None:
        return case
    if outcome.state == "unknown":
        kind = "Interrupted" if test.interrupted else "NotScored"
        message = test.error or ("interrupted" if test.interrupted else "no accuracy")
        case.error = (kind, message, _test_detail(test))
        return case
    reasons: list[tuple[str, str]] = []
    if outcome.below is not None:
        reasons.append(("BelowThreshold", outcome.below))
    if outcome.strict is not None:
        reasons.append(("RunErrors" if test.run_errors else "JudgeErrors", outcome.strict))
    reasons.extend(("Regression", reason) for reason in outcome.reasons)
    case.failure = failure_of(reasons)
    return case


def _test_properties(prefix: str, test: ConsistencyTestResult) -> list[tuple[str, str]]:
    figures: list[tuple[str, Any]] = [
        ("accuracy", number(test.accuracy)),
        ("status", test.status),
        ("n", test.n),
        ("pairing", test.pairing),
        ("model", test.agent_model),
        ("judge_model", test.judge_model),
        ("pairs", test.pairs),
        ("total_pairs", test.total_pairs),
        ("judged_pairs", test.judged_pairs),
        ("identical_pairs", test.identical_pairs),
        ("judge_calls", test.judge_calls),
        # Calls (agent answers, verdicts) replayed from the cache: judge_calls 0 with
        # cached_calls > 0 is a test judged by earlier verdicts, not an unjudged one.
        ("cached_calls", test.cached_calls),
        ("successful_runs", sum(1 for o in test.outputs if o.error is None)),
        ("unfinished_runs", test.unfinished_runs),  # cut short by an interrupt, not failed
        ("run_errors", len(test.run_errors)),
        ("judge_errors", len(test.judge_errors)),
        ("duration_s", f"{test.duration:.3f}"),
    ]
    return [(f"{prefix}.{key}", str(value)) for key, value in figures]


def _test_summary(prefix: str, test: ConsistencyTestResult) -> str:
    accuracy = "not scored" if test.accuracy is None else f"accuracy {percent(test.accuracy)}"
    line = f"{prefix}: {accuracy}, {test.judged_pairs}/{test.total_pairs} pairs judged"
    selected = test.selected_output
    if selected is not None and selected.text is not None:
        line += f"\n  selected output (run {selected.run}): {clip_text(selected.text)}"
    return line


def _test_detail(test: ConsistencyTestResult) -> str:
    done = sum(1 for o in test.outputs if o.error is None)
    lines = [test.error or "", f"{done} of {test.n} run(s) succeeded"]
    lines += [f"run {o.run}: {clip_text(o.error or '', 500)}" for o in test.run_errors[:20]]
    return "\n".join(line for line in lines if line)


def cases_junit(
    run: CaseRun,
    decision: Decision | None = None,
    *,
    error: str | None = None,
    timestamp: datetime | None = None,
    hostname: str | None = None,
) -> str:
    """``oxy cases run --junit``: one suite per prompt version, one testcase per case.

    ``decision`` is the run's (:func:`~oxyeval.evaluation.decide_run`): a case whose outcome is
    unknown is an ``<error>``, a neutral one (pending: no expected output yet)
    ``<skipped>``, a failed one a ``<failure>`` (a regression only under
    ``--fail-on-regression``, which the decision applied); the exit code property is
    its code (None: the run ungated, and no exit code is written). An interrupted run
    gets an error testcase naming how many planned cases never ran.
    """
    given = decision is not None
    if decision is None:
        from ..evaluation import decide_run

        decision = decide_run(run)
    outcomes = outcomes_of([r.case_id for r in run.results], decision)
    by_prompt: dict[str, list[tuple[CaseResult, Outcome | None]]] = {}
    for result, found in zip(run.results, outcomes, strict=True):
        by_prompt.setdefault(result.prompt_id, []).append((result, found))
    suites = []
    for prompt_id, pairs in by_prompt.items():
        results = [result for result, _found in pairs]
        version = results[0].prompt_version
        suite = Suite(
            name=f"{prompt_id} v{version}",
            package="oxy.cases",
            time=span(_case_interval(r) for r in results),
        )
        for (result, found), name in zip(pairs, unique(r.name for r in results), strict=True):
            suite.cases.append(_case(result, name, found))
            suite.properties.extend(_case_properties(name, result))
            if result.actual_output is not None:
                suite.out.append(f"{name}: {clip_text(result.actual_output)}")
            if result.error is not None:
                suite.err.append(f"{name}: {result.error}")
        suites.append(suite)
    missing = max(0, run.planned - len(run.results))
    if not suites or error is not None or run.interrupted:
        suite = Suite(name="oxy cases run", package="oxy.cases")
        if error is not None:
            suite.cases.append(
                Case("oxy cases run", "oxy.cases", 0.0, error=("RunError", error, error))
            )
        if run.interrupted:
            why = f"interrupted: {len(run.results)} of {run.planned} case(s) finished, {missing} never ran"
            suite.cases.append(
                Case("interrupted", "oxy.cases", 0.0, error=("Interrupted", why, why))
            )
        suites.append(suite)
    run_props = [
        ("oxy.command", "oxy cases run"),
        ("oxy.interrupted", str(run.interrupted).lower()),
        ("oxy.fail_on_regression", str(decision.gates.fail_on_regression).lower()),
        ("oxy.planned", str(run.planned)),
        ("oxy.history", str(run.db)),
        ("oxy.duration_s", run_time(suites, span(_case_interval(r) for r in run.results))),
        ("oxy.cached_calls", str(run.cached_calls)),
    ]
    if given:
        run_props.append(("oxy.exit_code", str(decision.code)))
    for suite in suites:
        suite.properties[:0] = run_props
        suite.err.extend(run.warnings)
    return render(suites, timestamp, hostname)


def _case_interval(result: CaseResult) -> tuple[float | None, float]:
    return result.started, result.run_duration_ms / 1000


def _case(result: CaseResult, name: str, outcome: Outcome | None) -> Case:
    """The testcase of one case as its outcome says (see :func:`cases_junit`)."""
    case = Case(
        name=name,
        classname=classname(result.prompt_id),
        time=result.run_duration_ms / 1000,
    )
    if outcome is None:
        return case
    if outcome.state == "unknown":
        message = result.error or "the case could not run"
        case.error = ("CaseError", message, message)
        return case
    if outcome.state == "neutral":
        case.skipped = "no expected output yet: run `oxy cases accept` to adopt one"
        return case
    reasons: list[tuple[str, str]] = []
    if outcome.failed is not None:
        score = "-" if result.score is None else f"{result.score:.3f}"
        reasons.append(
            ("BelowThreshold", f"score {score} below its threshold {result.threshold:g}")
        )
    if outcome.regression is not None:
        why = "; ".join(result.regression_reasons) or ", ".join(result.regression_types)
        reasons.append(("Regression", f"regression: {why}"))
    failure = failure_of(reasons)
    if failure is not None:
        kind, message, text = failure
        detail = (
            f"\nexpected: {clip_text(result.expected_output or '')}"
            f"\nactual:   {clip_text(result.actual_output or '')}"
        )
        case.failure = (kind, message, text + detail)
    return case


def _case_properties(prefix: str, result: CaseResult) -> list[tuple[str, str]]:
    status = (
        "error"
        if result.error is not None
        else "pending"
        if result.pending
        else "passed"
        if result.passed
        else "failed"
    )
    figures: list[tuple[str, Any]] = [
        ("score", number(result.score)),
        ("status", status),
        ("threshold", number(result.threshold)),
        ("exact_match", str(result.exact_match).lower()),
        ("semantic_score", number(result.semantic_score)),
        ("similarity_method", result.similarity_method),
        ("regression", str(result.is_regression).lower()),
        ("regression_types", ",".join(result.regression_types)),
        ("prompt_version", result.prompt_version),
        ("latency_ms", number(result.latency_ms)),
        ("input_tokens", "" if result.input_tokens is None else result.input_tokens),
        ("output_tokens", "" if result.output_tokens is None else result.output_tokens),
        ("cached_calls", int(result.cached)),  # 1: the answer was replayed (--cache)
    ]
    return [(f"{prefix}.{key}", str(value)) for key, value in figures]


def ab_junit(
    run: ABRun,
    decision: Decision,
    *,
    error: str | None = None,
    timestamp: datetime | None = None,
    hostname: str | None = None,
) -> str:
    """``oxy ab run --junit``: a suite per case, a test per branch. A branch whose call
    failed is an error (the decision's unknown outcome: the comparison misses data); the
    ranking is told in properties (``oxy.rank``, ``oxy.winner``), since being outranked
    is not a failure."""
    suites = []
    for result in run.results:
        suite = Suite(name=result.test_case_id, package="oxyeval.ab")
        winner = result.winner.branch.name if result.winner is not None else ""
        suite.properties = [
            ("oxy.exit_code", str(decision.code)),
            ("oxy.criteria", result.criteria),
            ("oxy.iterations", str(result.iterations)),
            ("oxy.winner", winner),
            (
                "oxy.significant",
                "" if result.significant is None else str(result.significant).lower(),
            ),
        ]
        for s in result.branches:
            latencies = [o.latency_ms or 0.0 for o in s.outcomes]
            case = Case(
                name=s.branch.name,
                classname=f"ab.{classname(result.test_case_id)}",
                time=sum(latencies) / 1000,
            )
            errors = [o for o in s.outcomes if not o.ok]
            if errors:
                first = errors[0]
                message = f"{len(errors)} of {len(s.outcomes)} call(s) failed: {clip_text(shown(first.error or ''), 500)}"
                case.error = (
                    "ProviderError",
                    message,
                    "\n".join(shown(o.error or "") for o in errors),
                )
            suite.cases.append(case)
            suite.properties.append((f"oxy.rank.{s.branch.name}", str(s.rank)))
            figures = (
                f"quality {number(s.quality_score) or '-'}, latency "
                f"{'-' if s.latency_ms is None else f'{s.latency_ms:.0f} ms'}, cost "
                f"{'unknown' if s.estimated_cost is None else f'{s.estimated_cost:.8f} USD'}"
            )
            suite.out.append(f"{s.rank}. {s.branch.name}: " + (figures if s.ok else "error"))
        suites.append(suite)
    stopped(suites, "oxy ab run", "oxyeval.ab", error)
    return render(suites, timestamp, hostname)


def passfail_junit(
    run: PassFailRun,
    decision: Decision,
    *,
    error: str | None = None,
    timestamp: datetime | None = None,
    hostname: str | None = None,
) -> str:
    """``oxy chattest`` / ``oxy test *.test.yml`` ``--junit``: a suite per group (a prompt, a
    test file), a test per (subject, criterion); its failure or error is the decision's
    outcome of it (a pass rate under its own threshold, a result below ``--min-accuracy``;
    a test no run of which could be judged), so the XML never disagrees with the exit
    code."""
    # Two passes over the subjects (kept on disk in a large run), not a list of them all
    # with every run's verdict.
    names = [f"{r.subject}::{r.criterion.key}" for s in run.subjects for r in s.results]
    outcomes = outcomes_of(names, decision)
    results = ((subject, result) for subject in run.subjects for result in subject.results)
    suites: dict[str, Suite] = {}
    for (subject, result), outcome in zip(results, outcomes, strict=True):
        suite = suites.setdefault(
            subject.group, Suite(name=subject.group or subject.key, package="oxyeval.passfail")
        )
        rate = result.rate
        case = Case(
            name=f"{subject.name or subject.label}: {result.criterion.key}",
            classname=f"passfail.{classname(subject.group or subject.key)}",
            time=subject.duration_s,
        )
        shown_rate = "-" if rate.pass_rate is None else f"{rate.pass_rate * 100:.0f}%"
        summary = f"pass rate {shown_rate} ({rate.passes}/{rate.runs}), needs {result.threshold * 100:.0f}%"
        reasons = "\n".join(
            f"run {c.run}: {clip_text(shown(c.reasoning), 500)}"
            for c in result.checks
            if c.passed is False
        )
        state = None if outcome is None else outcome.state
        if state == "unknown":
            errors = "; ".join(dict.fromkeys(c.error or "" for c in result.checks if c.error))
            why = "interrupted" if result.interrupted else "no run could be judged"
            case.error = ("NotJudged", f"{why}: {clip_text(shown(errors), 500)}", "")
        elif state == "failed" and outcome is not None:
            lines = [*outcome.reasons, *(r for r in (outcome.below, outcome.strict) if r)]
            message = "; ".join(lines) or summary
            case.failure = ("BelowThreshold", clip_text(shown(message), 500), reasons)
        suite.cases.append(case)
        suite.out.append(f"{case.name}: {summary}")
    found = list(suites.values())
    stopped(found, "oxyeval passfail", "oxyeval.passfail", error)
    for suite in found:
        suite.properties[:0] = [
            ("oxy.exit_code", str(decision.code)),
            ("oxy.interrupted", str(run.interrupted).lower()),
        ]
    return render(found, timestamp, hostname)


def saved_junit(
    run: SavedRun,
    decision: Decision,
    *,
    error: str | None = None,
    timestamp: datetime | None = None,
    hostname: str | None = None,
) -> str:
    """``oxy report --junit`` on a saved or merged run of a kind whose own report objects
    are not kept (test cases, A/B branches, pass/fail tests): a suite per file (what its
    results' subjects name before ``::``), a testcase per result, failed or in error as
    the decision's outcome of it says."""
    outcomes = outcomes_of([r.subject for r in run.results], decision)
    versions = run.doc.get("promptVersions") or {}
    suites: dict[str, Suite] = {}
    for result, outcome in zip(run.results, outcomes, strict=True):
        group, package, class_name, name = _placed(run.kind, result, versions)
        suite = suites.setdefault(group, Suite(name=group, package=package))
        case = Case(name=name, classname=class_name, time=(result.latency_ms or 0.0) / 1000)
        score = "-" if result.score is None else percent(result.score)
        summary = f"{result.status}, score {score}"
        state = None if outcome is None else outcome.state
        if state == "unknown":
            why = clip_text(shown(result.error or result.status), 500)
            case.error = ("NotScored", why, "")
        elif state == "failed" and outcome is not None:
            lines = [*outcome.reasons, *(r for r in (outcome.below, outcome.strict) if r)]
            case.failure = ("Failed", clip_text(shown("; ".join(lines) or summary), 500), "")
        suite.cases.append(case)
        suite.out.append(f"{case.name}: {summary}")
    found = list(suites.values())
    stopped(found, f"oxyeval {run.run_kind}", f"oxyeval.{run.kind}", error)
    for suite in found:
        suite.properties[:0] = [
            ("oxy.exit_code", str(decision.code)),
            ("oxy.interrupted", str(run.interrupted).lower()),
        ]
    return render(found, timestamp, hostname)


def _placed(kind: str, result: Any, versions: Any) -> tuple[str, str, str, str]:
    """A saved result's suite, package, classname and test name, as its kind's own
    report names them: a CI system that reads a shard's report and the merged one (or a
    run's and ``oxy report``'s) then counts each test once, under one name."""
    subject, details = result.subject, result.details or {}
    group, _sep, name = subject.partition("::")
    if kind == "cases":
        version = versions.get(group) if isinstance(versions, dict) else None
        suite = group if version is None else f"{group} v{version}"
        return suite, "oxy.cases", classname(group), name or group
    branch = details.get("branchName")
    if kind == "ab" and isinstance(branch, str) and subject.endswith(f"@{branch}"):
        case_id = subject[: -len(branch) - 1]
        return case_id, "oxyeval.ab", f"ab.{classname(case_id)}", branch
    criterion = details.get("criterionKey")
    if kind == "passfail" and isinstance(criterion, str) and subject.endswith(f"::{criterion}"):
        group, _sep, name = subject[: -len(criterion) - 2].partition("::")
        return (
            group,
            "oxyeval.passfail",
            f"passfail.{classname(group)}",
            f"{name or group}: {criterion}",
        )
    return group, f"oxyeval.{kind}", f"{kind}.{classname(group)}", name or group


def error_junit(
    command: str, error: str, *, timestamp: datetime | None = None, hostname: str | None = None
) -> str:
    """A report that holds only what stopped ``command`` before it had any result (a run
    group none of whose shards kept an outcome): CI shows it red."""
    found: list[Suite] = []
    stopped(found, command, "oxyeval", error)
    return render(found, timestamp, hostname)
