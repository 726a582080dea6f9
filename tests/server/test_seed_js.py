"""The seed's JavaScript examples, run in Node with graphql-request against a live
``oxy serve`` ("a client written against the seed's documents must work
unmodified, including its JavaScript examples").

Each ``tests/server/js/*.mjs`` holds one example of the seed between two markers, as the
seed has it, and a harness around it (the client, the variables the seed leaves
undefined, a last line of JSON saying what it saw). The server runs as its own process
over a project whose config.yml ``providers:`` sends the branches' OpenAI, Anthropic and
Gemini models to fake servers on 127.0.0.1, which answer a sentiment from the text they
are sent, streamed or not, as each vendor does.

Needs ``node`` and ``npm ci`` in ``tests/server/js``; without them the tests skip, unless
``OXY_REQUIRE_NODE=1`` (CI, where npm exists) makes that a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import (
    FakeResponse,
    FakeServer,
    RecordedRequest,
    anthropic_message_response,
    gemini_response,
    openai_chat_response,
)
from tests.providers.streamfakes import anthropic_events, gemini_events, openai_events, timed

ROOT = Path(__file__).resolve().parents[2]
JS = Path(__file__).resolve().parent / "js"
#: The seed, where the project's lead keeps it (outside the repository; optional).
SEED = ROOT.parent / "shared" / "seeds" / "promptforge-testing-api.txt"
NODE = shutil.which("node")
BEGIN = "// ---- seed example, verbatim: begin ----\n"
END = "\n// ---- seed example, verbatim: end ----"
BRANCHES = {"GPT-4 Turbo", "Claude Sonnet", "Gemini Pro"}
KEYS = {
    "SEEDJS_OPENAI_KEY": "sk-seedjs-openai-0123456789",
    "SEEDJS_ANTHROPIC_KEY": "sk-ant-seedjs-0123456789",
    "SEEDJS_GEMINI_KEY": "gm-seedjs-0123456789",
}


def _missing() -> str | None:
    if NODE is None:
        return "node is not installed"
    if not (JS / "node_modules" / "graphql-request").is_dir():
        return "graphql-request is not installed: run `npm ci` in tests/server/js"
    return None


if _missing() is not None and os.environ.get("OXY_REQUIRE_NODE") == "1":
    raise RuntimeError(f"OXY_REQUIRE_NODE=1 but {_missing()}")


# --------------------------------------------------------------------------- the models


def sentiment(request: RecordedRequest) -> str:
    """The label a classifier would give the text in the request (the template's own
    words are not among the cues)."""
    text = json.dumps(request.body).lower()
    if "terrible" in text or "expected better" in text:
        return "negative"
    if any(cue in text for cue in ("love", "amazing", "exceeded")):
        return "positive"
    return "neutral"


def _openai(request: RecordedRequest) -> FakeResponse:
    if request.route != "/v1/chat/completions":
        return FakeResponse(404, {"error": {"message": f"no route {request.path}"}})
    label = sentiment(request)
    if request.body.get("stream"):
        return timed(openai_events([label], usage=(30, 1)), first=0.02)
    return FakeResponse(200, openai_chat_response(label, prompt_tokens=30, completion_tokens=1))


def _anthropic(request: RecordedRequest) -> FakeResponse:
    if request.route != "/v1/messages" or not request.headers.get("anthropic-version"):
        return FakeResponse(404, {"error": {"message": f"no route {request.path}"}})
    label = sentiment(request)
    if request.body.get("stream"):
        return timed(anthropic_events([label], usage=(32, 1)), first=0.04)
    return FakeResponse(200, anthropic_message_response(label, input_tokens=32, output_tokens=1))


def _gemini(request: RecordedRequest) -> FakeResponse:
    found = re.fullmatch(
        r"/v1beta/models/[^/:]+:(generateContent|streamGenerateContent)", request.route
    )
    if found is None:
        return FakeResponse(404, {"error": {"code": 404, "message": f"no route {request.path}"}})
    label = sentiment(request)
    if found.group(1) == "streamGenerateContent":
        return timed(gemini_events([label], usage=(28, 1)), first=0.06)
    return FakeResponse(200, gemini_response(label, prompt_tokens=28, candidates_tokens=1))


CONFIG = """\
models:
  - {{name: classifier, vendor: openai, model_ref: gpt-4o-mini, api_url: "{openai}", key_var: SEEDJS_OPENAI_KEY}}
