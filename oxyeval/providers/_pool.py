"""The models of one run, sharing one HTTP client.

Creating an ``httpx.AsyncClient`` per call costs a TLS handshake and a pool each
time; one client per run keeps connections alive across every agent run and
judge call, which is most of the speed budget.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import ConfigError, OxyError
from ..redact import register_secret
from ._limiter import Limiters
from ._model import Model, RetryPolicy
from ._registry import vendor_class

if TYPE_CHECKING:
    import httpx

    from ._base import ModelSpec

__all__ = ["ModelPool", "resolve_api_key"]

# Where a vendor's key is looked for when config.yml names no key_var.
DEFAULT_KEY_VARS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GEMINI_API_KEY",
    "gemini": "GEMINI_API_KEY",
}


def resolve_api_key(spec: ModelSpec, environ: Mapping[str, str] | None = None) -> ModelSpec:
    """Return ``spec`` with its API key filled from the environment, or raise ConfigError.

    A model pointed at a custom ``api_url`` without ``key_var`` (vLLM, llama.cpp,
    LM Studio, Ollama) needs no key; a hosted vendor without one is an error that
    names the variable to set.
    """
    if spec.api_key:  # a literal key in config.yml (oxy's ollama form), already registered
        return spec
    env = os.environ if environ is None else environ
    cls = vendor_class(spec.vendor)
    var = spec.key_var
    if var is None:
        if spec.api_url or not cls.requires_key:
            return spec
        var = DEFAULT_KEY_VARS.get(spec.vendor)
        if var is None:
            return spec
    key = env.get(var, "")
    if not key.strip():
        how = "named by key_var" if spec.key_var else "that the vendor uses by default"
        raise ConfigError(
            f"model '{spec.name}' ({spec.vendor}) needs an API key in the environment "
            f"variable {var} ({how}), which is not set. Export {var}, or set key_var in "
            f"config.yml to the variable that holds the key."
        )
    key = key.strip()
    register_secret(key)
    return replace(spec, api_key=key, key_var=var)


class ModelPool:
    """Resolves model names to :class:`Model` objects that share one client."""

    def __init__(
        self,
        specs: Mapping[str, ModelSpec],
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        client: httpx.AsyncClient | None = None,
        environ: Mapping[str, str] | None = None,
        locate: Callable[[str, str], OxyError] | None = None,
        limiters: Limiters | None = None,
    ) -> None:
        self.specs = dict(specs)
        #: One adaptive concurrency limit per endpoint; pass it to the run's EmbeddingPool too.
        self.limiters = limiters or Limiters()
        self._locate = locate  # (model name, message) -> an error pointing into config.yml
        self._retry = retry
        self._sleep = sleep
        self._client = client
        self._own_client = client is None
        self._environ = environ
        self._models: dict[str, Model] = {}

    def _http_client(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            remote = [s for s in self.specs.values() if s.vendor != "mock"]
            total = sum(s.concurrency for s in remote) or 10
            # Loading the CA bundle costs ~50 ms; a pool that only talks plain http to
            # local servers (vLLM, Ollama, the benchmarks) never needs it. Such a pool also
            # does not follow redirects, so it can never end up on an unverified https URL.
            tls = any(
                (vendor_class(s.vendor).default_api_url or "").startswith("https")
                if not s.api_url
                else s.api_url.startswith("https")
                for s in remote
            )
            self._client = httpx.AsyncClient(
                # No cap on connections: the endpoints' adaptive limiters are the one gate,
                # and a request queued here for a connection would spend its timeout waiting.
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=total),
                timeout=httpx.Timeout(120.0, connect=10.0),
                follow_redirects=tls,
                verify=tls,
            )
        return self._client

    @property
    def client(self) -> httpx.AsyncClient:
        """The shared HTTP client (created on first use), for other clients of this run."""
        return self._http_client()

    def check(self, names: list[str]) -> None:
        """Resolve keys for ``names`` up front so a missing key fails before any call."""
        for name in names:
            self.get(name)

    def get(self, name: str) -> Model:
        model = self._models.get(name)
        if model is not None:
            return model
        spec = self.specs.get(name)
        if spec is None:
            known = ", ".join(self.specs) or "none"
            raise ConfigError(f"unknown model '{name}'; models in config.yml: {known}")
        try:
            spec = resolve_api_key(spec, self._environ)
        except ConfigError as exc:
            if self._locate is None:
                raise
            raise self._locate(name, str(exc)) from None
        cls = vendor_class(spec.vendor)
        client = None if spec.vendor == "mock" else self._http_client()
        api = cls(spec, client)
        limiter = self.limiters.get(spec.name, spec.concurrency, api.base_url, spec.model_ref)
        model = Model(api, retry=self._retry, sleep=self._sleep, limiter=limiter)
        self._models[name] = model
        return model

    async def aclose(self) -> None:
        """Close the client (if ours) and report retries not yet noted: the run is over."""
        for model in self._models.values():
            model.flush_notes()
        if self._client is not None and self._own_client:
            await self._client.aclose()
        self._client = None

    async def __aenter__(self) -> ModelPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
