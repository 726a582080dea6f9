"""``oxy run AGENT --question``: one question to one agent, as a kind on the run pipeline
(:class:`Ask`): in the run's context (the project's models, databases and the answer
cache in its history, replayed with ``cache=True``), its answer kept in the history as a
result of kind ``ask`` under a run row of its own, like every other run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..evaluation import (
    EventSink,
    Result,
    ResultKind,
    SampleFinished,
    SubjectStarted,
    register_kind,
)
from ..project.agents import load_agent
from ..project.config import load_project
from ..workflow.ask import AgentAnswer, answer_in
from .recorder import Handle, RunRow, Storage
from .status import StoredRun
from .suite import SuiteRun, run_kind

if TYPE_CHECKING:
    from ..project.agents import Agent
    from ..workflow import RunContext

__all__ = ["ASK", "Ask", "AskOutcome", "ask"]

#: An agent's answer to one question: ``answered``, or ``interrupted``. A failed ask
#: raises (bad input 2, a provider 3) and is no result.
ASK = register_kind(
    ResultKind(
        "ask", ("answered", "interrupted"), unknown=frozenset({"interrupted"}), noun="answer"
    )
)


class AskOutcome:
    """The ask as the one decision reads it: one result once the agent answered or the
    ask was cut short, none before."""

    kind = "ask"

    def __init__(self, answer: AgentAnswer) -> None:
        self.answer = answer
        #: One entry per history database written (empty: none kept).
        self.history: list[StoredRun] = []

    @property
    def interrupted(self) -> bool:
        return self.answer.interrupted

    @interrupted.setter
    def interrupted(self, value: bool) -> None:
        if value:
            self.answer.status = "interrupted"

    def as_results(self) -> list[Result]:
        if self.answer.status == "running":
            return []
        return [_result(self.answer)]


def _result(answer: AgentAnswer) -> Result:
    status = "answered" if answer.status == "succeeded" else "interrupted"
    return Result(
        kind="ask",
        subject=answer.agent,
        status=status,
        output=answer.output,
        latency_ms=None if answer.duration_s is None else answer.duration_s * 1000,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        details={"toolCalls": list(answer.tool_calls)},
    )


class Ask:
    """One question to one agent, on the run pipeline."""

    name = "ask"
    storage = Storage()

    def __init__(
        self,
        path: str | Path,
        question: str,
        *,
        project_dir: str | None,
        answer: AgentAnswer,
        outcome: AskOutcome | None = None,
    ) -> None:
        self.path = path
        self.question = question
        self.project_dir = project_dir
        self.answer = answer
        self.run = outcome if outcome is not None else AskOutcome(answer)
        self._agent: Agent | None = None
        self._context: RunContext | None = None
        self._handle: Handle | None = None

    async def plan(self, suite: SuiteRun) -> list[Ask]:
        """The agent loaded and its model's key found: an ask that cannot start never
        opens (or creates) the history."""
        project = load_project(self.path, project_dir=self.project_dir)
        self.run.history = suite.recorder.notes  # one entry per history, once it opens
        agent = self._agent = load_agent(project, self.path)
        self.answer.agent = agent.display
        self._context = suite.context(project)
        self._context.models.check([agent.model])
        self._handle = suite.add(project, RunRow(subject=agent.display), count=1)
        return [self]

    async def execute(self, unit: Ask, suite: SuiteRun) -> None:
        assert self._agent is not None and self._context is not None
        assert self._handle is not None
        subject = self._agent.display
        suite.emit(SubjectStarted(kind="ask", subject=subject, label=subject, steps=1))
        started = time.perf_counter()
        try:
            await answer_in(self._context, self._agent, self.question, self.answer)
        except (asyncio.CancelledError, KeyboardInterrupt):
            suite.recorder.submit(self._handle, _result(self.answer))
            raise
        suite.emit(
            SampleFinished(
                kind="ask",
                subject=subject,
                latency_ms=(time.perf_counter() - started) * 1000,
                cached=self.answer.cached_calls > 0,
            )
        )
        await suite.keep(self._handle, _result(self.answer))

    def stopped(self, suite: SuiteRun) -> None:
        """An interrupted ask keeps itself (``execute``)."""

    def finished(self, suite: SuiteRun) -> None:
        """Nothing to put in order: one answer."""


async def ask(
    path: str | Path,
    question: str,
    *,
    project_dir: str | None = None,
    environ: Mapping[str, str] | None = None,
    into: AgentAnswer | None = None,
    cache: bool | None = None,
    history: bool = True,
    db: str | Path | None = None,
    outcome: AskOutcome | None = None,
    events: EventSink | None = None,
) -> AgentAnswer:
    """``oxy run AGENT --question``: ask an agent one question, its answer kept in the
    project's history (``history=False``: not) and its model calls cached there (replayed
    with ``cache=True``), as for every other run; ``outcome`` (an :class:`AskOutcome` of
    ``into``) learns where it was stored. Bad input raises
    :class:`~oxyeval.errors.OxyError` (exit 2); a failed model call
    :class:`~oxyeval.errors.ProviderError` (3)."""
    answer = into if into is not None else AgentAnswer()
    answer.agent = answer.agent or str(path)
    kind = Ask(path, question, project_dir=project_dir, answer=answer, outcome=outcome)
    await run_kind(kind, db=db, environ=environ, history=history, cache=cache, events=events)
    return answer
