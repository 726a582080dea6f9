"""Workflow -> DAG: dependencies from the templates' own references.

Every template field is parsed with Jinja's AST; a name that is a sibling task
is a dependency, a name from an enclosing scope or a workflow variable is
fine, anything else is an error with the nearest name suggested. ``depends_on``
adds explicit edges. A cycle is reported as its path (``a --> b --> a``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import Diagnostic, LoadError
from ..project.schema import did_you_mean
from ..project.templates import TemplateRef, referenced_names

if TYPE_CHECKING:
    import networkx as nx

    from .spec import Task, Workflow

__all__ = ["CompiledWorkflow", "Scope", "compile_workflow", "render_mermaid", "render_plan"]

# Names Jinja itself provides, so a template may use them without a task or variable.
JINJA_NAMES = frozenset(
    {
        "range",
        "dict",
        "lipsum",
        "cycler",
        "joiner",
        "namespace",
        "loop",
        "true",
        "false",
        "none",
        "True",
        "False",
        "None",
        "self",
        "varargs",
        "kwargs",
        "caller",
    }
)


@dataclass(repr=False)
class Scope:
    """Sibling tasks and their dependency graph; nested scopes hang off loops and branches."""

    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"Scope({[t.name for t in self.tasks]!r})"

    tasks: list[Task]
    graph: nx.DiGraph
    levels: list[list[str]]
    children: dict[str, list[Scope]] = field(default_factory=dict)
    external: dict[str, set[str]] = field(default_factory=dict)  # task -> names from outside

    def task(self, name: str) -> Task:
        return next(t for t in self.tasks if t.name == name)

    def predecessors(self, name: str) -> list[str]:
        return sorted(self.graph.predecessors(name))


@dataclass(repr=False)
class CompiledWorkflow:
    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"CompiledWorkflow({self.workflow.name!r})"

    workflow: Workflow
    root: Scope


def _field_refs(task: Task) -> list[tuple[str, TemplateRef, set[str]]]:
    return [(name, ref, referenced_names(ref)) for name, ref in task.templates.items()]


def _external_refs(task: Task) -> set[str]:
    """Names a task reads from outside itself, nested tasks included."""
    names: set[str] = set()
    for _field, _ref, refs in _field_refs(task):
        names |= refs
    for scope in task.scopes():
        inner = {t.name for t in scope}
        for child in scope:
            names |= _external_refs(child) - inner
    if task.type == "loop_sequential":
        names.discard(task.name)
    return names


def _problem(
    task: Task, ref: TemplateRef, field_name: str, message: str, name: str | None = None
) -> Diagnostic:
    """A diagnostic at the template line that mentions ``name`` (else at the field)."""
    key = ref.key if ref.doc is not None else (*task.key, field_name)
    line = None
    if name is not None and ref.doc is not None:
        pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
        for number, text in enumerate(ref.source.splitlines(), 1):
            if pattern.search(text):
                line = ref.doc.text_line(ref.key, number)
                break
    return task.doc.diagnostic(key, f"task '{task.name}': {message}", line=line)


def _compile_scope(
    tasks: list[Task],
    visible: set[str],
    variables: set[str],
    problems: list[Diagnostic],
) -> Scope:
    import networkx as nx

    graph: nx.DiGraph = nx.DiGraph()
    local = {t.name for t in tasks}
    graph.add_nodes_from(t.name for t in tasks)
    known = local | visible | variables
    scope = Scope(tasks=tasks, graph=graph, levels=[])
    for task in tasks:
        inner_visible = visible | local
        if task.type == "loop_sequential":
            inner_visible = inner_visible | {task.name}
        # An execute_sql task's own variables are names its SQL may use.
        own = set(task.variables) if task.type == "execute_sql" else set()
        for field_name, ref, refs in _field_refs(task):
            for name in sorted(refs - (own if not field_name.startswith("variables.") else set())):
                if name == task.name and task.type != "loop_sequential":
                    problems.append(
                        _problem(
                            task,
                            ref,
                            field_name,
                            f"{name} --> {name}: a task cannot read its own output",
                        )
                    )
                elif name in local and name != task.name:
                    graph.add_edge(name, task.name)
                elif name not in known and name not in JINJA_NAMES:
                    hint = did_you_mean(name, known)
                    problems.append(
                        _problem(
                            task,
                            ref,
                            field_name,
                            f"unknown reference '{name}' in {field_name}{hint} "
                            "(not a task in scope or a workflow variable)",
                            name,
                        )
                    )
        children = [
            _compile_scope(scope_tasks, inner_visible, variables, problems)
            for scope_tasks in task.scopes()
        ]
        external = _external_refs(task)
        if children:
            scope.children[task.name] = children
            for name in external - {task.name}:
                if name in local:
                    graph.add_edge(name, task.name)
        scope.external[task.name] = {n for n in external if n not in local}
        for d, dep in enumerate(task.depends_on):
            if dep in local and dep != task.name:
                graph.add_edge(dep, task.name)
            else:
                problems.append(
                    task.doc.diagnostic(
                        (*task.key, "depends_on", d),
                        f"task '{task.name}': depends_on '{dep}' "
                        + (
                            "is the task itself"
                            if dep == task.name
                            else f"is not a sibling task{did_you_mean(dep, local - {task.name})}"
                        ),
                    )
                )
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        order = {t.name: i for i, t in enumerate(tasks)}
        scope.levels = [
            sorted(level, key=order.__getitem__) for level in nx.topological_generations(graph)
        ]
    else:
        path = [edge[0] for edge in cycle] + [cycle[0][0]]
        first = next(t for t in tasks if t.name == cycle[0][0])
        problems.append(
            first.doc.diagnostic(first.key, f"dependency cycle: {' --> '.join(path)}", at_key=True)
        )
    return scope


def compile_workflow(workflow: Workflow) -> CompiledWorkflow:
    """Build and check every scope's DAG; all problems are raised together."""
    problems: list[Diagnostic] = []
    for task in workflow.tasks:
        if task.name in workflow.variables:
            problems.append(
                task.doc.diagnostic(
                    (*task.key, "name"),
                    f"task '{task.name}' has the name of a workflow variable; templates could not "
                    "tell them apart. Rename one of them",
                )
            )
    root = _compile_scope(workflow.tasks, set(), set(workflow.variables), problems)
    if problems:
        raise LoadError(sorted(problems, key=lambda d: (d.line or 0, d.column or 0)))
    return CompiledWorkflow(workflow=workflow, root=root)


