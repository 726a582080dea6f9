"""JUnit XML for CI servers (Jenkins, GitLab, GitHub test reporters): ``--junit FILE``.

The format is Apache Ant's (``XMLJUnitResultFormatter``), the one every CI server
reads, and the file validates against its common schema (windyroad/JUnit-Schema, vendored
as ``tests/report/JUnit.xsd``): a ``<testsuites>`` root, one ``<testsuite>`` per file or
prompt, one ``<testcase>`` per consistency test or test case. Ant allows no
``<properties>`` in a ``<testcase>``, so per-test figures (accuracy, pairs, judge calls,
score) are suite properties named ``<test name>.<figure>``. Nor does it allow attributes
on ``<testsuites>`` (Ant's own aggregate has none): each ``<testsuite>`` carries its
counts, and the run's figures (exit code, wall time, calls served from the cache) are
``oxy.*`` properties repeated in every suite.

Which element a test gets is read from the run's :class:`~oxyeval.evaluation.Decision`
(the one that gives the exit code), never worked out here, so the XML cannot disagree
with the exit code: ``<error>`` for an unknown outcome (a test not scored, a test cut
short, a case that could not run), ``<failure>`` for a failed one (below
``--min-accuracy``, a drop, a regression with ``--fail-on-regression``, run or judge
errors with ``--strict``), ``<skipped>`` for a neutral one (a case with no expected
output yet).

Every string is redacted (API keys never reach a file) and stripped of characters
XML 1.0 cannot hold (model output may contain ANSI escapes or NULs): such a character
is written as a visible ``\\xNN``.
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..evaluation import percent
from ..redact import clip
from .text import shown

if TYPE_CHECKING:
    from ..evaluation import Decision, Outcome
    from ..suites import ABRun, PassFailRun
    from ..suites.cases.results import CaseResult, CaseRun
    from ..suites.results import ConsistencyRun, ConsistencyTestResult

__all__ = ["ab_junit", "cases_junit", "consistency_junit", "passfail_junit", "xml_text"]

#: Most characters of one output kept in ``<system-out>``: enough to see the answer,
#: bounded so an n=10,000 test does not write a file the CI server chokes on.
_MAX_TEXT = 4000


def xml_text(value: object) -> str:
    """``value`` as text XML 1.0 can hold, with secrets scrubbed (see report.text)."""
    return shown(value)


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    """Redacted, then cut (:func:`oxyeval.redact.clip`): a cut must not split a key."""
    return clip(text, limit, "... ({more} more characters)")


def _seconds(value: float | None) -> str:
    return f"{max(0.0, value or 0.0):.3f}"


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


@dataclass
class _Case:
    """One ``<testcase>``: at most one of error, failure, skipped (Ant allows one)."""

    name: str
    classname: str
    time: float
    error: tuple[str, str, str] | None = None  # type, message, text
    failure: tuple[str, str, str] | None = None
    skipped: str | None = None


@dataclass
class _Suite:
    name: str
    package: str
    cases: list[_Case] = field(default_factory=list)
    properties: list[tuple[str, str]] = field(default_factory=list)
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    #: Wall time of the suite (see :func:`_span`); None: the sum of its cases' times.
    time: float | None = None


def _span(intervals: Iterable[tuple[float | None, float]]) -> float | None:
    """Wall time from the first start to the last end of ``(started, seconds)`` pairs.

    Tests and cases run concurrently, so their times overlap: a suite of three 1 s cases
    that ran side by side took 1 s, not 3. None when a start is unknown (a run read back
    from a saved report), and the caller falls back to the sum.
    """
    items = list(intervals)
    if not items or any(start is None for start, _ in items):
        return None
    starts = [start for start, _ in items if start is not None]
    ends = [start + seconds for start, seconds in items if start is not None]
    return max(ends) - min(starts)


def _elapsed(suite: _Suite) -> float:
    return suite.time if suite.time is not None else sum(c.time for c in suite.cases)


def _run_time(suites: Sequence[_Suite], wall: float | None) -> str:
    """The run's wall time (``wall``, from the results' spans), else the sum of the
    suites' times, as the ``oxy.duration_s`` property (the root may carry no ``time``)."""
    return _seconds(wall if wall is not None else sum(_elapsed(s) for s in suites))


