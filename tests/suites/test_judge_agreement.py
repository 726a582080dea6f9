"""oxy test --judge-agreement: a second judge re-judges the judged pairs and the kappa
between the two judges is known from the scripted verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oxyeval.cli import main

from ..conftest import MakeProject

# Three distinct answers, three judged pairs. The test's judge says B for the pairs with
# 41: (42, 42.0) A, (42, 41) B, (42.0, 41) B. The second says B for the pairs with 42.0:
# B, A, B. Agreement 1/3, chance 5/9: kappa (1/3 - 5/9) / (4/9) = -0.5.
CONFIG = r"""models:
  - name: agent_model
    vendor: mock
    outputs: ["42", "42.0", "41"]
  - name: judge
    vendor: mock
    rules:
      - match: '\n41\n'
        output: "Answer: B"
      - match: "."
        output: "Answer: A"
  - name: second
    vendor: mock
    rules:
      - match: '\n42\.0\n'
        output: "Answer: B"
      - match: "."
        output: "Answer: A"
"""

AGENT = """\
model: agent_model
system_instructions: Add up.
tests:
  - type: consistency
    name: totals
    n: 3
    model_ref: judge
    task_description: What is the total?
"""


def _oxy(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_the_two_judges_kappa_over_the_pairs_re_judged(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_project(CONFIG, {"a.agent.yml": AGENT})
    agent = str(root / "a.agent.yml")
    code, out, _err = _oxy(
        capsys, "test", agent, "--no-history", "--judge-agreement", "second", "--format", "json"
    )
    doc = json.loads(out)
    assert code == 0
    test = doc["tests"][0]["judgeAgreement"]
    by_runs = {tuple(p["runs"]): (p["first"], p["second"]) for p in test["pairs"]}
    assert by_runs == {(1, 2): ("A", "B"), (1, 3): ("B", "A"), (2, 3): ("B", "B")}
    summary = doc["judgeAgreement"]
    assert summary["model"] == "second" and summary["compared"] == 3 and summary["errors"] == 0
    assert summary["agreement"]["kappa"] == pytest.approx(-0.5)
    assert summary["agreement"]["observed"] == pytest.approx(1 / 3, abs=1e-6)
    code, out, _err = _oxy(capsys, "test", agent, "--no-history", "--judge-agreement", "second")
    assert "Judge agreement with second: kappa -0.500" in out


def test_an_unknown_second_judge_is_bad_input(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = make_project(CONFIG, {"a.agent.yml": AGENT})
    code, _out, err = _oxy(
        capsys, "test", str(root / "a.agent.yml"), "--no-history", "--judge-agreement", "nope"
    )
    assert code == 2 and "nope" in err
