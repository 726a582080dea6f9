"""What each task type does when it runs: agent, SQL, formatter, loop, conditional,
sub-workflow.

The engine (:mod:`oxyeval.workflow.engine`) decides when a task runs and records
the outcome; the functions here produce its output. Containers (loops, branches,
sub-workflows) hand their nested scopes back to the engine to schedule.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..errors import LoadError, OxyError
from ..inputs import JSONProblem, loads
from ..judge.consistency import assess
from ..judge.judge import Judge
from ..project.document import read_text
from ..project.limits import MAX_LOOP_VALUES
from ..project.templates import TemplateRef, render
from ..providers import Tally, counting
from .agent import AgentRunner, counted, describe_calls, stopped_at_token_limit, token_limit_warning
from .files import project_path
from .outputs import ConsistentOutput, LoopIteration, LoopOutput, LoopValue, ScopeOutput
from .records import TaskFailed, TaskRecord, WorkflowRun
from .sql import SqlResult
from .sqltemplate import SqlTemplateRef, render_sql
from .variables import is_template, strings

if TYPE_CHECKING:
    from .compile import Scope
    from .engine import Engine
    from .spec import Task, Workflow

__all__ = ["execute"]

log = logging.getLogger("oxyeval.engine")

LOW_CONSISTENCY = 0.25


async def execute(
    engine: Engine,
    task: Task,
    scope: Scope,
    context: dict[str, Any],
    record: TaskRecord,
    run: WorkflowRun,
) -> Any:
    """The task's output; raises TaskFailed (or the error of the layer that failed)."""
    if task.type == "formatter":
        async with engine.slot():
            return render(task.templates["template"], context)
    if task.type == "execute_sql":
        return await _execute_sql(engine, task, context)
    if task.type == "agent":
        return await _agent_task(engine, task, context, record, run)
    if task.type == "loop_sequential":
        return await _loop(engine, task, scope, context, record, run)
    if task.type == "conditional":
        return await _conditional(engine, task, scope, context, record, run)
    if task.type == "workflow":
        return await _subworkflow(engine, task, context, record, run)
    raise TaskFailed(f"{task.where}: task type '{task.type}' is not supported by oxyeval yet")


# -- template values ---------------------------------------------------------------------


def _expression(task: Task, ref: TemplateRef, context: dict[str, Any]) -> tuple[bool, Any]:
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
        raise TaskFailed(f"{task.where}: {source!r}: {exc}", bad_input=True) from None
    except RecursionError:
        raise TaskFailed(f"{task.where}: {source!r}: recursion too deep", bad_input=True) from None
    except Exception as exc:
        raise TaskFailed(f"{task.where}: {source!r}: {exc}") from None
    if isinstance(value, Undefined):
        render(ref, context)  # raises the usual error naming the file, task and line
    return True, value


def _value(task: Task, field_name: str, context: dict[str, Any]) -> Any:
    single, value = _expression(task, task.templates[field_name], context)
    return value if single else render(task.templates[field_name], context)


def _variables(task: Task, context: dict[str, Any], *, native: bool) -> dict[str, Any]:
    """A task's ``variables:``: templates rendered (or, ``native``, evaluated to objects),
    other values (numbers, lists, booleans) passed on as they are."""
    out: dict[str, Any] = {}
    for name, value in task.variables.items():
        field = f"variables.{name}"
        if field in task.templates:
            out[name] = (
                _value(task, field, context) if native else render(task.templates[field], context)
            )
        else:
            out[name] = value
    return out


def _truthy(text: str) -> bool:
    """Truth of a rendered condition: empty, false-like, zero and empty containers are false."""
    value = text.strip().lower()
    if value in ("", "false", "no", "none", "null", "off", "[]", "{}", "()"):
        return False
    try:
        return float(value) != 0
    except ValueError:
        return True


def _as_list(value: Any, task: Task) -> list[Any]:
    if isinstance(value, SqlResult):
        return value.rows
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed = loads(text, f"{task.where}: values")
        except JSONProblem as exc:
            if not exc.syntax:  # JSON, but out of bounds (NaN, 1e999, too deep): say so
                raise TaskFailed(f"{task.where}: values: {exc}") from None
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


# -- SQL ---------------------------------------------------------------------------------


