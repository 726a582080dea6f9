"""The models of one run, sharing one HTTP client and one limiter per endpoint.

Creating an ``httpx.AsyncClient`` per call costs a TLS handshake and a pool each
time; one client per run keeps connections alive across every agent run, judge
call and embedding batch, which is most of the speed budget. :class:`ModelPool`
(chat models) and :class:`~oxyeval.providers.EmbeddingPool` are the same machine
(:class:`VendorPool`) with a different registry lookup and call wrapper: names
resolve to vendor classes through the one registry, keys by the one
:func:`~oxyeval.providers.resolve_api_key`, the client comes from the one factory
(:func:`~oxyeval.providers._http.new_client`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from ..errors import ConfigError, OxyError
from ._http import new_client
from ._limiter import Limiters, current_limiters
from ._model import Model, RetryPolicy
from ._registry import resolve_api_key, vendor_class, vendors

if TYPE_CHECKING:
    import httpx

    from ._base import GenerateParams, ModelAPI, ModelSpec, VendorAPI

__all__ = ["ModelPool", "VendorPool"]


class _Caller(Protocol):
    """What a pool hands out: a :class:`Model` or an ``Embedder``."""

    def flush_notes(self) -> None: ...


C = TypeVar("C", bound=_Caller)


class VendorPool(Generic[C]):
    """Names -> callers (models, embedders) that share one client and the limiters.

    Pass the run's existing client to share its connections too (a client passed in
    is never closed here), and the run's ``limiters``, so that every kind of call to
    one server waits in one adaptive concurrency limit.
    """

    #: How config.yml calls the things in this pool, for messages.
    noun: ClassVar[str] = "model"
    #: What a name resolves to: built as ``caller(api, retry=, sleep=, limiter=)``.
    caller: ClassVar[Callable[..., Any]]

    def __init__(
        self,
        specs: Mapping[str, ModelSpec],
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        client: httpx.AsyncClient | None = None,
        environ: Mapping[str, str] | None = None,
        locate: Callable[[str, str, tuple[str, ...]], OxyError] | None = None,
        limiters: Limiters | None = None,
    ) -> None:
        self.specs = dict(specs)
        #: One adaptive concurrency limit per endpoint; pass it to the run's other pools.
        self.limiters = limiters or current_limiters() or Limiters()
        #: (name, message, key in the model's entry) -> an error pointing into config.yml
        self._locate = locate
        self._retry = retry
        self._sleep = sleep
        self._client = client
        self._own_client = client is None
        self._environ = environ
        self._callers: dict[str, C] = {}

    # -- what a kind of pool says

    def _api_class(self, spec: ModelSpec) -> type[VendorAPI]:
        """The vendor class for ``spec``; ConfigError when there is none."""
        raise NotImplementedError

    def _unknown(self, name: str) -> str:
        known = ", ".join(self.specs) or "none"
        return f"unknown {self.noun} '{name}'; {self.noun}s in config.yml: {known}"

    # -- shared

    def _http_client(self) -> httpx.AsyncClient:
        if self._client is None:
            remote = [s for s in self.specs.values() if s.vendor != "mock"]
            self._client = new_client(keepalive=sum(s.concurrency for s in remote) or 10)
        return self._client

    @property
    def client(self) -> httpx.AsyncClient:
        """The shared HTTP client (created on first use), for other clients of this run."""
        return self._http_client()

    def check(self, names: Sequence[str]) -> None:
        """Resolve vendors and keys for ``names`` up front, so a missing key fails
        before any call."""
        for name in names:
            self.get(name)

    def get(self, name: str) -> C:
        caller = self._callers.get(name)
        if caller is not None:
            return caller
        spec = self.specs.get(name)
        if spec is None:
            raise ConfigError(self._unknown(name))
        cls = self._api_class(spec)
        try:
            spec = resolve_api_key(spec, self._environ, cls)
        except ConfigError as exc:
            if self._locate is None:
                raise
            raise self._locate(name, str(exc), getattr(exc, "where", ())) from None
        api = cls(spec, self._http_client() if cls.uses_http else None)
        limiter = self.limiters.get(spec.name, spec.concurrency, api.base_url, spec.model_ref)
        caller = self.caller(api, retry=self._retry, sleep=self._sleep, limiter=limiter)
        self._callers[name] = caller
        return caller

    async def aclose(self) -> None:
        """Close the client (if ours) and report retries not yet noted: the run is over."""
        for caller in self._callers.values():
            caller.flush_notes()
        if self._client is not None and self._own_client:
            await self._client.aclose()
        self._client = None


class ModelPool(VendorPool[Model]):
    """Resolves chat model names to :class:`Model` objects that share one client."""

    caller = Model

    def _api_class(self, spec: ModelSpec) -> type[ModelAPI]:
        try:
            return vendor_class(spec.vendor)
        except KeyError:
            raise ConfigError(
                f"model '{spec.name}': unknown vendor '{spec.vendor}'; vendors: "
                f"{', '.join(vendors())}"
            ) from None

    def variant(self, base: str, params: GenerateParams, *, name: str | None = None) -> Model:
        """Model ``base`` with ``params`` laid over its own settings, sharing its endpoint
        limiter and this pool's client (see :meth:`Model.variant`)."""
        return self.get(base).variant(params, name=name)

    def add(self, spec: ModelSpec) -> Model:
        """The model for a spec config.yml does not list (see
        :func:`~oxyeval.providers.model_spec`): its key resolved now, the pool's client,
        the endpoint's limiter. Adding the same spec again returns the same model; another
        spec under a name already used is a ConfigError."""
        known = self.specs.get(spec.name)
        if known is not None and known != spec:
            raise ConfigError(
                f"model '{spec.name}' is already defined (in config.yml or added before) "
                "with other settings; give this one another name"
            )
        self.specs[spec.name] = spec
        return self.get(spec.name)

    def max_tokens(self, name: str, params: GenerateParams | None = None) -> int | None:
        """The answer-length limit a call of model ``name`` with ``params`` goes out with
        (None: the server's own), as :meth:`Model.max_tokens` says, without resolving
        the model's key: a warning about a cut-off answer must not fail on a credential.
        """
        spec = self.specs.get(name)
        if spec is None:
            return params.max_tokens if params is not None else None
        merged = spec.params.merged(params)
        try:
            return self._api_class(spec).effective_max_tokens(
                merged, spec.model_ref, local=spec.local
            )
        except ConfigError:  # an unknown vendor never sent anything
            return merged.max_tokens

    async def __aenter__(self) -> ModelPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
