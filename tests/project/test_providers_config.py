"""config.yml's ``providers:`` section: where A/B branches that name a vendor send their
requests. Checked like ``models:`` entries (schema, api_url, the file and line of each
error), loaded into ``Project.providers``, and used by ``Project.provider_model_spec``."""

from __future__ import annotations

from pathlib import Path

import pytest

from oxyeval.errors import ConfigError, Diagnostic, LoadError
from oxyeval.project.config import load_project
from oxyeval.providers import MissingCredential, ProviderEndpoint, configured_endpoint
from oxyeval.redact import redact

from ..conftest import MakeProject

MOCK = """\
models:
  - name: m
    vendor: mock
    outputs: [hi]
"""


def _shown(d: Diagnostic) -> str:
    """A diagnostic's head as printed, with the file's name (not its temporary folder)."""
    return f"{d.severity}: {Path(d.file).name}:{d.line}:{d.column}: {d.key}: {d.message}"


def _errors(make_project: MakeProject, providers: str) -> list[str]:
    root = make_project(MOCK + providers)
    with pytest.raises(LoadError) as info:
        load_project(root)
    return [_shown(d) for d in info.value.diagnostics]


def test_entries_load_into_provider_endpoints(make_project: MakeProject) -> None:
    root = make_project(
        MOCK
        + """\
providers:
  openai: {api_url: "http://localhost:8000/v1", key_var: MY_OAI}
  gemini: {key_var: MY_GEMINI}
  ollama: {api_url: "http://gpu-box:11434/v1"}
"""
    )
    project = load_project(root)
    assert project.providers == {
        "openai": ProviderEndpoint("openai", "http://localhost:8000/v1", "MY_OAI"),
        "gemini": ProviderEndpoint("google", None, "MY_GEMINI"),
        "ollama": ProviderEndpoint("ollama", "http://gpu-box:11434/v1", None),
    }
    # either spelling of Gemini finds the entry
    assert configured_endpoint(project.providers, "google") == project.providers["gemini"]
    assert configured_endpoint(project.providers, "anthropic") is None


def test_no_section_is_no_providers(make_project: MakeProject) -> None:
    assert load_project(make_project(MOCK)).providers == {}


def test_a_misspelt_vendor_is_named_with_its_line_and_a_suggestion(
    make_project: MakeProject,
) -> None:
    (error,) = _errors(make_project, "providers:\n  antropic:\n    key_var: K\n")
    assert error.startswith("error: config.yml:6:3: providers.antropic: unknown key 'antropic'")
    assert "did you mean 'anthropic'?" in error
    assert "allowed here: anthropic, gemini, google, ollama, openai" in error


def test_an_unknown_key_in_an_entry_is_refused(make_project: MakeProject) -> None:
    (error,) = _errors(make_project, "providers:\n  openai:\n    key_vr: K\n")
    assert error.startswith("error: config.yml:7:5: providers.openai.key_vr: unknown key")
    assert "did you mean 'key_var'?" in error


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("ftp://host/v1", "must match ^https?://"),
        ("http://localhost:99999/v1", "api_url is not a valid URL (Port out of range"),
        ("http:///v1", "api_url names no host"),
    ],
)
def test_api_url_is_checked_as_a_models_is(
    make_project: MakeProject, url: str, expected: str
) -> None:
    (error,) = _errors(make_project, f'providers:\n  anthropic:\n    api_url: "{url}"\n')
    assert error.startswith("error: config.yml:7:14: providers.anthropic.api_url: ")
    assert expected in error


def test_gemini_and_google_are_one_vendor(make_project: MakeProject) -> None:
    (error,) = _errors(make_project, "providers:\n  gemini: {key_var: A}\n  google: {}\n")
    assert error.startswith("error: config.yml:7:3: providers.google: ")
    assert "'google' and 'gemini' are the same vendor" in error


def test_a_password_in_api_url_is_a_secret_from_load(make_project: MakeProject) -> None:
    root = make_project(
        MOCK + "providers:\n  openai:\n    api_url: http://alice:pw-0123456789@proxy/v1\n"
    )
    load_project(root)
    assert "pw-0123456789" not in redact("the server said pw-0123456789")


