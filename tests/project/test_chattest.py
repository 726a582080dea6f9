"""chattest prompt and model files: loading, defaults, wire formats from URLs, keys, and
every problem named with its file, line and key."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from oxyeval.errors import LoadError
from oxyeval.project import (
    DEFAULT_SUCCESS_THRESHOLD,
    ChatTestSuite,
    detect_format,
    load_chattest,
    load_json,
    load_project,
)
from oxyeval.providers import ChatMessage, ModelPool
from oxyeval.redact import redact
from tests.fakes import FakeServer, openai_chat_response

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chattest"
SECRET = "sk-chattest-very-secret-0042"


def write(folder: Path, name: str, value: Any) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value if isinstance(value, str) else json.dumps(value, indent=2))
    return path


def prompt(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "key": "p1",
        "prompt": "Say hi",
        "models": ["m1"],
        "tests": ["says hi"],
        "testModel": "judge",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def folder(tmp_path: Path, models: list[dict[str, Any]], prompts: list[dict[str, Any]]) -> Path:
    for m in models:
        write(tmp_path, f"models/{m['key']}.json", m)
    for i, p in enumerate(prompts):
        write(tmp_path, f"prompts/{i}.json", p)
    return tmp_path


MOCKS = [
    {"key": "m1", "url": "mock:", "outputs": ["hi"]},
    {"key": "judge", "url": "mock:", "outputs": ["Verdict: PASS"]},
]


def load_error(*args: Any, **kwargs: Any) -> str:
    with pytest.raises(LoadError) as info:
        load_chattest(*args, **kwargs)
    return str(info.value)


# --------------------------------------------------------------------------- the example


def test_the_example_loads_as_documented() -> None:
    suite = load_chattest([EXAMPLE])
    (capitals,) = suite.prompts
    assert capitals.key == "capital-of-france"
    assert capitals.models == ("geo-steady", "geo-shaky")
    assert len(capitals.tests) == 3
    assert (capitals.run_volume, capitals.test_model, capitals.success_threshold) == (
        5,
        "capitals-judge",
        0.8,
    )
    assert set(suite.models) == {"geo-steady", "geo-shaky", "capitals-judge"}
    assert {m.format for m in suite.models.values()} == {"mock"}
    assert suite.warnings == []


def test_the_example_runs_offline_and_the_judge_script_grades_lyon_as_fail() -> None:
    suite = load_chattest([EXAMPLE])
    capitals = suite.prompts[0]

    async def go() -> tuple[list[str], str, str]:
        async with ModelPool(suite.specs(), environ={}) as pool:
            answers = [
                (await pool.get("geo-shaky").generate([ChatMessage("user", capitals.prompt)])).text
                for _ in range(capitals.run_volume)
            ]
            judge = pool.get(capitals.test_model)
            bad = await judge.generate([ChatMessage("user", f"Answer: {answers[2]}")])
            good = await judge.generate([ChatMessage("user", f"Answer: {answers[0]}")])
            return answers, bad.text, good.text

    answers, bad, good = asyncio.run(go())
    assert sum("Lyon" in a for a in answers) == 2  # 3/5 = 0.6 < 0.8: geo-shaky fails
    assert bad.endswith("Verdict: FAIL")
    assert good.endswith("Verdict: PASS")


def test_a_single_prompt_file_brings_the_models_beside_its_folder() -> None:
    suite = load_chattest([EXAMPLE / "prompts" / "capitals.json"])
    assert [p.key for p in suite.prompts] == ["capital-of-france"]
    assert "capitals-judge" in suite.models


def test_the_prompts_folder_itself_may_be_given() -> None:
    suite = load_chattest([EXAMPLE / "prompts"])
    assert len(suite.prompts) == 1 and len(suite.models) == 3


# --------------------------------------------------------------------------- defaults


def test_defaults_run_volume_1_and_threshold_0(tmp_path: Path) -> None:
    suite = load_chattest([folder(tmp_path, MOCKS, [prompt()])])
    (p,) = suite.prompts
    assert p.run_volume == 1
    assert p.success_threshold == DEFAULT_SUCCESS_THRESHOLD == 0.0


def test_run_volume_is_capped_and_threshold_is_a_share(tmp_path: Path) -> None:
    root = folder(tmp_path, MOCKS, [prompt(runVolume=1001, successThreshold=80)])
    message = load_error([root])
    assert "0.json:11:16: runVolume: must be at most 1000, got 1001" in message
    assert "0.json:12:23: successThreshold: must be at most 1, got 80" in message


def test_test_model_defaults_to_the_projects_judge(tmp_path: Path) -> None:
    (tmp_path / "config.yml").write_text(
        "models:\n  - {name: local, vendor: mock, outputs: [x]}\n"
        "  - {name: grader, vendor: mock, outputs: ['Verdict: PASS']}\n"
        "defaults: {judge_model: grader}\n"
    )
    project = load_project(tmp_path)
    root = folder(tmp_path / "ct", MOCKS[:1], [prompt(testModel=None, models=["m1", "local"])])
    suite = load_chattest([root], project=project)
    assert suite.prompts[0].test_model == "grader"
    assert suite.models["grader"].format == "config"
    assert suite.models["local"].spec.vendor == "mock"
    # Without a project there is no judge to default to.
    assert "missing required key 'testModel'" in load_error([root])


def test_a_model_file_without_url_uses_the_config_model_of_its_name(tmp_path: Path) -> None:
    (tmp_path / "config.yml").write_text("models:\n  - {name: m1, vendor: mock, outputs: [cfg]}\n")
    project = load_project(tmp_path)
    root = folder(tmp_path / "ct", [{"key": "m1"}, MOCKS[1]], [prompt()])
    suite = load_chattest([root], project=project)
    assert suite.models["m1"].format == "config"
    assert suite.models["m1"].spec.options["outputs"] == ["cfg"]
    message = load_error([root])  # no project: the url is needed
    assert "missing required key 'url'" in message


# --------------------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://api.openai.com/v1/chat/completions",
            ("openai-chat", "https://api.openai.com/v1", None),
        ),
        (
            "http://localhost:8000/v1/chat/completions/",
            ("openai-chat", "http://localhost:8000/v1", None),
        ),
        (
            "https://api.openai.com/v1/completions",
            ("openai-completions", "https://api.openai.com/v1", None),
        ),
        (
            "https://api.anthropic.com/v1/messages",
            ("anthropic", "https://api.anthropic.com/v1", None),
        ),
        (
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent",
            ("gemini", "https://generativelanguage.googleapis.com/v1beta", "gemini-2.0-flash"),
        ),
        ("http://localhost:8000/generate", None),
    ],
)
def test_the_wire_format_comes_from_the_url_path(url: str, expected: Any) -> None:
    assert detect_format(url) == expected


def test_specs_per_format_vendor_api_url_and_model_id(tmp_path: Path) -> None:
    models = [
        {"key": "gpt", "url": "https://api.openai.com/v1/chat/completions"},
        {
            "key": "inst",
            "url": "https://api.openai.com/v1/completions",
            "model": "gpt-3.5-turbo-instruct",
        },
        {"key": "claude", "url": "https://api.anthropic.com/v1/messages"},
        {"key": "gem", "url": "https://g.example/v1beta/models/gemini-x:generateContent"},
        {"key": "local", "url": "http://127.0.0.1:9/v1", "format": "openai-chat"},
        MOCKS[1],
    ]
    names = [m["key"] for m in models[:-1]]
    suite = load_chattest([folder(tmp_path, models, [prompt(models=names)])])
    got = {
        k: (m.format, m.spec.vendor, m.spec.api_url, m.spec.model_ref)
        for k, m in suite.models.items()
    }
    assert got["gpt"] == ("openai-chat", "openai", "https://api.openai.com/v1", "gpt")
    assert got["inst"] == (
        "openai-completions",
        "openai-completions",
        "https://api.openai.com/v1",
        "gpt-3.5-turbo-instruct",
    )
    assert got["claude"] == ("anthropic", "anthropic", "https://api.anthropic.com/v1", "claude")
    assert got["gem"] == ("gemini", "google", "https://g.example/v1beta", "gemini-x")
    assert got["local"] == ("openai-chat", "openai", "http://127.0.0.1:9/v1", "local")


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ({"url": "http://host/generate"}, "cannot tell the API from the url's path"),
        ({"url": "ftp://host/v1/chat/completions"}, "url must start with http:// or https://"),
        ({"url": "http://host:99999/v1/chat/completions"}, "url is not a valid URL"),
        ({"url": "http://host/v1/messages", "format": "openai-chat"}, "does not match the url"),
        ({"url": "http://h/v1/chat/completions", "format": "gpt"}, "is not one of"),
        ({"url": "http://h/v1/chat/completions", "outputs": ["x"]}, "only for mock models"),
        ({"url": "mock:"}, "a mock model needs outputs or rules"),
        ({"url": "mock:", "rules": [{"match": "(", "output": "x"}]}, "invalid regular expression"),
        (
            {
                "url": "http://h/v1/chat/completions",
                "apiKeyHeader": "Bad Header",
                "apiKey": "abcdefgh",
            },
            "not a valid HTTP header name",
        ),
    ],
)
def test_bad_models_are_named_at_their_file_line_and_key(
    tmp_path: Path, model: dict[str, Any], expected: str
) -> None:
    root = folder(tmp_path, [{"key": "m1", **model}, MOCKS[1]], [prompt()])
    message = load_error([root])
    assert expected in message
    assert "m1.json:" in message


def test_problems_of_every_file_are_reported_together_with_did_you_mean(tmp_path: Path) -> None:
    models = [{"key": "gpt-4o", "url": "mock:", "outputs": ["x"]}, MOCKS[1], {**MOCKS[1]}]
    write(tmp_path, "models/judge2.json", MOCKS[1])  # the same key in a second file
    root = folder(tmp_path, models[:2], [prompt(models=["gpt-4", "gpt-4o"], testModel="jduge")])
    message = load_error([root])
    assert "unknown model 'gpt-4'; did you mean 'gpt-4o'?" in message
    assert "unknown test model 'jduge'; did you mean 'judge'?" in message
    assert "model key 'judge' is also defined in" in message
    assert "prompts/0.json:5:5: models[0]: unknown model" in message  # the bad entry
    assert "3 error(s)" in message


def test_duplicate_prompt_keys_and_unknown_fields(tmp_path: Path) -> None:
    root = folder(tmp_path, MOCKS, [prompt(), prompt(), prompt(key="p3", runVolme=3)])
    message = load_error([root])
    assert "prompt key 'p1' is also defined in" in message
    assert "unknown key 'runVolme'; did you mean 'runVolume'?" in message


# --------------------------------------------------------------------------- JSON


def test_json_with_tabs_and_exponents_is_read_as_json_with_positions(tmp_path: Path) -> None:
    path = write(tmp_path, "a.json", '{\n\t"key": "x",\n\t"n": 1e1,\n\t"s": "a\\/b"\n}\n')
    doc = load_json(path)
    assert doc.data == {"key": "x", "n": 10.0, "s": "a/b"}
    assert doc.locate(("n",)).line == 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"key": "x",\n "prompt": }', "a.json:2:12: not valid JSON"),
        ('{"key": "x",\n "key": "y"}', "a.json:2:2: key: duplicate key 'key'"),
        ('{"n": NaN}', "not a number JSON allows"),
    ],
)
def test_bad_json_is_named_at_its_line(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, "a.json", text)
    with pytest.raises(LoadError) as info:
        load_json(path)
    assert expected in str(info.value)


# --------------------------------------------------------------------------- keys


def key_model(**fields: Any) -> dict[str, Any]:
    return {"key": "m1", "url": "http://127.0.0.1:9/v1/chat/completions", **fields}


def test_an_env_key_goes_in_authorization_as_bearer_and_is_redacted(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        [key_model(apiKey="${CT_KEY}", apiKeyHeader="Authorization"), MOCKS[1]],
        [prompt()],
    )
    suite = load_chattest([root], environ={"CT_KEY": SECRET})
    model = suite.models["m1"]
    assert model.spec.headers == {"Authorization": f"Bearer {SECRET}"}
    assert model.spec.api_key is None
    assert SECRET not in repr(model) + repr(model.spec) + repr(suite)
    assert redact(f"key={SECRET}") == "key=***"
    assert suite.warnings == []


def test_another_header_gets_the_bare_key_and_no_header_uses_the_formats_own(
    tmp_path: Path,
) -> None:
    models = [
        key_model(apiKey="${CT_KEY}", apiKeyHeader="api-key"),
        {"key": "claude", "url": "http://127.0.0.1:9/v1/messages", "apiKey": "${CT_KEY}"},
        MOCKS[1],
    ]
    suite = load_chattest(
        [folder(tmp_path, models, [prompt(models=["m1", "claude"])])], environ={"CT_KEY": SECRET}
    )
    assert suite.models["m1"].spec.headers == {"api-key": SECRET}
    assert suite.models["claude"].spec.headers == {}
    assert suite.models["claude"].spec.api_key == SECRET  # sent as x-api-key by the vendor


def test_an_unset_variable_is_an_error_naming_it(tmp_path: Path) -> None:
    root = folder(tmp_path, [key_model(apiKey="${CT_MISSING}"), MOCKS[1]], [prompt()])
    message = load_error([root], environ={})
    assert "m1.json:4:13: apiKey:" in message
    assert "CT_MISSING is not set" in message


def test_a_literal_key_is_allowed_warned_about_and_never_printed(tmp_path: Path) -> None:
    literal = "sk-literal-in-a-file-7777"
    root = folder(tmp_path, [key_model(apiKey=literal), MOCKS[1]], [prompt()])
    suite = load_chattest([root], environ={})
    (warning,) = suite.warnings
    assert warning.severity == "warning" and warning.key == "apiKey"
    assert "${ENV_VAR}" in warning.message
    assert literal not in warning.format()  # the quoted source line is scrubbed
    assert "***" in warning.format()


def test_a_literal_key_is_scrubbed_from_a_json_syntax_error_on_its_line(tmp_path: Path) -> None:
    literal = "sk-broken-file-key-31337"
    write(tmp_path, "models/m1.json", f'{{"key": "m1", "apiKey": "{literal}" "url": "x"}}')
    write(tmp_path, "prompts/p.json", prompt())
    message = load_error([tmp_path])
    assert "not valid JSON" in message
    assert literal not in message


def test_the_key_reaches_the_server_in_the_chosen_header(tmp_path: Path) -> None:
    with FakeServer(lambda r: (200, openai_chat_response("hi"))) as server:
        url = f"{server.url}/chat/completions"
        models = [key_model(url=url, apiKey="${CT_KEY}", apiKeyHeader="X-Custom-Key"), MOCKS[1]]
        suite = load_chattest([folder(tmp_path, models, [prompt()])], environ={"CT_KEY": SECRET})

        async def go() -> str:
            async with ModelPool(suite.specs(), environ={}) as pool:
                return (await pool.get("m1").generate([ChatMessage("user", "hi")])).text

        text = asyncio.run(go())
        (request,) = server.requests
    assert text == "hi"
    assert request.route == "/v1/chat/completions"
    assert request.headers["x-custom-key"] == SECRET
    assert "authorization" not in request.headers
    assert request.body["model"] == "m1"


def test_the_suite_type_is_public() -> None:
    assert isinstance(load_chattest([EXAMPLE]), ChatTestSuite)


def test_a_broken_model_file_is_not_also_called_unknown_by_its_prompt(tmp_path: Path) -> None:
    root = folder(tmp_path, [{"key": "m1", "url": "http://host/generate"}, MOCKS[1]], [prompt()])
    message = load_error([root])
    assert "cannot tell the API" in message
    assert "unknown model" not in message
    assert "1 error(s)" in message
