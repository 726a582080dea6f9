"""The gates mean the same on every command that runs tests, because one decision applies
them: ``--min-pass-rate`` lets some results fail their own check, ``--min-accuracy`` holds
their scores, ``--fail-on-drop`` compares each with its previous result in the history,
and ``--allow-empty`` lets an empty selection pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject
from ..suites.test_cases_run import CONFIG, PROMPT

EXAMPLE = Path(__file__).resolve().parents[2] / "examples"


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, [*args, "--format", "json"])


def test_cases_run_under_each_gate(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    path = str(root / "s.prompt.yml")
    plain = invoke("cases", "run", path)  # 'meh' fails its own threshold: 2 of 3 pass
    assert plain.exit_code == 1, plain.stderr
    allowed = invoke("cases", "run", path, "--min-pass-rate", "0.6")
    assert allowed.exit_code == 0, allowed.stderr
    doc = json.loads(allowed.stdout)
    assert doc["decision"]["passRate"]["value"] == round(2 / 3, 6)
    strict = invoke("cases", "run", path, "--min-pass-rate", "0.9")
    assert strict.exit_code == 1 and "below --min-pass-rate 90.00%" in strict.stderr
    below = invoke("cases", "run", path, "--min-pass-rate", "0.6", "--min-accuracy", "0.99")
    assert below.exit_code == 1 and "below threshold 99.00%" in below.stderr
    # The second run scores as the first: no case dropped against its previous score.
    again = invoke("cases", "run", path, "--min-pass-rate", "0.6", "--fail-on-drop", "1")
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["decision"]["drop"]["compared"] == 3


def test_ab_and_chattest_take_the_same_gates(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "examples")
    project = tmp_path / "examples"
    ab = invoke("ab", "run", "--project", str(project), "--min-accuracy", "1.01")
    assert ab.exit_code == 2 and "--min-accuracy must be between 0 and 1" in ab.stderr
    ranked = invoke("ab", "run", "--project", str(project))
    assert ranked.exit_code == 0, ranked.stderr  # a branch under the mark is ranked
    gated = invoke("ab", "run", "--project", str(project), "--min-pass-rate", "1")
    quality = json.loads(gated.stdout)["decision"]["passRate"]
    assert gated.exit_code == (0 if quality["value"] == 1 else 1)
    chattest = shutil.copytree(EXAMPLE / "chattest", tmp_path / "chattest")  # its own models
    plain = invoke("chattest", str(chattest))
    assert plain.exit_code == 1  # the shaky model fails its success threshold
    allowed = invoke("chattest", str(chattest), "--min-pass-rate", "0.5")
    assert allowed.exit_code == 0, allowed.stderr
