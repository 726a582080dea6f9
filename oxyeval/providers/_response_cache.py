"""What a model call needs from an answer cache, and what it may put in one.

The cache itself lives elsewhere (the history store, :mod:`oxyeval.suites.run_cache`); this
package cannot import the store, so it states the contract: :class:`ResponseCache` is
consulted by :meth:`oxyeval.providers.Model.generate` when it is given one, with the key
:func:`answer_key` builds. The key is everything that decides an answer, and nothing
secret: vendor, model id, base URL, vendor options, sampling parameters, tools,
response schema, the messages, and the run index, so the k-th of n repeated runs
replays the k-th cached answer and n runs never collapse into one. API keys and request
headers are never part of it.

A repeated call's index is passed to ``generate(..., run=k)``; a whole run of a workflow
(each of its agent calls, at any depth) is marked with :func:`repeat_scope`, so the
index of the outer run reaches calls made deep inside the engine. Calls a cache serves
are counted into every enclosing :func:`counting` scope (a test, a workflow task), so
each stage can report its own without knowing the cache. This module imports nothing
heavy.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..redact import mask_credentials
from ._base import ChatMessage, Completion, GenerateParams, ToolCall, Usage

if TYPE_CHECKING:
    from ._base import ModelSpec

__all__ = [
    "AnswerKey",
    "ResponseCache",
    "Tally",
    "answer_key",
    "cacheable",
    "completion_data",
    "completion_from_data",
    "count_served",
    "counting",
    "current_repeat",
    "repeat_scope",
]

#: The run indices of the repeated runs the current call is part of, outermost first:
#: ``(3,)`` inside run 3 of a consistency test of a workflow.
_REPEAT: contextvars.ContextVar[tuple[int, ...]] = contextvars.ContextVar(
    "oxyeval_repeat", default=()
)


@runtime_checkable
class ResponseCache(Protocol):
    """Answers of earlier identical calls. ``get`` returns a copy the caller may change;
    ``put`` is only called with answers :func:`cacheable` allows."""

    #: Whether an answer cut off at the token limit may be kept (the "asked" switch).
    keep_truncated: bool

    async def get(self, key: Mapping[str, Any]) -> Completion | None: ...

    async def put(self, key: Mapping[str, Any], completion: Completion) -> None: ...


@contextlib.contextmanager
def repeat_scope(run: int) -> Iterator[tuple[int, ...]]:
    """Mark every model call made inside (in this task and the tasks it starts) as part of
    repeated run ``run``; scopes nest (a workflow's consistency_run inside a test's run)."""
    path = (*_REPEAT.get(), int(run))
    token = _REPEAT.set(path)
    try:
        yield path
    finally:
        _REPEAT.reset(token)


def current_repeat() -> tuple[int, ...]:
    """The run indices of the enclosing :func:`repeat_scope` calls (empty outside any)."""
    return _REPEAT.get()


@dataclass
class Tally:
    """Model calls served from a cache (not made) within one :func:`counting` scope."""

    calls: int = 0


#: The tallies of the enclosing :func:`counting` scopes, outermost first.
_TALLIES: contextvars.ContextVar[tuple[Tally, ...]] = contextvars.ContextVar(
    "oxyeval_cache_tallies", default=()
)


@contextlib.contextmanager
def counting(tally: Tally | None = None) -> Iterator[Tally]:
    """Count the calls served from any cache inside this scope (this task and the tasks
    it starts) into ``tally``. Scopes nest and a call counts in each enclosing one: a
    workflow task's replayed verdicts are also its run's, and the test's that ran it."""
    tally = tally if tally is not None else Tally()
    outer = _TALLIES.get()
    token = _TALLIES.set(outer if any(t is tally for t in outer) else (*outer, tally))
    try:
        yield tally
    finally:
        _TALLIES.reset(token)


def count_served(calls: int) -> None:
    """A cache served ``calls`` model calls: count them in every enclosing scope."""
    for tally in _TALLIES.get():
        tally.calls += calls