def test_the_key_a_provider_names_is_a_secret_from_load(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_OAI", "sk-provider-key-0123")
    load_project(make_project(MOCK + "providers:\n  openai: {key_var: MY_OAI}\n"))
    assert redact("echo sk-provider-key-0123") == "echo ***"


def test_provider_model_spec_uses_the_section_and_pricing(make_project: MakeProject) -> None:
    root = make_project(
        MOCK
        + """\
pricing:
  my-model: {input: 1.0, output: 2.0}
providers:
  openai: {api_url: "http://localhost:8000/v1", key_var: MY_OAI}
"""
    )
    project = load_project(root)
    spec = project.provider_model_spec(
        "openai", "my-model", environ={"MY_OAI": "sk-xyz-0123456"}, name="GPT branch"
    )
    assert (spec.name, spec.vendor, spec.model_ref) == ("GPT branch", "openai", "my-model")
    assert spec.api_url == "http://localhost:8000/v1"
    assert spec.api_key == "sk-xyz-0123456"
    assert (spec.price.input, spec.price.output) == (1.0, 2.0)  # type: ignore[union-attr]
    # a built-in price when config.yml has none
    other = project.provider_model_spec(
        "anthropic", "claude-haiku-4-5", environ={"ANTHROPIC_API_KEY": "k" * 10}
    )
    assert other.price is not None and other.price.input == 1.0
    assert project.provider_model_spec("ollama", "llama3.2", environ={}).price is None


def test_a_missing_key_named_in_config_yml_points_at_its_line(make_project: MakeProject) -> None:
    root = make_project(MOCK + "providers:\n  openai:\n    key_var: MY_OAI\n")
    project = load_project(root)
    with pytest.raises(LoadError) as info:
        project.provider_model_spec("openai", "gpt-4o", environ={})
    (diagnostic,) = info.value.diagnostics
    assert _shown(diagnostic).startswith("error: config.yml:7:14: providers.openai.key_var: ")
    assert "environment variable MY_OAI" in diagnostic.message
    assert "Export MY_OAI" in diagnostic.message


def test_a_missing_standard_key_says_where_it_could_be_set(make_project: MakeProject) -> None:
    project = load_project(make_project(MOCK))
    with pytest.raises(MissingCredential) as info:
        project.provider_model_spec("anthropic", "claude-haiku-4-5", environ={})
    assert info.value.variable == "ANTHROPIC_API_KEY"
    message = str(info.value)
    assert "Export ANTHROPIC_API_KEY" in message
    assert "providers.anthropic.key_var in config.yml" in message
    assert isinstance(info.value, ConfigError)  # exit 2, like a model's


def test_validate_warnings_only_for_vendors_in_use(make_project: MakeProject) -> None:
    root = make_project(
        MOCK + "providers:\n  openai:\n    key_var: MY_OAI\n  anthropic: {key_var: MY_ANT}\n"
    )
    project = load_project(root)
    assert project.provider_credential_warnings([], environ={}) == []
    (warning,) = project.provider_credential_warnings(["openai", "openai"], environ={})
    assert warning.severity == "warning"
    assert _shown(warning).startswith("warning: config.yml:7:14: providers.openai.key_var: ")
    assert "MY_OAI is not set" in warning.message
    assert "provider 'openai'" in warning.message
    # set: nothing to say; a vendor without an entry: its standard variable, no line
    assert project.provider_credential_warnings(["openai"], environ={"MY_OAI": "x" * 8}) == []
    (gemini,) = project.provider_credential_warnings(["gemini"], environ={})
    assert gemini.line is None and "GEMINI_API_KEY is not set" in gemini.message
    assert project.provider_credential_warnings(["ollama"], environ={}) == []


def test_validate_warns_about_a_bad_base_url_in_the_environment(
    make_project: MakeProject,
) -> None:
    project = load_project(make_project(MOCK))
    (warning,) = project.provider_credential_warnings(
        ["openai"], environ={"OPENAI_BASE_URL": "localhost:8000/v1", "OPENAI_API_KEY": "k" * 9}
    )
    assert "OPENAI_BASE_URL" in warning.message and "not a usable URL" in warning.message
