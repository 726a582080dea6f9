"""Executing a compiled workflow: independent tasks overlap, failures stay local.

Within a scope a task starts as soon as its dependencies have succeeded; a
failed task marks its dependents skipped while independent branches finish.
``concurrency`` bounds the units of work in flight (agent runs, judge calls,
SQL queries, formatters); containers (loops, branches, sub-workflows) take no
slot themselves, so nesting can never deadlock. Each model endpoint's adaptive
limit (providers/_limiter.py) applies on top, inside the provider layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EXIT_INFRA, EXIT_INPUT, ConfigError, LoadError, OxyError, ProviderError
from ..judge.consistency import evaluate
from ..judge.judge import Judge
from ..project.config import Agent, Project, load_agent, variable_error
from ..project.document import read_text
from ..project.limits import MAX_CONCURRENCY, MAX_LOOP_VALUES
from ..project.schema import did_you_mean
from ..project.templates import TemplateRef, render
from ..providers import ModelPool
from ..redact import redact, redact_data
from .agent import (
    AgentRunner,
    counted,
    describe_calls,
    stopped_at_token_limit,
    token_limit_warning,
)
from .compile import Plan, Scope, compile_workflow
from .outputs import (
    ConsistentOutput,
    LoopIteration,
    LoopOutput,
    LoopValue,
    ScopeOutput,
    to_jsonable,
)
from .spec import Task, Workflow, load_workflow, outside_project, walk_tasks
from .sql import SqlError, SqlResult, SqlRunner
from .sqltemplate import SqlTemplateRef, render_sql

__all__ = ["Engine", "TaskFailed", "TaskRecord", "WorkflowFailed", "WorkflowRun", "run_workflow"]

log = logging.getLogger("oxyeval.engine")

LOW_CONSISTENCY = 0.25


class TaskFailed(OxyError):
    """A task could not produce its output (provider, SQL, template or data problem)."""

    exit_code = EXIT_INFRA

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:  # a bad template or file stays bad input (exit 2)
            self.exit_code = exit_code


class WorkflowFailed(OxyError):
    """One or more tasks failed; the message names them and why.

    Exit 2 when a task failed on bad input (a template over a sandbox limit, a loop
    over too many values): running again will not help, the file must change.
    """

    exit_code = EXIT_INFRA

    def __init__(self, message: str, run: WorkflowRun) -> None:
        super().__init__(message)
        self.run = run
        if any(r.exit_code == EXIT_INPUT for r in run.failed):
            self.exit_code = EXIT_INPUT


@dataclass(repr=False)
class TaskRecord:
    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"TaskRecord({self.path!r})"

    path: str  # e.g. "report", "per_region[2].summary"
    name: str
    type: str
    status: str = "pending"  # succeeded | failed | skipped | cached | interrupted
    started: float | None = None
    ended: float | None = None
    error: str | None = None
    output: Any = None
    details: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None  # of the error, when failed

    @property
    def duration(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started

    def to_dict(self, origin: float = 0.0) -> dict[str, Any]:
        return {
            "path": self.path,
            "name": self.name,
            "type": self.type,
            "status": self.status,
            "started_s": None if self.started is None else round(self.started - origin, 4),
            "duration_s": None if self.duration is None else round(self.duration, 4),
            "error": self.error,
            "output": to_jsonable(self.output),
            **self.details,
        }


@dataclass(repr=False)
class WorkflowRun:
    """What a workflow run produced; filled in as tasks finish, so an interrupted run
    (``run_workflow(..., into=run)``) still holds every finished task.

    ``workflow`` is None only for an empty run handed to ``into=`` that was
    interrupted before its workflow was even loaded.
    """

    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"WorkflowRun({self.workflow.name if self.workflow else None!r})"

    workflow: Workflow | None = None
    records: list[TaskRecord] = field(default_factory=list)
    output: Any = None
    outputs: dict[str, Any] = field(default_factory=dict)  # top-level task name -> output
    started: float = 0.0
    ended: float = 0.0
    interrupted: bool = False

    @property
    def failed(self) -> list[TaskRecord]:
        return [r for r in self.records if r.status == "failed"]

    @property
    def skipped(self) -> list[TaskRecord]:
        return [r for r in self.records if r.status == "skipped"]

    @property
    def unfinished(self) -> list[TaskRecord]:
        """Tasks an interruption stopped (running) or kept from starting."""
        return [r for r in self.records if r.status == "interrupted"]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.interrupted

    def mark_interrupted(self) -> None:
        """Every task that had not finished is listed as interrupted, none left 'running'."""
        self.interrupted = True
        now = time.perf_counter()
        for record in self.records:
            if record.status == "running":
                record.status, record.error = "interrupted", "interrupted before it finished"
                record.ended = record.ended or now
            elif record.status == "pending":
                record.status, record.error = "interrupted", "interrupted before it started"

    def events(self) -> list[tuple[str, str, float]]:
        """(path, "start"|"end", time) in time order: what overlap tests read."""
        out = []
        for r in self.records:
            if r.started is not None:
                out.append((r.path, "start", r.started))
            if r.ended is not None:
                out.append((r.path, "end", r.ended))
        return sorted(out, key=lambda e: e[2])

    def summary(self) -> str:
        lines = []
        by_error: dict[str, list[str]] = {}
        for r in self.failed:
            by_error.setdefault(r.error or "", []).append(r.path)
        for error, paths in by_error.items():
            if len(paths) == 1:
                lines.append(f"task '{paths[0]}' failed: {error}")
            else:
                shown = ", ".join(f"'{p}'" for p in paths[:5]) + (", ..." if len(paths) > 5 else "")
                lines.append(f"{len(paths)} tasks ({shown}) failed: {error}")
        if self.skipped:
            lines.append(
                "skipped because a dependency failed: " + ", ".join(r.path for r in self.skipped)
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        status = "interrupted" if self.interrupted else ("succeeded" if self.ok else "failed")
        return {
            "workflow": None if self.workflow is None else self.workflow.doc.display,
            "status": status,
            "duration_s": round(self.ended - self.started, 4),
            "output": to_jsonable(self.output),
            "tasks": [r.to_dict(self.started) for r in self.records],
            "errors": [{"task": r.path, "error": r.error} for r in self.failed],
        }


def _truthy(text: str) -> bool:
    """Truth of a rendered condition: empty, false-like, zero and empty containers are false."""
    value = text.strip().lower()
    if value in ("", "false", "no", "none", "null", "off", "[]", "{}", "()"):
        return False
    try:
        return float(value) != 0
    except ValueError:
        return True


class Engine:
    """Runs workflows (and agents) of one project with shared models and databases."""

    def __init__(
        self,
        project: Project,
        pool: ModelPool,
        *,
        concurrency: int = 8,
        sql: SqlRunner | None = None,
        on_event: Callable[[TaskRecord], None] | None = None,
    ) -> None:
        self.project = project
        self.pool = pool
        self.sql = sql or SqlRunner(project.databases, project.root)
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self._agents: dict[Path, Agent] = {}
        self._runners: dict[Path, AgentRunner] = {}
        self._workflows: dict[Path, Plan] = {}
        self._on_event = on_event or (lambda _r: None)
        # Strings the project's author or its user wrote (variables' defaults, --var):
        # the only text an SQL template's raw_sql may print as SQL.
        self._trusted: set[str] = set()
        self._warned: set[str] = set()

    # -- loading, cached per run -------------------------------------------------------

    def agent(self, path: Path) -> Agent:
        agent = self._agents.get(path)
        if agent is None:
            agent = self._agents[path] = load_agent(self.project, path)
        return agent

    def plan(self, path: Path, stack: tuple[Path, ...] = ()) -> Plan:
        if path in stack:
            chain = " --> ".join(p.name for p in (*stack, path))
            raise ConfigError(f"sub-workflow cycle: {chain}")
        plan = self._workflows.get(path)
        if plan is None:
            plan = self._workflows[path] = compile_workflow(load_workflow(self.project, path))
            problems = []
            for task in walk_tasks(plan.workflow.tasks):
                given = list(task.spec.get("variables") or {})
                declared: list[str] | None = None
                if task.type == "agent" and task.agent_path is not None:
                    declared = list(self.agent(task.agent_path).doc.data.get("variables") or {})
                if task.type == "workflow" and task.workflow_path is not None:
                    declared = list(
                        self.plan(task.workflow_path, (*stack, path)).workflow.variables
                    )
                for name in given:
                    if declared is not None and name not in declared:
                        problems.append(
                            task.doc.diagnostic(
                                (*task.key, "variables", name),
                                f"task '{task.name}': {task.type} has no variable '{name}'"
                                f"{did_you_mean(name, declared)}; declared: {', '.join(declared) or 'none'}",
                                at_key=True,
                            )
                        )
            if problems:
                del self._workflows[path]
                raise LoadError(problems)
        return plan

    def models_used(self, plan: Plan) -> set[str]:
        """Every model a run may call, so missing keys fail before the first call."""
        names: set[str] = set()
        for task in walk_tasks(plan.workflow.tasks):
            if task.type == "agent" and task.agent_path is not None:
                names.add(self.agent(task.agent_path).model)
                if int(task.spec.get("consistency_run", 1) or 1) > 1:
                    names.add(
                        task.spec.get("judge_model")
                        or plan.workflow.judge_model
                        or self.project.default_judge
                    )
            if task.type == "workflow" and task.workflow_path is not None:
                names |= self.models_used(self.plan(task.workflow_path))
        return names

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._slots:
            yield

    # -- variables -----------------------------------------------------------------------

    def resolve_variables(self, workflow: Workflow, given: Mapping[str, Any]) -> dict[str, Any]:
        """Given values (coerced to the declared type) over defaults, checked by their schema."""
        unknown = sorted(set(given) - set(workflow.variables))
        if unknown:
            declared = ", ".join(workflow.variables) or "none"
            raise ConfigError(
                f"{workflow.doc.display}: unknown variable(s) {', '.join(unknown)}; declared: {declared}"
            )
        values: dict[str, Any] = {}
        missing = []
        for name, schema in workflow.variables.items():
            if name in given:
                value = _coerce(given[name], schema)
            elif "default" in schema:
                value = schema["default"]
            else:
                missing.append(name)
                continue
            error = variable_error(schema, value)
            if error is not None:
                shown = repr(value)
                if len(shown) > 80:  # a long value once, not twice (jsonschema repeats it)
                    error = error.replace(shown, "the value")
                    shown = shown[:77] + "..."
                raise ConfigError(f"{workflow.doc.display}: variable '{name}' = {shown}: {error}")
            values[name] = value
        if missing:
            raise ConfigError(
                f"{workflow.doc.display}: no value for variable(s) {', '.join(missing)}; pass "
                "--var NAME=VALUE or --vars FILE.yml, or give them a default"
            )
        # Defaults may themselves be templates over other variables (oxy allows it). A
        # given value is a value: rendering it would run a --var or a task output as a template.
        for name, value in values.items():
            if name not in given and isinstance(value, str) and "{{" in value:
                with contextlib.suppress(LoadError):
                    values[name] = render(
                        TemplateRef(value), {k: v for k, v in values.items() if k != name}
                    )
        return values

    # -- running -------------------------------------------------------------------------

    async def run(
        self,
        path: Path,
        variables: Mapping[str, Any] | None = None,
        *,
        into: WorkflowRun | None = None,
    ) -> WorkflowRun:
        """Run one workflow; ``into`` is filled as tasks finish (see :func:`run_workflow`)."""
        plan = self.plan(path.resolve())
        values = self.resolve_variables(plan.workflow, variables or {})
        self._trusted |= _strings(values.values())  # the user's own --var and the defaults
        return await self._run_plan(plan, values, "", into)

    async def _run_plan(
        self,
        plan: Plan,
        variables: dict[str, Any],
        prefix: str,
        into: WorkflowRun | None = None,
    ) -> WorkflowRun:
        run = into if into is not None else WorkflowRun(plan.workflow)
        run.workflow, run.started = plan.workflow, time.perf_counter()
        try:
            outputs = await self._run_scope(plan.root, dict(variables), prefix, run)
        except asyncio.CancelledError:
            run.mark_interrupted()
            raise
        finally:
            run.ended = time.perf_counter()
        run.outputs = outputs
        last = plan.workflow.tasks[-1].name
        run.output = outputs.get(last)
        return run

    async def _run_scope(
        self, scope: Scope, context: dict[str, Any], prefix: str, run: WorkflowRun
    ) -> dict[str, Any]:
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
                    record.exit_code = exc.exit_code if isinstance(exc, OxyError) else EXIT_INFRA
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
            cache_path = self._cache_path(task, context)
            output = _UNUSABLE
            if cache_path is not None and cache_path.exists():
                output = _read_cache(cache_path, task)
                if output is _UNUSABLE:
                    log.warning(
                        "task '%s': cache file %s is unreadable or not a %s output; running the task",
                        record.path,
                        cache_path,
                        task.type,
                    )
                else:
                    record.status = "cached"
                    record.details["cache"] = str(cache_path)
            if output is _UNUSABLE:
                output = await self._execute(task, scope, context, record, run)
                record.status = "succeeded"
                if cache_path is not None:
                    _write_output(
                        cache_path, output, "json" if cache_path.suffix == ".json" else None
                    )
            self._export(task, context, output, record)
        except LoadError as exc:  # a template failed at run time: say which task
            raise TaskFailed(f"{task.where}: {exc}", exit_code=exc.exit_code) from None
        except (ProviderError, SqlError, ConfigError, TaskFailed) as exc:
            record.ended = time.perf_counter()
            code = exc.exit_code if isinstance(exc, TaskFailed) else None
            raise TaskFailed(str(exc), exit_code=code) from None
        record.output = output
        record.ended = time.perf_counter()
        self._on_event(record)
        return output

    def _render(self, task: Task, field_name: str, context: Mapping[str, Any]) -> str:
        return render(task.templates[field_name], context)

    def _project_path(self, task: Task, text: str, what: str) -> Path:
        try:
            path = (self.project.root / text).resolve()
        except (OSError, ValueError):  # a NUL byte, a link loop
            path = None
        if path is None or not path.is_relative_to(self.project.root):
            raise TaskFailed(f"{task.where}: {outside_project(what, text, self.project.root)}")
        return path

    def _cache_path(self, task: Task, context: Mapping[str, Any]) -> Path | None:
        cache = task.spec.get("cache")
        if (
            not isinstance(cache, dict)
            or not cache.get("enabled")
            or "cache.path" not in task.templates
        ):
            return None
        return self._project_path(task, self._render(task, "cache.path", context).strip(), "cache")

    def _export(
        self, task: Task, context: Mapping[str, Any], output: Any, record: TaskRecord
    ) -> None:
        export = task.spec.get("export")
        if not isinstance(export, dict) or "export.path" not in task.templates:
            return
        path = self._project_path(
            task, self._render(task, "export.path", context).strip(), "export"
        )
        fmt = export["format"]
        if fmt == "sql":
            text = output.sql_text() if isinstance(output, SqlResult) else str(output)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(redact(text), "utf-8")
        else:
            _write_output(path, output, fmt)
        record.details.setdefault("exports", []).append(str(path))

    async def _execute(
        self,
        task: Task,
        scope: Scope,
        context: dict[str, Any],
        record: TaskRecord,
        run: WorkflowRun,
    ) -> Any:
        if task.type == "formatter":
            async with self.slot():
                return self._render(task, "template", context)
        if task.type == "execute_sql":
            return await self._execute_sql(task, context)
        if task.type == "agent":
            return await self._agent_task(task, context, record, run)
        if task.type == "loop_sequential":
            return await self._loop(task, scope, context, record, run)
        if task.type == "conditional":
            return await self._conditional(task, scope, context, record, run)
        if task.type == "workflow":
            return await self._subworkflow(task, context, record, run)
        raise TaskFailed(f"{task.where}: task type '{task.type}' is not supported by oxyeval yet")

    async def _execute_sql(self, task: Task, context: dict[str, Any]) -> SqlResult:
        values = self._variables(task, context, native=False)
        scope = {**context, **values}
        if "sql_query" in task.templates:
            ref = task.templates["sql_query"]
        elif "sql_file_path" in task.templates:
            rel = self._render(task, "sql_file_path", scope).strip()
            path = self._project_path(task, rel, "sql_file")
            if not path.is_file():
                raise TaskFailed(
                    f"{task.where}: SQL file {rel!r} not found under {self.project.root}"
                )
            try:
                text = read_text(path, what="an SQL file")
            except LoadError as exc:
                raise TaskFailed(
                    f"{task.where}: SQL file {rel!r}: {exc.diagnostics[0].message}",
                    exit_code=EXIT_INPUT,
                ) from None
            ref = SqlTemplateRef(text, task.doc, (*task.key, "sql_file"))
        else:
            ref = task.templates["sql_file"]
        # Values are bound, never spliced (sqltemplate); raw_sql may print only text the
        # workflow's author or its user wrote: variables' own values, literal task variables.
        literal = {
            value
            for name, value in (task.spec.get("variables") or {}).items()
            if isinstance(value, str) and not _is_template(value)
        }
        bound = render_sql(
            ref, scope, trusted=frozenset(self._trusted | literal), placeholders=values
        )
        async with self.slot():
            return await self.sql.query(
                task.spec["database"],
                bound.text,
                params=bound.params,
                limit=task.spec.get("dry_run_limit"),
            )

    def _warn_token_limit(self, path: str, cut: list[int], n: int, runner: AgentRunner) -> None:
        """One line per task (all its runs), and never the same line twice in a run of
        ``oxy test``, which runs the workflow n times."""
        if not cut:
            return
        which = counted(sorted(cut), n, "run")
        message = token_limit_warning(
            f"task '{path}'", which, runner.agent.model, runner.max_tokens
        )
        if message not in self._warned:
            self._warned.add(message)
            log.warning("%s", message)

    def _judge(self, task: Task, workflow: Workflow) -> Judge:
        prompt = task.templates.get("consistency_prompt") or workflow.consistency_prompt
        model = task.spec.get("judge_model") or workflow.judge_model or self.project.default_judge
        return Judge(self.pool.get(model), prompt, settings=self.project.judge)

    async def _agent_task(
        self, task: Task, context: dict[str, Any], record: TaskRecord, run: WorkflowRun
    ) -> Any:
        assert task.agent_path is not None
        runner = self._runners.get(task.agent_path)
        if runner is None:  # one per agent: its context files and system prompt are read once
            runner = self._runners[task.agent_path] = AgentRunner(
                self.agent(task.agent_path), self.pool, self.project.root, self.sql
            )
        prompt = self._render(task, "prompt", context)
        variables = self._variables(task, context, native=False)
        n = int(task.spec.get("consistency_run", 1) or 1)

        cut: list[int] = []  # runs whose answer stopped at the token limit

        async def one(run: int = 1) -> str:
            async with self.slot():
                completion = await runner.ask(prompt, variables or None)
            if completion.tool_calls:
                record.details.setdefault("tool_calls", []).extend(
                    describe_calls(completion.tool_calls)
                )
            if stopped_at_token_limit(completion.finish_reason):
                cut.append(run)
            return completion.text

        if n <= 1:
            text = await one()
            self._warn_token_limit(record.path, cut, 1, runner)
            return text
        results = await asyncio.gather(*(one(i + 1) for i in range(n)), return_exceptions=True)
        self._warn_token_limit(record.path, cut, n, runner)
        texts = {i + 1: r for i, r in enumerate(results) if isinstance(r, str)}
        errors = [f"run {i + 1}: {r}" for i, r in enumerate(results) if not isinstance(r, str)]
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, OxyError):
                raise r
        if not texts:
            raise TaskFailed(f"all {n} runs failed; first: {errors[0]}")
        assert run.workflow is not None  # set by _run_plan before any task runs
        judge = self._judge(task, run.workflow)
        comparisons, score = await evaluate(
            texts,
            judge.comparer(prompt, self.slot),
            pairing="all",
            scores={"A": 1.0, "B": 0.0},
            concurrency=n * n,
        )
        judge_errors = [c.error for c in comparisons if c.error]
        if len(texts) > 1 and score.accuracy is None:
            # Without one verdict the "most consistent" output would be an arbitrary pick
            # reported as checked; fail the task instead (as oxy test fails the test).
            raise TaskFailed(
                f"consistency_run: no valid verdict from judge '{judge.model.name}' "
                f"({len(judge_errors)} judge error(s); first: {judge_errors[0] if judge_errors else 'none'})"
            )
        if judge_errors:
            log.warning(
                "task '%s': %d of %d judge call(s) failed and were left out of the score; first: %s",
                record.path,
                len(judge_errors),
                len([c for c in comparisons if not c.identical]),
                judge_errors[0],
            )
        if errors:
            log.warning(
                "task '%s': %d of %d run(s) failed; first: %s",
                record.path,
                len(errors),
                n,
                errors[0],
            )
        selected = score.selected or min(texts)
        consistency = score.per_run.get(selected)
        record.details["consistency"] = {
            "runs": n,
            "successful_runs": len(texts),
            "score": consistency,
            "accuracy": score.accuracy,
            "selected_run": selected,
            "judge_model": judge.model.name,
            "judge_calls": score.judge_calls,
            "run_errors": errors,
            "judge_errors": judge_errors,
        }
        if consistency is not None and consistency < LOW_CONSISTENCY:
            log.warning(
                "task '%s': consistency score %.2f is below %.2f; the %d runs disagree",
                record.path,
                consistency,
                LOW_CONSISTENCY,
                len(texts),
            )
        return ConsistentOutput(texts[selected], consistency, record.details["consistency"])

    async def _loop(
        self,
        task: Task,
        scope: Scope,
        context: dict[str, Any],
        record: TaskRecord,
        run: WorkflowRun,
    ) -> LoopOutput:
        raw = task.spec.get("values")
        values = _as_list(
            raw if not isinstance(raw, str) else self._value(task, "values", context), task
        )
        if len(values) > MAX_LOOP_VALUES:
            raise TaskFailed(
                f"{task.where}: values has {len(values):,} items; a loop runs over at most "
                f"{MAX_LOOP_VALUES:,}",
                exit_code=EXIT_INPUT,
            )
        (body,) = scope.children[task.name]
        known = [t.name for t in body.tasks]
        semaphore = asyncio.Semaphore(
            min(MAX_CONCURRENCY, max(1, int(task.spec.get("concurrency", 1))))
        )

        async def iteration(index: int, value: Any) -> LoopIteration:
            async with semaphore:
                local = {**context, task.name: LoopValue(value, index)}
                outputs = await self._run_scope(body, local, f"{record.path}[{index}].", run)
            failed = [t for t in known if t not in outputs]
            if failed:
                raise TaskFailed(
                    f"iteration {index} (value {value!r}) did not complete: {', '.join(failed)}"
                )
            return LoopIteration(value, index, outputs, known, known[-1])

        results = await asyncio.gather(
            *(iteration(i, v) for i, v in enumerate(values)), return_exceptions=True
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise TaskFailed(
                f"{task.where}: {len(errors)} of {len(values)} iteration(s) failed; first: {errors[0]}"
            )
        return LoopOutput(results)

    def _expression(
        self, task: Task, ref: TemplateRef, context: dict[str, Any]
    ) -> tuple[bool, Any]:
        """Evaluate a template that is one ``{{ expr }}`` to the object itself (a list, a
        result), not its text; ``(False, None)`` for any larger template."""
        source = ref.source.strip()
        if not (source.startswith("{{") and source.endswith("}}") and source.count("{{") == 1):
            return False, None
        from jinja2 import Undefined
        from jinja2.sandbox import SecurityError

        from ..project.templates import evaluate

        try:
            value = evaluate(source[2:-2].strip(), context)
        except SecurityError as exc:  # a sandbox limit or a blocked attribute: the file's fault
            raise TaskFailed(f"{task.where}: {source!r}: {exc}", exit_code=EXIT_INPUT) from None
        except RecursionError:
            raise TaskFailed(
                f"{task.where}: {source!r}: recursion too deep", exit_code=EXIT_INPUT
            ) from None
        except Exception as exc:
            raise TaskFailed(f"{task.where}: {source!r}: {exc}") from None
        if isinstance(value, Undefined):
            render(ref, context)  # raises the usual error naming the file, task and line
        return True, value

    def _variables(self, task: Task, context: dict[str, Any], *, native: bool) -> dict[str, Any]:
        """A task's ``variables:``: templates rendered (or, ``native``, evaluated to objects),
        other values (numbers, lists, booleans) passed on as they are."""
        out: dict[str, Any] = {}
        for name, value in (task.spec.get("variables") or {}).items():
            field = f"variables.{name}"
            if field in task.templates:
                out[name] = (
                    self._value(task, field, context)
                    if native
                    else self._render(task, field, context)
                )
            else:
                out[name] = value
        return out

    def _value(self, task: Task, field_name: str, context: dict[str, Any]) -> Any:
        single, value = self._expression(task, task.templates[field_name], context)
        return value if single else self._render(task, field_name, context)

    async def _conditional(
        self,
        task: Task,
        scope: Scope,
        context: dict[str, Any],
        record: TaskRecord,
        run: WorkflowRun,
    ) -> ScopeOutput:
        children = scope.children.get(task.name, [])
        known = [t.name for branch in task.branches for t in branch.tasks]
        for k, branch in enumerate(task.branches):
            if branch.condition is not None and not self._condition(
                task, branch.condition, context
            ):
                continue
            record.details["branch"] = "else" if branch.condition is None else k
            outputs = await self._run_scope(children[k], context, f"{record.path}.", run)
            failed = [t.name for t in branch.tasks if t.name not in outputs]
            if failed:
                raise TaskFailed(f"branch task(s) did not complete: {', '.join(failed)}")
            return ScopeOutput(outputs, known, branch.tasks[-1].name if branch.tasks else None)
        record.details["branch"] = None
        return ScopeOutput({}, known, None)

    def _condition(self, task: Task, ref: TemplateRef, context: dict[str, Any]) -> bool:
        """A lone ``{{ expr }}`` is judged by Python truth (an empty result is false);
        a larger template by the text it renders."""
        single, value = self._expression(task, ref, context)
        if not single:
            return _truthy(render(ref, context))
        return _truthy(value) if isinstance(value, str) else bool(value)

    async def _subworkflow(
        self, task: Task, context: dict[str, Any], record: TaskRecord, run: WorkflowRun
    ) -> ScopeOutput:
        assert task.workflow_path is not None
        plan = self.plan(task.workflow_path)
        given = self._variables(task, context, native=True)
        variables = self.resolve_variables(plan.workflow, given)
        # Given values may be task outputs; only the sub-workflow's own defaults are trusted.
        self._trusted |= _strings(
            v
            for name, v in variables.items()
            if name not in given and not _is_template(plan.workflow.variables[name].get("default"))
        )
        sub = WorkflowRun(plan.workflow)
        try:
            await self._run_plan(plan, variables, f"{record.path}.", sub)
        finally:  # an interrupted sub-workflow's finished tasks are reported too
            run.records.extend(sub.records)
        if not sub.ok:
            raise TaskFailed(f"sub-workflow {plan.workflow.doc.display} failed: {sub.summary()}")
        names = [t.name for t in plan.workflow.tasks]
        return ScopeOutput(sub.outputs, names, names[-1])


def _is_template(value: Any) -> bool:
    return isinstance(value, str) and any(tag in value for tag in ("{{", "{%", "{#"))


def _strings(values: Iterable[Any]) -> set[str]:
    """Every string in these values, nested lists and mappings included."""
    out: set[str] = set()
    for value in values:
        if isinstance(value, str):
            out.add(value)
        elif isinstance(value, (list, tuple)):
            out |= _strings(value)
        elif isinstance(value, dict):
            out |= _strings(value.values())
    return out


def _coerce(value: Any, schema: Mapping[str, Any]) -> Any:
    """A --var string as the declared type (numbers, booleans, lists and objects as JSON)."""
    if not isinstance(value, str):
        return value
    kind = schema.get("type")
    if kind in ("integer", "number", "boolean", "array", "object"):
        try:
            return json.loads(value)
        except RecursionError:  # --var 'x=[[[[...' nested thousands deep
            return value  # the schema check reports the mismatch
        except ValueError:
            if kind == "boolean" and value.lower() in ("yes", "no", "on", "off"):
                return value.lower() in ("yes", "on")
            return value  # the schema check reports the mismatch
    return value


def _as_list(value: Any, task: Task) -> list[Any]:
    if isinstance(value, SqlResult):
        return value.rows
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            import ast

            try:
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError, RecursionError, MemoryError):
                parsed = [line.strip() for line in text.splitlines() if line.strip()]
        value = parsed
    if isinstance(value, (list, tuple)):
        return list(value)
    raise TaskFailed(
        f"{task.where}: values must be a list (or a template that yields one), got {type(value).__name__}"
    )


_UNUSABLE = object()


def _read_cache(path: Path, task: Task) -> Any:
    """The stored output, or ``_UNUSABLE`` when the file cannot stand for it (then the task
    runs and rewrites it): a corrupt cache must never change what a task outputs.

    A secret in the file (one written before secrets were scrubbed, or by hand) is
    redacted as it is read, so it never reaches a prompt or a report; should that break
    the file's JSON, the task simply runs again."""
    try:
        text = redact(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError):
        return _UNUSABLE
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError:
            return _UNUSABLE
        if isinstance(data, dict) and set(data) == {"columns", "rows"}:
            columns, rows = data["columns"], data["rows"]
            if not (
                isinstance(columns, list)
                and isinstance(rows, list)
                and all(isinstance(r, dict) for r in rows)
            ):
                return _UNUSABLE
            return SqlResult(columns, [tuple(r.get(c) for c in columns) for r in rows])
        if isinstance(data, dict) and set(data) == {"value", "score"}:
            return ConsistentOutput(str(data["value"]), data["score"], {"cached": True})
        return _UNUSABLE if task.type == "execute_sql" else data
    if task.type == "execute_sql":
        if path.suffix != ".csv":
            return _UNUSABLE
        return SqlResult.from_csv(text)
    return text


