"""Model-written text is shown, never executed by a terminal."""

from __future__ import annotations

import io
import json

from rich.console import Console

from oxyeval.report.pretty import render_pretty
from oxyeval.report.text import shown
from oxyeval.suites.consistency.results import ConsistencyRun, ConsistencyTestResult, OutputRecord

HOSTILE = "\x1b]0;PWNED\x07\x1b[2J\x1b[31mred\x1b[0m \x00nul \x9b1m\ud800 tab\there\nline"


def test_control_characters_become_visible_escapes() -> None:
    text = shown(HOSTILE)
    assert "\x1b" not in text and "\x00" not in text and "\x07" not in text
    assert "\x9b" not in text and "\ud800" not in text
    assert text.startswith("\\x1b]0;PWNED\\x07\\x1b[2J")
    assert "\\x00nul" in text and "\\x9b1m" in text and "\\ud800" in text
    assert "\there\nline" in text  # tab and newline are text, kept


def test_the_pretty_report_never_prints_a_models_escape_sequences() -> None:
    outputs = [OutputRecord(run=1, text=HOSTILE), OutputRecord(run=2, text=HOSTILE)]
    test = ConsistencyTestResult(
        name="t",
        file="a.agent.yml",
        index=0,
        task_description="q",
        n=2,
        pairing="all",
        agent_model="m",
        judge_model="j",
        scores={"A": 1.0, "B": 0.0},
        accuracy=1.0,
        outputs=outputs,
        selected=1,
        comparisons=[
            {
                "runs": [1, 2],
                "weight": 1,
                "identical": False,
                "verdict": "B",
                "score": 0.0,
                "reasoning": HOSTILE,
                "error": None,
            }
        ],
    )
    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    render_pretty(ConsistencyRun(tests=[test]), None, console)
    text = console.file.getvalue()
    assert "PWNED" in text and "\x1b" not in text and "\x07" not in text
    # JSON keeps the exact text (escaped by JSON itself).
    assert json.loads(json.dumps(HOSTILE)) == HOSTILE
