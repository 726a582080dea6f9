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
project found from the working directory, without a cache.

Which model judges (:func:`judge_model`): a config.yml model when the metric names one
or the project has any (its ``defaults.judge_model``, else its first model); outside any
project, or for a name config.yml does not list (``model="gpt-4.1"``), an OpenAI model
read from the environment as DeepEval and the OpenAI SDK read it (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ``OPENAI_MODEL_NAME``, else :data:`DEFAULT_JUDGE_MODEL`), called
through oxyeval's own OpenAI client; and a judge object the test code wrote (a
``DeepEvalBaseLLM`` subclass) is asked through its own ``a_generate``/``generate``. Its HTTP client belongs to
that loop, so it is closed when the loop is shut down by ``asyncio.run`` (a parked async
generator's ``finally`` runs then), or by :func:`close_judges` for a loop that lives on
(a notebook's).
"""

from __future__ import annotations

import asyncio
import inspect
import os
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
    from ..providers import Model
    from ..workflow import RunContext

__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "JudgeError",
    "ask_json",
    "close_judges",
    "json_judge",
    "judge_context",
    "judge_model",
    "judging_in",
    "parse_json_object",
    "rubric_judge",
]


#: The OpenAI model that judges outside any project when ``OPENAI_MODEL_NAME`` is not
#: set: DeepEval's documented default, so a ported test asks the model it asked before.
DEFAULT_JUDGE_MODEL = "gpt-4.1"


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
        project = load_project() if config is not None else bare_project(Path.cwd())
        context = state.contexts[key] = RunContext(project)
    return context


def bare_project(root: Path) -> Any:
    """A stand-in project for test code outside any project: no models of its own (the
    judge comes from the environment), no history."""
    from ..project.config import Project
    from ..project.document import Document

    root = root.resolve()
    return Project(
        root=root,
        config=Document(path=root / "config.yml", text="", data={}),
        models={},
        default_model="",
        default_judge="",
        databases={},
    )


def model_label(model: Any) -> str | None:
    """How a metric's judge is named in reports: a model name, or a judge object's
    ``get_model_name()`` (its class name when that fails)."""
    if model is None or isinstance(model, str):
        return model
    try:
        name = model.get_model_name()
    except Exception:  # a user's judge object: its name is cosmetic
        name = None
    return name if isinstance(name, str) and name else type(model).__name__


def judge_model(context: RunContext, model: Any) -> Model:
    """The model that judges for ``model`` (a name, a ``GPTModel``-like object with a
    ``model_spec()``, or None) in ``context``; see the module docstring for the order.
    A missing key or a bad base URL is an OxyError naming the variable to set."""
    project = context.project
    spec_of = getattr(model, "model_spec", None)
    if spec_of is not None:
        return context.models.add(spec_of())
    if model is None:
        if project.models:
            return context.models.get(project.default_judge)
        model = os.environ.get("OPENAI_MODEL_NAME", "").strip() or DEFAULT_JUDGE_MODEL
    if not isinstance(model, str):
        from ..errors import ConfigError

        raise ConfigError(
            f"this metric needs a model judge (a model name), not a {type(model).__name__}"
        )
    if model in project.models:
        return context.models.get(model)
    vendor, ident = "openai", model
    head, slash, tail = model.partition("/")
    if slash and head in ("openai", "anthropic", "google", "gemini", "ollama") and tail:
        vendor, ident = head, tail  # a LiteLLM-style "provider/model" name
    try:
        spec = project.provider_model_spec(vendor, ident, name=model)
        known = context.models.specs.get(model)
        if known is not None and known != spec:  # the environment changed since
            import dataclasses

            spec = dataclasses.replace(spec, name=f"{model} at {spec.api_url or 'its default'}")
        return context.models.add(spec)
    except OxyError as exc:
        if not project.models:
            raise
        from ..errors import ConfigError

        known = ", ".join(sorted(project.models))
        raise ConfigError(
            f"'{model}' is not a model of config.yml ({known}), so it was read as a "
            f"{vendor} model id: {exc}"
        ) from None


async def close_judges() -> None:
    """Close the judge contexts of the running loop (their HTTP connections); the next
    judged metric measured on its own opens a new one. ``asyncio.run`` does this by
    itself at its end."""
    loop = asyncio.get_running_loop()
    with _LOCK:
        state = _STATES.get(loop)
    if state is not None:
        await state.aclose()


def json_judge(context: RunContext, model: Any) -> JsonJudge:
    """The JSON judge for ``model`` (see :func:`judge_model`) of ``context``: its
    settings, verdict cache and session."""
    from ..judge import JsonJudge

    return JsonJudge(
        judge_model(context, model),
        context.project.judge,
        context.verdicts,
        session=context.judging,
    )


def rubric_judge(context: RunContext, model: Any, rubric: Rubric | None = None) -> Judge:
    """The rubric judge for ``model`` (see :func:`judge_model`) of ``context`` (the
    consistency rubric by default)."""
    from ..judge import CONSISTENCY, Judge

    return Judge(
        judge_model(context, model),
        settings=context.project.judge,
        cache=context.verdicts,
        rubric=rubric or CONSISTENCY,
        session=context.judging,
    )


async def ask_json(model: Any, prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Ask the judge for ``model`` (a config.yml model's name, a vendor's model id, a
    judge object, or None: the project's judge, else the environment's; see
    :func:`judge_model`) ``prompt`` and return its answer as a JSON object valid under
    ``schema``.

    A reply that is no such object is answered once with what was wrong and asked
    again; a second bad reply, or a failed call, is a :class:`JudgeError`.
    """
    shown = model_label(model) or "default"
    if model is not None and not isinstance(model, str) and not hasattr(model, "model_spec"):
        return await _ask_object(model, shown, prompt, schema)
    try:
        context = await judge_context()
        judge = json_judge(context, model)
    except OxyError as exc:
        raise JudgeError(redact(f"judge model '{shown}': {exc}")) from None
    text, images = with_images(prompt)
    result = await judge.ask(text, schema, images)
    if result.answer is None:
        name = judge.model.name
        raise JudgeError(redact(f"judge model '{name}': {result.error or 'no answer'}"))
    return result.answer


def with_images(prompt: str) -> tuple[str, tuple[str, ...]]:
    """A prompt whose text holds image placeholders (an ``MLLMImage`` in a test case) as
    the text, each image named ``[image N: <id>]`` in it, and the images in order (URLs
    or data URIs) sent with it."""
    from ._cases import MLLMImage, split_images

    parts = split_images(prompt)
    images = [p for p in parts if isinstance(p, MLLMImage)]
    if not images:
        return prompt, ()
    text, urls = [], []
    for part in parts:
        if isinstance(part, MLLMImage):
            urls.append(part.address)
            text.append(f"[image {len(urls)}: {part._id}]")
        else:
            text.append(part)
    return "".join(text), tuple(urls)


async def _generate(model: Any, prompt: str) -> Any:
    """One call of a judge object: ``a_generate`` when it has one, else ``generate`` in
    a worker thread (it may block on its own HTTP client)."""
    a_generate = getattr(model, "a_generate", None)
    if a_generate is not None:
        reply = a_generate(prompt)
        if inspect.isawaitable(reply):
            return await reply
        return reply
    return await asyncio.to_thread(model.generate, prompt)


def _as_object(reply: Any) -> tuple[dict[str, Any] | None, str]:
    """What a judge object gave: text holding a JSON object, a dict, a pydantic model
    (``model_dump``), or DeepEval's ``(answer, cost)`` pair."""
    import json

    if isinstance(reply, tuple) and len(reply) == 2:
        reply = reply[0]
    dump = getattr(reply, "model_dump", None)
    if callable(dump):
        reply = dump()
    if isinstance(reply, dict):
        return reply, json.dumps(reply, ensure_ascii=False, default=str)
    text = reply if isinstance(reply, str) else str(reply)
    return parse_json_object(text), text


async def _ask_object(
    model: Any, shown: str, prompt: str, schema: dict[str, Any]
) -> dict[str, Any]:
    """Ask a judge object the test code wrote; the same re-ask rule as the model
    judges. It gets the prompt as text (no structured-output request: it has no way to
    take one) and no cache (its answers are its own business)."""
    import jsonschema

    if not (
        callable(getattr(model, "a_generate", None)) or callable(getattr(model, "generate", None))
    ):
        raise JudgeError(f"judge model '{shown}' has neither a_generate nor generate")
    validator = jsonschema.validators.validator_for(schema)(schema)
    asked = prompt
    problem = ""
    for attempt in range(2):
        try:
            reply = await _generate(model, asked)
        except Exception as exc:  # the user's judge failed: this metric's error
            raise JudgeError(
                redact(f"judge model '{shown}': {type(exc).__name__}: {exc}")
            ) from None
        data, text = _as_object(reply)
        if data is None:
            problem = "the reply held no JSON object"
        else:
            error = jsonschema.exceptions.best_match(validator.iter_errors(data))
            if error is None:
                return data
            where = "/".join(str(p) for p in error.absolute_path) or "the top level"
            problem = f"at {where}: {error.message}"
        if attempt == 0:
            asked = (
                f"{prompt}\n\nYour previous reply could not be used ({problem}):\n{text}\n\n"
                "Answer again with only a JSON object, no other text."
            )
    raise JudgeError(redact(f"judge model '{shown}' gave no usable JSON twice: {problem}"))