def _write_output(path: Path, output: Any, fmt: str | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        text = json.dumps(redact_data(to_jsonable(output)), indent=2, ensure_ascii=False)
    elif fmt == "csv":
        if isinstance(output, SqlResult):
            text = output.to_csv()
        else:
            raise TaskFailed(
                f"csv export needs a SQL result, got {type(output).__name__}; use txt or json"
            )
    elif isinstance(output, SqlResult) and path.suffix == ".csv":
        text = output.to_csv()
    else:
        text = str(output)
    path.write_text(redact(text), "utf-8")  # the one writer of cache and export files


async def run_workflow(
    path: str | Path,
    variables: Mapping[str, Any] | None = None,
    *,
    project_dir: str | None = None,
    concurrency: int = 8,
    on_event: Callable[[TaskRecord], None] | None = None,
    environ: Mapping[str, str] | None = None,
    into: WorkflowRun | None = None,
) -> WorkflowRun:
    """Load, compile and run one workflow; raises WorkflowFailed (with the run) on task failures.

    ``into`` (an empty ``WorkflowRun()``) is filled as tasks finish, so a caller
    whose run is cancelled (Ctrl-C, SIGTERM) still has every finished task, and
    the rest marked ``interrupted``.
    """
    from ..project.config import load_project

    project = load_project(path, project_dir=project_dir)
    pool = project.model_pool(environ=environ)
    engine = Engine(project, pool, concurrency=concurrency, on_event=on_event)
    try:
        plan = engine.plan(Path(path).resolve())
        pool.check(sorted(engine.models_used(plan)))
        run = await engine.run(Path(path), variables, into=into)
    finally:
        await pool.aclose()
        engine.sql.close()
    if not run.ok:
        raise WorkflowFailed(run.summary(), run)
    return run
