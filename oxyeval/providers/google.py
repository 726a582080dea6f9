"""Google Gemini API (``generateContent``).

The key goes in the ``x-goog-api-key`` header, never in ``?key=``: URLs end up
in error messages, logs and proxies, headers do not.

Tool calling, on the wire:

* offered tools: ``tools: [{"functionDeclarations": [{name, description?,
  parameters?}]}]``; ``parameters`` is cut down to the OpenAPI subset Gemini
  accepts (see :func:`gemini_schema`) and left out for a tool without arguments;
* the answer: ``functionCall`` parts ``{name, args, id?}``, usually without an id,
  so one is made up (``call_<index>_<name>``);
* structured output (``GenerateParams.response_schema``): ``generationConfig:
  {responseMimeType: "application/json", responseSchema}`` with the schema cut down
  like tool parameters; the JSON text is decoded into ``Completion.structured``;
* history: a ``model`` turn with the calls as ``functionCall`` parts (after its
  text, if any), and the results as ``functionResponse`` parts ``{name, response:
  {"content": text}}`` in a ``user`` turn (the role the current docs use; newer
  models refuse the old ``function`` role), consecutive results in one turn.

Gemini 3 models attach an opaque ``thoughtSignature`` to a ``functionCall`` part
and refuse the next request if the history drops it. :class:`ToolCall` has no
room for it, so :class:`GoogleAPI` remembers it by call id (ids of calls that
carry one include a digest of it, so they stay unique) and puts it back when the
call comes round again in the history it sends.

Embeddings (:class:`GoogleEmbeddingAPI`): ``POST {base}/models/{model}:batchEmbedContents``
with ``{"requests": [{"model": "models/{model}", "content": {"parts": [{"text": ...}]},
"taskType": ..., "outputDimensionality"?: ...}]}``, one request per text; vectors
in ``embeddings[].values``, in request order. ``taskType`` is the ``task_type``
option (default ``SEMANTIC_SIMILARITY``: scoring compares meanings),
``outputDimensionality`` the ``dims`` option.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

from ..errors import ProviderError
from ._base import (
    ChatMessage,
    Completion,
    Deltas,
    EmbeddingAPI,
    EmbeddingResult,
    GenerateParams,
    ModelAPI,
    ModelSpec,
    ToolCall,
    ToolSpec,
    Usage,
    json_object,
    with_extra,
)
from ._http import (
    MAX_EMBEDDING_BYTES,
    count,
    float_vector,
    malformed,
    post_json,
    require_client,
    usage_from,
)
from ._streams import GeminiStream, streamed_answer
from .openai import decode_tool_arguments, synthetic_call_id

if TYPE_CHECKING:
    import httpx

__all__ = [
    "GoogleAPI",
    "GoogleEmbeddingAPI",
    "build_gemini_body",
    "gemini_schema",
    "parse_gemini_response",
    "parse_gemini_tool_calls",
]

#: Schema fields the Gemini API takes (an OpenAPI 3.0 subset); any other key,
#: e.g. ``additionalProperties`` or ``$schema``, is a 400 "Unknown name" error.
_SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "items",
        "minItems",
        "maxItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "anyOf",
        "propertyOrdering",
        "default",
        "example",
    }
)
#: The only formats the Gemini API (not Vertex) accepts; others ("uri", "email"...) fail.
_FORMATS = frozenset({"enum", "date-time", "float", "double", "int32", "int64"})


def gemini_schema(schema: Any) -> Any:
    """A JSON Schema cut down to what Gemini accepts; the input is left untouched.

    Unknown keys are dropped, ``type: [X, "null"]`` becomes ``type: X, nullable:
    true``, ``const`` becomes a one-value ``enum`` and enum values become strings
    (the API declares ``enum`` as a list of strings). Property *names* are kept
    whatever they are; only the schemas under them are cleaned.
    """
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _SCHEMA_KEYS:
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {name: gemini_schema(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = gemini_schema(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [gemini_schema(sub) for sub in value]
        elif key == "format":
            if value in _FORMATS:
                out[key] = value
        elif key == "enum" and isinstance(value, list):
            out[key] = [v if isinstance(v, str) else _enum_text(v) for v in value]
        else:
            out[key] = value
    kind = out.get("type")
    if isinstance(kind, list):
        others = [t for t in kind if t != "null"]
        if len(others) == 1:
            out["type"] = others[0]
        else:
            out.pop("type")  # a union Gemini cannot say; leave the type open
        if "null" in kind:
            out["nullable"] = True
    if "const" in schema and "enum" not in out:
        const = schema["const"]
        out["enum"] = [const if isinstance(const, str) else _enum_text(const)]
    return out


def _model_name(spec: ModelSpec) -> str:
    """``model_ref`` without a ``models/`` prefix: both spellings are accepted, as Google's
    own tools do."""
    return spec.model_ref.removeprefix("models/")


def _model_url(base_url: str, spec: ModelSpec, method: str) -> str:
    return f"{base_url}/models/{quote(_model_name(spec), safe='-._~')}:{method}"


def _key_header(spec: ModelSpec) -> dict[str, str]:
    """The key in ``x-goog-api-key``, never in the URL (URLs end up in messages)."""
    return {"x-goog-api-key": spec.api_key} if spec.api_key else {}


def _enum_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _declaration(spec: ToolSpec) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": spec.name}
    if spec.description:
        declaration["description"] = spec.description
    parameters = gemini_schema(spec.parameters)
    # An object schema with no properties is refused ("properties: should be
    # non-empty for OBJECT type"); a tool without arguments simply has none.
    if isinstance(parameters, dict) and (
        parameters.get("properties") or parameters.get("type", "object") not in ("object", "OBJECT")
    ):
        declaration["parameters"] = parameters
    return declaration


#: What a call id needs to go back on the wire: ``{"id": True}`` when Gemini issued
#: the id itself, ``{"thoughtSignature": ...}`` when the part carried one.
CallMemory = Mapping[str, Mapping[str, Any]]


def _contents(
    messages: list[ChatMessage], memory: CallMemory
) -> tuple[str | None, list[dict[str, Any]]]:
    """System text apart, then turns with Gemini's role names ("model" for the assistant).

    Same-role neighbours are merged into one turn with several parts, because the
    API expects turns to alternate; that also keeps consecutive tool results in
    one turn. A ``tool`` message without a ``tool_call_id``, or whose call cannot
    be named, has nothing to pair with and is sent as user text.
    """
    system = [m.content for m in messages if m.role == "system"]
    names: dict[str, str] = {}  # call id -> function name, for results without a name
    contents: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        role = "model" if m.role == "assistant" else "user"
        parts: list[dict[str, Any]] = []
        if m.role == "assistant" and m.tool_calls:
            if m.content:
                parts.append({"text": m.content})
            for call in m.tool_calls:
                names[call.id] = call.name
                parts.append(_call_part(call, memory.get(call.id, {})))
        elif (
            m.role == "tool" and m.tool_call_id is not None and (m.name or m.tool_call_id in names)
        ):
            response: dict[str, Any] = {
                "name": m.name or names[m.tool_call_id],
                "response": {"content": m.content},
            }
            if memory.get(m.tool_call_id, {}).get("id"):
                response["id"] = m.tool_call_id
            parts.append({"functionResponse": response})
        else:
            parts.append({"text": m.content})
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return ("\n\n".join(system) if system else None), contents


def _call_part(call: ToolCall, memo: Mapping[str, Any]) -> dict[str, Any]:
    function_call: dict[str, Any] = {"name": call.name, "args": call.arguments}
    if memo.get("id"):
        function_call["id"] = call.id
    part: dict[str, Any] = {"functionCall": function_call}
    if memo.get("thoughtSignature"):
        part["thoughtSignature"] = memo["thoughtSignature"]
    return part


def build_gemini_body(
    messages: list[ChatMessage],
    params: GenerateParams,
    memory: CallMemory | None = None,
) -> dict[str, Any]:
    """``memory`` maps call ids to what :func:`parse_gemini_tool_calls` remembered."""
    system, contents = _contents(messages, memory or {})
    body: dict[str, Any] = {"contents": contents}
    if system is not None:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if params.tools:
        body["tools"] = [{"functionDeclarations": [_declaration(t) for t in params.tools]}]
    config = {
        "temperature": params.temperature,
        "maxOutputTokens": params.max_tokens,
        "topP": params.top_p,
        "seed": params.seed,
        "stopSequences": list(params.stop) if params.stop else None,
    }
    config = {k: v for k, v in config.items() if v is not None}
    if params.response_schema is not None:
        schema = gemini_schema(params.response_schema.schema)
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if isinstance(properties, dict) and "propertyOrdering" not in schema:
            # Gemini orders keys alphabetically unless told; reasoning must come first.
            schema["propertyOrdering"] = list(properties)
        config["responseMimeType"] = "application/json"
        config["responseSchema"] = schema
    if config:
        body["generationConfig"] = config
    return with_extra(body, params.extra)


def _usage(data: dict[str, Any]) -> Usage:
    return usage_from(data.get("usageMetadata"), "promptTokenCount", "candidatesTokenCount")


def parse_gemini_response(data: dict[str, Any]) -> tuple[str, str | None, Usage] | str:
    """``(text, finishReason, usage)``, or a description of what was missing.

    A candidate stopped for safety may have no ``content`` at all: that is an
    empty answer with its finish reason, not a malformed body. Thought-summary
    parts (``"thought": true``) are reasoning, not the answer, and are skipped.
    """
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        return "a 'candidates' list with at least one candidate"
    candidate = candidates[0]
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if content is not None and not isinstance(content, dict):
        return "'candidates[0].content' to be an object"
    if parts is not None and not isinstance(parts, list):
        return "'candidates[0].content.parts' to be a list"
    text = "".join(
        part["text"]
        for part in parts or []
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")
    )
    finish = candidate.get("finishReason")
    return text, finish if isinstance(finish, str) else None, _usage(data)


def parse_gemini_tool_calls(
    data: dict[str, Any],
) -> tuple[list[ToolCall], dict[str, dict[str, Any]]] | str:
    """``(calls, memory)`` from a body :func:`parse_gemini_response` accepted.

    ``memory`` holds, per call id, what must go back with the call in later
    history: that the id is Gemini's own, and the part's ``thoughtSignature``.
    """
    content = data["candidates"][0].get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    calls: list[ToolCall] = []
    memory: dict[str, dict[str, Any]] = {}
    for index, part in enumerate(parts or []):
        function_call = part.get("functionCall") if isinstance(part, dict) else None
        if function_call is None:
            continue
        name = function_call.get("name") if isinstance(function_call, dict) else None
        if not isinstance(name, str) or not name:
            return f"'candidates[0].content.parts[{index}].functionCall.name' to be a string"
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        memo: dict[str, Any] = {}
        call_id = function_call.get("id")
        if isinstance(call_id, str) and call_id:
            memo["id"] = True
        else:
            call_id = synthetic_call_id(len(calls), name)
            if signature is not None:  # keep ids unique across turns and conversations
                call_id += "_" + hashlib.sha256(signature.encode()).hexdigest()[:10]
        if signature is not None:
            memo["thoughtSignature"] = signature
        if memo:
            memory[call_id] = memo
        calls.append(ToolCall(call_id, name, decode_tool_arguments(function_call.get("args"))))
    return calls, memory


class GoogleAPI(ModelAPI):
    """``POST {base}/models/{model_ref}:generateContent`` with the key in a header."""

    vendor: ClassVar[str] = "google"
    structured_output: ClassVar[bool] = True
    default_api_path: ClassVar[str] = "/v1beta"
    default_api_url: ClassVar[str | None] = "https://generativelanguage.googleapis.com/v1beta"

    #: Calls remembered for their thought signature or Gemini-issued id; an agent
    #: loop sends each call back on its very next request, so a modest bound is plenty.
    memory_size: ClassVar[int] = 4096

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None) -> None:
        super().__init__(spec, client)
        self._memory: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._headers = _key_header(spec)

    def _remember(self, memory: dict[str, dict[str, Any]]) -> None:
        for call_id, memo in memory.items():
            self._memory[call_id] = memo
            self._memory.move_to_end(call_id)
        while len(self._memory) > self.memory_size:
            self._memory.popitem(last=False)

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        url = _model_url(self.base_url, self.spec, "generateContent")
        body = build_gemini_body(messages, params, self._memory)
        data = await post_json(require_client(self), self.spec, url, body, self._headers)
        return self._completion(data, url, params)

    async def stream(
        self, messages: list[ChatMessage], params: GenerateParams, deltas: Deltas
    ) -> Completion:
        """``:streamGenerateContent?alt=sse``: each event holds the next parts; function
        calls come as whole parts, structured output as JSON text pieces."""
        url = _model_url(self.base_url, self.spec, "streamGenerateContent") + "?alt=sse"
        body = build_gemini_body(messages, params, self._memory)
        events = GeminiStream(self.spec, url, deltas)
        return await streamed_answer(
            require_client(self),
            url,
            body,
            self._headers,
            events,
            lambda data: self._completion(data, url, params),
        )

    def _completion(self, data: dict[str, Any], url: str, params: GenerateParams) -> Completion:
        feedback = data.get("promptFeedback")
        block = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if block and not data.get("candidates"):
            why = feedback.get("blockReasonMessage") if isinstance(feedback, dict) else None
            detail = f": {why}" if isinstance(why, str) and why else ""
            raise ProviderError(
                f"model '{self.spec.name}' ({self.spec.vendor}): the prompt was blocked by "
                f"Gemini (blockReason {block}){detail}; no answer was generated and retrying "
                f"the same prompt will not help.",
                model=self.spec.name,
            )
        parsed = parse_gemini_response(data)
        if isinstance(parsed, str):
            raise malformed(self.spec, url, parsed, data)
        found = parse_gemini_tool_calls(data)
        if isinstance(found, str):
            raise malformed(self.spec, url, found, data)
        calls, memory = found
        self._remember(memory)
        text, finish, usage = parsed
        structured = json_object(text) if params.response_schema is not None else None
        return Completion(
            text=text, usage=usage, finish_reason=finish, tool_calls=calls, structured=structured
        )


#: Gemini's ``TaskType`` values (EmbedContentRequest.taskType).
TASK_TYPES = (
    "TASK_TYPE_UNSPECIFIED",
    "RETRIEVAL_QUERY",
    "RETRIEVAL_DOCUMENT",
    "SEMANTIC_SIMILARITY",
    "CLASSIFICATION",
    "CLUSTERING",
    "QUESTION_ANSWERING",
    "FACT_VERIFICATION",
    "CODE_RETRIEVAL_QUERY",
)


class GoogleEmbeddingAPI(EmbeddingAPI):
    """Gemini ``batchEmbedContents`` with the key in a header."""

    vendor: ClassVar[str] = "google"
    default_api_path: ClassVar[str] = "/v1beta"
    default_api_url: ClassVar[str | None] = "https://generativelanguage.googleapis.com/v1beta"
    max_batch: ClassVar[int | None] = 100

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None) -> None:
        super().__init__(spec, client)
        self._headers = _key_header(spec)
        # What every text's request carries besides its text, built once. Gemini tunes
        # the vectors to the task; scoring is semantic similarity unless told otherwise.
        self._fields: dict[str, Any] = {"model": f"models/{_model_name(spec)}"}
        task = spec.options.get("task_type", "SEMANTIC_SIMILARITY")
        if task:
            self._fields["taskType"] = task
        if self.dims:
            self._fields["outputDimensionality"] = self.dims

    async def embed(self, texts: list[str]) -> EmbeddingResult:
        url = _model_url(self.base_url, self.spec, "batchEmbedContents")
        requests = [{**self._fields, "content": {"parts": [{"text": text}]}} for text in texts]
        data = await post_json(
            require_client(self),
            self.spec,
            url,
            {"requests": requests},
            self._headers,
            max_bytes=MAX_EMBEDDING_BYTES,
        )
        items = data.get("embeddings")
        if not isinstance(items, list):
            raise malformed(self.spec, url, "an 'embeddings' list", data)
        if len(items) != len(texts):
            raise malformed(self.spec, url, f"{len(texts)} embeddings, got {len(items)}")
        vectors = []
        for position, item in enumerate(items):
            vector = float_vector(item.get("values")) if isinstance(item, dict) else None
            if vector is None:
                raise malformed(
                    self.spec, url, f"'embeddings[{position}].values' to be a list of numbers"
                )
            vectors.append(vector)
        usage = data.get("usageMetadata")
        tokens = count(usage.get("promptTokenCount")) if isinstance(usage, dict) else None
        return EmbeddingResult(vectors, tokens)
