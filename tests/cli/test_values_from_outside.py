"""Values from servers that no report, JSON document or database could hold:
 a lone surrogate in an answer, JSON nested 100,000 deep from a
judge, NaN or overflowing embeddings. Each is replaced or is one call's error; the run
goes on, its JSON document prints and it is stored.

Servers are fakes on 127.0.0.1 (``tests/fakes.py``); the commands run in-process.
"""

from __future__ import annotations

import json
import os
import sqlite3
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject
from ..fakes import (
    FakeResponse,
    FakeServer,
    fake_anthropic,
    fake_gemini,
    fake_openai,
    openai_embeddings_response,
)

AGENT = """\
model: m
system_instructions: Answer.
tests:
  - type: consistency
    name: totals
    n: 2
    task_description: What is the total?
"""

JUDGE = '  - name: judge\n    vendor: mock\n    rules:\n      - {match: ".", output: "Same.\\nAnswer: A"}\n'


def _invoke(root: Path, *args: str) -> Any:
    return CliRunner().invoke(app, [*args, "--format", "json"], env={"OXY_DB": _db(root)})


def _db(root: Path) -> str:
    return str(root / ".oxy" / "history.db")


def _runs(root: Path) -> list[str]:
    """The status of every run the history holds."""
    with sqlite3.connect(_db(root)) as conn:
        return [row[0] for row in conn.execute("SELECT status FROM runs")]


VENDORS: dict[str, tuple[Callable[..., FakeServer], str]] = {
    "openai": (fake_openai, "vendor: openai, model_ref: gpt-test"),
    "anthropic": (fake_anthropic, "vendor: anthropic, model_ref: claude-test"),
    "google": (fake_gemini, "vendor: google, model_ref: gemini-test, key_var: GEM_KEY"),
}


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_a_lone_surrogate_in_an_answer_is_replaced_and_the_run_kept(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch, vendor: str
) -> None:
    """JSON's "\\ud83d" decodes to a lone surrogate: every writer raised on it, so `oxy
    test --format json` printed nothing, stored nothing and exited 3 on a scored test."""
    monkeypatch.setenv("GEM_KEY", "unit-test-key")
    fake, entry = VENDORS[vendor]
    with fake("Sales rose \ud83d") as server:  # the fakes send it escaped, as "\ud83d"
        config = f"models:\n  - {{name: m, {entry}, api_url: '{server.url}'}}\n" + JUDGE
        root = make_project(config, {"a.agent.yml": AGENT})
        result = _invoke(root, "test", str(root / "a.agent.yml"))
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["accuracy"] == 1.0
    assert "Sales rose \ufffd" in json.dumps(document, ensure_ascii=False)
    assert f"the answer of model 'm' ({vendor})" in result.stderr
    assert "invalid character(s)" in result.stderr and "internal error" not in result.stderr
    assert _runs(root) == ["completed"]


def test_a_judge_answering_json_nested_100000_deep_fails_that_test_only(
    make_project: MakeProject,
) -> None:
    """A RecursionError in the JSON parser aborted the whole run; now it is one malformed
    answer: the judged test is an error, the other test (identical answers, no judge
    call) still scores, the JSON document prints and the run is stored."""
    deep = b"[" * 100_000 + b"]" * 100_000
    with FakeServer(lambda _r: FakeResponse(200, deep, {"Content-Type": "application/json"})) as s:
        config = (  # the first model is the judge
            f"models:\n  - {{name: judge, vendor: openai, model_ref: j, api_url: '{s.url}', "
            "max_retries: 0}\n"
            "  - {name: m, vendor: mock, outputs: ['one', 'two']}\n"
            "  - {name: same, vendor: mock, outputs: ['same']}\n"
        )
        files = {"a.agent.yml": AGENT, "b.agent.yml": AGENT.replace("model: m", "model: same")}
        root = make_project(config, files)
        result = _invoke(root, "test", str(root / "a.agent.yml"), str(root / "b.agent.yml"))
    assert result.exit_code == 3, result.stderr
    document = json.loads(result.stdout)
    judged, other = sorted(document["tests"], key=lambda t: t["file"])
    assert judged["status"] == "error", judged
    assert "malformed response" in judged["error"]
    assert "nested more than 100 levels" in judged["error"]
    assert other["status"] == "scored" and other["accuracy"] == 1.0
    assert "internal error" not in result.stderr and "RecursionError" not in result.stderr
    assert _runs(root) == ["failed"]  # stored, with its error: not left "interrupted"
    with sqlite3.connect(_db(root)) as conn:
        assert conn.execute("SELECT count(*) FROM test_results").fetchone() == (2,)