providers:
  openai: {{api_url: "{openai}", key_var: SEEDJS_OPENAI_KEY}}
  anthropic: {{api_url: "{anthropic}", key_var: SEEDJS_ANTHROPIC_KEY}}
  gemini: {{api_url: "{gemini}", key_var: SEEDJS_GEMINI_KEY}}
pricing:
  gpt-4-turbo-preview: {{input: 10, output: 30}}
  claude-3-sonnet-20240229: {{input: 3, output: 15}}
  gemini-pro: {{input: 0.5, output: 1.5}}
"""


# --------------------------------------------------------------------------- the server


@dataclass
class Live:
    url: str
    servers: dict[str, FakeServer]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _graphql(url: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables}).encode()
    request = urllib.request.Request(url, body, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        doc: dict[str, Any] = json.loads(answer.read())
    assert not doc.get("errors"), doc
    return doc["data"]


def _wait_healthy(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"oxy serve exited with {process.returncode} before answering")
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("oxy serve did not answer /healthz within 30 s")


CREATE_PROMPT = """
mutation ($input: PromptInput!) { createPrompt(input: $input) { id latestVersion } }
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    if _missing() is not None:  # the verbatim check needs neither, so it still runs
        pytest.skip(str(_missing()))
    servers = {
        "openai": FakeServer(_openai, prefix="/v1").start(),
        "anthropic": FakeServer(_anthropic, prefix="/v1").start(),
        "gemini": FakeServer(_gemini, prefix="/v1beta").start(),
    }
    project = tmp_path_factory.mktemp("seedjs")
    (project / "config.yml").write_text(
        CONFIG.format(**{name: s.url for name, s in servers.items()}), encoding="utf-8"
    )
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OXY_", "OPENAI_", "GEMINI_"))},
        **KEYS,
        "PYTHONPATH": str(ROOT),
    }
    env.pop("ANTHROPIC_BASE_URL", None)
    command = [sys.executable, "-m", "oxyeval", "serve", "--project", str(project)]
    process = subprocess.Popen(
        [*command, "--port", str(port)],
        env=env,
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base, process)
        for prompt in ("prompt_123", "cm123", "cm123456789"):
            made = _graphql(
                base + "/graphql",
                CREATE_PROMPT,
                {
                    "input": {
                        "name": prompt,
                        "model": "classifier",
                        "system": "You label the sentiment of a text.",
                        "template": "Text: {{ text }}\nOne word: the sentiment.",
                        "params": {"temperature": 0},
                    }
                },
            )
            assert made["createPrompt"] == {"id": prompt, "latestVersion": 1}
        yield Live(base + "/graphql", servers)
    finally:
        process.terminate()
        try:
            _, err = process.communicate(timeout=40)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        for server in servers.values():
            server.stop()
    assert process.returncode == 0, err.decode(errors="replace")[-2000:]
    for key in KEYS.values():
        assert key not in err.decode(errors="replace")


def run_example(live: Live, name: str, timeout: float = 60) -> tuple[list[str], Any]:
    """Run one example; its printed lines (without the last) and the JSON it ended with."""
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(JS / name)],
        env={**os.environ, "OXY_URL": live.url},
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    lines = done.stdout.rstrip("\n").split("\n")
    return lines[:-1], json.loads(lines[-1])


# --------------------------------------------------------------------------- the examples


def test_the_examples_hold_the_seed_verbatim() -> None:
    """What sits between the markers is the seed's text, line for line."""
    examples = sorted(JS.glob("*.mjs"))
    blocks = {}
    for path in examples:
        text = path.read_text(encoding="utf-8")
        if BEGIN in text:
            blocks[path.name] = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert len(blocks) == 7 and all(len(b.splitlines()) >= 4 for b in blocks.values())
    if not SEED.is_file():
        pytest.skip(f"the seed is not at {SEED}")
    seed = SEED.read_text(encoding="utf-8")
    for name, block in blocks.items():
        assert block in seed, f"{name}: the block between the markers is not the seed's text"


