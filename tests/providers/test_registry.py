"""One vendor registry and one key resolution for chat and embedding models, and the
package's public API (lazy: no httpx until a client is made)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

import oxyeval.providers as providers
import oxyeval.providers._registry as _registry
from oxyeval.errors import ConfigError
from oxyeval.providers import (
    Completion,
    EmbeddingAPI,
    EmbeddingPool,
    EmbeddingResult,
    ModelAPI,
    ModelPool,
    ModelSpec,
    canonical_vendor,
    default_embedding_model,
    default_key_var,
    embedding_vendor_class,
    embedding_vendors,
    resolve_api_key,
    stopped_at_token_limit,
    vendor_class,
    vendors,
)
from oxyeval.providers.google import GoogleAPI, GoogleEmbeddingAPI
from oxyeval.providers.openai import OpenAIEmbeddingAPI

REPO = Path(__file__).resolve().parents[2]


def test_aliases_resolve_to_one_vendor_for_both_kinds_of_model() -> None:
    assert canonical_vendor("gemini") == "google"
    assert canonical_vendor("openai_compat") == canonical_vendor("open_ai_compat") == "openai"
    assert canonical_vendor("anthropic") == "anthropic"
    assert canonical_vendor("acme") == "acme"  # unknown names pass through
    assert vendor_class("gemini") is vendor_class("google") is GoogleAPI
    assert embedding_vendor_class("gemini") is GoogleEmbeddingAPI
    assert embedding_vendor_class("openai_compat") is OpenAIEmbeddingAPI
    assert {"gemini", "google", "openai_compat", "anthropic", "mock"} <= set(vendors())
    assert "anthropic" not in embedding_vendors()  # no embeddings API
    with pytest.raises(KeyError):
        embedding_vendor_class("anthropic")


def test_vendor_knowledge_lives_in_the_registry() -> None:
    assert default_embedding_model("openai") == "text-embedding-3-small"
    assert default_embedding_model("gemini") == default_embedding_model("google")
    assert default_embedding_model("google") == "gemini-embedding-001"
    assert default_embedding_model("ollama") is None
    assert default_key_var("gemini") == "GEMINI_API_KEY"
    assert default_key_var("anthropic") == "ANTHROPIC_API_KEY"
    assert default_key_var("mock") is None


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (ModelSpec("m", "openai", "x"), "environment variable OPENAI_API_KEY (that the vendor"),
        (ModelSpec("m", "google", "x", key_var="MY_KEY"), "variable MY_KEY (named by key_var)"),
    ],
)
def test_chat_and_embedding_pools_resolve_keys_by_the_same_rules(
    spec: ModelSpec, expected: str
) -> None:
    messages = []
    for pool_class in (ModelPool, EmbeddingPool):
        with pytest.raises(ConfigError) as info:
            pool_class({"m": spec}, environ={}).get("m")
        messages.append(str(info.value))
    assert messages[0] == messages[1] and expected in messages[0]
    env = {"MY_KEY": "k-123", "OPENAI_API_KEY": "k-123"}
    for pool_class in (ModelPool, EmbeddingPool):
        resolved = pool_class({"m": spec}, environ=env).get("m").spec  # type: ignore[attr-defined]
        assert resolved.api_key == "k-123"


class _AcmeChat(ModelAPI):
    vendor: ClassVar[str] = "acme"
    default_api_url: ClassVar[str | None] = "https://acme.example/v1"

    async def generate(self, messages: object, params: object) -> Completion:
        return Completion("hi")


class _AcmeEmbeddings(EmbeddingAPI):
    vendor: ClassVar[str] = "acme"

    async def embed(self, texts: list[str]) -> EmbeddingResult:
        return EmbeddingResult([[1.0] for _ in texts])


def test_plugins_register_in_the_same_registry_with_their_key_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for table in ("_CHAT", "_EMBEDDING", "_KEY_VARS"):  # leave no plugin behind
        monkeypatch.setattr(_registry, table, dict(getattr(_registry, table)))
    providers.register_embedding_vendor("acme", _AcmeEmbeddings)
    spec = ModelSpec("a", "acme", "m")
    # A vendor that needs a key and names no variable for it: say what to set.
    with pytest.raises(ConfigError, match="needs an API key; set key_var"):
        EmbeddingPool({"a": spec}, environ={}).get("a")
    providers.register_vendor("acme", _AcmeChat, key_var="ACME_KEY")
    assert "acme" in vendors() and "acme" in embedding_vendors()
    assert default_key_var("acme") == "ACME_KEY"
    for pool_class in (ModelPool, EmbeddingPool):
        model = pool_class({"a": spec}, environ={"ACME_KEY": "acme-secret"}).get("a")
        assert model.spec.api_key == "acme-secret"  # type: ignore[attr-defined]
    assert resolve_api_key(spec, {"ACME_KEY": "s"}, _AcmeEmbeddings).key_var == "ACME_KEY"


def test_one_truncation_rule_for_completions_agents_and_the_store() -> None:
    from oxyeval.store import Execution
    from oxyeval.workflow import agent

    assert agent.stopped_at_token_limit is stopped_at_token_limit
    for reason in ("length", "max_tokens", "MAX_TOKENS", "max_output_tokens"):
        assert stopped_at_token_limit(reason) and Completion("", finish_reason=reason).truncated
    for reason in (None, "stop", "end_turn", "STOP", "tool_calls"):
        assert not stopped_at_token_limit(reason)
    # The store keeps the finish reason as said and decides nothing of it; its readers
    # (the API's execution JSON, `oxy cases accept`) apply this one rule.
    assert not hasattr(Execution, "truncated")
    from oxyeval.report import cases as case_report
    from oxyeval.suites.cases import baseline

    assert (
        case_report.stopped_at_token_limit
        is baseline.stopped_at_token_limit
        is stopped_at_token_limit
    )


def test_the_public_api_lists_what_it_exports() -> None:
    assert sorted(providers.__all__) == sorted(set(providers.__all__))
    for name in providers.__all__:
        assert getattr(providers, name) is not None
    assert set(providers.__all__) <= set(dir(providers))


_PROBE = """
import json, sys
import oxyeval.store, oxyeval.project
from oxyeval.providers import TRUNCATED_REASONS, ModelSpec, ModelPool, EmbeddingPool
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & {"httpx", "httpcore"})))
"""


def test_the_store_project_and_pools_import_no_http_stack() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


_HELP_PROBE = """
import atexit, json, sys
def report():
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"httpx", "httpcore"})
    sys.__stderr__.write("\\nLOADED=" + json.dumps(heavy) + "\\n")
atexit.register(report)
sys.argv = ["oxy", "--help"]
from oxyeval.cli._app import main
main()
"""


def test_oxy_help_imports_no_http_stack(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", _HELP_PROBE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = next(x for x in proc.stderr.splitlines() if x.startswith("LOADED="))
    assert proc.returncode == 0
    assert json.loads(line.removeprefix("LOADED=")) == []
