"""Workflow -> DAG: dependencies from the templates' own references.

Every template field is parsed with Jinja's AST; a name that is a sibling task
is a dependency, a name from an enclosing scope or a workflow variable is
fine, anything else is an error with the nearest name suggested. ``depends_on``
adds explicit edges. A cycle is reported as its path (``a --> b --> a``).

Compiling also links the files a workflow runs: its agents and sub-workflows are
loaded (each file once, sub-workflow cycles reported), and what a task passes
them is checked against what they declare. So every check that needs no model
call and no data happens here, and ``oxy validate``, ``oxy compile`` and
``oxy run`` report the same problems.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError, Diagnostic, LoadError
from ..project.schema import did_you_mean
from ..project.templates import (
    JINJA_NAMES,
    TemplateRef,
    referenced_names,
    template_diagnostics,
)
from .shapes import Shape, body_shapes, scope_shapes, shape_problems

if TYPE_CHECKING:
    import networkx as nx

    from ..project.agents import Agent
    from .spec import Task, Workflow

__all__ = [
    "CompileCache",
    "CompiledWorkflow",
    "Scope",
    "compile_workflow",
    "render_mermaid",
    "render_plan",
]


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
    """A checked workflow: its DAG, and the agents and sub-workflows its tasks run."""

    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"CompiledWorkflow({self.workflow.name!r})"

    workflow: Workflow
    root: Scope
    agents: dict[Path, Agent] = field(default_factory=dict)  # nested tasks' included
    subworkflows: dict[Path, CompiledWorkflow] = field(default_factory=dict)

    def all_warnings(self) -> list[Diagnostic]:
        """Warnings of this file and of every sub-workflow it runs, each file once."""
        out: list[Diagnostic] = []
        seen: set[Path] = set()

        def walk(compiled: CompiledWorkflow) -> None:
            if compiled.workflow.path in seen:
                return
            seen.add(compiled.workflow.path)
            out.extend(compiled.workflow.warnings)
            for sub in compiled.subworkflows.values():
                walk(sub)

        walk(self)
        return out


@dataclass
class CompileCache:
    """Files compiled for one project, so each is loaded once however many workflows run
    it: compiled workflows and agents by resolved path, and the problems of files that
    failed (a second workflow running a broken file fails with the same problems)."""

    workflows: dict[Path, CompiledWorkflow] = field(default_factory=dict)
    agents: dict[Path, Agent] = field(default_factory=dict)
    failed: dict[Path, list[Diagnostic]] = field(default_factory=dict)


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
    shapes: dict[str, Shape] | None = None,
) -> Scope:
    import networkx as nx

    graph: nx.DiGraph = nx.DiGraph()
    local = {t.name for t in tasks}
    graph.add_nodes_from(t.name for t in tasks)
    known = local | visible | variables
    scope = Scope(tasks=tasks, graph=graph, levels=[])
    seen = scope_shapes(shapes or {}, tasks)  # outputs whose parts are known
    for task in tasks:
        inner_visible = visible | local
        if task.type == "loop_sequential":
            inner_visible = inner_visible | {task.name}
        for field_name, ref, _refs in _field_refs(task):
            problems.extend(shape_problems(task, field_name, ref, seen))
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
            _compile_scope(scope_tasks, inner_visible, variables, problems, body_shapes(task, seen))
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


def compile_workflow(workflow: Workflow, cache: CompileCache | None = None) -> CompiledWorkflow:
    """Build and check every scope's DAG, and link the agents and sub-workflows its tasks
    run (compiled too, each once, through ``cache``); all problems are raised together."""
    return _compile(workflow, cache if cache is not None else CompileCache(), ())


def _compile(workflow: Workflow, cache: CompileCache, stack: tuple[Path, ...]) -> CompiledWorkflow:
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
    _check_templated_defaults(workflow, problems)
    root = _compile_scope(workflow.tasks, set(), set(workflow.variables), problems)
    compiled = CompiledWorkflow(workflow=workflow, root=root)
    _link(compiled, cache, (*stack, workflow.path), problems)
    if problems:
        own = workflow.doc.display
        unique = {(d.file, d.line, d.column, d.key, d.message): d for d in problems}
        raise LoadError(
            sorted(
                unique.values(),
                key=lambda d: (d.file != own, d.file, d.line or 0, d.column or 0),
            )
        )
    cache.workflows[workflow.path] = compiled
    return compiled


def _check_templated_defaults(workflow: Workflow, problems: list[Diagnostic]) -> None:
    """A default that is a template (rendered over the other variables at run time) must
    parse and may read only other variables."""
    for name, schema in workflow.variables.items():
        value = schema.get("default")
        if not isinstance(value, str) or "{{" not in value:
            continue
        key = workflow.default_key(name)
        ref = TemplateRef(value, workflow.doc, key)
        syntax = template_diagnostics(ref)
        problems.extend(syntax)
        if syntax:
            continue
        others = set(workflow.variables) - {name}
        listed = ", ".join(sorted(others)) or "none"
        for unknown in sorted(referenced_names(ref) - others - JINJA_NAMES):
            if unknown == name:
                why = f"reads '{name}' itself; it may read only the other variables ({listed})"
            else:
                hint = did_you_mean(unknown, others)
                why = (
                    f"reads '{unknown}', which is not another variable{hint} (variables: {listed})"
                )
            problems.append(
                workflow.doc.diagnostic(key, f"variable '{name}': the default template {why}")
            )


def _load_agent(path: Path, workflow: Workflow, cache: CompileCache) -> Agent | None:
    """The agent at ``path``, loaded once; None when it has problems (kept in ``cache``)."""
    if path in cache.agents:
        return cache.agents[path]
    if path in cache.failed:
        return None
    from ..project.agents import load_agent

    try:
        agent = cache.agents[path] = load_agent(workflow.project, path)
    except LoadError as exc:
        cache.failed[path] = exc.diagnostics
        return None
    except ConfigError as exc:
        cache.failed[path] = [Diagnostic(str(path), str(exc))]
        return None
    return agent


def _load_subworkflow(
    path: Path, workflow: Workflow, cache: CompileCache, stack: tuple[Path, ...]
) -> CompiledWorkflow | None:
    """The sub-workflow at ``path``, compiled once; None when it has problems."""
    if path in cache.workflows:
        return cache.workflows[path]
    if path in cache.failed:
        return None
    from .spec import load_workflow

    try:
        return _compile(load_workflow(workflow.project, path), cache, stack)
    except LoadError as exc:
        cache.failed[path] = exc.diagnostics
    except ConfigError as exc:
        cache.failed[path] = [Diagnostic(str(path), str(exc))]
    return None


def _link(
    compiled: CompiledWorkflow,
    cache: CompileCache,
    stack: tuple[Path, ...],
    problems: list[Diagnostic],
) -> None:
    """Load what the tasks run and check what they pass it: variables it declares,
    every variable a sub-workflow needs (one without a default), no sub-workflow cycle."""
    from .spec import walk_tasks

    workflow = compiled.workflow
    for task in walk_tasks(workflow.tasks):
        declared: list[str] | None = None
        if task.type == "agent" and task.agent_path is not None:
            agent = _load_agent(task.agent_path, workflow, cache)
            if agent is None:
                problems.extend(cache.failed[task.agent_path])
                continue
            compiled.agents[task.agent_path] = agent
            declared = agent.variable_names
        elif task.type == "workflow" and task.workflow_path is not None:
            path = task.workflow_path
            if path in stack:
                chain = stack[stack.index(path) :]
                problems.append(
                    task.doc.diagnostic(
                        (*task.key, "src"),
                        f"task '{task.name}': sub-workflow cycle: "
                        + " --> ".join(p.name for p in (*chain, path)),
                    )
                )
                continue
            sub = _load_subworkflow(path, workflow, cache, stack)
            if sub is None:
                problems.extend(cache.failed[path])
                continue
            compiled.subworkflows[path] = sub
            declared = list(sub.workflow.variables)
            needed = [
                name
                for name, schema in sub.workflow.variables.items()
                if "default" not in schema and name not in task.variables
            ]
            if needed:
                problems.append(
                    task.doc.diagnostic(
                        (*task.key, "variables" if "variables" in task.spec else "src"),
                        f"task '{task.name}': sub-workflow {sub.workflow.doc.display} needs "
                        f"variable(s) {', '.join(needed)} (declared without a default); "
                        "pass them under variables:",
                        at_key=True,
                    )
                )
        if declared is None:
            continue
        for name in task.variables:
            if name not in declared:
                problems.append(
                    task.doc.diagnostic(
                        (*task.key, "variables", name),
                        f"task '{task.name}': {task.type} has no variable '{name}'"
                        f"{did_you_mean(name, declared)}; declared: {', '.join(declared) or 'none'}",
                        at_key=True,
                    )
                )


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
