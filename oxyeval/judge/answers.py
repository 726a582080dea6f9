"""A judge that answers with JSON objects of a schema: what the SDK's judged metrics ask.

A rubric judge (:class:`~oxyeval.judge.Judge`) reads one label out of a reply; a metric
such as faithfulness needs more (a list of claims, a verdict per item, a score with its
reason). :class:`JsonJudge` asks for an object of a JSON Schema and returns one valid
under it, or says why there is none, so no metric parses model text itself and none can
pass on a reply that could not be read. It asks the way every judge asks
(:mod:`.structured`: structured output where the server takes it, text once it refused,
learnt per run) and keeps its answers in the run's verdict cache, so a rerun that asks
the same question of the same judge makes no call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..inputs import JSONProblem, loads
from ..providers import ChatMessage, GenerateParams, ResponseSchema
from ..redact import clip
from .judge import JudgeResult
from .structured import JudgeSession, ask
from .verdicts import JSON_ANSWER, VerdictCache, answer_key

if TYPE_CHECKING:
    from ..project.config import JudgeSettings
    from ..providers import Completion, Model

__all__ = ["JsonJudge", "parse_json_object", "vendor_schema"]

# Keywords every vendor's structured output accepts; the rest are checked here only.
_PORTABLE = {"type", "properties", "required", "additionalProperties", "items", "enum"}
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n(.*?)```", re.DOTALL)


def vendor_schema(schema: Any) -> Any:
    """``schema`` cut to the keywords every vendor's structured output takes (bounds,
    patterns and the like are dropped: the answer is checked against the whole schema)."""
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


@lru_cache(maxsize=64)
def _checker(text: str) -> tuple[Any, ResponseSchema]:
    """The validator of a schema (checked once) and what the vendors are sent of it.
    Metrics ask with a few schemas many times: neither is rebuilt per call."""
    import jsonschema

    schema = json.loads(text)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema), ResponseSchema("judgement", vendor_schema(schema))


def _problem(data: dict[str, Any] | None, validator: Any) -> str | None:
    import jsonschema

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


class JsonJudge:
    """Asks one judge model for objects valid under a JSON Schema.

    ``settings``: config.yml's ``judge:`` section (structured output, the reply's token
    cap: none given means the model's own, as a metric's answer may be a long list);
    ``cache``: the run's verdict cache (None: always ask); ``session``: the run's
    :class:`JudgeSession`, shared with its other judges (None: one of its own).
    """

    def __init__(
        self,
        model: Model,
        settings: JudgeSettings | None = None,
        cache: VerdictCache | None = None,
        *,
        session: JudgeSession | None = None,
    ) -> None:
        self.model = model
        self.cache = cache
        self.session = session if session is not None else JudgeSession()
        self.structured_mode = settings.structured if settings is not None else "auto"
        self.params = GenerateParams(max_tokens=settings.max_tokens if settings else None)

    async def ask(
        self, prompt: str, schema: Mapping[str, Any], images: tuple[str, ...] = ()
    ) -> JudgeResult:
        """The judge's answer to ``prompt`` as an object valid under ``schema``
        (:attr:`JudgeResult.answer`), or a result with the reason there is none
        (:attr:`JudgeResult.error`): the call failed, or two replies in a row were not
        such an object (the second asked after being told what was wrong). An invalid
        ``schema`` is a programming error: ``jsonschema.SchemaError``."""
        text = json.dumps(schema, ensure_ascii=False)  # in order: vendors answer in it
        validator, asked = _checker(text)
        if self.cache is None:
            return await self._ask(prompt, schema, validator, asked, images)
        sent = self.model.spec.params.merged(self.params)  # what the calls carry
        asked_about = prompt if not images else f"{prompt}\n{json.dumps(images)}"
        key = answer_key(self.model, sent, str(self.structured_mode), asked_about, schema)
        hit = await self.cache.get(key)
        if hit is not None and hit.answer is not None and _problem(hit.answer, validator) is None:
            return hit
        result = await self._ask(prompt, schema, validator, asked, images)
        if result.answer is not None:
            await self.cache.put(key, result)
        return result

    async def _ask(
        self,
        prompt: str,
        schema: Mapping[str, Any],
        validator: Any,
        asked: ResponseSchema,
        images: tuple[str, ...] = (),
    ) -> JudgeResult:
        messages = [ChatMessage("user", prompt, images=tuple(images))]
        calls, raw, problem = 0, "", ""
        spent: list[float | None] = []

        def cost() -> float | None:
            return None if None in spent else sum(c for c in spent if c is not None)

        for attempt in range(2):
            try:
                completion = await ask(
                    self.model,
                    messages,
                    self.params,
                    asked,
                    mode=str(self.structured_mode),
                    session=self.session,
                    what="answer",
                    cache=self.cache,
                )
            except ProviderError as exc:
                return JudgeResult(
                    None, "", raw, calls, error=f"judge call failed: {exc}", cost=cost()
                )
            calls += 1
            spent.append(completion.cost)
            data, raw = _reply(completion)
            problem = _problem(data, validator) or ""
            if not problem:
                return JudgeResult(JSON_ANSWER, "", raw, calls, cost=cost(), answer=data)
            if attempt == 0:
                messages += [
                    ChatMessage("assistant", raw or "(empty reply)"),
                    ChatMessage(
                        "user",
                        f"That reply could not be used: {problem}. Answer again with only a "
                        "JSON object, no other text, matching this JSON Schema:\n"
                        + json.dumps(schema, ensure_ascii=False),
                    ),
                ]
        error = f"gave no usable JSON twice: {problem} (last reply: {clip(raw.strip(), 200)!r})"
        return JudgeResult(None, raw.strip(), raw, calls, error=error, cost=cost())
