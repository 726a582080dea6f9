"""Workflow files: tasks parsed into a tree of typed tasks, checked against the project.

Checks here are the ones that need no graph: unique names among siblings,
files that must exist (agent_ref, sql_file, sub-workflow src), databases and
judge models that must be in config.yml, and template syntax. References
between tasks, cycles, the execution plan and what tasks pass to the agents and
sub-workflows they run are :mod:`oxyeval.workflow.compile`'s job.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Diagnostic, LoadError
from ..project import WORKFLOW_SUFFIXES
from ..project.config import Project
from ..project.databases import database_use_problem
from ..project.document import Document, KeyPath, format_key_path, load_yaml, read_text
from ..project.files import inside_project, outside_project
from ..project.limits import MAX_CONCURRENCY
from ..project.schema import did_you_mean, validate_document
from ..project.templates import TemplateRef, referenced_names, template_diagnostics
from ..project.tests import TestSpec, check_judge_prompt, parse_tests
from ..project.varschema import check_variables
from .shapes import shapes_of, task_ref_problem
from .sqltemplate import SqlTemplateRef

__all__ = [
    "Branch",
    "Cache",
    "Export",
    "Task",
    "Workflow",
    "load_workflow",
    "resolve_project_file",
    "walk_tasks",
]

RUNNABLE = {"agent", "execute_sql", "formatter", "workflow", "loop_sequential", "conditional"}
EXPORT_FORMATS = {"csv", "json", "txt", "sql"}


@dataclass
class Branch:
    condition: TemplateRef | None  # None: the else branch
    tasks: list[Task]
    key: KeyPath


@dataclass
class Cache:
    """``cache: {enabled, path}``; the path is the template ``templates["cache.path"]``."""

    enabled: bool = False
    path: str | None = None


@dataclass
class Export:
    """``export: {format, path}`` in a format oxyeval writes (others are skipped with a
    warning at load); the path is the template ``templates["export.path"]``."""

    format: str
    path: str


@dataclass(repr=False)
class Task:
    """One task as the engine runs it: every field the file may set, typed and defaulted
    at load time. ``spec`` is the raw mapping, kept for positions in messages only."""

    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"Task({self.name!r})"

    name: str
    type: str
    spec: dict[str, Any]
    key: KeyPath
    doc: Document
    templates: dict[str, TemplateRef] = field(default_factory=dict)
    children: list[Task] = field(default_factory=list)  # loop body
    branches: list[Branch] = field(default_factory=list)  # conditional
    agent_path: Path | None = None
    sql_path: Path | None = None
    workflow_path: Path | None = None
    # Fields of the file, typed (oxy's names):
    depends_on: list[str] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)  # agent, execute_sql, workflow
    cache: Cache | None = None
    export: Export | None = None
    consistency_run: int = 1  # agent
    consistency_prompt: TemplateRef | None = None  # agent: its own judge prompt
    judge_model: str | None = None  # agent
    database: str | None = None  # execute_sql
    dry_run_limit: int | None = None  # execute_sql
    values: list[Any] | str | None = None  # loop_sequential: a list, or a template
    concurrency: int = 1  # loop_sequential: iterations in flight

    @property
    def where(self) -> str:
        return f"{self.doc.display}: {format_key_path(self.key)} (task '{self.name}')"

    def scopes(self) -> list[list[Task]]:
        """Nested task lists: the loop body, or each branch."""
        if self.type == "loop_sequential":
            return [self.children]
        return [b.tasks for b in self.branches]


@dataclass(repr=False)
class Workflow:
    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"Workflow({self.name!r})"

    name: str
    path: Path
    doc: Document
    project: Project
    tasks: list[Task]
    variables: dict[str, dict[str, Any]]
    consistency_prompt: TemplateRef | None
    judge_model: str | None
    tests: list[TestSpec]
    warnings: list[Diagnostic] = field(default_factory=list)

    def default_key(self, name: str) -> KeyPath:
        """Where a variable's default is written: ``variables.x.default``, or
        ``variables.x`` in oxy's short form (``x: value``)."""
        raw = self.doc.get(("variables", name))
        return ("variables", name) if not isinstance(raw, dict) else ("variables", name, "default")