PROMPT = """\
model: m
template: "Say {{ word }}"
similarity: emb
threshold: 0.5
cases:
  - {name: one, input: {word: hi}, expected_output: "hello there"}
"""


def _embeddings(vectors: list[str]) -> FakeServer:
    """An /embeddings server answering the raw JSON ``vectors`` (one per text sent)."""

    def respond(request: Any) -> FakeResponse:
        texts = request.body["input"]
        data = ",".join(
            f'{{"object": "embedding", "index": {i}, "embedding": {vectors[i % len(vectors)]}}}'
            for i in range(len(texts))
        )
        body = f'{{"object": "list", "data": [{data}], "model": "e"}}'
        return FakeResponse(200, body.encode(), {"Content-Type": "application/json"})

    return FakeServer(respond)


def _cases(make_project: MakeProject, server: FakeServer) -> tuple[Path, Any]:
    config = (
        "models:\n  - {name: m, vendor: mock, outputs: ['hi']}\n"
        f"embeddings:\n  - {{name: emb, vendor: openai, model_ref: e, api_url: '{server.url}', "
        "max_retries: 0}\n"
    )
    root = make_project(config, {"s.prompt.yml": PROMPT})
    return root, _invoke(root, "cases", "run", str(root / "s.prompt.yml"))


@pytest.mark.parametrize(
    "vectors",
    [
        ["[NaN, 1.0]", "[1.0, 0.0]"],  # Python's json takes NaN; min(1.0, nan) is 1.0
        ["[1e999, 0.0]", "[1.0, 0.0]"],
        ["[0.0, 0.0]", "[1.0, 0.0]"],  # no direction: neither similar nor not
    ],
)
def test_an_embedding_that_cannot_be_compared_is_an_error_never_a_pass(
    make_project: MakeProject, vectors: list[str]
) -> None:
    with _embeddings(vectors) as server:
        _, result = _cases(make_project, server)
    document = json.loads(result.stdout)
    (execution,) = document["executions"]
    assert execution["error"] and "model 'emb'" in execution["error"], execution
    assert execution["passed"] is not True and execution["semanticScore"] is None
    assert result.exit_code == 3, result.stderr
    assert "internal error" not in result.stderr


def test_huge_embeddings_score_their_true_cosine(make_project: MakeProject) -> None:
    """[1e200, 1e200, 0] and [1e200, 0, 0]: squares overflowed, inf/inf is NaN, and the
    orthogonal-ish pair scored 1.0 and passed. Its cosine is 0.707; with a threshold of
    0.9 the case fails."""
    body = openai_embeddings_response([[1e200, 1e200, 0.0], [1e200, 0.0, 0.0]])
    with fake_openai_embeddings_answering(body) as server:
        root, _ = _cases(make_project, server)
        prompt = PROMPT.replace("threshold: 0.5", "threshold: 0.9")
        (root / "s.prompt.yml").write_text(prompt)
        result = _invoke(root, "cases", "run", str(root / "s.prompt.yml"))
    (execution,) = json.loads(result.stdout)["executions"]
    assert execution["semanticScore"] == pytest.approx(2**-0.5)
    assert execution["passed"] is False and execution["error"] is None
    assert result.exit_code == 1


def fake_openai_embeddings_answering(body: dict[str, Any]) -> FakeServer:
    return FakeServer(lambda _r: FakeResponse(200, body))


def test_every_writer_takes_a_file_name_in_bytes_that_are_not_utf8(
    make_project: MakeProject,
) -> None:
    """The defence behind the entry points: a path given in bytes that are not UTF-8 (argv
    hands it over as surrogate escapes, and it must stay so to open the file) reaches the
    console, the JSON document, the JUnit report and the history, none of which could
    encode it: the history was not stored, the console raised."""
    name = os.fsdecode(b"\xff.agent.yml")
    root = make_project(files={"a.agent.yml": AGENT.replace("model: m", "model: agent_model")})
    (root / "a.agent.yml").rename(root / name)
    junit = root / "out.xml"
    for fmt in ("json", "pretty"):
        result = CliRunner().invoke(
            app,
            ["test", str(root / name), "--format", fmt, "--junit", str(junit)],
            env={"OXY_DB": _db(root)},
        )
        assert result.exit_code == 0, result.stderr
        assert "\ufffd.agent.yml" in result.stdout
        assert "history not stored" not in result.stderr
    assert ET.parse(junit).getroot().tag == "testsuites"
    assert _runs(root) == ["completed", "completed"]
    with sqlite3.connect(_db(root)) as conn:
        files = {row[0] for row in conn.execute("SELECT file FROM test_results")}
    assert files == {"\ufffd.agent.yml"}
