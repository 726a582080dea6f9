"""Asking a judge model, with structured output in the form its server takes.

Every judge asks its model the same way, whatever it asks for (a rubric's verdict, the
SDK's JSON answers): a structured answer when config.yml's ``judge.structured`` and the
vendor's class allow it, in the first form the endpoint accepts, and plain text (read
by the one parser) when it takes none.

OpenAI-compatible servers disagree on the form (see :data:`STRUCTURED_FORMS`): OpenAI,
vLLM, LM Studio, recent Ollama and llama.cpp's ``llama-server`` take ``json_schema``;
llama-cpp-python's server refuses it (with HTTP 500, "Input should be 'text' or
'json_object'") and takes ``json_object`` with a ``schema``; Hugging Face TGI takes
``json_object`` with the schema as ``value``. A refusal is recognised by its status
(400, 422) or, whatever the status, by a message about the response format, so the next
form is tried. What an endpoint takes is learnt once per run by the first judge call to
it: calls that arrive meanwhile wait for it and then use what it learnt, so a run's
fan-out of judge calls never asks a refused form more than once. The form is said once
per endpoint and kept in the run's cache (when it has one), so the next run starts
with it. One :class:`JudgeSession` per run: two runs in one process (a server, a
notebook) never change each other's requests.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..providers import GenerateParams
from ..redact import mask_credentials

if TYPE_CHECKING:
    from ..providers import ChatMessage, Completion, Model, ResponseSchema

__all__ = [
    "FORM_NAMES",
    "REFUSED_STATUSES",
    "STRUCTURED_FORMS",
    "STRUCTURED_MODES",
    "JudgeSession",
    "ask",
    "endpoint_key",
    "is_refusal",
    "supports_structured",
    "wants_structured",
]

#: config.yml's ``judge.structured`` values.
STRUCTURED_MODES = ("auto", "on", "off")
#: Statuses with which servers refuse a request field they do not support.
REFUSED_STATUSES = (400, 422)
#: The structured forms an OpenAI-compatible endpoint is asked in, in this order (a
#: vendor class lists its own in ``structured_forms``), then plain text.
STRUCTURED_FORMS = ("json_schema", "json_object", "json_value")
#: How messages name each form, and plain text.
FORM_NAMES = {
    "json_schema": 'response_format {"type": "json_schema"}',
    "json_object": 'response_format {"type": "json_object", "schema": ...} (llama-cpp-python)',
    "json_value": 'response_format {"type": "json_object", "value": ...} (TGI)',
    "text": "plain text, read by the verdict parser",
}
#: What a server says when it refuses the requested response format, whatever the status:
#: llama-cpp-python's pydantic report ("Input should be 'text' or 'json_object'"), TGI's
#: serde error ("unknown variant `json_schema`"), LM Studio's and vLLM's messages.
_FORMAT_REFUSAL = re.compile(
    r"response_format|json_schema|json_object|unknown variant|'text' or"
    r"|structured output|guided decoding",
    re.IGNORECASE,
)

log = logging.getLogger("oxyeval.judge")


def endpoint_key(model: Model) -> tuple[str, str, str]:
    """Which server a model's calls go to: vendor, base URL (no password), model id."""
    api = getattr(model, "api", None)
    base = getattr(api, "base_url", "") or ""
    return (model.spec.vendor, mask_credentials(str(base)), model.spec.model_ref)


def is_refusal(error: ProviderError) -> bool:
    """Whether an error refuses the structured request rather than failing the call:
    400/422, or any HTTP status with a message about the response format."""
    if error.status is None:
        return False
    return error.status in REFUSED_STATUSES or bool(_FORMAT_REFUSAL.search(str(error)))


class JudgeSession:
    """What the judges of one run learn about their endpoints as they go: the structured
    form each one takes (``"text"``: none), learnt by the first call to it while later
    calls wait, and said once. One per run (a RunContext's), never process-wide."""

    def __init__(self) -> None:
        self._forms: dict[tuple[str, str, str], str] = {}
        self._locks: dict[tuple[str, str, str], asyncio.Lock] = {}

    def form(self, model: Model) -> str | None:
        """The form ``model``'s endpoint takes, once learnt this run."""
        return self._forms.get(endpoint_key(model))

    def text_only(self, model: Model) -> bool:
        return self.form(model) == "text"

    def lock(self, model: Model) -> asyncio.Lock:
        return self._locks.setdefault(endpoint_key(model), asyncio.Lock())

    def learn(self, model: Model, form: str) -> None:
        self._forms[endpoint_key(model)] = form

    def refused(self, model: Model) -> bool:
        """Note that ``model``'s endpoint takes no structured form; True the first time."""
        if self.text_only(model):
            return False
        self.learn(model, "text")
        return True


def supports_structured(model: Model) -> bool:
    """The model's vendor class can ask for a structured answer at all."""
    return bool(getattr(getattr(model, "api", None), "structured_output", False))


def _forms(model: Model) -> tuple[str, ...]:
    forms = getattr(getattr(model, "api", None), "structured_forms", ("json_schema",))
    return tuple(forms) or ("json_schema",)


def wants_structured(model: Model, mode: str, session: JudgeSession) -> bool:
    """Whether the next call asks for a structured answer: never under ``off``, always
    under ``on``, under ``auto`` when the vendor supports it and its endpoint has not
    refused every form this run."""
    if mode == "off" or (mode == "auto" and session.text_only(model)):
        return False
    return mode == "on" or supports_structured(model)