def _describe(task: Task) -> str:
    extra = ""
    if task.type == "agent" and task.consistency_run > 1:
        extra = f", consistency_run {task.consistency_run}"
    if task.type == "loop_sequential":
        extra = f", concurrency {task.concurrency}"
    return f"{task.name} ({task.type}{extra})"


def render_plan(plan: CompiledWorkflow) -> str:
    """Human-readable order: levels whose tasks can run in parallel."""
    lines = [f"Plan for {plan.workflow.doc.display}"]

    def walk(scope: Scope, indent: str) -> None:
        for number, level in enumerate(scope.levels, 1):
            parallel = "  (parallel)" if len(level) > 1 else ""
            lines.append(
                f"{indent}level {number}: "
                + ", ".join(_describe(scope.task(n)) for n in level)
                + parallel
            )
            for name in level:
                task = scope.task(name)
                deps = scope.predecessors(name)
                if deps:
                    lines.append(f"{indent}  {name} <- {', '.join(deps)}")
                for k, child in enumerate(scope.children.get(name, [])):
                    label = (
                        "body"
                        if task.type == "loop_sequential"
                        else (
                            "else"
                            if task.branches[k].condition is None
                            else f"if {task.branches[k].condition.source.strip()}"
                        )
                    )
                    lines.append(f"{indent}  {name} {label}:")
                    walk(child, indent + "    ")

    walk(plan.root, "")
    return "\n".join(lines)


def _node_id(path: list[str]) -> str:
    return "_".join(path).replace("-", "_")


def render_mermaid(plan: CompiledWorkflow) -> str:
    """A Mermaid flowchart; nested scopes become subgraphs."""
    out = ["flowchart TD"]

    def walk(scope: Scope, prefix: list[str], indent: str) -> None:
        for task in scope.tasks:
            node = _node_id([*prefix, task.name])
            children = scope.children.get(task.name, [])
            if children:
                out.append(f'{indent}subgraph {node} ["{task.name} ({task.type})"]')
                for k, child in enumerate(children):
                    tag = (
                        [*prefix, task.name, f"b{k}"]
                        if task.type == "conditional"
                        else [*prefix, task.name]
                    )
                    walk(child, tag, indent + "  ")
                out.append(f"{indent}end")
            else:
                out.append(f'{indent}{node}["{task.name}<br/>{task.type}"]')
        for src, dst in scope.graph.edges:
            out.append(f"{indent}{_node_id([*prefix, src])} --> {_node_id([*prefix, dst])}")

    walk(plan.root, [], "  ")
    return "\n".join(out)
