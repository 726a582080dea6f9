"""Reports read well at 80 columns: prose wraps between words, never
mid-word, and no line is wider than the terminal."""

from __future__ import annotations

from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: analyst
    vendor: mock
    outputs: ["Total: 42", "Total is 42", "Total: 99 (XYZ)"]
  - name: judge
    vendor: mock
    rules:
      - {match: "XYZ", output: "They differ on the total, which one of them gives as 99.\\nAnswer: B"}
      - {match: ".", output: "Same.\\nAnswer: A"}
"""
AGENT = """\
model: analyst
system_instructions: Be brief.
tests:
  - type: consistency
    name: totals of the quarter as the finance team reports them to the board
    n: 3
    task_description: "What is the total of the quarter, as finance reports it?"
    model_ref: judge
"""


def test_a_pretty_report_at_80_columns_breaks_no_word(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": AGENT})

    def report(columns: int) -> str:
        result = CliRunner().invoke(
            app,
            ["test", str(root / "a.agent.yml"), "--min-accuracy", "0.9", "--no-history"],
            env={"COLUMNS": str(columns)},
        )
        assert result.exit_code == 1, result.stderr
        return result.stdout

    narrow, wide = report(80), report(400)
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert max(len(line) for line in wide.splitlines()) > 80  # the text needs wrapping

    # Wrapped between words only: the same words in the same order at both widths (a
    # word broken mid-way would be two tokens at 80 columns).
    def words(text: str) -> list[str]:  # a rule's line is drawing, not words
        return [w for w in text.split() if w.strip("─")]

    assert words(narrow) == words(wide)
    flat = " ".join(narrow.split())
    assert "They differ on the total, which one of them gives as 99." in flat
    assert "Average accuracy 33.33% below threshold 90.00%" in flat


def test_one_outlier_s_comparisons_are_said_once(make_project: MakeProject) -> None:
    """the same verdict for the same reason is one entry naming its
    pairs, not a copy per pair."""
    root = make_project(CONFIG, {"a.agent.yml": AGENT})
    result = CliRunner().invoke(
        app, ["test", str(root / "a.agent.yml"), "--no-history"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.stderr
    # The answers that disagree, grouped (the two that agree are one group), then why.
    assert "Answers that disagree (2 of 3 pairs of runs):" in result.stdout
    assert "[1] runs 1, 2: Total: 42 (and 1 other wording(s))" in result.stdout
    assert "[2] run 3: Total: 99 (XYZ)" in result.stdout
    assert "  [1] vs [2]:\n" in result.stdout
    assert result.stdout.count("They differ on the total") == 1
    assert "(score 0)" not in result.stdout and "stands for" not in result.stdout
    assert "Accuracy: 33.33% (how often two runs' answers agree, pair by pair)" in result.stdout