def cacheable(completion: Completion, *, keep_truncated: bool = False) -> bool:
    """Whether an answer may be cached: never an empty one (a blocked or failed reply, n of
    which would replay as "perfectly consistent"), and a cut-off one only when asked.
    Errors never get here: they are raised, not returned."""
    if completion.truncated and not keep_truncated:
        return False
    return bool(completion.text.strip() or completion.tool_calls or completion.structured)


def _message(m: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [asdict(c) for c in m.tool_calls]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        out["name"] = m.name
    if m.images:
        out["images"] = list(m.images)
    return out


def _params(params: GenerateParams) -> dict[str, Any]:
    """Sampling parameters that are set (None: the server's default, left out so adding a
    field to GenerateParams does not change every key)."""
    out: dict[str, Any] = {}
    for name in ("temperature", "max_tokens", "top_p", "seed", "stop"):
        value = getattr(params, name)
        if value is not None:
            out[name] = list(value) if isinstance(value, tuple) else value
    if params.extra:
        out["extra"] = dict(params.extra)
    return out


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """JSON-ready (tuples as lists, odd values as text), so equal keys hash equally:
    what a JSON round trip makes of ``value``. Texts, numbers and mappings of text keys
    (every key is mostly those) are copied as they are; anything else goes through the
    round trip (a tuple, a number as a key, an object that prints as text)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict and all(type(k) is str for k in value):
        return {k: _plain(v) for k, v in value.items()}
    if kind is list:
        return [_plain(v) for v in value]
    return json.loads(json.dumps(value, default=str))


class AnswerKey(dict):  # type: ignore[type-arg]
    """A call's cache key (a plain JSON document, compared as a dict) that also carries
    its ``canonical`` text: sorted keys, no whitespace, not ASCII-escaped, exactly what
    ``json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` writes.

    Why: a run of 10,000 calls to one model hashes 10,000 keys whose settings part
    (vendor, model, endpoint, options, parameters, tools) is the same; that part's text
    is made once per model and parameters (:func:`_settings`) and joined with each call's
    messages and run index, instead of each key being copied and serialized whole."""

    canonical: str


#: Made once: ``json.dumps`` with options builds an encoder per call.
_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


@dataclass(frozen=True)
class _Settings:
    """The part of a key that is the same for every call with these settings: its fields
    (plain), and their canonical text."""

    options: Any  # the spec's own options object, held: its id is part of the memo's key
    fields: dict[str, Any]
    #: The canonical text around a call's messages and run indices, which sort between
    #: the settings' fields: (what precedes the messages, what lies between them and the
    #: run, what follows the run), each with its ``"name":`` in place.
    around: tuple[str, str, str]


_SETTINGS: dict[tuple[Any, ...], _Settings] = {}
_SETTINGS_KEPT = 256


def _settings(spec: ModelSpec, base_url: str, params: GenerateParams) -> _Settings:
    try:  # unhashable parameters (a dict in ``extra``, a schema): made for this call only
        memo: tuple[Any, ...] | None = (
            id(spec.options),
            spec.vendor,
            spec.model_ref,
            base_url,
            params,
        )
        hash(memo)
    except TypeError:
        memo = None
    if memo is not None:
        found = _SETTINGS.get(memo)
        # The entry holds the options object, so its id is not reused while it is kept
        # (a model's options are read from its config and never changed in place).
        if found is not None and found.options is spec.options:
            return found
    fields = _plain(
        {
            "kind": "answer",
            "vendor": spec.vendor,
            "model": spec.model_ref,
            "base_url": mask_credentials(base_url),
            "options": spec.options,
            "params": _params(params),
            "tools": [asdict(t) for t in params.tools or ()],
            "response_schema": None
            if params.response_schema is None
            else asdict(params.response_schema),
        }
    )
    texts = {k: f"{_dumps(k)}:{_dumps(v)}" for k, v in fields.items()}
    made = _Settings(spec.options, fields, _around(texts))
    if memo is not None:
        if len(_SETTINGS) >= _SETTINGS_KEPT:
            _SETTINGS.clear()
        _SETTINGS[memo] = made
    return made


def _around(texts: dict[str, str]) -> tuple[str, str, str]:
    """:attr:`_Settings.around` for these settings' texts."""
    slots = {**texts, "messages": "\0", "run": "\0"}
    whole = "{" + ",".join(slots[name] for name in sorted(slots)) + "}"
    before, between, after = whole.split("\0")
    return before + '"messages":', between + '"run":', after


def answer_key(
    spec: ModelSpec,
    base_url: str,
    messages: Sequence[ChatMessage],
    params: GenerateParams,
    run: Sequence[int] = (1,),
) -> AnswerKey:
    """The cache key of one call: a JSON document, hashed by the cache (by its
    ``canonical`` text, see :class:`AnswerKey`).

    ``params`` are the merged parameters actually sent. The spec's ``options`` are in it
    (a mock's scripted outputs, embedding settings: never secrets); its ``api_key``,
    ``key_var``, ``headers`` and a password in ``api_url`` never are, nor the config.yml
    name of the model (renaming a model does not change what it answers).
    """
    settings = _settings(spec, base_url, params)
    sent = [
        _message(m) if not (m.tool_calls or m.images) else _plain(_message(m)) for m in messages
    ]
    runs = list(run)
    key = AnswerKey(settings.fields, messages=sent, run=runs)
    # Run indices are plain ints nearly always: printed as JSON prints them.
    ran = "[" + ",".join(map(str, runs)) + "]" if all(type(r) is int for r in runs) else None
    before, between, after = settings.around
    key.canonical = f"{before}{_messages_text(sent)}{between}{ran or _dumps(runs)}{after}"
    return key


#: A text as the key's encoder prints it (quoted, escaped, not ASCII-escaped).
_quoted = json.encoder.encode_basestring


def _messages_text(sent: list[dict[str, Any]]) -> str:
    """``_dumps(sent)``, written directly for messages of text fields only (nearly every
    call's): the encoder's own machinery cost more than the rest of the key."""
    parts = []
    for message in sent:
        if not all(type(v) is str for v in message.values()):
            return _dumps(sent)
        parts.append(
            "{" + ",".join(f"{_quoted(k)}:{_quoted(message[k])}" for k in sorted(message)) + "}"
        )
    return "[" + ",".join(parts) + "]"


def completion_data(completion: Completion) -> dict[str, Any]:
    """What a cache keeps of an answer: its content, not how it was fetched (no latency,
    attempts or model name); and whether it came from a batch, which its price depends on
    (a replay of a batch run costs what the batch did)."""
    data = {
        "text": completion.text,
        "finish_reason": completion.finish_reason,
        "input_tokens": completion.usage.input_tokens,
        "output_tokens": completion.usage.output_tokens,
        "tool_calls": [asdict(c) for c in completion.tool_calls],
        "structured": completion.structured,
    }
    if completion.batched:
        data["batched"] = True
    # A text answer (nearly every one) is JSON-ready as it is; nested values are made so.
    plain = not data["tool_calls"] and all(
        type(data[k]) in _SCALARS
        for k in ("text", "finish_reason", "input_tokens", "output_tokens", "structured")
    )
    return data if plain else _plain(data)


def completion_from_data(data: Mapping[str, Any]) -> Completion | None:
    """The answer :func:`completion_data` kept, or None when the entry is not one (written
    by another version, damaged): a miss, never a crash."""
    try:
        text = data["text"]
        calls = [
            ToolCall(str(c["id"]), str(c["name"]), dict(c.get("arguments") or {}))
            for c in data.get("tool_calls") or ()
        ]
        structured = data.get("structured")
        usage = Usage(data.get("input_tokens"), data.get("output_tokens"))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if not isinstance(text, str) or (structured is not None and not isinstance(structured, dict)):
        return None
    finish = data.get("finish_reason")
    return Completion(
        text=text,
        usage=usage,
        finish_reason=finish if isinstance(finish, str) else None,
        tool_calls=calls,
        structured=structured,
        batched=data.get("batched") is True,
    )
