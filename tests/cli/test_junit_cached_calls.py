"""JUnit reports say what came from the cache: with every verdict replayed,
``<test>.judge_calls`` is 0, and without ``<test>.cached_calls`` a CI reader would see a
test that looks unjudged. Per test or case a ``cached_calls`` property, for the run an
``oxy.cached_calls`` one in every suite, both matching the JSON report; the files still
validate against the common JUnit schema (tests/report/JUnit.xsd)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

# The cache tests' project and counting fake server, as fixtures of this module too
# (exported, so pytest finds them here).
from .test_cache import _project_history, invoke, root, script, server
from .test_junit import XSD, read

__all__ = ["_project_history", "root", "script", "server"]


def _props(xml: ET.Element) -> list[dict[str, str]]:
    """Each suite's properties, by name."""
    return [
        {p.get("name"): p.get("value") for p in suite.iter("property")}
        for suite in xml.iter("testsuite")
    ]


def _schema():
    import xmlschema

    return xmlschema.XMLSchema(str(XSD))


def _oxy_test(root: Path, report: Path) -> dict:
    result = invoke(
        root,
        "test",
        str(root / "a.agent.yml"),
        "--cache",
        "--format",
        "json",
        "--junit",
        str(report),
    )
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_oxy_test_junit_counts_the_calls_served_from_the_cache(root: Path) -> None:
    schema = _schema()
    first = _oxy_test(root, root / "first.xml")
    again = _oxy_test(root, root / "again.xml")
    [before] = _props(read(schema, root / "first.xml"))
    [after] = _props(read(schema, root / "again.xml"))
    assert before["totals.cached_calls"] == before["oxy.cached_calls"] == "0"
    assert int(before["totals.judge_calls"]) > 0
    # The rerun: nothing asked, everything replayed, and the file says so.
    assert after["totals.judge_calls"] == "0"
    assert after["totals.cached_calls"] == str(again["tests"][0]["cachedCalls"]) == "6"
    assert after["oxy.cached_calls"] == str(again["summary"]["cachedCalls"]) == "6"
    assert after["totals.accuracy"] == before["totals.accuracy"] == "1"
    assert first["summary"]["cachedCalls"] == 0


def test_oxy_cases_run_junit_counts_the_answers_served_from_the_cache(root: Path) -> None:
    schema = _schema()
    args = ("cases", "run", "--cache", "--format", "json", "--junit")
    first = invoke(root, *args, str(root / "first.xml"))
    again = invoke(root, *args, str(root / "again.xml"))
    assert first.exit_code == again.exit_code == 0, again.stderr
    [before] = _props(read(schema, root / "first.xml"))
    [after] = _props(read(schema, root / "again.xml"))
    assert before["one.cached_calls"] == before["oxy.cached_calls"] == "0"
    assert after["one.cached_calls"] == "1"  # the case's answer was replayed
    cached = json.loads(again.stdout)["summary"]["cachedCalls"]
    assert cached >= 1 and after["oxy.cached_calls"] == str(cached)