def resolve_project_file(project: Project, ref: str, suffixes: tuple[str, ...] = ()) -> Path | None:
    """A project-relative path; bare names (``agent_ref: default``) are searched by file name."""
    candidate = (project.root / ref).resolve()
    if candidate.is_file():
        return candidate
    if "/" not in ref and suffixes:
        for suffix in suffixes:
            found = sorted(project.root.rglob(f"{ref}{suffix}"))
            # A file of that name that is a link out of the project is not a match: it
            # would be read as if it were the project's own (see link_leaves).
            inside = [
                real
                for f in found
                if not any(p.startswith(".") for p in f.relative_to(project.root).parts)
                and (real := inside_project(project.root, str(f))) is not None
            ]
            if inside:
                return inside[0]
    return None


def _leaves_project(project: Project, text: str) -> bool:
    """Whether a path (or, for a templated path, the folders before its first tag) leaves
    the project. The rest of a templated path is checked when it is rendered."""
    fixed = text
    for tag in ("{{", "{%", "{#"):
        fixed = fixed.split(tag, 1)[0]
    if fixed != text:
        fixed = fixed.rsplit("/", 1)[0] if "/" in fixed else ""
    return bool(fixed) and inside_project(project.root, fixed) is None


def _check_path(
    task: Task, project: Project, what: str, value: Any, key: KeyPath, problems: list[Diagnostic]
) -> bool:
    """A diagnostic (and False) for a path that leaves the project folder."""
    if isinstance(value, str) and _leaves_project(project, value):
        problems.append(task.doc.diagnostic(key, outside_project(what, value, project.root)))
        return False
    return True


def _template(
    task: Task,
    field_name: str,
    value: Any,
    key: KeyPath,
    problems: list[Diagnostic],
    kind: type[TemplateRef] = TemplateRef,
) -> None:
    if isinstance(value, str):
        ref = kind(value, task.doc, key)
        problems.extend(template_diagnostics(ref))
        task.templates[field_name] = ref


def _parse_tasks(
    items: list[dict[str, Any]],
    key: KeyPath,
    doc: Document,
    project: Project,
    problems: list[Diagnostic],
) -> list[Task]:
    tasks: list[Task] = []
    seen: dict[str, KeyPath] = {}
    for i, spec in enumerate(items):
        tkey = (*key, i)
        name, kind = spec.get("name"), spec.get("type")
        if not isinstance(name, str) or not isinstance(kind, str):
            continue
        if name in seen:
            first = doc.locate(seen[name])
            first_line = f" (line {first.line})" if first else ""
            problems.append(
                doc.diagnostic(
                    (*tkey, "name"),
                    f"task name '{name}' is used twice: {format_key_path(seen[name])}{first_line} "
                    f"and {format_key_path(tkey)}; names must be unique among sibling tasks",
                )
            )
        seen.setdefault(name, tkey)
        task = _typed(Task(name=name, type=kind, spec=spec, key=tkey, doc=doc))
        _check_task(task, project, problems)
        tasks.append(task)
    return tasks


