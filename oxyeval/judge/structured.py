"""Asking a judge model, with structured output where the run's servers take it.

Every judge asks its model the same way, whatever it asks for (a rubric's verdict, the
SDK's JSON answers): a structured answer when config.yml's ``judge.structured`` and the
vendor's class allow it, plain text once the server has refused that. Doing it in one
place means one rule for ``on``/``auto``/``off``, one warning text, and one
:class:`JudgeSession` per run remembering which servers refused, so the rest of the run
asks them for text, the warning is given once, and two runs in one process (a server,
a notebook) never change each other's requests.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..providers import GenerateParams

if TYPE_CHECKING:
    from ..providers import ChatMessage, Completion, Model, ResponseSchema

__all__ = [
    "REFUSED_STATUSES",
    "STRUCTURED_MODES",
    "JudgeSession",
    "ask",
    "supports_structured",
    "wants_structured",
]

#: config.yml's ``judge.structured`` values.
STRUCTURED_MODES = ("auto", "on", "off")
#: Statuses with which servers refuse a request field they do not support.
REFUSED_STATUSES = (400, 422)

log = logging.getLogger("oxyeval.judge")


class JudgeSession:
    """What the judges of one run learn about their models as they go: which servers
    refused structured output, so the rest of the run asks them for plain text and the
    warning is given once. One per run (a RunContext's), never process-wide: two runs
    in one process (a server) do not change each other's requests."""

    def __init__(self) -> None:
        self._text_only: weakref.WeakSet[Any] = weakref.WeakSet()

    def text_only(self, model: Model) -> bool:
        return model in self._text_only

    def refused(self, model: Model) -> bool:
        """Note that ``model`` refused structured output; True the first time."""
        if model in self._text_only:
            return False
        self._text_only.add(model)
        return True


def supports_structured(model: Model) -> bool:
    """The model's vendor class can ask for a structured answer at all."""
    return bool(getattr(getattr(model, "api", None), "structured_output", False))


def wants_structured(model: Model, mode: str, session: JudgeSession) -> bool:
    """Whether the next call asks for a structured answer: never under ``off``, always
    under ``on``, under ``auto`` when the vendor supports it and its server has not
    refused it this run."""
    if mode == "off" or (mode == "auto" and session.text_only(model)):
        return False
    return mode == "on" or supports_structured(model)


async def ask(
    model: Model,
    messages: Sequence[ChatMessage],
    params: GenerateParams,
    schema: ResponseSchema,
    *,
    mode: str,
    session: JudgeSession,
    what: str = "verdict",
) -> Completion:
    """One judge call with ``params``: ``schema`` asked for when allowed (see
    :func:`wants_structured`), plain text after a refusal (400/422) under ``auto``,
    which ``session`` remembers. ``what`` names the answer in messages ("verdict",
    "answer"). Raises ProviderError: the call failed, or ``on`` cannot be honoured.
    Under ``--batch`` the call belongs to the judging phase."""
    from ..providers import batch_phase

    with batch_phase("judge"):
        return await _ask(model, messages, params, schema, mode=mode, session=session, what=what)


async def _ask(
    model: Model,
    messages: Sequence[ChatMessage],
    params: GenerateParams,
    schema: ResponseSchema,
    *,
    mode: str,
    session: JudgeSession,
    what: str,
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
    try:
        return await model.generate(
            list(messages), params.merged(GenerateParams(response_schema=schema))
        )
    except ProviderError as exc:
        if exc.status not in REFUSED_STATUSES:
            raise
        if mode == "on":
            raise ProviderError(
                f"{exc} (the structured {what} request was refused; judge.structured is "
                "'on', so there is no plain-text fallback: set it to auto or off)",
                model=exc.model,
                status=exc.status,
            ) from None
        completion = await model.generate(list(messages), params)
        _fall_back(model, session, exc, what)
        return completion


def _fall_back(model: Model, session: JudgeSession, refusal: ProviderError, what: str) -> None:
    """Remember, and say once per judge model and run, that its server refused
    structured output."""
    if not session.refused(model):
        return
    log.warning(
        "judge model '%s' refused the structured %s request (HTTP %s), so its %ss are read "
        "from plain text for the rest of this run; set judge.structured: off in config.yml "
        "to skip the attempt. The refusal: %s",
        model.name,
        what,
        refusal.status,
        what,
        refusal,
    )
