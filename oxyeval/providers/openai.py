"""OpenAI Chat Completions, and every server that copies its wire format.

vLLM, llama.cpp, LM Studio and Ollama all speak ``/chat/completions``, so this
one class covers them; that is also why the key header is optional here.

Tool calling, on the wire:

* offered tools: ``tools: [{"type": "function", "function": {name, description?,
  parameters}}]``, and no ``tools`` key at all when none are offered;
* the answer: ``choices[0].message.tool_calls: [{id, type: "function", function:
  {name, arguments}}]`` where ``arguments`` is a JSON *string* the model wrote;
* structured output (``GenerateParams.response_schema``): ``response_format: {type:
  "json_schema", json_schema: {name, strict: true, schema}}``, or the form a server
  takes instead (:func:`response_format`); the JSON comes back as the message content
  and is decoded into ``Completion.structured``;
* history: an assistant turn that called tools is ``{"role": "assistant",
  "content": text-or-"", "tool_calls": [...]}`` and each result is
  ``{"role": "tool", "tool_call_id": id, "content": text}``.

Embeddings (:class:`OpenAIEmbeddingAPI`): ``POST {base}/embeddings`` with ``{"model",
"input": [texts], "dimensions"?}`` (``dimensions`` only with the ``dims`` option);
vectors in ``data[].embedding``, put in order by ``data[].index``; tokens in
``usage.prompt_tokens``. llama.cpp's server started without pooling answers one
vector *per token* (``embedding`` is a list of lists); those are mean-pooled into one
vector per text, with one note on stderr (see :func:`pool_token_vectors`).
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ProviderError
from ..inputs import JSONProblem, loads
from ..redact import clip
from ._base import (
    ChatMessage,
    Completion,
    Deltas,
    EmbeddingAPI,
    EmbeddingResult,
    GenerateParams,
    ModelAPI,
    ModelSpec,
    ResponseSchema,
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
    shown_url,
    usage_from,
)
from ._streams import OpenAIStream, streamed_answer

if TYPE_CHECKING:
    import httpx

__all__ = [
    "OpenAIAPI",
    "OpenAIEmbeddingAPI",
    "bearer_headers",
    "build_openai_body",
    "decode_tool_arguments",
    "describe_value",
    "encode_tool_arguments",
    "parse_openai_response",
    "parse_openai_tool_calls",
    "pool_token_vectors",
    "response_format",
    "synthetic_call_id",
]

log = logging.getLogger("oxyeval.providers")


def bearer_headers(spec: ModelSpec) -> dict[str, str]:
    """``Authorization: Bearer`` when a key is configured; local servers take none."""
    return {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}


def synthetic_call_id(index: int, name: str) -> str:
    """An id for a call the server sent without one: stable for the same answer."""
    return f"call_{index}_{name}"


def decode_tool_arguments(value: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict, never raising.

    Models do write broken JSON now and then; the call is kept with the text
    under ``"_raw"`` so the agent loop can tell the model what went wrong instead
    of the whole run failing. An empty or missing value means "no arguments".
    """
    if isinstance(value, dict):
        return dict(value)
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:  # bounded and strict: 100,000 levels of [ are broken JSON too, not a crash
            decoded = loads(value, "a tool call's arguments")
        except JSONProblem:
            return {"_raw": value}
        return decoded if isinstance(decoded, dict) else {"_raw": value}
    return {"_raw": json.dumps(value, ensure_ascii=False, default=str)}


def encode_tool_arguments(arguments: dict[str, Any]) -> str:
    """The JSON string Chat Completions expects for ``function.arguments``."""
    return json.dumps(arguments, ensure_ascii=False, default=str)


def _tool(spec: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": spec.name}
    if spec.description:
        function["description"] = spec.description
    function["parameters"] = spec.parameters
    return {"type": "function", "function": function}


def _message(m: ChatMessage) -> dict[str, Any]:
    if m.role == "assistant" and m.tool_calls:
        return {
            "role": "assistant",
            # "", not null: the API answers a calls-only turn with null, but llama.cpp's
            # server (llama-cpp-python) rejects null with HTTP 500; OpenAI, vLLM and
            # Ollama all accept "".
            "content": m.content or "",
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": encode_tool_arguments(call.arguments),
                    },
                }
                for call in m.tool_calls
            ],
        }
    if m.role == "tool" and m.tool_call_id is not None:
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    if m.images:  # the API's content parts: the text, then each image
        parts: list[dict[str, Any]] = [{"type": "text", "text": m.content}]
        parts += [{"type": "image_url", "image_url": {"url": url}} for url in m.images]
        return {"role": m.role, "content": parts}
    return {"role": m.role, "content": m.content}


