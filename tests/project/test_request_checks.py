"""What validate lets through that a run then rejects: headers, API keys, api_url, an
agent's system prompt and its context files.

Each used to pass ``oxy validate`` and fail only at the first call (a header with a line
break was retried 5 times as a network error; a non-ASCII one was an internal
UnicodeEncodeError; ``http://[::1`` failed when the URL was parsed for the request).
Now each is bad input at its line when the file loads, so validate and every command
agree, and none of them reaches the network.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.providers import api_url_problem, header_problem

from ..conftest import MOCK_CONFIG, MakeProject
from ..fakes import fake_openai

AGENT = "model: remote\nsystem_instructions: Be brief.\n"


def _config(url: str, extra: str = "") -> str:
    return f"models:\n  - name: remote\n    vendor: openai\n    model_ref: m\n    api_url: {url}\n{extra}"


def _invoke(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(argv), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("headers", "line", "why"),
    [
        ('{X-Trace: "a\\r\\nInjected: yes"}', 7, "holds a line break (CR or LF)"),
        ('{X-Name: "café"}', 7, "the non-ASCII character U+00E9"),
        ('{X-Nul: "a\\0b"}', 7, "the control character U+0000"),
        ('{"Bad Name": "x"}', 7, "is not a valid HTTP header name"),
    ],
)
def test_a_literal_header_httpx_cannot_send_is_bad_input(
    make_project: MakeProject, headers: str, line: int, why: str
) -> None:
    with fake_openai() as server:
        root = make_project(
            _config(f"{server.url}/v1", f"    key_var: K\n    headers: {headers}\n"),
            {"a.agent.yml": AGENT},
        )
        for argv in (
            ["validate", str(root)],
            ["run", str(root / "a.agent.yml"), "--question", "hi", "--no-history"],
        ):
            code, _out, err = _invoke(*argv, env={"K": "sk-test"})
            assert code == 2, err
            assert f"config.yml:{line}" in err and why in err
        assert server.requests == []  # never sent, never retried


def test_a_header_from_the_environment_with_a_line_break_is_bad_input(
    make_project: MakeProject,
) -> None:
    with fake_openai() as server:
        headers = "    key_var: K\n    headers:\n      Authorization: {env_var: AUTH_HDR}\n"
        root = make_project(_config(f"{server.url}/v1", headers), {"a.agent.yml": AGENT})
        env = {"K": "sk-test", "AUTH_HDR": "Bearer sk-abc\r\nX-Evil: 1"}
        code, out, err = _invoke(
            "run", str(root / "a.agent.yml"), "--question", "hi", "--format", "json", env=env
        )
        assert code == 2, err
        assert "config.yml:8" in err and "AUTH_HDR holds a line break" in err
        assert "sk-abc" not in err + out  # the value is never shown
        assert json.loads(out)["exitCode"] == 2
        assert server.requests == []


def test_an_api_key_with_a_line_break_is_bad_input(make_project: MakeProject) -> None:
    with fake_openai() as server:
        root = make_project(_config(f"{server.url}/v1", "    key_var: K\n"), {"a.agent.yml": AGENT})
        code, _out, err = _invoke(
            "run", str(root / "a.agent.yml"), "--question", "hi", env={"K": "sk-a\nb"}
        )
        assert code == 2, err
        assert "config.yml:6" in err and "API key in the environment variable K" in err
        assert server.requests == []


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ('"http://[::1"', "not a valid URL"),
        ('"http://127.0.0.1:99999/v1"', "not a valid URL"),
        ('"http:///v1"', "names no host"),
        ('"http://exa mple.com/v1"', "a space or a control character"),
    ],
)
def test_an_api_url_that_cannot_be_parsed_is_bad_input(
    make_project: MakeProject, url: str, why: str
) -> None:
    root = make_project(_config(url), {"a.agent.yml": AGENT})
    for argv in (
        ["validate", str(root)],
        ["run", str(root / "a.agent.yml"), "--question", "hi", "--no-history"],
    ):
        code, _out, err = _invoke(*argv, env={"OPENAI_API_KEY": "sk-test"})
        assert code == 2, err
        assert "config.yml:5" in err and why in err


def test_good_values_pass() -> None:
    assert header_problem("X-Api-Key", "Bearer abc\tdef") is None
    assert api_url_problem("http://[::1]:8000/v1") is None
    assert api_url_problem("https://api.example.com") is None


def test_an_undefined_name_in_system_instructions_fails_the_file(
    make_project: MakeProject,
) -> None:
    agent = (
        "model: agent_model\nsystem_instructions: |\n  You work for {{ company }}.\n"
        "  Region: {{ regoin }}. {{ context.notse }} {% for x in range(2) %}{{ x }}{% endfor %}\n"
        "variables:\n  company: {type: string, default: Acme}\n  region: {type: string}\n"
        "context:\n  - {name: notes, type: file, src: notes.md}\n"
    )
    root = make_project(MOCK_CONFIG, {"a.agent.yml": agent, "notes.md": "n"})
    for argv in (["validate", str(root)], ["test", str(root / "a.agent.yml")]):
        code, _out, err = _invoke(*argv)
        assert code == 2, err
        assert "a.agent.yml:4" in err
        assert "uses 'regoin'" in err and "did you mean 'region'" in err
        assert "no context 'notse'; did you mean 'notes'" in err


def test_declared_variables_context_and_jinja_names_are_fine(make_project: MakeProject) -> None:
    agent = (
        "model: agent_model\nsystem_instructions: |\n"
        "  {{ company }} {{ context.notes }} {{ context['notes'] }} {{ range(2) | list }}\n"
        "  {% set local = 1 %}{{ local }} {% for x in [1] %}{{ loop.index }}{{ x }}{% endfor %}\n"
        "variables:\n  company: {type: string, default: Acme}\n"
        "context:\n  - {name: notes, type: file, src: notes.md}\n"
    )
    root = make_project(MOCK_CONFIG, {"a.agent.yml": agent, "notes.md": "n"})
    code, _out, err = _invoke("validate", str(root))
    assert code == 0, err


@pytest.mark.parametrize(
    ("src", "why"),
    [
        ("notes/*.md", "matches no file"),
        ("../outside.md", "must stay inside the project"),
        ("/etc/hostname", "must stay inside the project"),
    ],
)
def test_context_files_are_checked_when_the_agent_loads(
    make_project: MakeProject, src: str, why: str
) -> None:
    agent = (
        "model: agent_model\nsystem_instructions: '{{ context.notes }}'\n"
        f"context:\n  - {{name: notes, type: file, src: '{src}'}}\n"
    )
    root = make_project(MOCK_CONFIG, {"a.agent.yml": agent})
    code, _out, err = _invoke("validate", str(root))
    assert code == 2, err
    assert "a.agent.yml:4" in err and why in err
