"""`oxy cases list` and `oxy cases show` tell pending and errored runs apart from judged
ones: a case that ran without an expected output is not "never run",
and a pending or errored run is not "passed: no"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    rules:
      - {match: "explode", error: "backend down"}
      - {match: ".", output: "fine"}
"""
PROMPT = """\
name: p
model: m
template: "Say: {{ text }}"
similarity: lexical
cases:
  - {name: later, input: {text: "anything"}}
  - {name: boom, input: {text: "explode"}, expected_output: fine}
  - {name: ok, input: {text: "ok"}, expected_output: fine}
"""


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_project(CONFIG, {"p.prompt.yml": PROMPT})
    monkeypatch.chdir(root)
    for _ in range(2):
        assert invoke("cases", "run").exit_code == 3  # the errored case: outcome unknown
    return root


def _row(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if f" {name} " in line)


def test_the_list_counts_pending_and_errored_runs(root: Path) -> None:
    listing = invoke("cases", "list")
    assert listing.exit_code == 0, listing.stderr
    later, boom, ok = (_row(listing.stdout, n) for n in ("later", "boom", "ok"))
    assert "0 (+2 pending)" in later
    assert re.search(r"\d{4}-\d{2}-\d{2}", later)  # its last run, though none was judged
    assert "0 (+2 errors)" in boom
    assert " 2 " in ok and "pending" not in ok and "error" not in ok


def test_show_says_pending_and_error_not_no(root: Path) -> None:
    pending = invoke("cases", "show", "later")
    assert pending.exit_code == 0, pending.stderr
    assert "judged runs 0 (+2 pending)" in pending.stdout
    assert pending.stdout.count("pending") >= 3 and " no " not in pending.stdout
    errored = invoke("cases", "show", "boom").stdout
    assert "judged runs 0 (+2 errors)" in errored and errored.count(" error ") >= 2
    passed = invoke("cases", "show", "ok").stdout
    assert "judged runs 2 ·" in passed and passed.count(" passed ") == 2


def test_a_pending_row_compares_nothing(root: Path) -> None:
    """a pending case has no exact match to deny, and no similarity
    method in the table's footnote."""
    run = invoke("cases", "run", "--case", "later", "--case", "ok")
    assert run.exit_code == 0, run.stderr
    later = _row(run.stdout, "later")
    assert "pending" in later and " no " not in later
    assert "none (no expected output)" not in run.stdout
    assert "similarity: lexical" in run.stdout


def test_an_unknown_case_lists_the_cases_there_are(root: Path) -> None:
    run = invoke("cases", "run", "--case", "nope")
    assert run.exit_code == 2
    assert "no test case named 'nope'" in run.stderr
    assert "the cases are: boom, later, ok" in run.stderr
    close = invoke("cases", "run", "--case", "okk")
    assert close.exit_code == 2 and "did you mean 'ok'" in close.stderr