def response_format(wanted: ResponseSchema) -> dict[str, Any]:
    """``response_format`` in the form ``wanted.form`` names: ``json_schema`` (OpenAI,
    vLLM, LM Studio, Ollama, llama-server), ``json_object`` with ``schema``
    (llama-cpp-python's server, which constrains the answer by a grammar from it), or
    ``json_value``: ``json_object`` with the schema as ``value`` (Hugging Face TGI)."""
    if wanted.form == "json_object":
        return {"type": "json_object", "schema": wanted.schema}
    if wanted.form == "json_value":
        return {"type": "json_object", "value": wanted.schema}
    json_schema: dict[str, Any] = {"name": wanted.name, "strict": True}
    if wanted.description:
        json_schema["description"] = wanted.description
    json_schema["schema"] = wanted.schema
    return {"type": "json_schema", "json_schema": json_schema}


def build_openai_body(
    model_ref: str, messages: list[ChatMessage], params: GenerateParams
) -> dict[str, Any]:
    """Request body with only the params that are set, so servers keep their own defaults.

    Local servers reject or mis-handle fields they do not know; sending ``null``
    for an unset option is not the same as leaving it out.
    """
    body: dict[str, Any] = {
        "model": model_ref,
        "messages": [_message(m) for m in messages],
    }
    if params.tools:
        body["tools"] = [_tool(t) for t in params.tools]
    if params.response_schema is not None:
        body["response_format"] = response_format(params.response_schema)
    optional = {
        "temperature": params.temperature,
        "max_tokens": params.max_tokens,
        "top_p": params.top_p,
        "seed": params.seed,
        "stop": list(params.stop) if params.stop else None,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    return with_extra(body, params.extra)


def _content_text(content: Any) -> str | None:
    """Message content as text: a string, null (tool calls only), or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif (
                isinstance(part, dict)
                and isinstance(part.get("text"), str)
                and part.get("type", "text") in ("text", "output_text")
            ):
                texts.append(part["text"])
        return "".join(texts)
    return None


def parse_openai_response(data: dict[str, Any]) -> tuple[str, str | None, Usage] | str:
    """``(text, finish_reason, usage)``, or a description of what was missing."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "a 'choices' list with at least one choice"
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        return "'choices[0].message' to be an object"
    text = _content_text(message.get("content"))
    if text is None:
        return "'choices[0].message.content' to be a string, null or a list of parts"
    finish = choice.get("finish_reason")
    usage = usage_from(data.get("usage"), "prompt_tokens", "completion_tokens")
    return text, finish if isinstance(finish, str) else None, usage


def parse_openai_tool_calls(data: dict[str, Any]) -> list[ToolCall] | str:
    """The calls in ``choices[0].message.tool_calls``, or a description of what was wrong.

    Call this on a body :func:`parse_openai_response` accepted. Entries of another
    ``type`` than ``function`` are skipped: only function tools are ever offered.
    A call without an id (some local servers) gets one from :func:`synthetic_call_id`.
    """
    message = data["choices"][0]["message"]
    raw = message.get("tool_calls")
    if raw is None:
        return []
    if not isinstance(raw, list):
        return "'choices[0].message.tool_calls' to be a list"
    calls: list[ToolCall] = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or item.get("type", "function") != "function":
            continue
        function = item.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            return f"'choices[0].message.tool_calls[{index}].function.name' to be a string"
        call_id = item.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = synthetic_call_id(index, name)
        calls.append(ToolCall(call_id, name, decode_tool_arguments(function.get("arguments"))))
    return calls


class OpenAIAPI(ModelAPI):
    """``POST {base}/chat/completions`` with a Bearer key when one is configured."""

    vendor: ClassVar[str] = "openai"
    structured_output: ClassVar[bool] = True
    vision: ClassVar[bool] = True
    structured_forms: ClassVar[tuple[str, ...]] = ("json_schema", "json_object", "json_value")
    default_api_url: ClassVar[str | None] = "https://api.openai.com/v1"

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None) -> None:
        super().__init__(spec, client)
        self._headers = bearer_headers(spec)

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        url = f"{self.base_url}/chat/completions"
        body = build_openai_body(self.spec.model_ref, messages, params)
        data = await post_json(require_client(self), self.spec, url, body, self._headers)
        return self._completion(data, url, params)

    async def stream(
        self, messages: list[ChatMessage], params: GenerateParams, deltas: Deltas
    ) -> Completion:
        """``stream: true`` with ``stream_options.include_usage``, so the last chunk
        carries the token counts; tool calls and structured output stream too."""
        url = f"{self.base_url}/chat/completions"
        body = build_openai_body(self.spec.model_ref, messages, params)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        events = OpenAIStream(self.spec, url, deltas)
        return await streamed_answer(
            require_client(self),
            url,
            body,
            self._headers,
            events,
            lambda data: self._completion(data, url, params),
        )

    def _completion(self, data: dict[str, Any], url: str, params: GenerateParams) -> Completion:
        parsed = parse_openai_response(data)
        if isinstance(parsed, str):
            raise malformed(self.spec, url, parsed, data)
        calls = parse_openai_tool_calls(data)
        if isinstance(calls, str):
            raise malformed(self.spec, url, calls, data)
        text, finish, usage = parsed
        structured = json_object(text) if params.response_schema is not None else None
        return Completion(
            text=text, usage=usage, finish_reason=finish, tool_calls=calls, structured=structured
        )


