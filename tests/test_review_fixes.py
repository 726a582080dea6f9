"""Defects found by the new-user review, each pinned by a test."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.project.document import parse_yaml
from oxyeval.project.schema import validate_document
from oxyeval.providers import ModelSpec
from oxyeval.providers.anthropic import AnthropicAPI
from oxyeval.providers.google import GoogleAPI

from .conftest import MakeProject
from .fakes import FakeResponse, FakeServer, fake_openai, openai_chat_response, openai_error


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_usage_errors_still_give_json_on_stdout(make_project: MakeProject) -> None:
    root = make_project(files={"a.agent.yml": "model: agent_model\nsystem_instructions: hi\n"})
    for bad in (["--min-accuracy", "abc"], ["--threshold-mode", "foo"], ["--bogus"]):
        proc = subprocess.run(
            [sys.executable, "-m", "oxyeval", "test", "a.agent.yml", "--format", "json", *bad],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ},
        )
        assert proc.returncode == 2, bad
        doc = json.loads(proc.stdout)
        assert doc["exitCode"] == 2 and "Error" in doc["error"]


def test_empty_answers_make_a_test_unscorable(make_project: MakeProject) -> None:
    with fake_openai(lambda _r: openai_chat_response("")) as server:
        config = f"models:\n  - name: m\n    vendor: openai\n    model_ref: x\n    api_url: {server.url}\n"
        agent = "model: m\nsystem_instructions: hi\ntests:\n  - {type: consistency, n: 3, task_description: q}\n"
        root = make_project(config, {"a.agent.yml": agent})
        result = invoke(
            "test", str(root / "a.agent.yml"), "--format", "json", "--min-accuracy", "0.5"
        )
    assert result.exit_code == 3
    (test,) = json.loads(result.stdout)["tests"]
    assert test["accuracy"] is None
    assert "returned an empty answer" in test["failedRuns"][0]["error"]


def test_strict_says_why_it_exits_3(make_project: MakeProject) -> None:
    with fake_openai("same answer") as server:
        config = f"models:\n  - name: m\n    vendor: openai\n    model_ref: x\n    api_url: {server.url}\n"
        # 2 of 3 runs leave 1 of 3 pairs: min_judged lowered so the score stands without --strict
        agent = "model: m\nsystem_instructions: hi\ntests:\n  - {type: consistency, n: 3, task_description: q, concurrency: 1, min_judged: 0.3}\n"
        root = make_project(config, {"a.agent.yml": agent})
        server.enqueue((400, openai_error("one bad request")))
        relaxed = invoke("test", str(root / "a.agent.yml"), "-q")
        server.enqueue((400, openai_error("one bad request")))
        strict = invoke("test", str(root / "a.agent.yml"), "-q", "--strict")
    assert relaxed.exit_code == 0  # 2 of 3 runs, identical: scored 100%
    assert strict.exit_code == 3
    assert "strict: 1 run error(s) and 0 judge error(s) -> exit 3" in strict.stderr


def test_literal_credentials_in_headers_are_scrubbed(make_project: MakeProject) -> None:
    secret = "lit-hdr-secret-999"

    def echo(request):  # a server that echoes the Authorization header in its error
        return FakeResponse(
            400, {"error": {"message": f"bad header {request.headers.get('authorization')}"}}
        )

    with FakeServer(echo) as server:
        config = (
            f"models:\n  - name: m\n    vendor: openai\n    model_ref: x\n    api_url: {server.url}\n"
            f"    headers: {{Authorization: 'Bearer {secret}'}}\n"
        )
        agent = "model: m\nsystem_instructions: hi\ntests:\n  - {type: consistency, n: 2, task_description: q}\n"
        root = make_project(config, {"a.agent.yml": agent})
        result = invoke("test", str(root / "a.agent.yml"), "--format", "json")
    assert result.exit_code == 3
    assert "bad header" in result.stdout
    assert secret not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("cls", "given", "expected"),
    [
        (AnthropicAPI, "https://api.anthropic.com", "https://api.anthropic.com/v1"),
        (AnthropicAPI, "https://api.anthropic.com/v1/", "https://api.anthropic.com/v1"),
        (AnthropicAPI, "https://proxy.example/anthropic", "https://proxy.example/anthropic"),
        (
            GoogleAPI,
            "https://generativelanguage.googleapis.com",
            "https://generativelanguage.googleapis.com/v1beta",
        ),
    ],
)
def test_sdk_style_base_urls_get_the_api_path(cls, given: str, expected: str) -> None:
    api = cls(ModelSpec(name="m", vendor=cls.vendor, model_ref="x", api_url=given), None)
    assert api.base_url == expected


def test_mistyped_test_type_is_one_error_not_also_a_warning() -> None:
    doc, _ = parse_yaml(
        "model: m\nsystem_instructions: x\ntests:\n  - type: consistancy\n", Path("a.agent.yml")
    )
    found = validate_document(doc, "agent")
    assert [(d.severity, d.key) for d in found] == [("error", "tests[0].type")]
    assert "did you mean 'consistency'?" in found[0].message


def test_duplicate_test_names_are_errors(make_project: MakeProject) -> None:
    agent = (
        "model: agent_model\nsystem_instructions: x\ntests:\n"
        "  - {type: consistency, name: t, task_description: q}\n  - {type: consistency, name: t, task_description: q}\n"
    )
    root = make_project(files={"a.agent.yml": agent})
    result = invoke("validate", str(root / "a.agent.yml"))
    assert result.exit_code == 2 and "test name 't' is used twice" in result.stderr


def test_run_and_compile_refuse_the_wrong_file_kind(make_project: MakeProject) -> None:
    root = make_project(
        files={
            "a.agent.yml": "model: agent_model\nsystem_instructions: x\n",
            "w.workflow.yml": "tasks:\n  - {name: t, type: formatter, template: x}\n",
        }
    )
    wrong = invoke("compile", str(root / "a.agent.yml"))
    assert wrong.exit_code == 2 and "takes a *.workflow.yml or *.procedure.yml file" in wrong.stderr
    question = invoke("run", str(root / "w.workflow.yml"), "--question", "hi")
    assert question.exit_code == 2 and "--question is for agent files" in question.stderr


def test_interrupted_tests_are_listed_unscored() -> None:
    from types import SimpleNamespace

    from oxyeval.project.tests import JudgeSpec, TestSpec
    from oxyeval.suites.consistency.judging import Job
    from oxyeval.suites.consistency.results import ConsistencyRun
    from oxyeval.suites.consistency.run import _unfinished

    spec = TestSpec(
        0,
        "slow",
        Path("a"),
        "a.agent.yml",
        ("tests", 0),
        5,
        "q",
        None,
        10,
        "all",
        [JudgeSpec(None, "j", {"A": 1.0, "B": 0.0}, ())],
    )
    run = ConsistencyRun()
    target = SimpleNamespace(model="m")  # never called: the test had not started
    ((_job, test),) = _unfinished(run, [Job(spec, target, {}, "q", None)])  # type: ignore[arg-type]
    assert (
        test.accuracy is None
        and test.error == "interrupted before it finished"
        and test.name == "slow"
    )
    assert asyncio.iscoroutinefunction(_unfinished) is False