async def _execute_sql(engine: Engine, task: Task, context: dict[str, Any]) -> SqlResult:
    values = _variables(task, context, native=False)
    scope = {**context, **values}
    root = engine.project.root
    if "sql_query" in task.templates:
        ref = task.templates["sql_query"]
    elif "sql_file_path" in task.templates:
        rel = render(task.templates["sql_file_path"], scope).strip()
        path = project_path(root, task, rel, "sql_file")
        if not path.is_file():
            raise TaskFailed(f"{task.where}: SQL file {rel!r} not found under {root}")
        try:
            text = read_text(path, what="an SQL file")
        except LoadError as exc:
            raise TaskFailed(
                f"{task.where}: SQL file {rel!r}: {exc.diagnostics[0].message}",
                bad_input=True,
            ) from None
        ref = SqlTemplateRef(text, task.doc, (*task.key, "sql_file"))
    else:
        ref = task.templates["sql_file"]
    # Values are bound, never spliced (sqltemplate); raw_sql may print only text the
    # workflow's author or its user wrote: variables' own values, literal task variables.
    literal = {
        value
        for value in task.variables.values()
        if isinstance(value, str) and not is_template(value)
    }
    assert task.database is not None  # required by the schema, checked at load
    entry = engine.project.databases.get(task.database) or {}
    bound = render_sql(
        ref,
        scope,
        trusted=frozenset(engine.trusted | literal),
        placeholders=values,
        dialect=str(entry.get("type", "duckdb")),
    )
    async with engine.slot():
        result = await engine.sql.query(
            task.database, bound.text, params=bound.params, limit=task.dry_run_limit
        )
    if result.truncated:
        engine.warn_once(
            f"{task.where}: the query returned more than {len(result):,} rows; only "
            f"the first {len(result):,} are kept (the database's max_rows in config.yml)"
        )
    return result


# -- agents ------------------------------------------------------------------------------


def _warn_token_limit(
    engine: Engine, path: str, cut: list[int], n: int, runner: AgentRunner
) -> None:
    """One line per task (all its runs), and never the same line twice in a run of
    ``oxy test``, which runs the workflow n times."""
    if not cut:
        return
    which = counted(sorted(cut), n, "run")
    message = token_limit_warning(f"task '{path}'", which, runner.agent.model, runner.max_tokens)
    engine.warn_once(message)


def _judge(engine: Engine, task: Task, workflow: Workflow) -> Judge:
    prompt = task.consistency_prompt or workflow.consistency_prompt
    model = task.judge_model or workflow.judge_model or engine.project.default_judge
    return Judge(
        engine.pool.get(model),
        prompt,
        settings=engine.project.judge,
        cache=engine.verdicts,
        session=engine.judging,
    )


async def _agent_task(
    engine: Engine, task: Task, context: dict[str, Any], record: TaskRecord, run: WorkflowRun
) -> Any:
    """An agent task's output; ``cached_calls`` on its record says how many of its model
    calls (answers, and a consistency_run's verdicts) a cache served instead."""
    with counting() as tally:
        try:
            return await _agent_output(engine, task, context, record, run, tally)
        finally:
            record.details["cached_calls"] = tally.calls


