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
    "ResponseSchema",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "json_object",
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
class ResponseSchema:
    """Ask for a JSON object of this schema instead of free text (structured output).

    Each vendor class maps it to its own constrained form (OpenAI ``response_format``,
    Anthropic forced tool use, Gemini ``responseSchema``); the object comes back in
    :attr:`Completion.structured`. Keep ``schema`` to the subset every vendor accepts:
    objects whose properties are all required, strings, enums, no ``$ref``.
    """

    name: str  # ^[A-Za-z0-9_-]{1,64}$: OpenAI and Anthropic both require it
    schema: dict[str, Any]
    description: str = ""


@dataclass(frozen=True)
class GenerateParams:
    """Sampling parameters; ``None`` means "leave it to the server's default"."""

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    tools: tuple[ToolSpec, ...] | None = None  # offered to the model; None/empty = no tools
    response_schema: ResponseSchema | None = None  # structured output; vendors may ignore it

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
    #: The JSON object asked for with ``GenerateParams.response_schema``, when the reply
    #: held one; None when none was asked for or the reply was not a JSON object.
    structured: dict[str, Any] | None = None

    @property
    def truncated(self) -> bool:
        """Stopped at the token limit (OpenAI ``length``, Anthropic ``max_tokens``, Gemini
        ``MAX_TOKENS``), so the text may be cut off mid-sentence."""
        return (self.finish_reason or "").lower() in ("length", "max_tokens", "max_output_tokens")


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a structured reply holds (a ```json fence allowed), or None.

    Never raises: a malformed or cut-off reply is the caller's cue to read the text.
    """
    import json

    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0] if body.rstrip().endswith("```") else body
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


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
    #: Whether the class implements ``GenerateParams.response_schema`` (judges use it
    #: with ``judge.structured: auto``); a class that does not simply ignores the field.
    structured_output: ClassVar[bool] = False
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
