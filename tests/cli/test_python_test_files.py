"""``oxy test FILE.py``: a DeepEval-style test file run through pytest with oxyeval's
plugin, as ``deepeval test run`` runs it: its flags, oxy's exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.cli.pytests import EXIT_CODES, pytest_args

TESTS = """
import pytest
from oxyeval.testing import assert_test
from oxyeval.testing.metrics import BaseMetric, ExactMatchMetric
from oxyeval.testing.test_case import LLMTestCase

RUNS = []


class Recorded(BaseMetric):
    def measure(self, test_case):
        RUNS.append(test_case.input)
        self.score, self.success = 1.0, True
        return 1.0

    @property
    def __name__(self):
        return "Recorded"


@pytest.mark.parametrize("answer", ["Paris", "Lyon"])
def test_capital(answer):
    case = LLMTestCase(input="capital?", actual_output=answer, expected_output="Paris")
    assert_test(case, [ExactMatchMetric()])


def test_missing_field():
    assert_test(LLMTestCase(input="q", actual_output="a"), [ExactMatchMetric(), Recorded()])


def test_runs_counted():
    assert_test(LLMTestCase(input="count", actual_output="a"), [Recorded()])
"""


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def test_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OXY_DB", raising=False)
    path = tmp_path / f"test_{request.node.name}.py"  # pytest runs in this process: one name each
    path.write_text(TESTS, encoding="utf-8")
    return path


def test_failures_exit_1_and_name_the_metric(test_file: Path) -> None:
    result = invoke("test", str(test_file), "--pytest-arg=-k", "--pytest-arg=capital")
    assert result.exit_code == 1, result.output
    assert "test_capital[Lyon]" in result.output
    assert "Metrics: Exact Match (score: 0.0, threshold: 1.0" in result.output


def test_skip_on_missing_params_and_repeat(test_file: Path) -> None:
    result = invoke(
        "test",
        str(test_file),
        "-s",
        "-r",
        "2",
        "--pytest-arg=-k",
        "--pytest-arg=missing_field or runs_counted",
    )
    assert result.exit_code == 0, result.output
    assert "4 passed" in result.output  # two tests, each run twice


def test_bad_input_exits_2(test_file: Path) -> None:
    assert invoke("test", "no_such_test.py").exit_code == 2
    assert invoke("test", str(test_file), "--format", "json").exit_code == 2
    assert invoke("test", "agents/x.agent.yml", "--repeat", "2").exit_code == 2
    nothing = invoke("test", str(test_file), "--pytest-arg=-k", "--pytest-arg=nomatch")
    assert nothing.exit_code == 2


def test_pytest_args_and_codes() -> None:
    args = pytest_args(
        ["t.py"],
        repeat=3,
        ignore_errors=True,
        skip_on_missing_params=False,
        exit_on_first_failure=True,
        mark="slow",
        no_history=True,
        junit="r.xml",
        quiet=False,
        extra=["-k", "x"],
    )
    assert args[-2:] == ["-k", "x"] and "--oxy-repeat" in args and "-x" in args
    assert {"--oxy-ignore-errors", "--oxy-no-history", "--junitxml"} <= set(args)
    assert [EXIT_CODES[c] for c in range(6)] == [0, 1, 3, 3, 2, 2]