def _render(suites: Sequence[_Suite], timestamp: datetime | None, hostname: str | None) -> str:
    """``timestamp``: when the run started (default: now), written in UTC without a zone,
    as Ant writes it (the format has no zone). The root gets no attributes: the common
    schema allows none there (run totals are the callers' ``oxy.*`` properties)."""
    when = timestamp or datetime.now(timezone.utc)
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S")
    host = xml_text(hostname or socket.gethostname() or "localhost") or "localhost"
    root = ET.Element("testsuites")
    for k, suite in enumerate(suites):
        counts = {
            "tests": len(suite.cases),
            "failures": sum(1 for c in suite.cases if c.failure and not c.error),
            "errors": sum(1 for c in suite.cases if c.error),
            "skipped": sum(1 for c in suite.cases if c.skipped and not (c.error or c.failure)),
        }
        node = ET.SubElement(
            root,
            "testsuite",
            {
                "name": xml_text(suite.name),
                "package": xml_text(suite.package),
                "id": str(k),
                "tests": str(counts["tests"]),
                "failures": str(counts["failures"]),
                "errors": str(counts["errors"]),
                "skipped": str(counts["skipped"]),
                "time": _seconds(_elapsed(suite)),
                "timestamp": stamp,
                "hostname": host,
            },
        )
        props = ET.SubElement(node, "properties")
        for name, value in suite.properties:
            ET.SubElement(props, "property", {"name": xml_text(name), "value": xml_text(value)})
        for case in suite.cases:
            element = ET.SubElement(
                node,
                "testcase",
                {
                    "name": xml_text(case.name),
                    "classname": xml_text(case.classname),
                    "time": _seconds(case.time),
                },
            )
            outcome = case.error or case.failure
            if outcome is not None:
                kind, message, text = outcome
                child = ET.SubElement(
                    element,
                    "error" if case.error else "failure",
                    {"message": xml_text(message), "type": xml_text(kind)},
                )
                child.text = xml_text(text)
            elif case.skipped is not None:
                ET.SubElement(element, "skipped", {"message": xml_text(case.skipped)})
        ET.SubElement(node, "system-out").text = xml_text("\n".join(suite.out))
        ET.SubElement(node, "system-err").text = xml_text("\n".join(suite.err))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


def _classname(path: str) -> str:
    """A file as a JUnit class name: folders become packages, and the dot of the file's
    kind an underscore (``examples/agents/users.agent.yml`` ->
    ``examples.agents.users_agent``), so CI servers, which split class names at the last
    dot, show the file as the class."""
    stem = re.sub(r"\.(ya?ml)$", "", path.replace("\\", "/"))
    parts = [p for p in stem.split("/") if p not in ("", ".")]
    if not parts:
        return "oxy"
    parts[-1] = parts[-1].replace(".", "_")
    return ".".join(p.replace(".", "_") for p in parts)


