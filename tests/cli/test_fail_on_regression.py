"""oxy test --fail-on-regression against the history: a consistency test whose majority
answer rate falls is paired with its baseline run; the run's size decides between a
regression (exit 1) and inconclusive (--inconclusive pass|fail), and oxy report decides
the same from the saved document."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from oxyeval.cli import main

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: agent_model
    vendor: mock
    outputs: {outputs}
  - name: judge
    vendor: mock
    rules:
      - match: "."
        output: "Answer: B"
"""

AGENT = """\
model: agent_model
system_instructions: Add up.
tests:
  - type: consistency
    name: totals
    n: {n}
    model_ref: judge
    task_description: What is the total?
    prompt: "ONE={{{{ submission_1 }}}} TWO={{{{ submission_2 }}}} Answer A or B."
"""


def _oxy(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def _two_runs(
    root: Path, capsys: pytest.CaptureFixture[str], n: int, *gate: str
) -> tuple[int, dict, str]:
    """A stable run (one answer), then one whose answers split in two."""
    (root / "a.agent.yml").write_text(AGENT.format(n=n), encoding="utf-8")
    db = str(root / "history.db")
    for outputs, extra in ((["42"], ()), (["42", "41"], gate)):
        (root / "config.yml").write_text(
            textwrap.dedent(CONFIG.format(outputs=json.dumps(outputs))), encoding="utf-8"
        )
        code, out, err = _oxy(
            capsys, "test", str(root / "a.agent.yml"), "--db", db, "--format", "json", *extra
        )
    return code, json.loads(out), err


def test_a_majority_rate_that_falls_from_20_of_20_to_10_regresses(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, doc, _err = _two_runs(make_project(None), capsys, 20, "--fail-on-regression")
    decision = doc["decision"]
    assert code == 1 and decision["headline"] == "regressed"
    regression = decision["regression"]
    assert regression["outcome"] == "regressed" and regression["compared"] == 1
    assert regression["change"]["change"] == pytest.approx(-0.5)
    test = doc["tests"][0]
    assert test["previous"]["tally"] == [20, 20]
    assert test["clusters"]["majorityRate"] == 0.5
    # The pretty report of the saved run says so in its headline and gate line.
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(doc), encoding="utf-8")
    code, out, _err = _oxy(capsys, "report", str(saved), "--fail-on-regression")
    assert code == 1
    assert "the tests regressed against the baseline run" in out
    assert "✗ --fail-on-regression: regressed: pass rate change -50.0 points" in out


def test_four_runs_are_too_few_to_tell_and_the_policy_decides(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = make_project(None)
    code, doc, err = _two_runs(root, capsys, 4, "--fail-on-regression")
    regression = doc["decision"]["regression"]
    assert regression["outcome"] == "inconclusive" and code == 0
    assert "inconclusive" in err and "--inconclusive pass: passing" in err
    # The saved document carries both tallies: oxy report decides again, here failing.
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(doc), encoding="utf-8")
    code, _out, err = _oxy(
        capsys, "report", str(saved), "--fail-on-regression", "--inconclusive", "fail"
    )
    assert code == 1 and "--inconclusive fail: failing" in err


def test_no_history_cannot_go_with_the_gate(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_project(CONFIG.format(outputs='["42"]'), {"a.agent.yml": AGENT.format(n=2)})
    code, _out, err = _oxy(
        capsys, "test", str(root / "a.agent.yml"), "--no-history", "--fail-on-regression"
    )
    assert code == 2 and "--fail-on-regression compares with the history" in err
