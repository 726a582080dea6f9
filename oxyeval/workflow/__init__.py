"""Stage 2, workflows: a workflow file -> a DAG of tasks (compile) -> concurrent execution.

Running an agent (its system prompt, tools and tool loop) and SQL on the embedded
DuckDB engine live here too: they are what tasks execute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "AgentRunner": "agent",
    "AgentAnswer": "ask",
    "ask_agent": "ask",
    "Plan": "compile",
    "compile_workflow": "compile",
    "Engine": "engine",
    "TaskFailed": "engine",
    "TaskRecord": "engine",
    "WorkflowFailed": "engine",
    "WorkflowRun": "engine",
    "run_workflow": "engine",
    "Task": "spec",
    "Workflow": "spec",
    "load_workflow": "spec",
    "SqlError": "sql",
    "SqlResult": "sql",
    "SqlRunner": "sql",
}
__all__ = [
    "AgentAnswer",
    "AgentRunner",
    "Engine",
    "Plan",
    "SqlError",
    "SqlResult",
    "SqlRunner",
    "Task",
    "TaskFailed",
    "TaskRecord",
    "Workflow",
    "WorkflowFailed",
    "WorkflowRun",
    "ask_agent",
    "compile_workflow",
    "load_workflow",
    "run_workflow",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .agent import AgentRunner
    from .ask import AgentAnswer, ask_agent
    from .compile import Plan, compile_workflow
    from .engine import Engine, TaskFailed, TaskRecord, WorkflowFailed, WorkflowRun, run_workflow
    from .spec import Task, Workflow, load_workflow
    from .sql import SqlError, SqlResult, SqlRunner