def _form_cache_key(model: Model) -> dict[str, Any]:
    vendor, base, ref = endpoint_key(model)
    return {"kind": "structured-form", "vendor": vendor, "base_url": base, "model": ref}


async def _remembered(model: Model, cache: Any) -> str | None:
    get = getattr(cache, "get_form", None)
    if get is None:
        return None
    form = await get(_form_cache_key(model))
    return form if form in (*_forms(model), "text") else None


async def _remember(model: Model, cache: Any, form: str) -> None:
    put = getattr(cache, "put_form", None)
    if put is not None:
        await put(_form_cache_key(model), form)


async def ask(
    model: Model,
    messages: Sequence[ChatMessage],
    params: GenerateParams,
    schema: ResponseSchema,
    *,
    mode: str,
    session: JudgeSession,
    what: str = "verdict",
    cache: Any = None,
) -> Completion:
    """One judge call with ``params``: ``schema`` asked for when allowed (see
    :func:`wants_structured`) in the form the endpoint takes, plain text under ``auto``
    once it refused every form, which ``session`` (and ``cache``, an optional store with
    ``get_form``/``put_form``) remembers. ``what`` names the answer in messages
    ("verdict", "answer"). Raises ProviderError: the call failed, or ``on`` cannot be
    honoured. Under ``--batch`` the call belongs to the judging phase."""
    from ..providers import batch_phase

    with batch_phase("judge"):
        return await _ask(
            model, messages, params, schema, mode=mode, session=session, what=what, cache=cache
        )


async def _ask(
    model: Model,
    messages: Sequence[ChatMessage],
    params: GenerateParams,
    schema: ResponseSchema,
    *,
    mode: str,
    session: JudgeSession,
    what: str,
    cache: Any,
) -> Completion:
    structured = wants_structured(model, mode, session)
    if structured and not supports_structured(model):
        raise ProviderError(
            f"judge.structured is 'on', but oxyeval has no structured output for vendor "
            f"'{model.spec.vendor}' (model '{model.name}'); set judge.structured "
            "to auto or off in config.yml",
            model=model.name,
        )
    if not structured:
        return await model.generate(list(messages), params)
    form = session.form(model)
    if form is None:
        async with session.lock(model):  # the first call learns; the others wait for it
            form = session.form(model)
            if form is None:
                form = await _remembered(model, cache)
                if form is not None:
                    session.learn(model, form)
                    _say(model, form, what, None, remembered=True)
                else:
                    return await _negotiate(
                        model, messages, params, schema, mode, session, what, cache
                    )
    if form == "text":
        return await model.generate(list(messages), params)
    return await model.generate(list(messages), _with_form(params, schema, form))


def _with_form(params: GenerateParams, schema: ResponseSchema, form: str) -> GenerateParams:
    return params.merged(GenerateParams(response_schema=replace(schema, form=form)))


async def _negotiate(
    model: Model,
    messages: Sequence[ChatMessage],
    params: GenerateParams,
    schema: ResponseSchema,
    mode: str,
    session: JudgeSession,
    what: str,
    cache: Any,
) -> Completion:
    """Ask in each form the vendor class knows until one is taken; learn and say which."""
    refusals: list[ProviderError] = []
    for form in _forms(model):
        try:
            completion = await model.generate(list(messages), _with_form(params, schema, form))
        except ProviderError as exc:
            if not is_refusal(exc):
                raise
            refusals.append(exc)
            continue
        session.learn(model, form)
        if refusals:  # the first form costs nothing to find again: only others are kept
            await _remember(model, cache, form)
        _say(model, form, what, refusals[-1] if refusals else None)
        return completion
    last = refusals[-1]
    if mode == "on":
        raise ProviderError(
            f"{last} (every structured {what} request was refused; judge.structured is "
            "'on', so there is no plain-text fallback: set it to auto or off)",
            model=last.model,
            status=last.status,
        ) from None
    completion = await model.generate(list(messages), params)
    session.learn(model, "text")
    await _remember(model, cache, "text")
    _say(model, "text", what, last)
    return completion


def _say(
    model: Model, form: str, what: str, refusal: ProviderError | None, remembered: bool = False
) -> None:
    """Say once per endpoint and run which form its judge calls use, when it is not the
    first one tried (the usual case says nothing)."""
    if form == _forms(model)[0]:
        return
    how = FORM_NAMES.get(form, form)
    if remembered or refusal is None:
        log.warning(
            "judge model '%s': its %ss are asked for as %s, as an earlier run learnt "
            "(oxy cache clear forgets it)",
            model.name,
            what,
            how,
        )
        return
    advice = (
        "; set judge.structured: off in config.yml to skip the attempt" if form == "text" else ""
    )
    log.warning(
        "judge model '%s' refused the structured %s request (HTTP %s: %s), so its %ss are "
        "asked for as %s for the rest of this run%s",
        model.name,
        what,
        refusal.status,
        _first_line(refusal),
        what,
        how,
        advice,
    )


def _first_line(error: ProviderError) -> str:
    """The line of a refusal that says what the server takes ("Input should be 'text' or
    'json_object'"), else its first line: a pydantic report runs to many lines."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    telling = [line for line in lines if _TELLING.search(line)]
    chosen = (telling or lines or ["no message"])[0]
    return chosen[:200]


_TELLING = re.compile(r"should be|must be|unknown variant|not supported|unsupported", re.I)
