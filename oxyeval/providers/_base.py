"""The provider contract: one small class per vendor and kind of call.

A chat class (:class:`ModelAPI`) has one async ``generate``, an embedding class
(:class:`EmbeddingAPI`) one async ``embed``. Either makes exactly one HTTP attempt
per call and raises :class:`~oxyeval.errors.ProviderError` with
``retryable``/``retry_after`` set; retries, backoff, concurrency limits and timing
live once in :class:`oxyeval.providers.Model` and :class:`oxyeval.providers.Embedder`
so every vendor behaves the same way.

This module imports nothing heavy (no httpx): the store and the reports read
:data:`TRUNCATED_REASONS` from here without loading an HTTP stack.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ..errors import ProviderError

if TYPE_CHECKING:
    import httpx

    from .pricing import Price

__all__ = [
    "DEFAULT_OUTPUT_TOKENS",
    "LOCAL_OUTPUT_TOKENS",
    "TRUNCATED_REASONS",
    "AttemptTimeout",
    "ChatMessage",
    "Completion",
    "Deltas",
    "EmbeddingAPI",
    "EmbeddingResult",
    "GenerateParams",
    "ModelAPI",
    "ModelSpec",
    "ResponseSchema",
    "ToolCall",
    "ToolSpec",
    "ToolStep",
    "Usage",
    "VendorAPI",
    "json_object",
    "stopped_at_token_limit",
    "thinking_model",
    "with_extra",
]

#: Finish reasons that mean "stopped at the token limit", lower-cased: OpenAI's
#: ``length``, Anthropic's ``max_tokens``, Gemini's ``MAX_TOKENS`` and the Responses
#: API's ``max_output_tokens``. The one list: completions, agents and the store use it.
TRUNCATED_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})


#: The answer-length cap of a model whose call and config.yml set none (see
#: :meth:`ModelAPI.effective_max_tokens`): long enough for any answer a test judges, short
#: enough that a small local model at 65 tokens/s answers in about half a minute.
DEFAULT_OUTPUT_TOKENS = 2048
#: The same for a local server (llama.cpp, Ollama, vLLM, LM Studio, TGI on this machine or
#: network): its context is often 4,096 tokens, and a judge's prompt holds two answers
#: plus its own reply, so two answers of this size and a verdict fit where two of
#: ``DEFAULT_OUTPUT_TOKENS`` would overflow it; a small model writing to its cap takes a
#: quarter of a minute, not half.
LOCAL_OUTPUT_TOKENS = 1024

#: Reasoning models, which get no default cap: their hidden thinking counts against it (an
#: empty reply at a small cap), and OpenAI's o-series and gpt-5 refuse the max_tokens field.
_THINKING_MODEL = re.compile(r"(?i)^(?:models/)?(?:o\d|gpt-5|gemini-(?:2\.5|[3-9]))")


def thinking_model(model_ref: str) -> bool:
    """Whether ``model_ref`` names a reasoning model (no default output cap)."""
    return bool(_THINKING_MODEL.match(model_ref or ""))


class AttemptTimeout(ProviderError):
    """An attempt that ran out of time, its message already saying which settings move
    the deadline, so the retry layer giving up does not advise a second time."""


def stopped_at_token_limit(finish_reason: str | None) -> bool:
    """Whether a model stopped because it ran out of tokens (any vendor's spelling), so
    its text may be cut off mid-sentence."""
    return (finish_reason or "").lower() in TRUNCATED_REASONS


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
    #: Images shown with a user turn, after its text: each an ``https://`` URL or a
    #: ``data:<mime>;base64,...`` URI. Only vendor classes with ``vision`` send them.
    images: tuple[str, ...] = ()


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
    #: The wire form, for classes that know several (:attr:`ModelAPI.structured_forms`):
    #: OpenAI-compatible servers differ (see :mod:`oxyeval.judge.structured`).
    form: str = "json_schema"


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
    #: Vendor-specific request fields sent as given (``{"top_k": 40}``, Gemini's
    #: ``{"generationConfig": {"topK": 40}}``): merged into the request body, an object
    #: value one level deep into the object the class built. Part of the cache key.
    extra: Mapping[str, Any] | None = None

    def merged(self, override: GenerateParams | None) -> GenerateParams:
        """Fields set in ``override`` win; used to layer call params over model defaults.
        ``extra`` is merged key by key, the override's keys winning."""
        if override is None:
            return self
        values = {k: v for k, v in override.__dict__.items() if v is not None}
        if self.extra and override.extra:
            values["extra"] = {**self.extra, **override.extra}
        return GenerateParams(**{**self.__dict__, **values})


#: Request fields the call's own settings write (the model, the messages, streaming, the
#: sampling settings): extra fields given per branch or model may not replace them, or a
#: report would credit an answer to settings that were never sent.
OWNED_FIELDS = frozenset(
    {
        "model", "messages", "stream", "stream_options", "n", "temperature", "top_p",
        "max_tokens", "max_completion_tokens", "system", "contents", "systemInstruction",
        "tools", "tool_choice", "response_format",
    }
)  # fmt: skip
#: The same inside Gemini's ``generationConfig``, which ``extra`` merges into.
OWNED_GENERATION_FIELDS = frozenset(
    {
        "temperature",
        "topP",
        "maxOutputTokens",
        "candidateCount",
        "responseMimeType",
        "responseSchema",
    }
)
#: Bounds on extra fields, so a stored or sent body stays small and plain.
MAX_EXTRA_BYTES = 65_536
MAX_EXTRA_DEPTH = 16


def extra_problem(extra: Mapping[str, Any]) -> str | None:
    """What is wrong with provider-specific fields (``other_params``, ``extra``): one of
    :data:`OWNED_FIELDS`, a value that is not plain finite JSON, too deep or too big."""
    import json

    owned = sorted(k for k in extra if k in OWNED_FIELDS)
    config = extra.get("generationConfig")
    if isinstance(config, Mapping):
        owned += [f"generationConfig.{k}" for k in sorted(config) if k in OWNED_GENERATION_FIELDS]
    if owned:
        return (
            f"{', '.join(owned)} cannot be set here: the branch's own settings (model, "
            "temperature, max_tokens, top_p) and the prompt decide them"
        )

    def depth(value: Any, level: int = 1) -> int:
        if level > MAX_EXTRA_DEPTH:
            return level
        items = (
            value.values()
            if isinstance(value, Mapping)
            else value
            if isinstance(value, list)
            else ()
        )
        return max((depth(v, level + 1) for v in items), default=level)

    if depth(extra) > MAX_EXTRA_DEPTH:
        return f"is nested deeper than {MAX_EXTRA_DEPTH} levels"
    try:
        text = json.dumps(extra, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"must be plain JSON with finite numbers ({exc})"
    if len(text.encode("utf-8")) > MAX_EXTRA_BYTES:
        return f"is larger than {MAX_EXTRA_BYTES // 1024} KB"
    return None


def with_extra(body: dict[str, Any], extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """``body`` with :attr:`GenerateParams.extra` merged in (objects one level deep), so
    an extra ``generationConfig`` adds to the one built from the sampling settings
    instead of replacing it."""
    for key, value in (extra or {}).items():
        current = body.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            body[key] = {**current, **value}
        else:
            body[key] = value
    return body


@dataclass(frozen=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


@dataclass(frozen=True)
class ToolStep:
    """One tool call an agent made while answering, with what came back: ``output`` when
    the tool ran, ``error`` (the text the model was shown) when it did not."""

    call: ToolCall
    output: str | None = None
    error: str | None = None

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def arguments(self) -> dict[str, Any]:
        return self.call.arguments

    @property
    def reply(self) -> str:
        """What the model is shown as the tool's result."""
        return (self.output if self.error is None else self.error) or ""


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
    #: Served from an answer cache (see :class:`~oxyeval.providers.ResponseCache`): no
    #: request was made, ``latency`` is 0 and ``attempts`` 0.
    cached: bool = False
    #: Seconds from the start of the successful attempt to the first content (text, a
    #: tool call's arguments) of a streamed answer; None when the answer was not
    #: streamed or came from a cache.
    time_to_first_token: float | None = None
    #: USD, from ``usage`` and the model's price (see :mod:`oxyeval.providers.pricing`);
    #: None when the price or a token count is unknown, never a made-up 0. A cached
    #: answer keeps the cost its tokens had (``cached`` says nothing was spent again).
    cost: float | None = None
    #: Every tool call an agent made for this answer, in order, with its result (the
    #: agent loop fills it; a single model call leaves it empty).
    tool_trace: list[ToolStep] = field(default_factory=list)
    #: Answered by a vendor's batch API (``--batch``): ``cost`` is at batch prices.
    batched: bool = False

    @property
    def truncated(self) -> bool:
        """Stopped at the token limit (see :data:`TRUNCATED_REASONS`)."""
        return stopped_at_token_limit(self.finish_reason)

    @property
    def tokens_per_second(self) -> float | None:
        """Output tokens over the generation time after the first token (``latency`` minus
        ``time_to_first_token``); None when either is unknown, that time is not positive,
        or nothing measurable was generated after the first token: a one-token answer, or
        the rest arriving within a millisecond of it (in one piece: a server or proxy that
        buffers), where dividing by that gap would give a meaningless rate."""
        tokens, first = self.usage.output_tokens, self.time_to_first_token
        if tokens is None or tokens < 2 or first is None or self.latency - first < 0.001:
            return None
        return tokens / (self.latency - first)


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a structured reply holds (a ```json fence allowed), or None.

    Never raises: a malformed or cut-off reply is the caller's cue to read the text.
    """
    from ..inputs import JSONProblem, loads

    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0] if body.rstrip().endswith("```") else body
    try:
        value = loads(body, "a structured answer")
    except JSONProblem:
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
    #: Stream every call, so a call that times out or is cancelled closes its stream and
    #: the server stops generating for it (set for local endpoints: see
    #: :mod:`oxyeval.providers.local`).
    stream: bool = False
    #: The endpoint is a local server (:mod:`oxyeval.providers.local`): the smaller default
    #: answer cap, :data:`LOCAL_OUTPUT_TOKENS`.
    local: bool = False
    params: GenerateParams = field(default_factory=GenerateParams)
    options: dict[str, Any] = field(default_factory=dict)  # vendor-specific (mock outputs...)
    api_key: str | None = None  # resolved from key_var at run time; never printed
    #: Headers whose value is read from an environment variable (header -> variable)
    #: when the model is called (``headers: {X: {env_var: NAME}}``), like the key.
    header_vars: dict[str, str] = field(default_factory=dict)
    #: USD per million tokens (config.yml ``pricing:``); None: the built-in table by
    #: ``model_ref`` (:func:`oxyeval.providers.pricing.price_for`).
    price: Price | None = None

    def __repr__(self) -> str:  # keep the key out of reprs and tracebacks
        return (
            f"ModelSpec(name={self.name!r}, vendor={self.vendor!r}, model_ref={self.model_ref!r})"
        )


def positive_option(spec: ModelSpec, key: str) -> int | None:
    """``spec.options[key]`` as a positive int, None when unset; ConfigError otherwise.

    config.yml's schema already bounds these; this catches specs built in code.
    """
    value = spec.options.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        from ..errors import ConfigError

        raise ConfigError(
            f"model '{spec.name}' ({spec.vendor}): option {key} must be a positive integer, "
            f"got {value!r}"
        )
    return value


class VendorAPI:
    """What every vendor class has, chat or embeddings: its spec, the run's HTTP client
    and where it sends requests."""

    vendor: ClassVar[str]
    #: Whether the vendor needs an API key when ``key_var`` is not set.
    requires_key: ClassVar[bool] = True
    #: False for offline classes (``mock``): they get no HTTP client.
    uses_http: ClassVar[bool] = True
    default_api_url: ClassVar[str | None] = None
    #: Path appended to an ``api_url`` given without one (``https://api.anthropic.com``,
    #: as the vendors' SDKs spell it), so both spellings reach the same endpoint.
    default_api_path: ClassVar[str] = ""

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None) -> None:
        self.spec = spec
        self.client = client

    @cached_property
    def base_url(self) -> str:
        """``api_url`` (or the vendor's default) without a trailing slash; computed once,
        since the spec is frozen."""
        url = (self.spec.api_url or self.default_api_url or "").rstrip("/")
        if self.spec.api_url and self.default_api_path:
            from urllib.parse import urlsplit

            if urlsplit(url).path in ("", "/"):
                url += self.default_api_path
        return url


class ModelAPI(VendorAPI, ABC):
    """Base of every chat vendor class."""

    #: Whether the class implements ``GenerateParams.response_schema`` (judges use it
    #: with ``judge.structured: auto``); a class that does not simply ignores the field.
    structured_output: ClassVar[bool] = False
    #: Whether the class sends a message's ``images`` (a vision model's input).
    vision: ClassVar[bool] = False
    #: The structured forms the class can send (:attr:`ResponseSchema.form`), in the order
    #: a judge tries them on an endpoint it does not know yet.
    structured_forms: ClassVar[tuple[str, ...]] = ("json_schema",)
    #: The ``max_tokens`` the class sends when neither the call nor config.yml sets one
    #: (Anthropic's API refuses a request without it); None: the field is left out and
    #: the server decides how long an answer may be.
    default_max_tokens: ClassVar[int | None] = None

    @classmethod
    def effective_max_tokens(
        cls, params: GenerateParams, model_ref: str = "", *, local: bool = False
    ) -> int | None:
        """The answer-length limit a call with ``params`` (already merged over the
        model's own) goes out with; None: the server's own limit.

        The call's or config.yml's ``max_tokens``, else the class's own default, else
        :data:`DEFAULT_OUTPUT_TOKENS` (:data:`LOCAL_OUTPUT_TOKENS` for a ``local`` endpoint)
        for every model that talks to a server, except
        reasoning models (:func:`thinking_model`), whose hidden thinking counts against
        the cap. Without a cap a small local model writes until its context is full,
        minutes per call, past every timeout. The one rule, so that advice about an
        answer cut at the token limit names the limit that cut it.
        """
        if params.max_tokens is not None:
            return params.max_tokens
        if cls.default_max_tokens is not None:
            return cls.default_max_tokens
        if not cls.uses_http or thinking_model(model_ref):
            return None
        return LOCAL_OUTPUT_TOKENS if local else DEFAULT_OUTPUT_TOKENS

    @abstractmethod
    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        """Make one attempt; raise ProviderError (retryable or not) on failure."""

    async def stream(
        self, messages: list[ChatMessage], params: GenerateParams, deltas: Deltas
    ) -> Completion:
        """One streamed attempt: report each piece of content to ``deltas`` as it arrives,
        return the whole answer at the end.

        This default (for a class that cannot stream, a registered plugin vendor say)
        makes the ordinary request and reports its whole text at once when it arrives,
        so the time to first token it gives is the time to the whole answer.
        """
        completion = await self.generate(messages, params)
        deltas.text(completion.text)
        if completion.tool_calls or completion.structured is not None:
            deltas.content()
        return completion


class Deltas:
    """What one streamed attempt reports as it goes: when its first content arrived
    (text, or a tool call's arguments), and each piece of text, for ``on_text``.

    :class:`~oxyeval.providers.Model` reads :attr:`first` to time the first token and to
    refuse a retry once content has arrived (a consumer may have shown it already).
    """

    __slots__ = ("first", "on_text")

    def __init__(self, on_text: Callable[[str], object] | None = None) -> None:
        self.first: float | None = None  # time.perf_counter() of the first content
        self.on_text = on_text

    def content(self) -> None:
        if self.first is None:
            self.first = time.perf_counter()

    def text(self, piece: str) -> None:
        if piece:
            self.content()
            if self.on_text is not None:
                self.on_text(piece)


@dataclass(frozen=True)
class EmbeddingResult:
    """One vector per input text, in input order, and the tokens billed when reported."""

    vectors: list[list[float]]
    input_tokens: int | None = None


class EmbeddingAPI(VendorAPI, ABC):
    """Base of every embedding vendor class: one HTTP attempt per :meth:`embed`.

    The ``options`` of its spec (config.yml's ``embeddings:`` entry) that every class
    honours in its own wire format: ``dims`` (vector size) and, for Gemini,
    ``task_type``; ``batch_size`` is applied by :class:`~oxyeval.providers.Embedder`.
    """

    #: Texts per request unless ``batch_size`` says otherwise.
    default_batch: ClassVar[int] = 96
    #: Most texts the API takes in one request (Gemini 100, OpenAI 2048); None: no limit
    #: known. A larger ``batch_size`` is cut to it rather than refused by the server.
    max_batch: ClassVar[int | None] = None

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None) -> None:
        super().__init__(spec, client)
        #: The vector size asked for (option ``dims``); None: the model's own.
        self.dims: int | None = positive_option(spec, "dims")

    @abstractmethod
    async def embed(self, texts: list[str]) -> EmbeddingResult:
        """Make one attempt for all ``texts``; raise ProviderError (retryable or not)."""