def _unique(names: Iterable[str]) -> list[str]:
    """Names made unique within a suite (property names are per suite)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


def _failure(reasons: Sequence[tuple[str, str]]) -> tuple[str, str, str] | None:
    """One ``<failure>`` for every reason (Ant allows one): the first names its type."""
    if not reasons:
        return None
    return reasons[0][0], reasons[0][1], "\n".join(message for _kind, message in reasons)


def _outcomes(subjects: Sequence[str], decision: Decision) -> list[Outcome | None]:
    """The decision's outcome of each subject, in the run's order: by position when the
    decision was made on these very results, else by subject (a decision built by hand)."""
    outcomes = decision.outcomes
    if [o.subject for o in outcomes] == list(subjects):
        return list(outcomes)
    by_subject = {o.subject: o for o in outcomes}
    return [by_subject.get(subject) for subject in subjects]


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
    outcomes = _outcomes([run.label(t) for t in run.tests], decision)
    by_file: dict[str, list[tuple[ConsistencyTestResult, Outcome | None]]] = {}
    for test, found in zip(run.tests, outcomes, strict=True):
        by_file.setdefault(test.file, []).append((test, found))
    files: dict[str, _Suite] = {}
    for file, pairs in by_file.items():
        tests = [test for test, _found in pairs]
        suite = files[file] = _Suite(
            name=file, package="oxy.test", time=_span((t.started, t.duration) for t in tests)
        )
        for (test, found), name in zip(pairs, _unique(t.name for t in tests), strict=True):
            suite.cases.append(_test_case(test, name, found))
            suite.properties.extend(_test_properties(name, test))
            suite.out.append(_test_summary(name, test))
            suite.err.extend(
                f"{name}: run {o.run}: {_clip(o.error or '', 500)}" for o in test.run_errors
            )
            suite.err.extend(
                f"{name}: judge, runs {c.get('runs')}: {_clip(str(c.get('error')), 500)}"
                for c in test.judge_errors
            )
    suites = list(files.values())
    cut_between = run.interrupted and not any(t.interrupted for t in run.tests)
    if not suites or error is not None or cut_between:
        # What stopped the run is a testcase of its own, so the CI server shows it red.
        suite = _Suite(name="oxy test", package="oxy.test")
        if error is not None:
            suite.cases.append(_Case("oxy test", "oxy.test", 0.0, error=("RunError", error, error)))
        if cut_between:
            why = (
                f"interrupted after {len(run.tests)} test(s) finished; "
                "tests not reached are not in this report"
            )
            suite.cases.append(
                _Case("interrupted", "oxy.test", 0.0, error=("Interrupted", why, why))
            )
        suites.append(suite)
    run_props = [
        ("oxy.command", "oxy test"),
        ("oxy.interrupted", str(run.interrupted).lower()),
        ("oxy.duration_s", _run_time(suites, _span((t.started, t.duration) for t in run.tests))),
        ("oxy.cached_calls", str(run.cached_calls)),
    ]
    if given:
        run_props.append(("oxy.exit_code", str(decision.code)))
    if threshold is not None:
        run_props += [
            ("oxy.threshold.min_accuracy", _number(threshold.min_accuracy)),
            ("oxy.threshold.mode", threshold.mode),
            ("oxy.threshold.passed", str(threshold.passed).lower()),
            ("oxy.threshold.value", _number(threshold.value)),
        ]
    for suite in suites:
        suite.properties[:0] = run_props
        if threshold is not None and not threshold.passed:
            suite.err.append(threshold.message)
        suite.err.extend(run.warnings + run.skipped)
    return _render(suites, timestamp, hostname)


def _test_case(test: ConsistencyTestResult, name: str, outcome: Outcome | None) -> _Case:
    """The testcase of one test as its outcome says: an unknown outcome is an
    ``<error>``, a failed one a ``<failure>`` naming every check it failed."""
    case = _Case(name=name, classname=_classname(test.file), time=test.duration)
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
    case.failure = _failure(reasons)
    return case


def _test_properties(prefix: str, test: ConsistencyTestResult) -> list[tuple[str, str]]:
    figures: list[tuple[str, Any]] = [
        ("accuracy", _number(test.accuracy)),
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
        line += f"\n  selected output (run {selected.run}): {_clip(selected.text)}"
    return line


def _test_detail(test: ConsistencyTestResult) -> str:
    done = sum(1 for o in test.outputs if o.error is None)
    lines = [test.error or "", f"{done} of {test.n} run(s) succeeded"]
    lines += [f"run {o.run}: {_clip(o.error or '', 500)}" for o in test.run_errors[:20]]
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

    ``decision`` is the run's (:meth:`CaseRun.decision`): a case whose outcome is
    unknown is an ``<error>``, a neutral one (pending: no expected output yet)
    ``<skipped>``, a failed one a ``<failure>`` (a regression only under
    ``--fail-on-regression``, which the decision applied); the exit code property is
    its code (None: the run ungated, and no exit code is written). An interrupted run
    gets an error testcase naming how many planned cases never ran.
    """
    given = decision is not None
    if decision is None:
        decision = run.decision()
    outcomes = _outcomes([r.case_id for r in run.results], decision)
    by_prompt: dict[str, list[tuple[CaseResult, Outcome | None]]] = {}
    for result, found in zip(run.results, outcomes, strict=True):
        by_prompt.setdefault(result.prompt_id, []).append((result, found))
    suites = []
    for prompt_id, pairs in by_prompt.items():
        results = [result for result, _found in pairs]
        version = results[0].prompt_version
        suite = _Suite(
            name=f"{prompt_id} v{version}",
            package="oxy.cases",
            time=_span(_case_interval(r) for r in results),
        )
        for (result, found), name in zip(pairs, _unique(r.name for r in results), strict=True):
            suite.cases.append(_case(result, name, found))
            suite.properties.extend(_case_properties(name, result))
            if result.actual_output is not None:
                suite.out.append(f"{name}: {_clip(result.actual_output)}")
            if result.error is not None:
                suite.err.append(f"{name}: {result.error}")
        suites.append(suite)
    missing = max(0, run.planned - len(run.results))
    if not suites or error is not None or run.interrupted:
        suite = _Suite(name="oxy cases run", package="oxy.cases")
        if error is not None:
            suite.cases.append(
                _Case("oxy cases run", "oxy.cases", 0.0, error=("RunError", error, error))
            )
        if run.interrupted:
            why = f"interrupted: {len(run.results)} of {run.planned} case(s) finished, {missing} never ran"
            suite.cases.append(
                _Case("interrupted", "oxy.cases", 0.0, error=("Interrupted", why, why))
            )
        suites.append(suite)
    run_props = [
        ("oxy.command", "oxy cases run"),
        ("oxy.interrupted", str(run.interrupted).lower()),
        ("oxy.fail_on_regression", str(decision.gates.fail_on_regression).lower()),
        ("oxy.planned", str(run.planned)),
        ("oxy.history", str(run.db)),
        ("oxy.duration_s", _run_time(suites, _span(_case_interval(r) for r in run.results))),
        ("oxy.cached_calls", str(run.cached_calls)),
    ]
    if given:
        run_props.append(("oxy.exit_code", str(decision.code)))
    for suite in suites:
        suite.properties[:0] = run_props
        suite.err.extend(run.warnings)
    return _render(suites, timestamp, hostname)