# --------------------------------------------------------------------------- embeddings


def pool_token_vectors(value: Any) -> list[float] | None:
    """The mean of per-token vectors (a list of equally long number lists), or None.

    llama.cpp's ``llama-server`` without ``--pooling``, and llama-cpp-python's server
    (whose settings have no pooling option) for models without a pooling type, return
    one vector per token instead of one per text. Their mean is what a ``mean``-pooled
    server would have answered, and what sentence-embedding models are trained for;
    the cosine of two such means is a fair similarity.
    """
    if not isinstance(value, list) or not value:
        return None
    rows = [float_vector(row) for row in value]
    if any(row is None for row in rows) or len({len(row) for row in rows if row}) != 1:
        return None
    size = len(rows)
    return [math.fsum(column) / size for column in zip(*rows, strict=True)]  # type: ignore[misc]


def describe_value(value: Any, limit: int = 120) -> str:
    """What a value looks like (type, shape, start), for errors about unexpected data.

    A 4096-dimension vector printed whole would bury the message; its shape and
    first numbers say what went wrong.
    """
    if isinstance(value, list):
        if value and all(isinstance(row, list) for row in value):
            widths = sorted({len(row) for row in value})
            shown = ", ".join(str(w) for w in widths[:3]) + ("..." if len(widths) > 3 else "")
            inner = {type(x).__name__ for row in value for x in row[:50]}
            shape = f"a list of {len(value)} lists of {shown} items ({', '.join(sorted(inner)) or 'empty'})"
        else:
            kinds = sorted({type(x).__name__ for x in value[:50]})
            shape = f"a list of {len(value)} items ({', '.join(kinds) or 'empty'})"
    elif isinstance(value, dict):
        shape = f"an object with keys {', '.join(list(map(str, value))[:8]) or 'none'}"
    else:
        shape = "null" if value is None else f"a {type(value).__name__}"
    return f"{shape}: {clip(json.dumps(value, default=str), limit)}"


_NO_EMBEDDINGS = re.compile(
    r"embedding\s*=\s*true|embeddings? (are |is )?not (enabled|supported)|--embeddings?\b", re.I
)


def _not_serving_embeddings(spec: ModelSpec, error: ProviderError) -> ProviderError | None:
    """A clear error when the server is up but not serving embeddings, else None.

    llama-cpp-python answers HTTP 500 "Llama model must be created with
    embedding=True to call this method"; llama.cpp's own server says "This server
    does not support embeddings. Start it with `--embeddings`". Retrying either is
    pointless, and the fix is on the server's command line.
    """
    if error.status is None or not _NO_EMBEDDINGS.search(str(error)):
        return None
    return ProviderError(
        f"{error}. The server at {shown_url(spec.api_url or 'api_url')} is not serving embeddings: "
        "start a server for the embedding model with embeddings on (llama-cpp-python: "
        "python -m llama_cpp.server --model MODEL.gguf --embedding true; llama.cpp: "
        "llama-server -m MODEL.gguf --embeddings --pooling mean) and point this "
        "embedding model's api_url at it",
        model=spec.name,
        status=error.status,
    )


