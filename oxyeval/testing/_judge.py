"""The JSON judge every judged metric asks through.

A metric states what it wants as a JSON Schema; :func:`ask_json` gets an object of that
shape from the project's judge model or raises :class:`JudgeError`, so no metric parses
model text itself and none can pass on a reply it could not read.

One :class:`~oxyeval.providers.ModelPool` per event loop (per project): its HTTP client
belongs to the loop that made it, and one pool per loop lets every metric of an
``evaluate`` share connections and the models' concurrency limits. The pool is closed
when the loop is shut down by ``asyncio.run`` (a parked async generator's ``finally``
runs then), or by :func:`close_judges` for a loop that lives on (a notebook's).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from ..errors import OxyError, ProviderError
from ..inputs import JSONProblem, loads
from ..project import Project, find_config, load_project
from ..providers import ChatMessage, Completion, GenerateParams, ModelPool, ResponseSchema
from ..redact import clip, redact

__all__ = ["JudgeError", "ask_json", "close_judges", "parse_json_object", "vendor_schema"]

# Statuses with which servers refuse a request field (structured output) they lack.
_REFUSED = (400, 422)
# Keywords every vendor's structured output accepts; the rest are checked here only.
_PORTABLE = {"type", "properties", "required", "additionalProperties", "items", "enum"}
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n(.*?)```", re.DOTALL)


class JudgeError(OxyError):
    """The judge gave no usable answer: the call failed, or two replies in a row were
    not a JSON object of the asked schema."""


@dataclass
class _Pool:
    project: Project
    pool: ModelPool
    text_only: set[str] = field(default_factory=set)  # models that refused structured output


@dataclass
class _LoopState:
    pools: dict[Path, _Pool] = field(default_factory=dict)
    keeper: Any = None  # the parked async generator that closes the pools at loop end

    async def aclose(self) -> None:
        pools, self.pools = list(self.pools.values()), {}
        for entry in pools:
            await entry.pool.aclose()


_STATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()


async def _keeper(state: _LoopState) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await state.aclose()


async def _state() -> _LoopState:
    loop = asyncio.get_running_loop()
    with _LOCK:
        state = _STATES.get(loop)
        if state is None:
            state = _STATES[loop] = _LoopState()
    if state.keeper is None:
        state.keeper = _keeper(state)
        await state.keeper.__anext__()  # parked; asyncio.run's shutdown_asyncgens closes it
    return state


async def _pool() -> _Pool:
    """This loop's pool for the project found from the working directory."""
    state = await _state()
    config = find_config(Path.cwd())
    key = config.resolve() if config is not None else Path.cwd().resolve()
    entry = state.pools.get(key)
    if entry is None:
        project = load_project()  # raises ConfigError naming the folder when there is none
        entry = state.pools[key] = _Pool(project, ModelPool(project.models))
    return entry


async def close_judges() -> None:
    """Close the judge pools of the running loop (their HTTP connections); the next
    judged metric opens a new one. ``asyncio.run`` does this by itself at its end."""
    loop = asyncio.get_running_loop()
    with _LOCK:
        state = _STATES.get(loop)
    if state is not None:
        await state.aclose()


def vendor_schema(schema: Any) -> Any:
    """``schema`` cut to the keywords every vendor's structured output takes (bounds,
    patterns and the like are dropped: :func:`ask_json` checks them on the answer)."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: vendor_schema(sub) for name, sub in value.items()}
            elif key == "items":
                out[key] = vendor_schema(value)
            elif key in _PORTABLE:
                out[key] = value
        return out
    return schema


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a reply: the whole text, a fenced block, or the span from the
    first ``{`` to the last ``}`` (a model that wraps its JSON in a sentence); None when
    no candidate parses as an object."""
    body = text.strip()
    candidates = [body, *(m.group(1).strip() for m in _FENCE.finditer(body))]
    start, end = body.find("{"), body.rfind("}")
    if 0 <= start < end:
        candidates.append(body[start : end + 1])
    for candidate in candidates:
        try:
            value = loads(candidate, "a judge's answer")
        except JSONProblem:
            continue
        if isinstance(value, dict):
            return value
    return None


def _problem(data: dict[str, Any] | None, validator: jsonschema.protocols.Validator) -> str | None:
    if data is None:
        return "the reply held no JSON object"
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the top level"
    return f"at {where}: {error.message}"


def _reply(completion: Completion) -> tuple[dict[str, Any] | None, str]:
    """The object a completion holds (structured, else read from its text) and its text."""
    if completion.structured is not None:
        return completion.structured, json.dumps(completion.structured, ensure_ascii=False)
    return parse_json_object(completion.text), completion.text


async def _generate(
    entry: _Pool, name: str, messages: list[ChatMessage], schema: Any
) -> Completion:
    """One call: structured output when the model's class and config.yml allow it, plain
    text after the server refused it (remembered for the pool's life)."""
    model = entry.pool.get(name)
    mode = entry.project.judge.structured
    supports = bool(getattr(model.api, "structured_output", False))
    structured = mode != "off" and supports and name not in entry.text_only
    if mode == "on" and not supports:
        raise JudgeError(
            f"judge.structured is 'on', but vendor '{model.spec.vendor}' (model '{name}') "
            "has no structured output; set judge.structured to auto or off"
        )
    params = GenerateParams(max_tokens=entry.project.judge.max_tokens)
    if structured:
        asked = ResponseSchema("judgement", vendor_schema(schema))
        try:
            return await model.generate(
                messages, params.merged(GenerateParams(response_schema=asked))
            )
        except ProviderError as exc:
            if exc.status not in _REFUSED or mode == "on":
                raise
            entry.text_only.add(name)
    return await model.generate(messages, params)


async def ask_json(model_name: str | None, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Ask judge model ``model_name`` (a config.yml model; None: the project's judge)
    ``prompt`` and return its answer as a JSON object valid under ``schema``.

    A reply that is no such object is answered once with what was wrong and asked
    again; a second bad reply, or a failed call, is a :class:`JudgeError`.
    """
    jsonschema.validators.validator_for(schema).check_schema(schema)
    validator = jsonschema.validators.validator_for(schema)(schema)
    try:
        entry = await _pool()
        name = model_name or entry.project.default_judge
        messages = [ChatMessage("user", prompt)]
        problem = ""
        for attempt in range(2):
            completion = await _generate(entry, name, messages, schema)
            data, raw = _reply(completion)
            problem = _problem(data, validator) or ""
            if not problem:
                assert data is not None
                return data
            if attempt == 0:
                messages = [
                    *messages,
                    ChatMessage("assistant", raw or "(empty reply)"),
                    ChatMessage(
                        "user",
                        f"That reply could not be used: {problem}. Answer again with only a "
                        "JSON object, no other text, matching this JSON Schema:\n"
                        + json.dumps(schema, ensure_ascii=False),
                    ),
                ]
    except JudgeError:
        raise
    except OxyError as exc:
        raise JudgeError(redact(f"judge model '{model_name or 'default'}': {exc}")) from None
    raise JudgeError(
        redact(
            f"judge model '{name}' gave no usable JSON twice: {problem} "
            f"(last reply: {clip(raw.strip(), 200)!r})"
        )
    )
