"""`--cache` / `--no-cache` on oxy test, oxy run and oxy cases run, `cached_calls` in the
reports, and `oxy cache stats|clear`, against a fake server that counts requests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MOCK_CONFIG, MakeProject
from ..fakes import FakeServer, RecordedRequest, fake_openai

ANSWERS = ["The total is 42.", "Total: 42", "It is 42 in all."]
KEY = "sk-live-CACHE-KEY-7f3a9c"
HEADER = "hdr-CACHE-SECRET-1b2c"


class Script:
    """Agent answers in turn, a verdict for judge prompts; counts both."""

    def __init__(self) -> None:
        self.agent = self.judge = 0
        self._next = 0
        self._lock = threading.Lock()

    def reset(self) -> None:
        self._next = 0

    def __call__(self, request: RecordedRequest) -> str:
        last = str(request.body["messages"][-1]["content"])
        with self._lock:
            if "[Submission 1]" in last:
                self.judge += 1
                return "Same facts.\nAnswer: A"
            self.agent += 1
            text = ANSWERS[self._next % len(ANSWERS)]
            self._next += 1
        return text


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(script: Script):
    with fake_openai(script, api_key=KEY) as s:
        yield s


@pytest.fixture
def root(make_project: MakeProject, server: FakeServer) -> Path:
    config = (
        f"models:\n  - name: local\n    vendor: openai\n    model_ref: m\n    api_url: {server.url}\n"
        "    key_var: CACHE_TEST_KEY\n    max_retries: 0\n"
        "    headers: {X-Team-Token: {env_var: CACHE_TEST_HEADER}}\n"
    )
    agent = (
        "model: local\nsystem_instructions: Be brief.\ntests:\n"
        "  - type: consistency\n    name: totals\n    n: 3\n    concurrency: 1\n"
        "    task_description: What is the total?\n"
    )
    prompt = (
        "name: totals\nmodel: local\ntemplate: 'Question: {{ q }}'\nsimilarity: lexical\n"
        "cases:\n  - {name: one, input: {q: one}, expected_output: The total is 42.}\n"
    )
    return make_project(config, {"a.agent.yml": agent, "p.prompt.yml": prompt})


ENV = {"CACHE_TEST_KEY": KEY, "CACHE_TEST_HEADER": HEADER}


@pytest.fixture(autouse=True)
def _project_history(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OXY_DB", raising=False)  # each project's own .oxy/oxyeval.db


def invoke(root: Path, *args: str):
    extra = [] if args[0] == "cache" else ["--project", str(root)]
    return CliRunner(env=ENV).invoke(app, [*args, *extra])


def oxy_test(root: Path, *flags: str) -> dict[str, Any]:
    result = invoke(root, "test", str(root / "a.agent.yml"), "--format", "json", *flags)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_a_cache_rerun_makes_zero_requests(root: Path, server: FakeServer, script: Script) -> None:
    first = oxy_test(root, "--cache")
    assert len(server.requests) == 6
    assert first["summary"]["cachedCalls"] == 0 and first["tests"][0]["cachedCalls"] == 0
    again = oxy_test(root, "--cache")
    assert len(server.requests) == 6  # not one request
    assert again["summary"]["cachedCalls"] == 6 and again["tests"][0]["cachedCalls"] == 6
    assert again["judgeCalls"] == 0
    assert [o["text"] for o in again["tests"][0]["outputs"]] == ANSWERS
    assert again["accuracy"] == first["accuracy"] == 1.0


def test_a_plain_rerun_makes_only_the_agent_calls(root: Path, script: Script) -> None:
    first = oxy_test(root)
    assert (script.agent, script.judge) == (3, 3)
    script.reset()
    again = oxy_test(root)
    assert (script.agent, script.judge) == (6, 3)
    assert again["summary"]["cachedCalls"] == first["judgeCalls"] == 3
    assert again["accuracy"] == first["accuracy"]


def test_no_cache_calls_everything(root: Path, server: FakeServer, script: Script) -> None:
    oxy_test(root, "--cache")
    script.reset()
    doc = oxy_test(root, "--no-cache")
    assert len(server.requests) == 12 and doc["summary"]["cachedCalls"] == 0


def test_pretty_output_says_what_came_from_the_cache(root: Path) -> None:
    oxy_test(root, "--cache")
    result = invoke(root, "test", str(root / "a.agent.yml"), "--cache")
    assert result.exit_code == 0, result.stderr
    assert "6 calls from the cache" in result.stdout
    assert "6 model calls served from the cache" in result.stdout


def test_the_database_holds_no_key_and_no_header(root: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "oxyeval", "test", "a.agent.yml", "--cache", "--format", "json"],
        cwd=root,
        env={**{k: v for k, v in os.environ.items() if k != "OXY_DB"}, **ENV},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    files = list((root / ".oxy").iterdir())
    raw = b"".join(f.read_bytes() for f in files if f.is_file())
    assert b"cache_entries" in raw and b"The total is 42." in raw  # the answers are there
    assert KEY.encode() not in raw and HEADER.encode() not in raw
    assert b"X-Team-Token" not in raw and b"CACHE_TEST_KEY" not in raw


def test_oxy_run_question_replays_with_cache(root: Path, server: FakeServer) -> None:
    args = ("run", str(root / "a.agent.yml"), "--question", "What is the total?", "--cache")
    first = invoke(root, *args)
    second = invoke(root, *args)
    assert first.exit_code == second.exit_code == 0, first.stderr + second.stderr
    assert first.stdout == second.stdout == "The total is 42.\n"
    assert len(server.requests) == 1
    invoke(root, *args[:-1])  # no --cache: asked
    assert len(server.requests) == 2


def test_oxy_cases_run_replays_with_cache(root: Path, server: FakeServer) -> None:
    args = ("cases", "run", str(root / "p.prompt.yml"), "--format", "json", "--cache")
    first = json.loads(invoke(root, *args).stdout)
    second = json.loads(invoke(root, *args).stdout)
    assert len(server.requests) == 1
    assert first["summary"]["cachedCalls"] == 0 and second["summary"]["cachedCalls"] == 1
    assert second["executions"][0]["cached"] is True
    assert second["executions"][0]["actualOutput"] == first["executions"][0]["actualOutput"]


def stats(root: Path) -> dict[str, Any]:
    result = invoke(root, "cache", "stats", "--format", "json", "--project", str(root))
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_cache_stats_on_a_new_project_creates_nothing(root: Path) -> None:
    doc = stats(root)
    assert doc["entries"] == 0 and doc["kinds"]["answer"]["entries"] == 0
    assert doc["db"].endswith("oxyeval.db")
    pretty = invoke(root, "cache", "stats", "--project", str(root))
    assert pretty.exit_code == 0 and "the cache is empty" in pretty.stdout
    cleared = invoke(root, "cache", "clear", "--project", str(root))
    assert cleared.exit_code == 0 and "cleared 0" in cleared.stdout
    assert not (root / ".oxy").exists()


def test_cache_stats_and_clear(root: Path) -> None:
    oxy_test(root, "--cache")
    oxy_test(root, "--cache")
    doc = stats(root)
    answers, verdicts = doc["kinds"]["answer"], doc["kinds"]["verdict"]
    assert (answers["entries"], verdicts["entries"]) == (3, 3)
    assert (answers["hits"], verdicts["hits"]) == (3, 3)
    assert answers["sizeBytes"] > 0 and answers["oldest"] <= answers["newest"]
    pretty = invoke(root, "cache", "stats", "--project", str(root))
    assert "answer" in pretty.stdout and "verdict" in pretty.stdout
    assert "6 entries" in pretty.stdout
    recent = invoke(root, "cache", "clear", "--older-than", "1", "--project", str(root))
    assert recent.exit_code == 0 and "cleared 0" in recent.stdout
    verdict = invoke(
        root, "cache", "clear", "--kind", "verdict", "--format", "json", "--project", str(root)
    )
    assert json.loads(verdict.stdout)["cleared"] == 3
    after = stats(root)["kinds"]
    assert after["answer"] == answers and after["verdict"]["entries"] == 0
    everything = invoke(root, "cache", "clear", "--project", str(root))
    assert "cleared 3 cached entries" in everything.stdout
    assert stats(root)["entries"] == 0


def test_cache_clear_rejects_a_bad_kind(root: Path) -> None:
    result = invoke(root, "cache", "clear", "--kind", "answers", "--project", str(root))
    assert result.exit_code == 2


def test_cache_commands_take_db_like_the_history_commands(root: Path, tmp_path: Path) -> None:
    missing = tmp_path / "elsewhere" / "h.db"
    for command in ("stats", "clear"):
        result = invoke(root, "cache", command, "--db", str(missing), "--project", str(root))
        assert result.exit_code == 2 and "does not exist" in result.stderr
    assert not missing.parent.exists()
    shared = tmp_path / "shared.db"
    result = invoke(root, "test", str(root / "a.agent.yml"), "--cache", "--format", "json")
    assert result.exit_code == 0
    (root / ".oxy" / "oxyeval.db").rename(shared)
    for suffix in ("-wal", "-shm"):
        side = root / ".oxy" / f"oxyeval.db{suffix}"
        if side.exists():
            side.rename(tmp_path / f"shared.db{suffix}")
    doc = json.loads(
        invoke(
            root, "cache", "stats", "--db", str(shared), "--format", "json", "--project", str(root)
        ).stdout
    )
    assert doc["db"] == str(shared) and doc["entries"] == 6


@pytest.mark.parametrize("days", ["nan", "1e400", "1e6", "-1"])
def test_cache_clear_rejects_ages_that_are_not_a_number_of_days(
    make_project: MakeProject, days: str
) -> None:
    root = make_project()
    result = CliRunner().invoke(
        app, ["cache", "clear", "--older-than", days, "--project", str(root)]
    )
    assert result.exit_code == 2, result.output
    assert "--older-than" in result.output and "internal error" not in result.output


def test_ttl_days_has_a_maximum(make_project: MakeProject) -> None:
    root = make_project(MOCK_CONFIG + "cache:\n  ttl_days: 740000\n")
    result = CliRunner().invoke(app, ["validate", "--project", str(root)])
    assert result.exit_code == 2 and "cache.ttl_days" in result.output