class OpenAIEmbeddingAPI(EmbeddingAPI):
    """``POST {base}/embeddings``; also every OpenAI-compatible server via ``api_url``."""

    vendor: ClassVar[str] = "openai"
    default_api_url: ClassVar[str | None] = "https://api.openai.com/v1"
    max_batch: ClassVar[int | None] = 2048

    #: Set once per model when the server sent per-token vectors: from then on each text
    #: goes in a request of its own (see :meth:`embed`), and the note has been shown.
    pooled_tokens: bool = False

    def __init__(self, spec: ModelSpec, client: httpx.AsyncClient | None) -> None:
        super().__init__(spec, client)
        self._headers = bearer_headers(spec)
        # Only text-embedding-3 and later models take it; others keep their own size.
        self._extra: dict[str, Any] = {"dimensions": self.dims} if self.dims else {}

    async def embed(self, texts: list[str]) -> EmbeddingResult:
        """One request for all ``texts``, unless the server answers per token.

        llama-cpp-python's server, when it does not pool, gets every text of a batch but
        the first wrong (measured: the cosine between a text's vectors sent alone and
        sent second in a batch was 0.007). So once a server has sent per-token vectors,
        each text is sent on its own, and a batch that came back per token is asked
        again text by text.
        """
        if self.pooled_tokens and len(texts) > 1:
            return await self._one_by_one(texts)
        result, per_token = await self._request(texts)
        if per_token and len(texts) > 1:
            return await self._one_by_one(texts)
        return result

    async def _one_by_one(self, texts: list[str]) -> EmbeddingResult:
        vectors: list[list[float]] = []
        tokens: int | None = None
        for text in texts:
            result, _ = await self._request([text])
            vectors.extend(result.vectors)
            if result.input_tokens is not None:
                tokens = (tokens or 0) + result.input_tokens
        return EmbeddingResult(vectors, tokens)

    async def _request(self, texts: list[str]) -> tuple[EmbeddingResult, bool]:
        """The vectors of one request, and whether they came per token (and were pooled)."""
        url = f"{self.base_url}/embeddings"
        body = {"model": self.spec.model_ref, "input": list(texts), **self._extra}
        try:
            data = await post_json(
                require_client(self),
                self.spec,
                url,
                body,
                self._headers,
                max_bytes=MAX_EMBEDDING_BYTES,
            )
        except ProviderError as exc:
            raise _not_serving_embeddings(self.spec, exc) or exc from None
        items = data.get("data")
        if not isinstance(items, list):
            raise malformed(self.spec, url, "a 'data' list", data)
        if len(items) != len(texts):
            raise malformed(self.spec, url, f"{len(texts)} embeddings, got {len(items)}")
        vectors: list[list[float] | None] = [None] * len(texts)
        per_token = False
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                raise malformed(self.spec, url, f"'data[{position}]' to be an object", data)
            # The index is the order of the input; servers may answer out of order.
            index = item.get("index", position)
            raw = item.get("embedding")
            vector = float_vector(raw)
            if count(index) is None or not 0 <= index < len(texts) or vectors[index] is not None:
                raise malformed(
                    self.spec, url, f"'data[{position}].index' to be a distinct input index"
                )
            if vector is None:
                vector = pool_token_vectors(raw)
                if vector is None:
                    raise ProviderError(
                        f"model '{self.spec.name}' ({self.spec.vendor}): malformed response "
                        f"from {shown_url(url)}: expected 'data[{position}].embedding' to be a list of "
                        f"numbers (or per-token lists of numbers), got {describe_value(raw)}",
                        model=self.spec.name,
                    )
                per_token = True
                self._note_pooled(len(raw), len(vector))
            vectors[index] = vector
        usage = data.get("usage")
        tokens = count(usage.get("prompt_tokens")) if isinstance(usage, dict) else None
        return EmbeddingResult([v for v in vectors if v is not None], tokens), per_token

    def _note_pooled(self, tokens: int, dims: int) -> None:
        if self.pooled_tokens:
            return
        self.pooled_tokens = True
        log.warning(
            "embedding model '%s': the server sent one vector per token (%d tokens x %d "
            "dimensions) instead of one per text; oxyeval averages them (mean pooling) and "
            "sends one text per request (such servers mix up the texts of a batch). To "
            "have the server pool, run llama.cpp's own server with `llama-server "
            "--embeddings --pooling mean`, or an embedding model that declares its pooling type",
            self.spec.name,
            tokens,
            dims,
        )
