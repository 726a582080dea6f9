"""Where a model named by vendor and model id alone goes (an A/B branch's ``provider:``):
config.yml's ``providers:`` entry, then the vendor's standard environment variables in
each SDK's convention, then the public endpoint; and its key, resolved and scrubbed."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from oxyeval.errors import ConfigError
from oxyeval.providers import (
    ChatMessage,
    GenerateParams,
    MissingCredential,
    ModelPool,
    Price,
    ProviderEndpoint,
    vendor_class,
    vendor_endpoint,
    vendor_model_spec,
)
from oxyeval.redact import redact
from tests.fakes import FakeServer, SleepRecorder, fake_anthropic, fake_gemini, fake_openai

# -- the chain


@pytest.mark.parametrize(
    ("vendor", "key_var"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
        ("google", "GEMINI_API_KEY"),
        ("ollama", None),
    ],
)
def test_nothing_set_is_the_public_endpoint_and_the_standard_key(
    vendor: str, key_var: str | None
) -> None:
    assert vendor_endpoint(vendor, None, {}) == (None, key_var)
    # and None really is the vendor class's public endpoint
    public = vendor_class(vendor).default_api_url or ""
    assert public.startswith("https://") or vendor == "ollama"


@pytest.mark.parametrize(
    ("vendor", "environ", "expected"),
    [
        # OpenAI's SDK: the base URL includes /v1; used as it is
        (
            "openai",
            {"OPENAI_BASE_URL": "https://proxy.example/openai/v1"},
            "https://proxy.example/openai/v1",
        ),
        # Anthropic's SDK appends /v1/messages: /v1 added (never twice)
        (
            "anthropic",
            {"ANTHROPIC_BASE_URL": "https://proxy.example/anthropic/"},
            "https://proxy.example/anthropic/v1",
        ),
        (
            "anthropic",
            {"ANTHROPIC_BASE_URL": "https://api.anthropic.com"},
            "https://api.anthropic.com/v1",
        ),
        ("anthropic", {"ANTHROPIC_BASE_URL": "https://h.example/v1"}, "https://h.example/v1"),
        # google-genai appends its API version
        ("gemini", {"GEMINI_BASE_URL": "https://g.example"}, "https://g.example/v1beta"),
        ("gemini", {"GEMINI_BASE_URL": "https://g.example/v1alpha"}, "https://g.example/v1alpha"),
        ("google", {"GOOGLE_GEMINI_BASE_URL": "https://g2.example/"}, "https://g2.example/v1beta"),
        (
            "gemini",
            {
                "GEMINI_BASE_URL": "https://first.example",
                "GOOGLE_GEMINI_BASE_URL": "https://second.example",
            },
            "https://first.example/v1beta",
        ),
    ],
)
def test_base_urls_from_the_environment_follow_each_sdk(
    vendor: str, environ: dict[str, str], expected: str
) -> None:
    api_url, _ = vendor_endpoint(vendor, None, environ)
    assert api_url == expected


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("gpu-box", "http://gpu-box:11434/v1"),  # no scheme: http; no port: Ollama's
        ("gpu-box:8080", "http://gpu-box:8080/v1"),
        ("0.0.0.0", "http://0.0.0.0:11434/v1"),
        ("[::1]", "http://[::1]:11434/v1"),
        ("[::1]:9000", "http://[::1]:9000/v1"),
        ("http://gpu-box:11434", "http://gpu-box:11434/v1"),
        ("https://ollama.example", "https://ollama.example/v1"),  # the scheme's own port
        ("https://ollama.example/", "https://ollama.example/v1"),
        ("gpu-box:8080/ollama", "http://gpu-box:8080/ollama/v1"),
        ("  gpu-box  ", "http://gpu-box:11434/v1"),
    ],
)
def test_ollama_host_forms(host: str, expected: str) -> None:
    assert vendor_endpoint("ollama", None, {"OLLAMA_HOST": host}) == (expected, None)


def test_an_empty_variable_counts_as_unset() -> None:
    assert vendor_endpoint("ollama", None, {"OLLAMA_HOST": "  "}) == (None, None)
    assert vendor_endpoint("openai", None, {"OPENAI_BASE_URL": ""}) == (None, "OPENAI_API_KEY")


def test_config_yml_comes_before_the_environment() -> None:
    environ = {"OPENAI_BASE_URL": "https://env.example/v1", "OPENAI_API_KEY": "x"}
    configured = ProviderEndpoint("openai", "https://config.example/v1", "MY_KEY")
    assert vendor_endpoint("openai", configured, environ) == ("https://config.example/v1", "MY_KEY")
    # each field on its own: a key_var alone keeps the environment's URL
    only_key = ProviderEndpoint("openai", None, "MY_KEY")
    assert vendor_endpoint("openai", only_key, environ) == ("https://env.example/v1", "MY_KEY")
    # an api_url without key_var is a keyless server, like a models: entry's
    only_url = ProviderEndpoint("openai", "http://localhost:8000/v1", None)
    assert vendor_endpoint("openai", only_url, environ) == ("http://localhost:8000/v1", None)
    # a bad URL in the environment does not matter when config.yml gives one
    assert vendor_endpoint("openai", only_url, {"OPENAI_BASE_URL": "nonsense"})[0] is not None


@pytest.mark.parametrize(
    "value",
    [
        "localhost:8000/v1",  # no scheme (OPENAI_BASE_URL is a URL, not a host)
        "http://alice:hunter2-secret@proxy.example:99999/v1",
        "http://alice:hun/ter2-hunter2-secret@proxy.example/v1",  # a raw "/" in the password
        "http://alice:hunter2-secret@proxy example/v1",
    ],
)
def test_a_bad_base_url_names_the_variable_never_its_secret(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        vendor_endpoint("openai", None, {"OPENAI_BASE_URL": value})
    message = str(info.value)
    assert "OPENAI_BASE_URL" in message and "not a usable URL" in message
    assert "hunter2" not in message
    assert "providers.openai.api_url" in message


def test_a_password_in_a_base_url_is_scrubbed_from_then_on() -> None:
    vendor_endpoint(
        "anthropic", None, {"ANTHROPIC_BASE_URL": "https://bob:pw-4567890123@p.example"}
    )
    assert redact("upstream said pw-4567890123") == "upstream said ***"


# -- the spec


def test_vendor_model_spec_resolves_key_price_and_endpoint() -> None:
    spec = vendor_model_spec(
        "gemini",
        "models/gemini-2.5-flash",
        params=GenerateParams(temperature=0.9, max_tokens=100, top_p=0.5),
        endpoints={},
        pricing={},
        environ={"GEMINI_API_KEY": "AIza-test-key-0123", "GEMINI_BASE_URL": "http://g.example"},
        name="Gemini branch",
    )
    assert (spec.name, spec.vendor, spec.model_ref) == (
        "Gemini branch",
        "google",
        "models/gemini-2.5-flash",
    )
    assert spec.api_url == "http://g.example/v1beta"
    assert spec.api_key == "AIza-test-key-0123"
    assert spec.params.temperature == 0.9 and spec.params.top_p == 0.5
    assert spec.price == Price(0.30, 2.50)  # built-in, by the model it names
    assert redact("key=AIza-test-key-0123") == "key=***"  # registered as a secret
    assert "AIza" not in repr(spec)


def test_config_yml_pricing_wins_and_unknown_models_have_no_price() -> None:
    environ = {"OPENAI_API_KEY": "sk-0123456789"}
    cheap = {"gpt-4o": Price(0.1, 0.2)}
    assert vendor_model_spec("openai", "gpt-4o", pricing=cheap, environ=environ).price == Price(
        0.1, 0.2
    )
    assert vendor_model_spec("openai", "my-finetune", environ=environ).price is None


def test_default_name_and_no_key_for_ollama() -> None:
    spec = vendor_model_spec("ollama", "llama3.2", environ={})
    assert spec.name == "ollama:llama3.2" and spec.api_key is None and spec.api_url is None


def test_an_entry_under_either_gemini_spelling_is_used() -> None:
    endpoints = {"google": ProviderEndpoint("google", "http://g.example/v1beta", "G_KEY")}
    spec = vendor_model_spec(
        "gemini", "gemini-2.5-pro", endpoints=endpoints, environ={"G_KEY": "g" * 12}
    )
    assert spec.api_url == "http://g.example/v1beta" and spec.key_var == "G_KEY"


def test_a_missing_standard_key_names_the_variable_and_both_places() -> None:
    with pytest.raises(MissingCredential) as info:
        vendor_model_spec("anthropic", "claude-haiku-4-5", environ={})
    error = info.value
    assert isinstance(error, ConfigError)
    assert error.variable == "ANTHROPIC_API_KEY" and error.where == ()
    assert "environment variable ANTHROPIC_API_KEY" in str(error)
    assert "providers.anthropic.key_var in config.yml" in str(error)


def test_a_missing_configured_key_points_at_config_yml() -> None:
    endpoints = {"gemini": ProviderEndpoint("google", None, "TEAM_GEMINI")}
    with pytest.raises(MissingCredential) as info:
        vendor_model_spec(
            "google", "gemini-2.5-pro", endpoints=endpoints, environ={"GEMINI_API_KEY": "x" * 9}
        )
    assert info.value.variable == "TEAM_GEMINI"
    assert info.value.where == ("providers", "gemini", "key_var")
    assert "providers.gemini.key_var" in str(info.value)


def test_a_key_no_header_can_carry_is_refused_without_showing_it() -> None:
    with pytest.raises(MissingCredential) as info:
        vendor_model_spec("openai", "gpt-4o", environ={"OPENAI_API_KEY": "sk-line1\nline2-9876"})
    assert "OPENAI_API_KEY" in str(info.value) and "line break" in str(info.value)
    assert "9876" not in str(info.value)


def test_an_unknown_vendor_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown vendor 'opneai'"):
        vendor_model_spec("opneai", "gpt-4o", environ={})


# -- the requests reach the server the environment names, in each SDK's form

HI = [ChatMessage("user", "hi")]


def _answer(spec_environ: Mapping[str, str], vendor: str, model: str) -> str:
    async def go() -> str:
        spec = vendor_model_spec(
            vendor, model, environ=spec_environ, params=GenerateParams(max_tokens=50)
        )
        async with ModelPool({}, sleep=SleepRecorder(), environ={}) as pool:
            return (await pool.add(spec).generate(HI)).text

    return asyncio.run(go())


def test_openai_base_url_and_key_from_the_environment() -> None:
    with fake_openai("from openai", api_key="sk-env-key-0001") as server:
        environ = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-env-key-0001"}
        assert _answer(environ, "openai", "gpt-4o-mini") == "from openai"
    assert server.requests[0].route == "/v1/chat/completions"


def test_anthropic_base_url_without_v1_behind_a_proxy_path() -> None:
    with fake_anthropic("from anthropic", api_key="sk-ant-0002", prefix="/proxy/v1") as server:
        environ = {
            "ANTHROPIC_BASE_URL": server.base_url + "/proxy",
            "ANTHROPIC_API_KEY": "sk-ant-0002",
        }
        assert _answer(environ, "anthropic", "claude-haiku-4-5") == "from anthropic"
    assert server.requests[0].route == "/proxy/v1/messages"


def test_gemini_base_url_without_version() -> None:
    with fake_gemini("from gemini", api_key="AIza-0003") as server:
        environ = {"GEMINI_BASE_URL": server.base_url, "GEMINI_API_KEY": "AIza-0003"}
        assert _answer(environ, "gemini", "gemini-2.5-flash") == "from gemini"
    assert server.requests[0].route == "/v1beta/models/gemini-2.5-flash:generateContent"


def test_ollama_host_as_host_and_port() -> None:
    server: FakeServer
    with fake_openai("from ollama") as server:
        environ = {"OLLAMA_HOST": f"127.0.0.1:{server.port}"}
        assert _answer(environ, "ollama", "llama3.2") == "from ollama"
    assert server.requests[0].route == "/v1/chat/completions"
    assert "authorization" not in server.requests[0].headers
