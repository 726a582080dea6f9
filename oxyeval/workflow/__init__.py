"""Stage 5, workflows: a workflow file -> a DAG of tasks (compile) -> concurrent execution.

spec (files parsed into typed tasks) -> compile (the DAG, every static check) ->
engine (scheduling) with tasks (what each task type does), files (cache, exports),
records (what a run produced) and variables (a run's variable values).

Running an agent (its system prompt, tools and tool loop) and SQL, on the embedded
DuckDB engine or a warehouse (``warehouses``), live here too: they are what tasks
execute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "walk_tasks": "spec",
    "AgentRunner": "agent",
    "AgentAnswer": "ask",
    "ask_agent": "ask",
    "answer_in": "ask",
    "CompileCache": "compile",
    "CompiledWorkflow": "compile",
    "compile_workflow": "compile",
    "render_mermaid": "compile",
    "render_plan": "compile",
    "Engine": "engine",
    "execute_workflow": "engine",
    "TaskFailed": "records",
    "TaskRecord": "records",
    "WorkflowFailed": "records",
    "WorkflowRun": "records",
    "Task": "spec",
    "Workflow": "spec",
    "load_workflow": "spec",
    "SqlError": "sql",
    "SqlResult": "sql",
    "Databases": "sql",
    "CacheFactory": "context",
    "CallCache": "context",
    "RunContext": "context",
    "RunContexts": "context",
    "to_jsonable": "outputs",
}
__all__ = [
    "AgentAnswer",
    "AgentRunner",
    "CacheFactory",
    "CallCache",
    "CompileCache",
    "CompiledWorkflow",
    "Databases",
    "Engine",
    "RunContext",
    "RunContexts",
    "SqlError",
    "SqlResult",
    "Task",
    "TaskFailed",
    "TaskRecord",
    "Workflow",
    "WorkflowFailed",
    "WorkflowRun",
    "answer_in",
    "ask_agent",
    "compile_workflow",
    "execute_workflow",
    "load_workflow",
    "render_mermaid",
    "render_plan",
    "to_jsonable",
    "walk_tasks",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .agent import AgentRunner
    from .ask import AgentAnswer, answer_in, ask_agent
    from .compile import (
        CompileCache,
        CompiledWorkflow,
        compile_workflow,
        render_mermaid,
        render_plan,
    )
    from .context import CacheFactory, CallCache, RunContext, RunContexts
    from .engine import Engine, execute_workflow
    from .outputs import to_jsonable
    from .records import TaskFailed, TaskRecord, WorkflowFailed, WorkflowRun
    from .spec import Task, Workflow, load_workflow, walk_tasks
    from .sql import Databases, SqlError, SqlResult
