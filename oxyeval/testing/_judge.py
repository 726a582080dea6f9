"""The judge every judged metric asks through, and the run it asks in.

A metric states what it wants as a JSON Schema; :func:`ask_json` gets an object of that
shape from the project's judge model (the judge package's
:class:`~oxyeval.judge.JsonJudge`) or raises :class:`JudgeError`, so no metric parses
model text itself and none can pass on a reply it could not read.

Where a judge call runs: inside an SDK run (``evaluate``, ``assert_test``,
``run_test_suite``) it uses that run's :class:`~oxyeval.workflow.RunContext` (its model
pool, its verdict cache kept in the history, its judge session), which the run names
for its own event loop (:func:`judging_in`). A metric measured on its own
(``metric.measure(case)``) has no run: it uses a context of its event loop for the
project found from the working directory, without a cache. Its HTTP client belongs to
that loop, so it is closed when the loop is shut down by ``asyncio.run`` (a parked async
generator's ``finally`` runs then), or by :func:`close_judges` for a loop that lives on
(a notebook's).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import OxyError
from ..judge import parse_json_object
from ..redact import redact

if TYPE_CHECKING:
    from ..judge import JsonJudge, Judge, Rubric
    from ..workflow import RunContext

__all__ = [
    "JudgeError",
    "ask_json",
    "close_judges",
    "json_judge",
    "judge_context",
    "judging_in",
    "parse_json_object",
    "rubric_judge",
]


class JudgeError(OxyError):
    """The judge gave no usable answer: the call failed, or two replies in a row were
    not a JSON object of the asked schema."""


@dataclass(frozen=True)
class _Scope:
    """The run judge calls of this task belong to, on the loop that runs it."""

    loop: asyncio.AbstractEventLoop
    context: RunContext | None  # None: the run has no project


_RUN: ContextVar[_Scope | None] = ContextVar("oxyeval_sdk_run", default=None)


@contextmanager
def judging_in(context: RunContext | None) -> Iterator[None]:
    """Judge calls made in this block (and the tasks it starts) use ``context``, the
    SDK run's; call it inside the run's event loop."""
    token = _RUN.set(_Scope(asyncio.get_running_loop(), context))
    try:
        yield
    finally:
        _RUN.reset(token)


@dataclass
class _LoopState:
    """The contexts of metrics measured on their own in one event loop, by project."""

    contexts: dict[Path, RunContext] = field(default_factory=dict)
    keeper: Any = None  # the parked async generator that closes them at loop end

    async def aclose(self) -> None:
        contexts, self.contexts = list(self.contexts.values()), {}
        for context in contexts:
            await context.aclose()


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


async def judge_context() -> RunContext:
    """Where a judge call runs: the SDK run's context when this loop runs one, else this
    loop's own for the project found from the working directory (a ConfigError naming
    the folder when there is none)."""
    scope = _RUN.get()
    loop = asyncio.get_running_loop()
    if scope is not None and scope.loop is loop and scope.context is not None:
        return scope.context
    from ..project import find_config, load_project
    from ..workflow import RunContext

    state = await _state()
    config = find_config(Path.cwd())
    key = config.resolve() if config is not None else Path.cwd().resolve()
    context = state.contexts.get(key)
    if context is None:
        context = state.contexts[key] = RunContext(load_project())
    return context


async def close_judges() -> None:
    """Close the judge contexts of the running loop (their HTTP connections); the next
    judged metric measured on its own opens a new one. ``asyncio.run`` does this by
    itself at its end."""
    loop = asyncio.get_running_loop()
    with _LOCK:
        state = _STATES.get(loop)
    if state is not None:
        await state.aclose()


def json_judge(context: RunContext, model: str) -> JsonJudge:
    """The JSON judge ``model`` of ``context``: its settings, verdict cache and session."""
    from ..judge import JsonJudge

    return JsonJudge(
        context.models.get(model),
        context.project.judge,
        context.verdicts,
        session=context.judging,
    )


def rubric_judge(context: RunContext, model: str, rubric: Rubric | None = None) -> Judge:
    """The rubric judge ``model`` of ``context`` (the consistency rubric by default)."""
    from ..judge import CONSISTENCY, Judge

    return Judge(
        context.models.get(model),
        settings=context.project.judge,
        cache=context.verdicts,
        rubric=rubric or CONSISTENCY,
        session=context.judging,
    )


async def ask_json(model_name: str | None, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Ask judge model ``model_name`` (a config.yml model; None: the project's judge)
    ``prompt`` and return its answer as a JSON object valid under ``schema``.

    A reply that is no such object is answered once with what was wrong and asked
    again; a second bad reply, or a failed call, is a :class:`JudgeError`.
    """
    try:
        context = await judge_context()
        name = model_name or context.project.default_judge
        judge = json_judge(context, name)
    except OxyError as exc:
        raise JudgeError(redact(f"judge model '{model_name or 'default'}': {exc}")) from None
    result = await judge.ask(prompt, schema)
    if result.answer is None:
        raise JudgeError(redact(f"judge model '{name}': {result.error or 'no answer'}"))
    return result.answer
