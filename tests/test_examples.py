"""The shipped example must run offline exactly as the README says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli import app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_example_project_validates() -> None:
    result = CliRunner().invoke(app, ["validate", str(EXAMPLES)])
    assert result.exit_code == 0, result.stderr
    assert "0 error(s), 0 warning(s)" in result.stdout


def test_example_consistency_tests_score_as_documented() -> None:
    result = CliRunner().invoke(
        app, ["test", str(EXAMPLES / "agents" / "users.agent.yml"), "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    everyone, ring = doc["tests"]
    # 12 runs over 6 scripted answers (5 agree, 1 says 1,240): 66 pairs, 6 identical,
    # 15 distinct pairs judged; the 20 pairs with the outlier are B -> 46/66.
    assert everyone["accuracy"] == pytest.approx(46 / 66, abs=1e-6)
    assert (everyone["pairs"], everyone["identical_pairs"], everyone["judge_calls"]) == (66, 6, 15)
    assert everyone["selected"]["text"] == "We have 1,204 active users."
    # Ring of 6 runs: pairs (5,6) and (6,1) involve the outlier -> 4/6.
    assert ring["accuracy"] == pytest.approx(4 / 6, abs=1e-6)
    assert sorted(tuple(c["runs"]) for c in ring["failing_comparisons"]) == [(1, 6), (5, 6)]
