"""Defects found by the second review (test cases, history, workflows), each pinned."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.errors import ConfigError
from oxyeval.project.config import load_project
from oxyeval.project.document import load_yaml
from oxyeval.project.prompts import load_prompts, rewrite_expected_output
from oxyeval.store import open_store
from oxyeval.suites.cases.run import run_cases
from oxyeval.suites.cases.scoring import apply_diff, output_diff

from .conftest import MakeProject
from .fakes import FakeResponse, FakeServer
from .suites.test_cases_run import CONFIG, PROMPT


def invoke(*args: str):
    return CliRunner().invoke(app_(), list(args))


def app_():
    from oxyeval.cli._app import app

    return app


def _case(root: Path, name: str):
    project = load_project(root)
    (prompt,) = load_prompts(project, [root / "s.prompt.yml"])
    return next(c for c in prompt.cases if c.name == name)


def test_accept_refuses_anchors_and_leaves_the_file_intact(make_project: MakeProject) -> None:
    text = (
        "name: sentiment\ntemplate: 'F: {{ text }}'\nsimilarity: lexical\ncases:\n"
        "  - name: f\n    input: {text: x}\n    expected_output: &anc anchored\n    description: *anc\n"
    )
    root = make_project(CONFIG, {"s.prompt.yml": text})
    with pytest.raises(ConfigError, match="anchor, alias or tag"):
        rewrite_expected_output(_case(root, "f"), "simple")
    assert (root / "s.prompt.yml").read_text() == text


def test_accept_keeps_file_mode_and_crlf(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {})
    path = root / "s.prompt.yml"
    path.write_bytes(PROMPT.replace("\n", "\r\n").encode())
    os.chmod(path, 0o600)
    rewrite_expected_output(_case(root, "meh"), "neutral")
    raw = path.read_bytes()
    assert b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b"")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_yaml(path).data["cases"][2]["expected_output"] == "neutral"


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write read-only files")
def test_accept_on_unwritable_file_is_a_clear_error(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    os.chmod(root, 0o500)
    try:
        with pytest.raises(ConfigError, match="cannot write"):
            rewrite_expected_output(_case(root, "meh"), "neutral")
    finally:
        os.chmod(root, 0o700)


def test_read_only_history_can_still_be_inspected(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    run_cases([root / "s.prompt.yml"])
    db = root / ".oxy" / "oxyeval.db"
    with open_store(db, read_only=True) as store:
        assert store.read_only and len(store.runs.list()) == 1
        assert store.cases.get("sentiment::happy").total_runs == 1
    monkeypatch.chdir(root)
    result = invoke("history", "--format", "json")
    assert result.exit_code == 0 and len(json.loads(result.stdout)["runs"]) == 1


def test_embedding_failures_are_per_case_and_the_run_is_failed(make_project: MakeProject) -> None:
    with FakeServer(
        lambda _r: FakeResponse(400, {"error": {"message": "embeddings down"}})
    ) as server:
        config = (
            CONFIG
            + f"embeddings:\n  - {{name: emb, vendor: openai, model_ref: e, api_url: '{server.url}'}}\n"
        )
        root = make_project(
            config, {"s.prompt.yml": PROMPT.replace("similarity: lexical", "similarity: emb")}
        )
        run = run_cases([root / "s.prompt.yml"])
    by_name = {r.name: r for r in run.results}
    assert by_name["happy"].passed and by_name["happy"].error is None  # exact: no embedding needed
    for name in ("sad", "meh"):
        assert "embeddings down" in (by_name[name].error or "")
    with open_store(run.db) as store:
        assert store.runs.list(1)[0].status == "failed"


def test_negative_cosines_count_as_zero(make_project: MakeProject) -> None:
    def respond(request):  # "n..." texts point one way, everything else the opposite way
        inputs = request.body["input"]
        data = [
            {"index": k, "embedding": [1.0, 0.0] if t.startswith("n") else [-1.0, 0.0]}
            for k, t in enumerate(inputs)
        ]
        return FakeResponse(200, {"data": data, "usage": {"prompt_tokens": 1}})

    with FakeServer(respond) as server:
        config = (
            CONFIG
            + f"embeddings:\n  - {{name: emb, vendor: openai, model_ref: e, api_url: '{server.url}'}}\n"
        )
        root = make_project(
            config, {"s.prompt.yml": PROMPT.replace("similarity: lexical", "similarity: emb")}
        )
        run = run_cases([root / "s.prompt.yml"], cases=["sad"])
    (sad,) = run.results  # "Negative" vs "negative": cosine -1
    assert sad.semantic_score == 0.0 and sad.score == 0.0 and not sad.passed


def test_long_unrelated_outputs_diff_fast_and_exactly() -> None:
    a = " ".join(f"w{i % 97}" for i in range(6000))
    b = " ".join(f"v{i % 89}" for i in range(6000))
    ops = output_diff(a, b)
    assert apply_diff(ops) == (a, b)
    assert len(ops) <= 3


def test_non_terminal_diff_uses_markers(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    monkeypatch.chdir(root)
    result = invoke("cases", "run", "--case", "meh")
    assert "[-negative-]{+neutral+}" in result.stdout
