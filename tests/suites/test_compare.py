"""Two stored runs compared: regressions, fixes and score moves paired by test, for the
API's compareRuns and ``oxy history --compare``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.store import NotFoundError, open_store
from oxyeval.suites import compare_runs
from oxyeval.suites.cases.run import run_cases

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    rules:
      - {match: "love", output: "positive"}
      - {match: "hate", output: "negative"}
      - {match: ".", output: "neutral"}
"""
PROMPT = """\
name: sentiment
model: m
template: "Feedback: {{ text }}"
similarity: lexical
cases:
  - {name: happy, input: {text: "I love it"}, expected_output: positive}
  - {name: sad, input: {text: "I hate it"}, expected_output: neutral}
  - {name: meh, input: {text: "It is a thing"}, expected_output: neutral}
"""


@pytest.fixture
def two_runs(make_project: MakeProject) -> tuple[Path, str, str]:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    first = run_cases([root / "s.prompt.yml"])
    prompt = root / "s.prompt.yml"
    # happy now expects another answer (a regression), sad the one it gets (a fix)
    text = prompt.read_text().replace("expected_output: positive", "expected_output: glad")
    prompt.write_text(
        text.replace(
            "expected_output: neutral}\n  - {name: meh",
            "expected_output: negative}\n  - {name: meh",
        )
    )
    second = run_cases([root / "s.prompt.yml"])
    return root, first.runs["sentiment"], second.runs["sentiment"]


def test_pairs_results_by_test_and_names_each_change(two_runs: tuple[Path, str, str]) -> None:
    root, base, head = two_runs
    with open_store(root / ".oxy" / "oxyeval.db") as store:
        c = compare_runs(store, base, head)
    changes = {ch.key: ch for ch in c.changes}
    assert changes["sentiment::happy"].change == "regressed"
    assert changes["sentiment::sad"].change == "fixed"
    assert changes["sentiment::meh"].change == "unchanged"
    assert (c.count("regressed"), c.count("fixed"), c.count("unchanged")) == (1, 1, 1)
    happy = changes["sentiment::happy"]
    assert happy.before is not None and happy.before.passed is True
    assert happy.after is not None and happy.after.passed is False
    assert happy.score_delta is not None and happy.score_delta < 0
    assert [ch.change for ch in c.changes][:2] == ["regressed", "fixed"]  # worst first


def test_an_unknown_run_is_not_found(two_runs: tuple[Path, str, str]) -> None:
    root, base, _ = two_runs
    with open_store(root / ".oxy" / "oxyeval.db") as store, pytest.raises(NotFoundError):
        compare_runs(store, base, "nope")


def cli(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args))


def test_history_compare_prints_and_writes_json(
    two_runs: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OXY_DB", raising=False)
    root, base, head = two_runs
    result = cli("history", "--project", str(root), "--compare", base[:8], head, "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["regressed"], doc["fixed"], doc["unchanged"]) == (1, 1, 1)
    happy = next(ch for ch in doc["changes"] if ch["key"] == "sentiment::happy")
    assert happy["before"]["passed"] is True and happy["after"]["passed"] is False
    pretty = cli("history", "--project", str(root), "--compare", base, head)
    assert (
        pretty.exit_code == 0
        and "regressed" in pretty.stdout
        and "sentiment::happy" in pretty.stdout
    )
    bad = cli("history", "--project", str(root), "--compare", base, "zzz")
    assert bad.exit_code == 2 and "no run 'zzz'" in bad.stderr


def test_an_error_is_whatever_its_kind_says_leaves_the_outcome_unknown(tmp_path: Path) -> None:
    """A workflow run that failed is an error by its kind's statuses (there is no status
    named "error"): the comparison calls it a regression, and its fix a fix."""
    from oxyeval.store import NewWorkflowRun
    from oxyeval.suites.workflows import WORKFLOW  # registered where it is written

    with open_store(tmp_path / "h.db") as store:
        ids = []
        for status, error in (
            ("completed", None),
            ("failed", "task 2 failed"),
            ("completed", None),
        ):
            run = store.runs.start(WORKFLOW.name, subject="w.workflow.yml", total=1)
            store.workflows.record(
                run, NewWorkflowRun(workflow="w.workflow.yml", error=error, status=status)
            )
            ids.append(run)
        broke = compare_runs(store, ids[0], ids[1])
        mended = compare_runs(store, ids[1], ids[2])
    assert [c.change for c in broke.changes] == ["regressed"]
    assert [c.change for c in mended.changes] == ["fixed"]
