"""The provider contract: one small class per vendor, one async ``generate``.

A vendor class makes exactly one HTTP attempt per ``generate`` call and raises
:class:`~oxyeval.errors.ProviderError` with ``retryable``/``retry_after`` set;
retries, backoff, concurrency limits and timing live once in
:class:`oxyeval.providers.Model` so every vendor behaves the same way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ChatMessage",
    "Completion",
    "GenerateParams",
    "ModelAPI",
    "ModelSpec",
    "ToolCall",
    "ToolSpec",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call: name, description, JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for. ``id`` pairs it with its result (vendor-issued or ours)."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChatMessage:
    """One turn. Tool use is vendor-neutral here; each vendor class maps it to its wire form:

    * an assistant turn that called tools has ``tool_calls`` (and maybe some ``content``);
    * a tool result is ``role="tool"`` with ``tool_call_id`` and ``name`` of the call it answers.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class GenerateParams:
    """Sampling parameters; ``None`` means "leave it to the server's default"."""

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    tools: tuple[ToolSpec, ...] | None = None  # offered to the model; None/empty = no tools

    def merged(self, override: GenerateParams | None) -> GenerateParams:
        """Fields set in ``override`` win; used to layer call params over model defaults."""
        if override is None:
            return self
        values = {k: v for k, v in override.__dict__.items() if v is not None}
        return GenerateParams(**{**self.__dict__, **values})


@dataclass(frozen=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


@dataclass
class Completion:
    text: str
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0  # seconds, wall time of the successful attempt
    finish_reason: str | None = None  # raw, as the vendor spelled it
    model: str = ""  # the config.yml model name that produced it
    attempts: int = 1
    tool_calls: list[ToolCall] = field(default_factory=list)  # empty: a final answer


@dataclass(frozen=True)
class ModelSpec:
    """One ``models:`` entry of config.yml, already validated by its schema."""

    name: str
    vendor: str
    model_ref: str = ""
    key_var: str | None = None
    api_url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = 120.0  # seconds per attempt
    max_retries: int = 4  # attempts after the first
    concurrency: int = 16  # requests in flight for this model
    params: GenerateParams = field(default_factory=GenerateParams)
    options: dict[str, Any] = field(default_factory=dict)  # vendor-specific (mock outputs...)
    api_key: str | None = None  # resolved from key_var at run time; never printed

    def __repr__(self) -> str:  # keep the key out of reprs and tracebacks
        return (
            f"ModelSpec(name={self.name!r}, vendor={self.vendor!r}, model_ref={self.model_ref!r})"
        )


class ModelAPI(ABC):
    """Base of every vendor class."""

    vendor: ClassVar[str]
    #: Whether the vendor needs an API key when ``key_var`` is not set.
    requires_key: ClassVar[bool] = True
    default_api_url: ClassVar[str | None] = None

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None) -> None:
        self.spec = spec
        self.client = client

    #: Path appended to an ``api_url`` given without one (``https://api.anthropic.com``,
    #: as the vendors' SDKs spell it), so both spellings reach the same endpoint.
    default_api_path: ClassVar[str] = ""

    @property
    def base_url(self) -> str:
        url = (self.spec.api_url or self.default_api_url or "").rstrip("/")
        if self.spec.api_url and self.default_api_path:
            from urllib.parse import urlsplit

            if urlsplit(url).path in ("", "/"):
                url += self.default_api_path
        return url

    @abstractmethod
    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        """Make one attempt; raise ProviderError (retryable or not) on failure."""
