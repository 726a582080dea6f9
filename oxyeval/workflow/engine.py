"""Executing a compiled workflow: independent tasks overlap, failures stay local.

Within a scope a task starts as soon as its dependencies have succeeded; a
failed task marks its dependents skipped while independent branches finish.
``concurrency`` bounds the units of work in flight (agent runs, judge calls,
SQL queries, formatters); containers (loops, branches, sub-workflows) take no
slot themselves, so nesting can never deadlock. Each model endpoint's adaptive
limit (providers/_limiter.py) applies on top, inside the provider layer.

This module schedules; what each task type does is :mod:`oxyeval.workflow.tasks`,
its cache and export files :mod:`oxyeval.workflow.files`, and what a run produced
:mod:`oxyeval.workflow.records`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, LoadError, OxyError, ProviderError, is_bad_input
from ..judge import JudgeSession
from ..project.agents import Agent, load_agent
from ..project.config import Project
from ..providers import ModelPool
from .agent import AgentRunner
from .compile import CompileCache, CompiledWorkflow, Scope, compile_workflow
from .files import UNUSABLE, cache_path, export, read_cache, write_output
from .records import TaskFailed, TaskRecord, WorkflowFailed, WorkflowRun
from .spec import Task, Workflow, load_workflow, walk_tasks
from .sql import Databases, SqlError
from .tasks import execute
from .variables import resolve_variables, strings

if TYPE_CHECKING:
    from ..judge.verdicts import VerdictCache
    from .context import CacheFactory

# TaskFailed, TaskRecord, WorkflowFailed and WorkflowRun live in records.py; they stay
# importable from here, where callers have always found them.
__all__ = [
    "Engine",
    "TaskFailed",
    "TaskRecord",
    "WorkflowFailed",
    "WorkflowRun",
    "execute_workflow",
]

log = logging.getLogger("oxyeval.engine")


class Engine:
    """Runs workflows (and agents) of one project with shared models and databases."""

    def __init__(
        self,
        project: Project,
        pool: ModelPool,
        *,
        concurrency: int = 8,
        sql: Databases | None = None,
        on_event: Callable[[TaskRecord], None] | None = None,
        runners: Callable[[Agent], AgentRunner] | None = None,
        verdicts: VerdictCache | None = None,
        judging: JudgeSession | None = None,
    ) -> None:
        """``runners`` makes the agent runner for an agent (a RunContext's, so agents the
        suites and the engine both run share one); by default the engine makes its own.
        ``verdicts``: where consistency_run judges replay earlier verdicts; ``judging``:
        what the run's judges learn about their models (a RunContext's; by default the
        engine's own)."""
        self.project = project
        self.pool = pool
        self.verdicts = verdicts
        self.judging = judging if judging is not None else JudgeSession()
        self.sql = sql or Databases(project.databases, project.root)
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self._compiled = CompileCache()  # workflows and agents, each loaded once
        self._agents: dict[Path, Agent] = self._compiled.agents
        self._workflows: dict[Path, CompiledWorkflow] = self._compiled.workflows
        self._runners: dict[Path, AgentRunner] = {}
        self._make_runner = runners
        self._on_event = on_event or (lambda _r: None)
        # Strings the project's author or its user wrote (variables' defaults, --var):
        # the only text an SQL template's raw_sql may print as SQL.
        self.trusted: set[str] = set()
        self._warned: set[str] = set()

    # -- loading, cached per run -------------------------------------------------------

    def agent(self, path: Path) -> Agent:
        agent = self._agents.get(path)
        if agent is None:
            agent = self._agents[path] = load_agent(self.project, path)
        return agent

    def agent_runner(self, path: Path) -> AgentRunner:
        """One per agent: its context files and system prompt are read once."""
        runner = self._runners.get(path)
        if runner is None:
            agent = self.agent(path)
            runner = self._runners[path] = (
                self._make_runner(agent)
                if self._make_runner is not None
                else AgentRunner(agent, self.pool, self.project.root, self.sql)
            )
        return runner

    def plan(self, path: Path) -> CompiledWorkflow:
        """The workflow at ``path`` compiled and linked (its agents and sub-workflows too),
        once per engine; raises LoadError with every problem."""
        path = path.resolve()
        plan = self._workflows.get(path)
        if plan is None:
            plan = compile_workflow(load_workflow(self.project, path), self._compiled)
        return plan

    def models_used(self, plan: CompiledWorkflow) -> set[str]:
        """Every model a run may call, so missing keys fail before the first call."""
        names: set[str] = set()
        for task in walk_tasks(plan.workflow.tasks):
            if task.type == "agent" and task.agent_path is not None:
                names.add(plan.agents[task.agent_path].model)
                if task.consistency_run > 1:
                    names.add(
                        task.judge_model or plan.workflow.judge_model or self.project.default_judge
                    )
            if task.type == "workflow" and task.workflow_path is not None:
                names |= self.models_used(plan.subworkflows[task.workflow_path])
        return names

    def check_databases(self, plan: CompiledWorkflow) -> None:
        """A task, or an agent task's tool, on a database oxyeval cannot query here stops
        the run before any task runs (exit 2, at its line): the tasks before it would
        spend their model calls for a run that cannot finish."""
        for task in walk_tasks(plan.workflow.tasks):
            if task.type == "execute_sql" and task.database is not None:
                refusal = self.sql.refusal(task.database)
                if refusal:
                    raise LoadError([task.doc.diagnostic((*task.key, "database"), refusal)])
            elif task.type == "agent" and task.agent_path is not None:
                self.agent_runner(task.agent_path).check_tools()
            elif task.type == "workflow" and task.workflow_path is not None:
                self.check_databases(plan.subworkflows[task.workflow_path])

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """One unit of work in flight (an agent run, a judge call, a query, a formatter)."""
        async with self._slots:
            yield

    def warn_once(self, message: str) -> None:
        """Log a warning once per engine: ``oxy test`` runs a workflow n times."""
        if message not in self._warned:
            self._warned.add(message)
            log.warning("%s", message)

    # -- variables -----------------------------------------------------------------------

    def resolve_variables(self, workflow: Workflow, given: Mapping[str, Any]) -> dict[str, Any]:
        """Given values (coerced to the declared type) over defaults, checked by their schema."""
        return resolve_variables(workflow, given)

    # -- running -------------------------------------------------------------------------

    async def run(
        self,
        path: Path,
        variables: Mapping[str, Any] | None = None,
        *,
        into: WorkflowRun | None = None,
    ) -> WorkflowRun:
        """Run one workflow; ``into`` is filled as tasks finish (see :func:`execute_workflow`)."""
        plan = self.plan(path.resolve())
        self.check_databases(plan)
        values = self.resolve_variables(plan.workflow, variables or {})
        self.trusted |= strings(values.values())  # the user's own --var and the defaults
        return await self.run_compiled(plan, values, "", into)

    async def run_compiled(
        self,
        plan: CompiledWorkflow,
        variables: dict[str, Any],
        prefix: str,
        into: WorkflowRun | None = None,
    ) -> WorkflowRun:
        """Run a compiled workflow with resolved variables; task paths get ``prefix``."""
        run = into if into is not None else WorkflowRun(plan.workflow)
        run.workflow, run.started = plan.workflow, time.perf_counter()
        try:
            outputs = await self.run_scope(plan.root, dict(variables), prefix, run)
        except asyncio.CancelledError:
            run.mark_interrupted()
            raise
        finally:
            run.ended = time.perf_counter()
        run.outputs = outputs
        last = plan.workflow.tasks[-1].name
        run.output = outputs.get(last)
        return run

    async def run_scope(
        self, scope: Scope, context: dict[str, Any], prefix: str, run: WorkflowRun
    ) -> dict[str, Any]:
        """Run one scope's tasks in dependency order; the outputs of those that succeeded."""
        outputs: dict[str, Any] = {}
        status: dict[str, str] = {}
        records = {t.name: TaskRecord(f"{prefix}{t.name}", t.name, t.type) for t in scope.tasks}
        run.records.extend(records.values())
        pending = [t.name for t in scope.tasks]
        running: dict[asyncio.Task[Any], str] = {}
        while pending or running:
            progressed = True
            while progressed:
                progressed = False
                for name in list(pending):
                    preds = scope.predecessors(name)
                    bad = [p for p in preds if status.get(p) in ("failed", "skipped")]
                    if bad:
                        record = records[name]
                        record.status = "skipped"
                        record.error = f"dependency '{bad[0]}' {status[bad[0]]}"
                        status[name] = "skipped"
                        pending.remove(name)
                        self._on_event(record)
                        progressed = True
                    elif all(status.get(p) == "ok" for p in preds):
                        task = scope.task(name)
                        local = {**context, **outputs}
                        coro = self._run_task(task, scope, local, records[name], run)
                        running[asyncio.ensure_future(coro)] = name
                        pending.remove(name)
                        progressed = True
            if not running:
                break
            try:
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                # Waiting does not cancel what we wait for: stop the tasks, let them unwind.
                for fut in running:
                    fut.cancel()
                await asyncio.wait(running)
                raise
            for fut in done:
                name = running.pop(fut)
                record = records[name]
                try:
                    outputs[name] = fut.result()
                    status[name] = "ok"
                except (OxyError, OSError) as exc:
                    status[name] = "failed"
                    record.status = "failed"
                    record.error = str(exc)
                    record.bad_input = is_bad_input(exc)
                    record.ended = record.ended or time.perf_counter()
                    self._on_event(record)
        return outputs

    async def _run_task(
        self,
        task: Task,
        scope: Scope,
        context: dict[str, Any],
        record: TaskRecord,
        run: WorkflowRun,
    ) -> Any:
        record.started = time.perf_counter()
        record.status = "running"
        self._on_event(record)
        try:
            cached = cache_path(self.project.root, task, context)
            output = UNUSABLE
            if cached is not None and cached.exists():
                output = read_cache(cached, task)
                if output is UNUSABLE:
                    log.warning(
                        "task '%s': cache file %s is unreadable or not a %s output; running the task",
                        record.path,
                        cached,
                        task.type,
                    )
                else:
                    record.status = "cached"
                    record.details["cache"] = str(cached)
            if output is UNUSABLE:
                output = await execute(self, task, scope, context, record, run)
                record.status = "succeeded"
                if cached is not None:
                    write_output(cached, output, "json" if cached.suffix == ".json" else None)
            export(self.project.root, task, context, output, record)
        except LoadError as exc:  # a template failed at run time: say which task
            raise TaskFailed(_failed_template(task, exc), bad_input=is_bad_input(exc)) from None
        except (ProviderError, SqlError, ConfigError, TaskFailed) as exc:
            record.ended = time.perf_counter()
            raise TaskFailed(
                str(exc), bad_input=isinstance(exc, TaskFailed) and exc.bad_input
            ) from None
        record.output = output
        record.ended = time.perf_counter()
        self._on_event(record)
        return output


