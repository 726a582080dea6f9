"""The pytest plugin in a real pytest run (pytester, in a subprocess): --oxy-repeat N,
assert_test's failures, the summary of metric scores, pytest's own --junitxml."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)

TESTS = """
from oxyeval.testing import ExactMatchMetric, LLMTestCase, assert_test


def test_capital():
    case = LLMTestCase(input="capital of France?", actual_output="Paris", expected_output="Paris")
    assert_test(case, [ExactMatchMetric()])


def test_wrong(_oxy_run):
    answer = "Lyon" if _oxy_run == 2 else "Paris"  # the second repetition regresses
    case = LLMTestCase(input="capital of France?", actual_output=answer, expected_output="Paris")
    assert_test(case, [ExactMatchMetric()])
"""


def test_repeat_summary_and_junit(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_app=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--oxy-repeat", "3", "--junitxml", "report.xml"
    )
    result.assert_outcomes(passed=5, failed=1)
    out = result.stdout.str()
    assert "test_wrong[run2]" in out and "Metrics: Exact Match (score: 0.0, threshold: 1.0" in out
    assert "oxyeval metrics" in out
    assert "Exact Match: 6 measured, 5 passed, 1 failed, 0 error(s), mean score 0.833" in out
    report = (pytester.path / "report.xml").read_text()
    assert 'tests="6"' in report and 'failures="1"' in report


def test_without_metrics_the_plugin_says_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "oxyeval metrics" not in result.stdout.str()
    bad = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--oxy-repeat", "0")
    assert bad.ret != 0 and "--oxy-repeat must be between 1 and 1000" in bad.stderr.str()


def test_assert_test_evaluations_are_kept_and_regressions_named(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yml", config="models:\n  - {name: m, vendor: mock, outputs: [x]}\n")
    case = (
        "from oxyeval.testing import ExactMatchMetric, LLMTestCase, assert_test\n\n"
        "def test_capital():\n"
        "    case = LLMTestCase(input='capital?', actual_output='{answer}', expected_output='Paris')\n"
        "    assert_test(case, [ExactMatchMetric()])\n"
    )
    pytester.makepyfile(test_app=case.replace("{answer}", "Paris"))
    first = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    first.assert_outcomes(passed=1)
    assert "1 evaluation(s) kept in the history" in first.stdout.str()
    pytester.makepyfile(test_app=case.replace("{answer}", "Lyon"))
    second = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    second.assert_outcomes(failed=1)
    assert (
        "regression: capital? / Exact Match: score fell from 1.000 to 0.000" in second.stdout.str()
    )
    quiet = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--oxy-no-history")
    assert "kept in the history" not in quiet.stdout.str()
    from oxyeval.store import open_store

    # One run per session, finished when the session ended, its result kept as recorded.
    with open_store(pytester.path / ".oxy" / "oxyeval.db", read_only=True) as store:
        runs = store.runs.list(5, kind="sdk")
        assert [(r.subject, r.status, r.done) for r in runs] == [("pytest", "completed", 1)] * 2
        (latest,) = store.results.for_run(runs[0].id)
    assert latest.subject == "pytest::capital?::Exact Match" and latest.passed is False
    assert latest.details["regressions"]
