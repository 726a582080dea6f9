"""The JUnit XML format CI servers read (Jenkins, GitLab, GitHub test reporters): suites,
test cases and how they are written; what each kind of run becomes is :mod:`.junit`.

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
from typing import TYPE_CHECKING

from ..redact import clip
from .text import shown

if TYPE_CHECKING:
    from ..evaluation import Decision, Outcome

__all__ = [
    "MAX_TEXT",
    "Case",
    "Suite",
    "classname",
    "clip_text",
    "failure_of",
    "number",
    "outcomes_of",
    "render",
    "run_time",
    "seconds",
    "span",
    "stopped",
    "unique",
    "xml_text",
]

#: Most characters of one output kept in ``<system-out>``: enough to see the answer,
#: bounded so an n=10,000 test does not write a file the CI server chokes on.
MAX_TEXT = 4000


def xml_text(value: object) -> str:
    """``value`` as text XML 1.0 can hold, with secrets scrubbed (see report.text)."""
    return shown(value)


def clip_text(text: str, limit: int = MAX_TEXT) -> str:
    """Redacted, then cut (:func:`oxyeval.redact.clip`): a cut must not split a key."""
    return clip(text, limit, "... ({more} more characters)")


def seconds(value: float | None) -> str:
    return f"{max(0.0, value or 0.0):.3f}"


def number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


@dataclass
class Case:
    """One ``<testcase>``: at most one of error, failure, skipped (Ant allows one)."""

    name: str
    classname: str
    time: float
    error: tuple[str, str, str] | None = None  # type, message, text
    failure: tuple[str, str, str] | None = None
    skipped: str | None = None


@dataclass
class Suite:
    name: str
    package: str
    cases: list[Case] = field(default_factory=list)
    properties: list[tuple[str, str]] = field(default_factory=list)
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    #: Wall time of the suite (see :func:`span`); None: the sum of its cases' times.
    time: float | None = None


def span(intervals: Iterable[tuple[float | None, float]]) -> float | None:
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


def elapsed(suite: Suite) -> float:
    return suite.time if suite.time is not None else sum(c.time for c in suite.cases)


def run_time(suites: Sequence[Suite], wall: float | None) -> str:
    """The run's wall time (``wall``, from the results' spans), else the sum of the
    suites' times, as the ``oxy.duration_s`` property (the root may carry no ``time``)."""
    return seconds(wall if wall is not None else sum(elapsed(s) for s in suites))


def render(suites: Sequence[Suite], timestamp: datetime | None, hostname: str | None) -> str:
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
                "time": seconds(elapsed(suite)),
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
                    "time": seconds(case.time),
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


def classname(path: str) -> str:
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


def unique(names: Iterable[str]) -> list[str]:
    """Names made unique within a suite (property names are per suite)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


def failure_of(reasons: Sequence[tuple[str, str]]) -> tuple[str, str, str] | None:
    """One ``<failure>`` for every reason (Ant allows one): the first names its type."""
    if not reasons:
        return None
    return reasons[0][0], reasons[0][1], "\n".join(message for _kind, message in reasons)


def outcomes_of(subjects: Sequence[str], decision: Decision) -> list[Outcome | None]:
    """The decision's outcome of each subject, in the run's order: by position when the
    decision was made on these very results, else by subject (a decision built by hand)."""
    outcomes = decision.outcomes
    if [o.subject for o in outcomes] == list(subjects):
        return list(outcomes)
    by_subject = {o.subject: o for o in outcomes}
    return [by_subject.get(subject) for subject in subjects]


def stopped(suites: list[Suite], command: str, package: str, error: str | None) -> None:
    """What stopped the run, as a testcase of its own (the CI server shows it red); a
    run that stopped before anything finished still gets a file that says why."""
    if error is None:
        return
    suite = Suite(name=command, package=package)
    suite.cases.append(Case(command, package, 0.0, error=("RunError", error, error)))
    suites.append(suite)