def _failed_template(task: Task, exc: LoadError) -> str:
    """A template that failed at run time, in one line per problem: where (file:line,
    key), which task, and what was wrong; not the load-time report with its source
    excerpt and "1 error(s) in" count, which would read as a second, nested error."""
    lines = []
    for d in exc.diagnostics:
        if d.file == task.doc.display:  # the workflow's own template: one place
            where = f"{d.location()}: {d.key} (task '{task.name}')" if d.key else task.where
        else:  # an agent's or SQL file's template, used by this task
            where = f"{task.where}: {d.location()}" + (f": {d.key}" if d.key else "")
        lines.append(f"{where}: {d.message}")
    return "; ".join(lines) or f"{task.where}: {exc}"


async def execute_workflow(
    path: str | Path,
    variables: Mapping[str, Any] | None = None,
    *,
    project_dir: str | None = None,
    concurrency: int = 8,
    on_event: Callable[[TaskRecord], None] | None = None,
    environ: Mapping[str, str] | None = None,
    into: WorkflowRun | None = None,
    cache: CacheFactory | None = None,
) -> WorkflowRun:
    """Load, compile and run one workflow; raises WorkflowFailed (with the run) on task failures.

    ``into`` (an empty ``WorkflowRun()``) is filled as tasks finish, so a caller
    whose run is cancelled (Ctrl-C, SIGTERM) still has every finished task, and
    the rest marked ``interrupted``. ``cache`` makes the project's cache of answers
    and verdicts (``oxyeval.suites.run_cache.cache_factory``); None: nothing is cached.
    """
    from ..errors import Diagnostic
    from ..project.config import load_project
    from ..project.document import path_problem
    from .context import RunContext

    problem = path_problem(path)  # said with the path as given, as oxy test says it
    if problem is not None:
        raise LoadError([Diagnostic(str(path), problem)])
    project = load_project(path, project_dir=project_dir)
    async with RunContext(
        project,
        environ=environ,
        concurrency=concurrency,
        on_event=on_event,
        cache=cache(project) if cache is not None else None,
    ) as context:
        engine = context.engine
        plan = engine.plan(Path(path).resolve())
        context.models.check(sorted(engine.models_used(plan)))
        into = into if into is not None else WorkflowRun()
        into.warnings[:] = [w.format() for w in plan.all_warnings()]
        run = await engine.run(Path(path), variables, into=into)
    if not run.ok:
        raise WorkflowFailed(run.summary(), run)
    return run
