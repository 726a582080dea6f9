"""A history that can be read but not written: `oxy test` still shows each
test's `previous` result and `--fail-on-drop` still decides from the earlier results
(exit 1 on a drop, 0 otherwise), with a warning that this run's results were not stored.
Only a history that cannot be read at all makes `--fail-on-drop` exit 3, with the reason.

Making a file unwritable for the process: file modes do not stop root, so as root the
files are made immutable (`chattr +i`, as the reviewer did); the test is skipped where
that is not possible (no chattr, or a filesystem without the flag)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: analyst
    vendor: mock
    outputs: {outputs}
  - name: judge
    vendor: mock
    rules:
      - {match: "XYZ", output: "They differ.\\nAnswer: B"}
      - {match: ".", output: "Same.\\nAnswer: A"}
"""
SAME = '["Total: 42"]'  # accuracy 1.0
SPLIT = '["Total: 42", "Total is 42", "Total: 42.", "Total: 99 (XYZ)"]'  # accuracy 0.5 at n=4
AGENT = """\
model: analyst
system_instructions: Be brief.
tests:
  - {type: consistency, name: totals, n: 4, task_description: "total?", model_ref: judge}
"""


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def configure(root: Path, outputs: str) -> None:
    (root / "config.yml").write_text(CONFIG.replace("{outputs}", outputs))


@contextmanager
def unwritable(*paths: Path) -> Iterator[None]:
    """``paths`` cannot be written by this process (nor files created in a folder among
    them) inside the block; restored after."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in paths}
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            yield
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("running as root, which ignores file modes, and chattr is not installed")
    done = subprocess.run([chattr, "+i", *map(str, paths)], capture_output=True, text=True)
    if done.returncode != 0:
        subprocess.run([chattr, "-i", *map(str, paths)], capture_output=True)
        pytest.skip(f"running as root, and chattr +i is not possible here: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", *map(str, paths)], check=True)


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(CONFIG.replace("{outputs}", SAME), {"a.agent.yml": AGENT})
    monkeypatch.chdir(project)
    monkeypatch.delenv("OXY_DB", raising=False)
    first = invoke("test", "a.agent.yml")  # the earlier result: 100%
    assert first.exit_code == 0, first.stderr
    assert (project / ".oxy" / "oxyeval.db").is_file()
    return project


def stored_runs(root: Path) -> int:
    result = invoke("history", "--format", "json")
    assert result.exit_code == 0, result.stderr
    return len(json.loads(result.stdout)["runs"])


# The folder and the file (the reviewer's case), or the file alone (its folder writable).
WHICH = {"folder and file": (".oxy", ".oxy/oxyeval.db"), "file only": (".oxy/oxyeval.db",)}


@pytest.mark.parametrize("which", list(WHICH))
def test_a_drop_is_still_caught(root: Path, which: str) -> None:
    configure(root, SPLIT)  # 100% -> 50%
    with unwritable(*(root / p for p in WHICH[which])):
        result = invoke("test", "a.agent.yml", "--fail-on-drop", "5", "--format", "json")
        assert stored_runs(root) == 1  # readable all along
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    test = doc["tests"][0]
    assert test["accuracy"] == 0.5 and test["previous"]["accuracy"] == 1.0
    check = doc["decision"]["drop"]
    assert check["checked"] is True and check["passed"] is False
    assert check["dropped"][0]["name"] == "totals" and doc["summary"]["exitCode"] == 1
    (note,) = doc["history"]
    assert note["stored"] == 0 and note["error"] and note["readError"] is None
    assert "warning: history not stored in" in result.stderr
    assert "it could still be read" in result.stderr
    assert "1 test(s) dropped more than 5 pts: totals: 100.0% -> 50.0%" in result.stderr
    assert "cannot compare" not in result.stderr
    assert stored_runs(root) == 1  # nothing was written


@pytest.mark.parametrize("which", list(WHICH))
def test_no_drop_passes_and_shows_the_previous_result(root: Path, which: str) -> None:
    with unwritable(*(root / p for p in WHICH[which])):
        result = invoke("test", "a.agent.yml", "--fail-on-drop", "5")
    assert result.exit_code == 0, result.stderr
    assert "Accuracy: 100.00% (±0.0 pts vs " in result.stdout
    assert "No test dropped more than 5 pts (1 compared)" in result.stdout
    assert "warning: history not stored in" in result.stderr
    assert stored_runs(root) == 1


def test_a_saved_result_regates_the_same_way(root: Path, tmp_path: Path) -> None:
    configure(root, SPLIT)
    with unwritable(root / ".oxy", root / ".oxy" / "oxyeval.db"):
        saved = invoke("test", "a.agent.yml", "--format", "json")
    assert saved.exit_code == 0, saved.stderr
    path = tmp_path / "results.json"
    path.write_text(saved.stdout)
    regated = invoke("report", str(path), "--fail-on-drop", "5")
    assert regated.exit_code == 1 and "dropped more than 5 pts" in regated.stderr
    # A document from before `readError`: any history error meant it was not read.
    old = json.loads(saved.stdout)
    del old["history"][0]["readError"]
    path.write_text(json.dumps(old))
    assert invoke("report", str(path), "--fail-on-drop", "5").exit_code == 3


def test_a_history_that_cannot_be_read_is_exit_3_with_the_reason(root: Path) -> None:
    (root / ".oxy" / "oxyeval.db").write_bytes(b"this is not a database" * 300)
    result = invoke("test", "a.agent.yml", "--fail-on-drop", "5", "--format", "json")
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert doc["tests"][0]["accuracy"] == 1.0 and doc["tests"][0]["previous"] is None
    (note,) = doc["history"]
    assert note["readError"] and note["error"]
    message = doc["decision"]["drop"]["message"]
    assert message.startswith("--fail-on-drop 5: cannot compare with the previous runs, the ")
    assert f"could not be read ({root / '.oxy' / 'oxyeval.db'}: " in message
    assert message in result.stderr
