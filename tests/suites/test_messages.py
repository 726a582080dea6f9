"""The words of ``oxy cases run``: an embedding model with no
``model_ref`` (the mock) is named without empty parentheses."""

from __future__ import annotations

import io

from rich.console import Console

from oxyeval.report.cases_pretty import render_case_run
from oxyeval.suites.cases.run import run_cases

from ..conftest import MakeProject

CONFIG = """\
models:
  - {name: m, vendor: mock, outputs: ["hi"]}
embeddings:
  - {name: e, vendor: mock}
"""
PROMPT = """\
name: p
model: m
template: "Say {{ x }}"
similarity: e
cases:
  - {name: a, input: {x: hi}, expected_output: hi}
  - {name: b, input: {x: yo}, expected_output: hello there}
"""


def test_an_embedding_model_without_model_ref_is_named_without_parentheses(
    make_project: MakeProject,
) -> None:
    root = make_project(CONFIG, {"p.prompt.yml": PROMPT})
    run = run_cases([root / "p.prompt.yml"])
    assert [r.similarity_method for r in run.results] == ["embedding:e", "embedding:e"]
    out = io.StringIO()
    render_case_run(run, Console(file=out, width=200), quiet=True)
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    assert "score = 1.0 on exact match, else similarity: embedding:e" in lines