def _case_interval(result: CaseResult) -> tuple[float | None, float]:
    return result.started, result.run_duration_ms / 1000


def _case(result: CaseResult, name: str, outcome: Outcome | None) -> _Case:
    """The testcase of one case as its outcome says (see :func:`cases_junit`)."""
    case = _Case(
        name=name,
        classname=_classname(result.prompt_id),
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
    failure = _failure(reasons)
    if failure is not None:
        kind, message, text = failure
        detail = (
            f"\nexpected: {_clip(result.expected_output or '')}"
            f"\nactual:   {_clip(result.actual_output or '')}"
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
        ("score", _number(result.score)),
        ("status", status),
        ("threshold", _number(result.threshold)),
        ("exact_match", str(result.exact_match).lower()),
        ("semantic_score", _number(result.semantic_score)),
        ("similarity_method", result.similarity_method),
        ("regression", str(result.is_regression).lower()),
        ("regression_types", ",".join(result.regression_types)),
        ("prompt_version", result.prompt_version),
        ("latency_ms", _number(result.latency_ms)),
        ("input_tokens", "" if result.input_tokens is None else result.input_tokens),
        ("output_tokens", "" if result.output_tokens is None else result.output_tokens),
        ("cached_calls", int(result.cached)),  # 1: the answer was replayed (--cache)
    ]
    return [(f"{prefix}.{key}", str(value)) for key, value in figures]


def ab_junit(run: ABRun, *, timestamp: datetime | None = None, hostname: str | None = None) -> str:
    """``oxy ab run --junit``: a suite per case, a test per branch. A branch whose call
    failed is an error (exit 3: the comparison misses data); the ranking is told in
    properties (``oxy.rank``, ``oxy.winner``), since being outranked is not a failure."""
    suites = []
    for result in run.results:
        suite = _Suite(name=result.test_case_id, package="oxyeval.ab")
        winner = result.winner.branch.name if result.winner is not None else ""
        suite.properties = [
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
            case = _Case(
                name=s.branch.name,
                classname=f"ab.{_classname(result.test_case_id)}",
                time=sum(latencies) / 1000,
            )
            errors = [o for o in s.outcomes if not o.ok]
            if errors:
                first = errors[0]
                message = f"{len(errors)} of {len(s.outcomes)} call(s) failed: {_clip(shown(first.error or ''), 500)}"
                case.error = (
                    "ProviderError",
                    message,
                    "\n".join(shown(o.error or "") for o in errors),
                )
            suite.cases.append(case)
            suite.properties.append((f"oxy.rank.{s.branch.name}", str(s.rank)))
            figures = (
                f"quality {_number(s.quality_score) or '-'}, latency "
                f"{'-' if s.latency_ms is None else f'{s.latency_ms:.0f} ms'}, cost "
                f"{'unknown' if s.estimated_cost is None else f'{s.estimated_cost:.8f} USD'}"
            )
            suite.out.append(f"{s.rank}. {s.branch.name}: " + (figures if s.ok else "error"))
        suites.append(suite)
    return _render(suites, timestamp, hostname)


def passfail_junit(
    run: PassFailRun, *, timestamp: datetime | None = None, hostname: str | None = None
) -> str:
    """``oxy chattest`` / ``oxy test *.test.yml`` ``--junit``: a suite per group (a prompt, a
    test file), a test per (subject, criterion); a pass rate under its threshold is a
    failure, a test no run of which could be judged an error."""
    suites: dict[str, _Suite] = {}
    for subject in run.subjects:
        suite = suites.setdefault(
            subject.group, _Suite(name=subject.group or subject.key, package="oxyeval.passfail")
        )
        for result in subject.results:
            rate = result.rate
            case = _Case(
                name=f"{subject.name or subject.label}: {result.criterion.key}",
                classname=f"passfail.{_classname(subject.group or subject.key)}",
                time=subject.duration_s,
            )
            shown_rate = "-" if rate.pass_rate is None else f"{rate.pass_rate * 100:.0f}%"
            summary = f"pass rate {shown_rate} ({rate.passes}/{rate.runs}), needs {result.threshold * 100:.0f}%"
            reasons = "\n".join(
                f"run {c.run}: {_clip(shown(c.reasoning), 500)}"
                for c in result.checks
                if c.passed is False
            )
            if result.status == "error":
                errors = "; ".join(dict.fromkeys(c.error or "" for c in result.checks if c.error))
                case.error = (
                    "NotJudged",
                    f"no run could be judged: {_clip(shown(errors), 500)}",
                    "",
                )
            elif result.passed is False:
                case.failure = ("BelowThreshold", summary, reasons)
            suite.cases.append(case)
            suite.out.append(f"{case.name}: {summary}")
    return _render(list(suites.values()), timestamp, hostname)
