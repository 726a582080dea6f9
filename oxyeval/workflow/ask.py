"""Asking one agent one question, outside any test or workflow.

What ``oxy run FILE.agent.yml --question ...`` does, as a library call: load the
agent's project, open its models and databases for this one run, ask, close them.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..project.agents import Agent
    from ..providers import ToolStep
    from .context import CacheFactory, RunContext

__all__ = ["AgentAnswer", "answer_in", "ask_agent"]


@dataclass(repr=False)
class AgentAnswer:
    """One agent's answer; filled in as the ask goes, so an interrupted ask
    (``ask_agent(..., into=answer)``) still says which agent it was and how long it ran.

    ``status`` is ``running`` until the agent answers (``succeeded``) or the ask is
    cancelled (``interrupted``); a failure raises instead.
    """

    agent: str = ""  # the agent file, as the project displays it once loaded
    status: str = "running"
    output: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    duration_s: float | None = None
    cached_calls: int = 0  # model calls the cache (--cache) answered instead of the model
    #: What the answer warrants saying on stderr: that it stopped at the token limit.
    warnings: list[str] = field(default_factory=list)
    #: Every tool call with its result, in order (not in :meth:`to_dict`, whose keys are
    #: ``oxy run``'s JSON output).
    tool_trace: list[ToolStep] = field(default_factory=list)

    def __repr__(self) -> str:  # short: asyncio may repr results
        return f"AgentAnswer({self.agent!r}, {self.status})"

    @property
    def interrupted(self) -> bool:
        return self.status == "interrupted"

    def to_dict(self) -> dict[str, Any]:
        """The same keys whether the agent answered or the ask was cut short."""
        return {
            "agent": self.agent,
            "status": self.status,
            "output": self.output,
            "tool_calls": self.tool_calls,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
            "duration_s": self.duration_s,
            "cached_calls": self.cached_calls,
        }


async def ask_agent(
    path: str | os.PathLike[str],
    question: str,
    *,
    project_dir: str | None = None,
    environ: Mapping[str, str] | None = None,
    into: AgentAnswer | None = None,
    cache: CacheFactory | None = None,
) -> AgentAnswer:
    """Ask the agent in ``path`` one question, with its tools and its model, in a context
    of its own (a run of the suites goes through :func:`answer_in`, in the run's).

    ``duration_s`` is the agent's own time (model and tool calls) when it answers, and
    the whole time since the call when it is interrupted. ``into`` (an empty
    ``AgentAnswer()``) is filled in place, so a caller whose ask is cancelled (Ctrl-C,
    SIGTERM) still holds it, marked ``interrupted``. Bad input raises
    :class:`~oxyeval.errors.OxyError` (exit code 2); a failed model call
    :class:`~oxyeval.errors.ProviderError` (3). ``cache`` makes the project's answer
    cache; None: the model is always asked. It is made once the model's key is found, so
    an ask that cannot start never opens (or creates) the history the cache lives in.
    """
    from ..project.agents import load_agent
    from ..project.config import load_project
    from .context import RunContext

    answer = into if into is not None else AgentAnswer()
    answer.agent = answer.agent or os.fspath(path)
    started = time.perf_counter()
    try:
        project = load_project(path, project_dir=project_dir)
        agent = load_agent(project, path)
        answer.agent = agent.display
        async with RunContext(project, environ=environ) as context:
            context.models.check([agent.model])
            context.cache = cache(project) if cache is not None else None
            return await answer_in(context, agent, question, answer, started=started)
    except (asyncio.CancelledError, KeyboardInterrupt):
        answer.status = "interrupted"
        answer.duration_s = round(time.perf_counter() - started, 4)
        raise


async def answer_in(
    context: RunContext,
    agent: Agent,
    question: str,
    answer: AgentAnswer,
    *,
    started: float | None = None,
) -> AgentAnswer:
    """Ask ``agent`` (its model's key already found) ``question`` in ``context``, filling
    ``answer``; cut short, it is marked ``interrupted`` with the time it ran."""
    from ..providers import counting, stopped_at_token_limit
    from .agent import describe_calls, token_limit_warning

    began = time.perf_counter() if started is None else started
    answer.agent = agent.display
    try:
        runner = context.agent(agent)
        with counting() as tally:
            try:
                completion = await runner.ask(question)
            finally:
                answer.cached_calls = tally.calls
    except (asyncio.CancelledError, KeyboardInterrupt):
        answer.status = "interrupted"
        answer.duration_s = round(time.perf_counter() - began, 4)
        raise
    answer.status = "succeeded"
    answer.output = completion.text
    answer.tool_calls = describe_calls(completion.tool_calls)
    answer.tool_trace = list(completion.tool_trace)
    answer.input_tokens = completion.usage.input_tokens
    answer.output_tokens = completion.usage.output_tokens
    answer.duration_s = round(completion.latency, 4)
    if stopped_at_token_limit(completion.finish_reason):
        answer.warnings.append(
            token_limit_warning(agent.display, "the answer", agent.model, runner.max_tokens)
        )
    return answer
