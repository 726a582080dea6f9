"""The workflow's values written by ``| tojson`` in a template (attack report, cosmetic):
an SQL result as its rows, a loop's iterations, a branch's outputs, a loop's current
value. Before, each was "TypeError: Object of type ... is not JSON serializable"."""

from __future__ import annotations

import datetime
import decimal

from oxyeval.project.templates import TemplateRef, render
from oxyeval.workflow.outputs import LoopIteration, LoopOutput, LoopValue, ScopeOutput
from oxyeval.workflow.sql import SqlResult


def test_engine_values_as_json() -> None:
    q = SqlResult(["n", "d"], [(1, decimal.Decimal("2.5")), (2, datetime.date(2024, 1, 31))])
    context = {
        "q": q,
        "branch": ScopeOutput({"t": "x", "q": q}, ["t", "q", "u"], "t"),
        "loop": LoopOutput([LoopIteration("May", 0, {"t": "y"}, ["t"], "t")]),
        "item": LoopValue({"m": "May"}, 0),
    }
    source = "{{ q | tojson }}|{{ branch | tojson }}|{{ loop | tojson }}|{{ item | tojson }}"
    rows = '[{"d": 2.5, "n": 1}, {"d": "2024-01-31", "n": 2}]'
    assert render(TemplateRef(source), context) == (
        f'{rows}|{{"q": {rows}, "t": "x"}}|[{{"t": "y", "value": "May"}}]|{{"m": "May"}}'
    )