def _int(value: Any, default: int | None) -> int | None:
    """A whole number from the file (the schema checked it; bool is not one)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _typed(task: Task) -> Task:
    """Fill the typed fields from the raw mapping. The schema has checked the types of
    runnable tasks; unsupported types are not checked, so nothing here trusts them."""
    spec = task.spec
    depends = spec.get("depends_on")
    task.depends_on = [str(d) for d in depends] if isinstance(depends, list) else []
    variables = spec.get("variables")
    task.variables = dict(variables) if isinstance(variables, dict) else {}
    cache = spec.get("cache")
    if isinstance(cache, dict):
        path = cache.get("path")
        task.cache = Cache(cache.get("enabled") is True, path if isinstance(path, str) else None)
    export = spec.get("export")
    if (
        isinstance(export, dict)
        and export.get("format") in EXPORT_FORMATS
        and isinstance(export.get("path"), str)
    ):
        task.export = Export(export["format"], export["path"])
    task.consistency_run = max(1, _int(spec.get("consistency_run"), 1) or 1)
    judge = spec.get("judge_model")
    task.judge_model = judge if isinstance(judge, str) and judge else None
    database = spec.get("database")
    task.database = database if isinstance(database, str) else None
    task.dry_run_limit = _int(spec.get("dry_run_limit"), None)
    values = spec.get("values")
    task.values = values if isinstance(values, (list, str)) else None
    task.concurrency = min(MAX_CONCURRENCY, max(1, _int(spec.get("concurrency"), 1) or 1))
    return task


def _check_task(task: Task, project: Project, problems: list[Diagnostic]) -> None:
    spec, doc, key = task.spec, task.doc, task.key
    if task.type not in RUNNABLE:
        return  # warned by the schema; fails if it runs
    for name, value in task.variables.items():
        _template(task, f"variables.{name}", value, (*key, "variables", name), problems)
    if task.cache is not None and task.cache.path:
        path_key = (*key, "cache", "path")
        _check_path(task, project, "cache", task.cache.path, path_key, problems)
        _template(task, "cache.path", task.cache.path, path_key, problems)
    export = spec.get("export")
    if isinstance(export, dict) and export.get("format") not in EXPORT_FORMATS:
        problems.append(
            doc.diagnostic(
                (*key, "export", "format"),
                f"export format '{export.get('format')}' is not supported by oxyeval; "
                "this export is skipped (supported: csv, json, txt, sql)",
                severity="warning",
            )
        )
    elif task.export is not None:
        path_key = (*key, "export", "path")
        _check_path(task, project, "export", task.export.path, path_key, problems)
        _template(task, "export.path", task.export.path, path_key, problems)

    if task.type == "agent":
        _template(task, "prompt", spec.get("prompt"), (*key, "prompt"), problems)
        ref = spec.get("agent_ref", "")
        task.agent_path = resolve_project_file(project, ref, (".agent.yml", ".agent.yaml"))
        if not _check_path(task, project, "agent_ref", ref, (*key, "agent_ref"), problems):
            task.agent_path = None
        elif task.agent_path is None:
            problems.append(
                doc.diagnostic(
                    (*key, "agent_ref"),
                    f"agent file '{ref}' not found (paths are relative to the project folder "
                    f"{project.root})",
                )
            )
        if isinstance(spec.get("consistency_prompt"), str) and spec["consistency_prompt"]:
            # A judge prompt, rendered with the two answers: not a template over the
            # workflow's tasks and variables (so not in task.templates, whose names the
            # compiler resolves in the workflow).
            task.consistency_prompt = TemplateRef(
                spec["consistency_prompt"], doc, (*key, "consistency_prompt")
            )
            check_judge_prompt(task.consistency_prompt, problems)
        _check_judge(doc, (*key, "judge_model"), task.judge_model, project, problems)
    elif task.type == "execute_sql":
        problem = database_use_problem(
            project.databases, str(task.database), project.config.display
        )
        if problem:
            problems.append(doc.diagnostic((*key, "database"), problem))
        if spec.get("sql_query") is not None:
            _template(
                task, "sql_query", spec["sql_query"], (*key, "sql_query"), problems, SqlTemplateRef
            )
        elif spec.get("sql_file") and not _check_path(
            task, project, "sql_file", spec["sql_file"], (*key, "sql_file"), problems
        ):
            pass  # never read: its text could end up in an error message
        elif spec.get("sql_file") and "{{" in spec["sql_file"]:
            # A templated path (oxy allows it): resolved, read and rendered at run time.
            _template(task, "sql_file_path", spec["sql_file"], (*key, "sql_file"), problems)
        elif spec.get("sql_file"):
            task.sql_path = resolve_project_file(project, spec["sql_file"])
            if task.sql_path is None:
                problems.append(
                    doc.diagnostic(
                        (*key, "sql_file"),
                        f"SQL file '{spec['sql_file']}' not found under {project.root}",
                    )
                )
            else:
                try:
                    text = read_text(task.sql_path, what="an SQL file")
                except LoadError as exc:
                    problems.append(
                        doc.diagnostic(
                            (*key, "sql_file"),
                            f"{task.sql_path.name}: {exc.diagnostics[0].message}",
                        )
                    )
                    text = ""
                ref = SqlTemplateRef(text, None, ())
                for d in template_diagnostics(ref):
                    problems.append(
                        doc.diagnostic((*key, "sql_file"), f"{task.sql_path.name}: {d.message}")
                    )
                task.templates["sql_file"] = ref
        _check_static_sql(task, project, problems)
    elif task.type == "formatter":
        _template(task, "template", spec.get("template"), (*key, "template"), problems)
    elif task.type == "workflow":
        src = spec.get("src", "")
        task.workflow_path = resolve_project_file(project, src, WORKFLOW_SUFFIXES)
        if not _check_path(task, project, "src", src, (*key, "src"), problems):
            task.workflow_path = None
        elif task.workflow_path is None:
            problems.append(
                doc.diagnostic(
                    (*key, "src"), f"workflow file '{src}' not found under {project.root}"
                )
            )
    elif task.type == "loop_sequential":
        _template(task, "values", spec.get("values"), (*key, "values"), problems)
        task.children = _parse_tasks(
            spec.get("tasks") or [], (*key, "tasks"), doc, project, problems
        )
    elif task.type == "conditional":
        for c, cond in enumerate(spec.get("conditions") or []):
            ckey = (*key, "conditions", c)
            source = str(cond.get("if", ""))
            if "{{" not in source and "{%" not in source:
                source = "{{ " + source + " }}"  # a bare expression: `x > 3`
            ref = TemplateRef(source, doc, (*ckey, "if"))
            problems.extend(template_diagnostics(ref))
            task.templates[f"conditions[{c}].if"] = ref
            branch_tasks = _parse_tasks(
                cond.get("tasks") or [], (*ckey, "tasks"), doc, project, problems
            )
            task.branches.append(Branch(ref, branch_tasks, ckey))
        if spec.get("else"):
            else_tasks = _parse_tasks(spec["else"], (*key, "else"), doc, project, problems)
            task.branches.append(Branch(None, else_tasks, (*key, "else")))


def _check_static_sql(task: Task, project: Project, problems: list[Diagnostic]) -> None:
    """SQL written without any template tag is checked now (one statement, of a kind the
    database allows), so ``oxy validate`` reports it with its line, not the run."""
    field = "sql_query" if "sql_query" in task.templates else "sql_file"
    ref = task.templates.get(field)
    entry = project.databases.get(task.database) if task.database is not None else None
    if ref is None or entry is None or entry.get("type") != "duckdb":
        return
    if any(tag in ref.source for tag in ("{{", "{%", "{#")) or not ref.source.strip():
        return
    from .sql import SqlError, check_statement, missing_files

    try:
        check_statement(entry["name"], ref.source, writable=entry.get("read_only", True) is False)
    except SqlError as exc:
        problems.append(task.doc.diagnostic((*task.key, field), str(exc)))
        return
    for message in missing_files(entry, project.root, ref.source):
        problems.append(task.doc.diagnostic((*task.key, field), message))


def _check_judge(
    doc: Document, key: KeyPath, name: Any, project: Project, problems: list[Diagnostic]
) -> None:
    if isinstance(name, str) and name not in project.models:
        models = list(project.models)
        problems.append(
            doc.diagnostic(
                key,
                f"unknown judge model '{name}'{did_you_mean(name, models)}; models: {', '.join(models)}",
            )
        )


def walk_tasks(tasks: list[Task]) -> list[Task]:
    """Every task, nested ones (loop bodies, branches) included, parents first."""
    out: list[Task] = []
    for task in tasks:
        out.append(task)
        for scope in task.scopes():
            out.extend(walk_tasks(scope))
    return out


#: What oxy's templates of a workflow variable may read from its semantic layer (its
#: ``variables: {month: "{{ dimensions.month }}"}`` types a variable by a dimension).
_SEMANTIC_NAMES = frozenset({"dimensions", "models"})


def _semantic_names(value: Any, others: set[str]) -> list[str]:
    """The semantic-layer names a variable's short form reads, when that is all it reads
    (besides other variables); empty for an ordinary value or templated default."""
    if not isinstance(value, str) or "{{" not in value:
        return []
    names = referenced_names(TemplateRef(value)) - others
    return sorted(names) if names and names <= _SEMANTIC_NAMES else []


def load_workflow(project: Project, path: str | os.PathLike[str]) -> Workflow:
    """Load and check one workflow file; every problem is reported together."""
    doc = load_yaml(path)
    problems = validate_document(doc, "workflow")
    if any(p.severity == "error" for p in problems) or not isinstance(doc.data, dict):
        raise LoadError(problems)
    data = doc.data
    tasks = _parse_tasks(data["tasks"], ("tasks",), doc, project, problems)
    prompt = None
    if data.get("consistency_prompt"):
        prompt = TemplateRef(data["consistency_prompt"], doc, ("consistency_prompt",))
        check_judge_prompt(prompt, problems)
    _check_judge(doc, ("judge_model",), data.get("judge_model"), project, problems)
    variables: dict[str, dict[str, Any]] = {}
    declared = data.get("variables") or {}
    for name, spec in declared.items():
        semantic = _semantic_names(spec, set(declared) - {name})
        if semantic:
            variables[name] = {}  # no default: given with --var, or a clear error at run time
            problems.append(
                doc.diagnostic(
                    ("variables", name),
                    f"variable '{name}' takes its type from oxy's semantic layer "
                    f"({', '.join(semantic)}), which oxyeval does not read; here it has no "
                    f"default: pass --var {name}=VALUE",
                    severity="warning",
                )
            )
            continue
        variables[name] = spec if isinstance(spec, dict) else {"default": spec}
    check_variables(doc, data.get("variables"), problems)
    tests = parse_tests(doc, project, problems, owner="workflow")
    top = {t.name for t in tasks}
    shapes = shapes_of(tasks)
    for test in tests:
        if test.task_ref is None:
            test.task_ref = tasks[-1].name if tasks else None
        elif test.task_ref.split(".")[0] not in top:
            problems.append(
                doc.diagnostic(
                    (*test.key, "task_ref"),
                    f"unknown task '{test.task_ref}'{did_you_mean(test.task_ref, top)}; tasks: "
                    f"{', '.join(t.name for t in tasks)}",
                )
            )
        else:
            problem = task_ref_problem(test.task_ref, shapes)
            if problem is not None:
                problems.append(doc.diagnostic((*test.key, "task_ref"), problem))
    if any(p.severity == "error" for p in problems):
        raise LoadError(sorted(problems, key=lambda d: (d.line or 0, d.column or 0)))
    name = doc.path.name
    for suffix in WORKFLOW_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return Workflow(
        name=name,
        path=doc.path,
        doc=doc,
        project=project,
        tasks=tasks,
        variables=variables,
        consistency_prompt=prompt,
        judge_model=data.get("judge_model"),
        tests=tests,
        warnings=[p for p in problems if p.severity == "warning"],
    )