async def _agent_output(
    engine: Engine,
    task: Task,
    context: dict[str, Any],
    record: TaskRecord,
    run: WorkflowRun,
    tally: Tally,
) -> Any:
    assert task.agent_path is not None
    runner = engine.agent_runner(task.agent_path)
    prompt = render(task.templates["prompt"], context)
    record.asked = prompt
    variables = _variables(task, context, native=False)
    n = task.consistency_run

    cut: list[int] = []  # runs whose answer stopped at the token limit

    async def one(run: int = 1) -> str:
        async with engine.slot():
            completion = await runner.ask(prompt, variables or None, run=run)
        if completion.tool_calls:
            record.details.setdefault("tool_calls", []).extend(
                describe_calls(completion.tool_calls)
            )
        if stopped_at_token_limit(completion.finish_reason):
            cut.append(run)
        return completion.text

    if n <= 1:
        text = await one()
        _warn_token_limit(engine, record.path, cut, 1, runner)
        return text
    results = await asyncio.gather(*(one(i + 1) for i in range(n)), return_exceptions=True)
    _warn_token_limit(engine, record.path, cut, n, runner)
    texts = {i + 1: r for i, r in enumerate(results) if isinstance(r, str)}
    errors = [f"run {i + 1}: {r}" for i, r in enumerate(results) if not isinstance(r, str)]
    for r in results:
        if isinstance(r, BaseException) and not isinstance(r, OxyError):
            raise r
    if not texts:
        raise TaskFailed(f"all {n} runs failed; first: {errors[0]}")
    if len(texts) < 2:  # as a consistency test: nothing to compare
        raise TaskFailed(
            f"consistency_run: only 1 of {n} runs succeeded, need at least 2 to compare; "
            f"first error: {errors[0]}"
        )
    assert run.workflow is not None  # set by run_compiled before any task runs
    judge = _judge(engine, task, run.workflow)
    # The rules of a consistency test with its defaults (every pair, A=1 B=0, min_judged):
    # a score from too few verdicts would make an arbitrary pick look checked.
    outcome = await assess(texts, judge.comparer(prompt, engine.slot), n=n, concurrency=n * n)
    if outcome.error is not None:
        raise TaskFailed(f"consistency_run: judge '{judge.model.name}': {outcome.error}")
    comparisons, score = outcome.comparisons, outcome.score
    judge_errors = [c.error for c in comparisons if c.error]
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
    selected = outcome.selected or min(texts)
    consistency = score.per_run.get(selected)
    record.details["consistency"] = {
        "runs": n,
        "successful_runs": len(texts),
        "score": consistency,
        "accuracy": outcome.accuracy,
        "selected_run": selected,
        "judge_model": judge.model.name,
        "judge_calls": score.judge_calls,
        "cached_calls": tally.calls,  # the runs' and the judge's, as oxy test counts them
        "judged_pairs": score.judged_pairs,
        "total_pairs": outcome.total_pairs,
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


# -- containers --------------------------------------------------------------------------


async def _loop(
    engine: Engine,
    task: Task,
    scope: Scope,
    context: dict[str, Any],
    record: TaskRecord,
    run: WorkflowRun,
) -> LoopOutput:
    raw = task.values
    values = _as_list(raw if not isinstance(raw, str) else _value(task, "values", context), task)
    if len(values) > MAX_LOOP_VALUES:
        raise TaskFailed(
            f"{task.where}: values has {len(values):,} items; a loop runs over at most "
            f"{MAX_LOOP_VALUES:,}",
            bad_input=True,
        )
    (body,) = scope.children[task.name]
    known = [t.name for t in body.tasks]
    semaphore = asyncio.Semaphore(task.concurrency)

    async def iteration(index: int, value: Any) -> LoopIteration:
        async with semaphore:
            local = {**context, task.name: LoopValue(value, index)}
            outputs = await engine.run_scope(body, local, f"{record.path}[{index}].", run)
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


async def _conditional(
    engine: Engine,
    task: Task,
    scope: Scope,
    context: dict[str, Any],
    record: TaskRecord,
    run: WorkflowRun,
) -> ScopeOutput:
    children = scope.children.get(task.name, [])
    known = [t.name for branch in task.branches for t in branch.tasks]
    for k, branch in enumerate(task.branches):
        if branch.condition is not None and not _condition(task, branch.condition, context):
            continue
        record.details["branch"] = "else" if branch.condition is None else k
        outputs = await engine.run_scope(children[k], context, f"{record.path}.", run)
        failed = [t.name for t in branch.tasks if t.name not in outputs]
        if failed:
            raise TaskFailed(f"branch task(s) did not complete: {', '.join(failed)}")
        return ScopeOutput(outputs, known, branch.tasks[-1].name if branch.tasks else None)
    record.details["branch"] = None
    return ScopeOutput({}, known, None)


def _condition(task: Task, ref: TemplateRef, context: dict[str, Any]) -> bool:
    """A lone ``{{ expr }}`` is judged by Python truth (an empty result is false);
    a larger template by the text it renders."""
    single, value = _expression(task, ref, context)
    if not single:
        return _truthy(render(ref, context))
    return _truthy(value) if isinstance(value, str) else bool(value)


async def _subworkflow(
    engine: Engine, task: Task, context: dict[str, Any], record: TaskRecord, run: WorkflowRun
) -> ScopeOutput:
    assert task.workflow_path is not None
    plan = engine.plan(task.workflow_path)
    given = _variables(task, context, native=True)
    variables = engine.resolve_variables(plan.workflow, given)
    # Given values may be task outputs; only the sub-workflow's own defaults are trusted.
    engine.trusted |= strings(
        v
        for name, v in variables.items()
        if name not in given and not is_template(plan.workflow.variables[name].get("default"))
    )
    sub = WorkflowRun(plan.workflow)
    try:
        await engine.run_compiled(plan, variables, f"{record.path}.", sub)
    finally:  # an interrupted sub-workflow's finished tasks are reported too
        run.records.extend(sub.records)
    if not sub.ok:
        raise TaskFailed(f"sub-workflow {plan.workflow.doc.display} failed: {sub.summary()}")
    names = [t.name for t in plan.workflow.tasks]
    return ScopeOutput(sub.outputs, names, names[-1])