def test_complete_ab_example(live: Live) -> None:
    lines, seen = run_example(live, "ab-complete.mjs")
    winner, branches = seen["winner"], seen["branches"]
    assert seen["criteria"] == "balanced"
    assert {b["branchName"] for b in branches} == BRANCHES
    assert sorted(b["rank"] for b in branches) == [1, 2, 3]
    first = next(b for b in branches if b["rank"] == 1)
    assert winner["branchName"] == first["branchName"] and winner["model"] == first["model"]
    # Every branch gave the expected label: full quality, a measured time, a priced call.
    for branch in branches:
        assert branch["qualityScore"] == 1.0
        assert branch["latencyMs"] > 0 and branch["estimatedCost"] > 0
    assert lines[0] == f"Winner: {winner['branchName']}"
    assert f" Latency: {winner['latencyMs']}ms" in lines
    assert lines.index("All Results:") > 0
    assert f"1. {first['branchName']}" in lines
    # Step 5: the first branch's history (one run so far), as the seed prints it.
    (execution,) = seen["executions"]
    assert execution["output"] == "positive" and execution["createdAt"].endswith("Z")
    assert lines[-2:] == [
        "Recent executions for winner:",
        f"1. Quality: {execution['qualityScore']}, Latency: {execution['latencyMs']}ms",
    ]
    # The three vendors were called with their own model ids, streamed, keys sent.
    sent = {name: s.requests for name, s in live.servers.items()}
    openai = [r.body for r in sent["openai"] if r.body.get("model") == "gpt-4-turbo-preview"]
    assert openai and openai[0]["stream"] is True
    assert any(r.body.get("model") == "claude-3-sonnet-20240229" for r in sent["anthropic"])
    assert any("gemini-pro:streamGenerateContent" in r.path for r in sent["gemini"])
    assert all(
        r.headers.get("x-api-key") == KEYS["SEEDJS_ANTHROPIC_KEY"] for r in sent["anthropic"]
    )


def test_multiple_iterations_example(live: Live) -> None:
    started = time.monotonic()
    lines, seen = run_example(live, "ab-iterations.mjs")
    assert time.monotonic() - started >= 5  # the seed's five runs, a second apart
    assert seen["iterations"] == 5 and seen["runs"] == 5
    counts = seen["winnerCounts"]
    assert set(counts) <= BRANCHES and sum(counts.values()) == 5
    assert lines[0] == "Winner distribution across 5 runs:"
    for name, count in counts.items():
        assert f" {name}: {count}/5 ({count / 5 * 100:.1f}%)" in lines
    stats = seen["branchStats"]
    assert set(stats) == BRANCHES
    for name, values in stats.items():
        assert len(values["quality"]) == len(values["latency"]) == len(values["cost"]) == 5
        assert f"{name}:" in lines and " Avg Quality: 1.000" in lines


def test_complete_testing_flow(live: Live) -> None:
    lines, seen = run_example(live, "testing-flow.mjs")
    assert lines[0] == "Test Results: 2/2 passed"
    assert seen["summary"]["total"] == 2 and seen["summary"]["regressions"] == []
    assert [r["actualOutput"] for r in seen["results"]] == ["positive", "negative"]
    assert [t["name"] for t in seen["createdTests"]] == ["Strongly positive", "Subtly negative"]
    # Step 5: each case's stats, pass rate in percent.
    assert lines[1:] == [
        "Strongly positive:",
        " Pass rate: 100%",
        " Avg score: 1",
        "Subtly negative:",
        " Pass rate: 100%",
        " Avg score: 1",
    ]


def test_workflow_create_test_cases(live: Live) -> None:
    lines, seen = run_example(live, "workflow-1-create.mjs")
    assert lines == []
    made = {c["name"]: c for c in seen["cases"]}
    assert {"Positive sentiment", "Negative sentiment", "Neutral sentiment"} <= set(made)
    assert made["Neutral sentiment"]["input"] == {"text": "It's okay."}
    assert made["Negative sentiment"]["expectedOutput"] == "negative"


def test_workflow_batch_run(live: Live) -> None:
    lines, seen = run_example(live, "workflow-2-batch.mjs")
    assert [r["passed"] for r in seen["results"]] == [True, True, False]
    assert seen["results"][2]["actualOutput"] == "neutral"
    assert (seen["failures"], seen["regressions"]) == (1, 0)
    assert lines == ["Failed tests: 1"]


def test_workflow_stats(live: Live) -> None:
    lines, seen = run_example(live, "workflow-3-stats.mjs")
    stats = seen["stats"]
    assert stats["totalRuns"] == 2 and stats["passRate"] == 100
    (today,) = stats["trendData"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", today["date"]) and today["totalRuns"] == 2
    assert lines == [
        "Pass rate: 100%",
        "Average score: 1",
        "Recent regressions: 0",
        f"{today['date']}: 100% pass rate",
    ]


def test_workflow_update_baseline(live: Live) -> None:
    lines, seen = run_example(live, "workflow-4-baseline.mjs")
    assert lines == []
    case = seen["testCase"]
    assert case["name"] == "test123" and case["prompt"] == {
        "id": "cm123456789",
        "name": "cm123456789",
    }
    assert case["expectedOutput"] == seen["newExpectedOutput"] == "neutral, leaning positive"
