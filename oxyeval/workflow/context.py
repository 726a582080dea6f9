"""What one run against a project shares: its models, databases, agents and engine.

Every command that calls models (``oxy test``, ``oxy cases run``, ``oxy run``, a
Python caller) used to build a model pool, DuckDB connections and agent runners of
its own, and tear them down its own way. A :class:`RunContext` is that setup once:
one HTTP client and one adaptive limit per endpoint for chat and embedding calls
alike, one set of database connections, one runner per agent (its context files and
system prompt read once), opened lazily and closed together. Suites build on it
(A/B branches and judged tests will too); nothing in it is global.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from ..providers import ModelPool

if TYPE_CHECKING:
    from ..judge import JudgeSession
    from ..judge.verdicts import VerdictCache
    from ..project.agents import Agent
    from ..project.config import Project
    from ..providers import EmbeddingPool, ResponseCache, RetryPolicy
    from .agent import AgentRunner
    from .engine import Engine, TaskRecord
    from .sql import Databases

__all__ = ["DEFAULT_CONCURRENCY", "CacheFactory", "CallCache", "RunContext", "RunContexts"]

#: Units of work (agent runs, judge calls, queries) one workflow run keeps in flight.
DEFAULT_CONCURRENCY = 8


class CallCache(Protocol):
    """A run's cache of model calls (the history store's is :mod:`oxyeval.suites.run_cache`;
    this package cannot import it): answers for agents and prompts, verdicts for judges;
    either is None when the run's policy does not cache it."""

    @property
    def answers(self) -> ResponseCache | None: ...

    @property
    def verdicts(self) -> VerdictCache | None: ...

    async def aclose(self) -> None: ...


#: Makes the cache of one project's run (a command may run files of several projects).
CacheFactory = Callable[["Project"], "CallCache | None"]


class RunContext:
    """One project's shared machinery for one run; an async context manager.

    ``environ`` replaces ``os.environ`` for API keys (tests, embedding hosts);
    ``retry`` the retry policy of every model call.
    """

    def __init__(
        self,
        project: Project,
        *,
        environ: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        on_event: Callable[[TaskRecord], None] | None = None,
        cache: CallCache | None = None,
    ) -> None:
        self.project = project
        self.environ = environ
        self.concurrency = concurrency
        #: Answers and verdicts of earlier runs; the context closes it with the rest.
        self.cache = cache
        self.models = ModelPool(
            project.models, locate=project.model_error, retry=retry, environ=environ
        )
        from ..judge import JudgeSession

        #: What this run's judges learn about their models (structured output refused).
        self.judging: JudgeSession = JudgeSession()
        self._on_event = on_event
        self._databases: Databases | None = None
        self._embeddings: EmbeddingPool | None = None
        self._engine: Engine | None = None
        self._agents: dict[object, AgentRunner] = {}

    def __repr__(self) -> str:  # short: asyncio may repr it (3.11 SIGINT check)
        return f"RunContext({str(self.project.root)!r})"

    @property
    def answers(self) -> ResponseCache | None:
        """Where agent and prompt calls replay earlier answers (None: they never do)."""
        return self.cache.answers if self.cache is not None else None

    @property
    def verdicts(self) -> VerdictCache | None:
        """Where judges replay earlier verdicts (None: they never do)."""
        return self.cache.verdicts if self.cache is not None else None

    @property
    def databases(self) -> Databases:
        """The project's DuckDB connections, opened on first query."""
        if self._databases is None:
            from .sql import Databases

            self._databases = Databases(self.project.databases, self.project.root)
        return self._databases

    @property
    def embeddings(self) -> EmbeddingPool:
        """Embedding models, on the chat models' HTTP client and endpoint limits."""
        if self._embeddings is None:
            from ..providers import EmbeddingPool

            remote = any(s.vendor != "mock" for s in self.project.embeddings.values())
            self._embeddings = EmbeddingPool(
                self.project.embeddings,
                environ=self.environ,
                client=self.models.client if remote else None,
                limiters=self.models.limiters,
            )
        return self._embeddings

    @property
    def engine(self) -> Engine:
        """The workflow engine, on this context's models and databases."""
        if self._engine is None:
            from .engine import Engine

            self._engine = Engine(
                self.project,
                self.models,
                concurrency=self.concurrency,
                sql=self.databases,
                on_event=self._on_event,
                runners=self.agent,
                verdicts=self.verdicts,
                judging=self.judging,
            )
        return self._engine

    def agent(self, agent: Agent) -> AgentRunner:
        """One runner per agent file: n runs read its context files once."""
        key = agent.path if agent.path is not None else id(agent)  # built in code: by object
        runner = self._agents.get(key)
        if runner is None:
            from .agent import AgentRunner

            runner = AgentRunner(
                agent, self.models, self.project.root, self.databases, cache=self.answers
            )
            self._agents[key] = runner
        return runner

    async def aclose(self) -> None:
        try:
            if self._embeddings is not None:
                await self._embeddings.aclose()
        finally:
            try:
                await self.models.aclose()
            finally:
                try:
                    if self._databases is not None:
                        self._databases.close()
                finally:
                    if self.cache is not None:
                        await self.cache.aclose()

    async def __aenter__(self) -> RunContext:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class RunContexts:
    """One :class:`RunContext` per project, for a command given files of several projects;
    ``cache`` makes each project's cache (its history database is its own)."""

    def __init__(self, *, cache: CacheFactory | None = None, **options: Any) -> None:
        self._options = options
        self._cache = cache
        self._contexts: dict[Path, RunContext] = {}

    def get(self, project: Project, **options: Any) -> RunContext:
        """``project``'s context; ``options`` (a workflow run's ``concurrency`` and
        ``on_event``) apply when it is made, its first use in the run."""
        context = self._contexts.get(project.root)
        if context is None:
            cache = self._cache(project) if self._cache is not None else None
            context = self._contexts[project.root] = RunContext(
                project, cache=cache, **{**self._options, **options}
            )
        return context

    async def aclose(self) -> None:
        errors: list[BaseException] = []
        for context in self._contexts.values():
            try:
                await context.aclose()
            except Exception as exc:  # close the others before reporting
                errors.append(exc)
        if errors:
            raise errors[0]

    async def __aenter__(self) -> RunContexts:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
