"""``oxy exec -- CMD``: the suites a command runs report to it, and it exits with oxyeval's
codes (0 pass, 1 failed, 2 bad input, 3 errors or interrupted); a plain ``python
script.py`` exits 0 whatever its suites decided, as under Autoblocks' SDK."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oxyeval.cli.exec_suites import exit_code

OXY = [sys.executable, "-c", "from oxyeval.cli import main; main()"]
ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from dataclasses import dataclass

from oxyeval.testing.autoblocks.models import BaseTestCase, BaseTestEvaluator, Evaluation, Threshold
from oxyeval.testing.autoblocks.run import run_test_suite
from oxyeval.testing.autoblocks.util import md5


@dataclass
class Question(BaseTestCase):
    text: str

    def hash(self) -> str:
        return md5(self.text)


class SaysOk(BaseTestEvaluator):
    id = "says-ok"

    def evaluate_test_case(self, test_case, output):
        return Evaluation(1 if output == "ok" else 0, Threshold(gte=1))


def app(q):
    if q.text == "crash":
        raise RuntimeError("the app crashed")
    return "ok" if q.text.startswith("good") else "nope"


for suite in sys.argv[1:]:
    if suite == "empty":
        try:
            run_test_suite("empty", [], app, [SaysOk()])
        except ValueError as exc:
            print(exc, file=sys.stderr)
    elif suite == "wait":
        run_test_suite("before-the-wait", [Question("good")], app, [SaysOk()])
        open("ready", "w").close()
        import time
        time.sleep(30)
    else:
        cases = {"pass": ["good 1", "good 2"], "fail": ["good", "bad"], "error": ["crash"]}
        run_test_suite(suite, [Question(t) for t in cases[suite]], app, [SaysOk()])
"""


def _env(here: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", COLUMNS="120")
    env.pop("OXY_DB", None)
    return env


def _exec(
    here: Path, *suites: str, options: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    (here / "suites.py").write_text(SCRIPT, encoding="utf-8")
    return subprocess.run(
        [*OXY, "exec", *options, "--", sys.executable, "suites.py", *suites],
        cwd=here,
        env=_env(here),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("codes", "returncode", "interrupted", "expected"),
    [
        ([0, 0], 0, False, 0),
        ([0, 1], 0, False, 1),
        ([1, 2], 0, False, 2),
        ([2, 3, 1], 0, False, 3),
        ([0], 1, False, 3),  # the command failed and no suite says why
        ([1], 1, False, 1),  # a script that exits 1 because its suite failed
        ([1], 4, False, 3),
        ([2], 1, False, 2),  # the bad suite's exception ended the script
        ([0], -2, False, 3),  # killed by a signal
        ([0], 0, True, 3),
        ([], 0, False, 1),  # no suite ran
        ([], None, False, 2),  # the command could not start
    ],
)
def test_the_exit_code_rule(
    codes: list[int], returncode: int | None, interrupted: bool, expected: int
) -> None:
    records = [{"id": f"s{i}", "code": c} for i, c in enumerate(codes)]
    assert exit_code(records, returncode, interrupted=interrupted)[0] == expected


def test_no_suite_passes_only_with_allow_empty() -> None:
    assert exit_code([], 0, allow_empty=True) == (0, [])


def test_a_command_whose_suites_pass_fail_and_err_exits_3_with_a_line_per_suite(
    here: Path,
) -> None:
    done = _exec(here, "pass", "fail", "error", "empty")
    assert done.returncode == 3, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("  ")]
    assert [line.split()[0] for line in lines[-4:]] == ["PASS", "FAIL", "ERROR", "BAD"]
    assert "empty: run_test_suite 'empty': no test cases given" in done.stdout
    assert "error: RuntimeError: the app crashed" in done.stderr
    only = _exec(here, "pass", "fail", options=("--test-suites", "fai"))
    assert only.returncode == 1 and "1 test suite run(s)" in only.stdout
    assert "fail: " in only.stderr and "score 0.00 < threshold 1" in only.stderr


def test_a_plain_script_exits_0_like_autoblocks_whatever_its_suites_decided(here: Path) -> None:
    (here / "suites.py").write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "suites.py", "fail", "error"],
        cwd=here,
        env=_env(here),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "0.00 FAIL" in done.stdout


@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_an_interrupted_command_exits_3_and_reports_the_suites_that_finished(
    here: Path,
) -> None:
    (here / "suites.py").write_text(SCRIPT, encoding="utf-8")
    proc = subprocess.Popen(
        [*OXY, "exec", "--", sys.executable, "suites.py", "wait"],
        cwd=here,
        env=_env(here),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not (here / "ready").exists() and proc.poll() is None:
        assert time.monotonic() < deadline, "the suite never finished"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err
    assert "PASS      before-the-wait" in out
    assert "interrupted" in err
