"""``oxy chattest`` on the offline example and on small projects: the table, JSON, exit
codes, the default threshold 0, outputs shown but never stored, keys never printed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.providers import RetryPolicy
from oxyeval.store import open_store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chattest"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    target = tmp_path / "chattest"
    shutil.copytree(EXAMPLE, target)
    return target


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args))


def test_the_example_passes_the_steady_model_and_fails_the_shaky_one(example: Path) -> None:
    result = invoke("chattest", str(example), "--format", "json")
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    (prompt,) = doc["prompts"]
    by_model: dict[str, list[dict]] = {}
    for r in prompt["results"]:
        by_model.setdefault(r["model"], []).append(r)
    assert all(r["passed"] and r["passRate"] == 1.0 for r in by_model["geo-steady"])
    assert all(
        not r["passed"] and r["passRate"] == pytest.approx(0.6) for r in by_model["geo-shaky"]
    )
    assert len(prompt["outputs"]["geo-shaky"]) == 5
    assert doc["summary"]["failed"] == 3 and doc["summary"]["exitCode"] == 1
    assert "failed: capital-of-france on geo-shaky" in result.stderr
    pretty = invoke("chattest", str(example))
    assert "FAIL 60% (3/5)" in pretty.stdout and "Lyon" in pretty.stdout  # outputs shown


def _files(root: Path, threshold: str = "") -> None:
    (root / "prompts").mkdir(parents=True)
    (root / "models").mkdir()
    (root / "prompts" / "p.json").write_text(
        '{"key": "p", "prompt": "Say hi", "models": ["m"], "tests": ["it greets"],'
        f' "runVolume": 4, "testModel": "j"{threshold}}}'
    )
    (root / "models" / "m.json").write_text(
        '{"key": "m", "url": "mock:", "outputs": ["hello there", "go away"]}'
    )
    (root / "models" / "j.json").write_text(
        '{"key": "j", "url": "mock:", "rules": [{"match": "go away", "output": "Rude.\\nVerdict: FAIL"},'
        ' {"match": "(?s).*", "output": "Friendly.\\nVerdict: PASS"}]}'
    )


def test_the_default_success_threshold_is_zero(tmp_path: Path) -> None:
    _files(tmp_path)
    result = invoke("chattest", str(tmp_path), "--format", "json")
    assert result.exit_code == 0, result.stderr
    (r,) = json.loads(result.stdout)["prompts"][0]["results"]
    assert (r["passes"], r["runs"], r["threshold"], r["passed"]) == (2, 4, 0.0, True)
    strict = tmp_path / "strict"
    _files(strict, ', "successThreshold": 0.75')
    assert invoke("chattest", str(strict)).exit_code == 1


def test_pass_rates_are_kept_in_a_projects_history_but_outputs_are_not(tmp_path: Path) -> None:
    (tmp_path / "config.yml").write_text("models:\n  - {name: other, vendor: mock, outputs: [x]}\n")
    _files(tmp_path / "ct")
    assert invoke("chattest", str(tmp_path / "ct"), "-q").exit_code == 0
    with open_store(tmp_path / ".oxy" / "oxyeval.db", read_only=True) as store:
        (run,) = store.runs.list(5)
        (row,) = store.results.for_run(run.id)
        assert row.kind == "passfail" and row.score == 0.5 and "outputs" not in row.details
    assert b"hello there" not in (tmp_path / ".oxy" / "oxyeval.db").read_bytes()


def test_a_key_from_the_environment_is_never_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _files(tmp_path)
    monkeypatch.setenv("CT_KEY", "sk-chattest-secret-42")
    # The refused connections are retried as usual, without the backoff's seconds.
    monkeypatch.setattr(RetryPolicy, "delay", lambda self, attempt, retry_after: 0.0)
    (tmp_path / "models" / "m.json").write_text(
        '{"key": "m", "url": "http://127.0.0.1:9/v1/chat/completions", "apiKey": "${CT_KEY}"}'
    )
    result = invoke("chattest", str(tmp_path), "--format", "json")
    assert result.exit_code == 3  # nothing listens on port 9: a provider failure
    assert "sk-chattest-secret-42" not in result.stdout + result.stderr
    assert json.loads(result.stdout)["summary"]["unknown"] == 1


def test_bad_input_names_the_file_and_exits_2(tmp_path: Path) -> None:
    _files(tmp_path)
    (tmp_path / "prompts" / "p.json").write_text(
        '{"key": "p", "prompt": "hi", "models": ["nope"], "tests": []}'
    )
    result = invoke("chattest", str(tmp_path), "--format", "json")
    assert result.exit_code == 2
    assert "p.json" in result.stderr and json.loads(result.stdout)["exitCode"] == 2


def test_a_prompt_file_may_bring_its_own_judge_prompt(tmp_path: Path) -> None:
    _files(tmp_path, ', "testPrompt": "HOUSE RULES. Answer: {{ output }}. Test: {{ criterion }}"')
    (tmp_path / "models" / "j.json").write_text(
        '{"key": "j", "url": "mock:", "rules": [{"match": "HOUSE RULES", "output": "Ok.\\nVerdict: PASS"},'
        ' {"match": "(?s).*", "output": "Verdict: FAIL"}]}'
    )
    result = invoke("chattest", str(tmp_path), "--format", "json")
    assert result.exit_code == 0, result.stderr
    (r,) = json.loads(result.stdout)["prompts"][0]["results"]
    assert r["passes"] == 4  # every verdict came through the file's own prompt
    blind = tmp_path / "blind"
    _files(blind, ', "testPrompt": "Grade it: {{ criterion }}"')
    bad = invoke("chattest", str(blind))
    assert (
        bad.exit_code == 2
        and "never uses {{ output }}" in bad.stderr
        and "testPrompt" in bad.stderr
    )


def test_a_model_file_named_like_a_config_model_is_an_error_naming_both(tmp_path: Path) -> None:
    # The folder's judge would otherwise be replaced by the project's silently.
    (tmp_path / "config.yml").write_text("models:\n  - {name: j, vendor: mock, outputs: [x]}\n")
    _files(tmp_path / "ct")
    result = invoke("chattest", str(tmp_path / "ct"))
    assert result.exit_code == 2
    assert "j.json" in result.stderr and "config.yml:2" in result.stderr
    assert "model key 'j' is also a model in" in result.stderr


def test_the_example_runs_inside_the_examples_project(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE.parent, tmp_path / "examples", ignore=shutil.ignore_patterns(".oxy"))
    result = invoke("chattest", str(tmp_path / "examples" / "chattest"), "-q")
    assert result.exit_code == 1, result.stderr
    assert "PASS 100% (5/5)" in result.stdout and "FAIL 60% (3/5)" in result.stdout


def test_a_cell_counts_the_runs_no_judge_could_grade(tmp_path: Path) -> None:
    _files(tmp_path, ', "successThreshold": 0.9')
    (tmp_path / "models" / "j.json").write_text(
        '{"key": "j", "url": "mock:", "rules": [{"match": "hello", "output": "Kind.\\nVerdict: PASS"},'
        ' {"match": "(?s).*", "output": "I cannot tell."}]}'
    )
    result = invoke("chattest", str(tmp_path), "-q")
    assert "PASS 100% (2/2, 2 unjudged)" in result.stdout
    assert result.exit_code == 0
    # why, on stderr, each judge error once with its runs
    assert "p on m: it greets: 2 run(s) unjudged, left out of the pass rate: " in result.stderr
    assert result.stderr.count("unjudged") == 1 and "no verdict" in result.stderr
    _files(tmp_path / "none")
    (tmp_path / "none" / "models" / "j.json").write_text(
        '{"key": "j", "url": "mock:", "outputs": ["I cannot tell."]}'
    )
    result = invoke("chattest", str(tmp_path / "none"), "-q")
    assert result.exit_code == 3
    assert "ERR - (0/0, 4 unjudged)" in result.stdout
    assert "no verdict" in result.stderr  # the reason for exit 3, on stderr


def test_validate_checks_chattest_folders_as_chattest_reads_them(tmp_path: Path) -> None:
    (tmp_path / "config.yml").write_text("models:\n  - {name: j, vendor: mock, outputs: [x]}\n")
    (tmp_path / "a.agent.yml").write_text("model: j\nsystem_instructions: hi\n")
    _files(tmp_path / "ct", ', "successThreshold": "five"')
    run = invoke("chattest", str(tmp_path / "ct"))
    checked = invoke("validate", str(tmp_path))
    assert run.exit_code == checked.exit_code == 2
    for line in ("successThreshold: expected a number", "model key 'j' is also a model in"):
        assert line in run.stderr and line in checked.stderr, (run.stderr, checked.stderr)
    doc = json.loads(invoke("validate", str(tmp_path), "--format", "json").stdout)
    assert {Path(f).name for f in doc["files"]} >= {"p.json", "m.json", "j.json", "a.agent.yml"}
    (tmp_path / "ct" / "models" / "j.json").rename(tmp_path / "ct" / "models" / "judge.json")
    fixed = tmp_path / "ct" / "models" / "judge.json"
    fixed.write_text(fixed.read_text().replace('"key": "j"', '"key": "judge"'))
    prompt = tmp_path / "ct" / "prompts" / "p.json"
    prompt.write_text(
        prompt.read_text()
        .replace('"testModel": "j"', '"testModel": "judge"')
        .replace(', "successThreshold": "five"', "")
    )
    assert invoke("validate", str(tmp_path)).exit_code == 0
    assert invoke("validate", str(prompt)).exit_code == 0  # one file brings its models
