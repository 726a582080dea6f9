"""Agents (``*.agent.yml``): their model, system prompt, context files, tools and tests.

Loading checks everything that can be checked without calling a model (unknown models
and databases, template syntax, variable defaults against their schemas) and reports
all of a file's problems at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Diagnostic, LoadError
from ..providers import GenerateParams
from .agent_context import BUILTIN_NAMES, BuiltinContext, ContextMap
from .config import Project, check_model
from .context_checks import check_builtin_reads
from .databases import database_use_problem
from .document import Document, load_yaml
from .globals import read_globals
from .schema import did_you_mean, validate_document
from .templates import (
    JINJA_NAMES,
    TemplateRef,
    attribute_reads,
    loop_only_reads,
    referenced_names,
    template_diagnostics,
)
from .tests import TestSpec, parse_tests
from .varschema import check_variables

__all__ = [
    "Agent",
    "ContextSpec",
    "load_agent",
]


@dataclass(frozen=True)
class ContextSpec:
    name: str
    type: str
    src: tuple[str, ...]


@dataclass(repr=False)
class Agent:
    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"Agent({self.name!r})"

    """An agent as declared in an ``*.agent.yml`` file, or built in code (the SDK):
    ``Agent("analyst", "gpt-4o-mini", "You answer from the data.")``."""

    name: str
    model: str
    system_instructions: TemplateRef
    path: Path | None = None  # None: built in code, not read from a file
    doc: Document | None = None
    description: str = ""
    context: list[ContextSpec] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_tool_calls: int = 10
    variables: dict[str, Any] = field(default_factory=dict)
    params: GenerateParams = field(default_factory=GenerateParams)
    tests: list[TestSpec] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)
    kind: str = "default"  # "default" or "routing" (routing agents load but cannot run)
    #: What oxy gives system_instructions besides variables and context (databases, tools,
    #: globals); None for an agent built in code, which has no project.
    builtins: BuiltinContext | None = None
    #: Contexts the template only loops over without declaring them: empty lists, as oxy
    #: renders such a loop (see _check_system_names).
    absent_contexts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.system_instructions, str):  # built in code from plain text
            self.system_instructions = TemplateRef(self.system_instructions)

    @property
    def display(self) -> str:
        """Where the agent comes from, for messages: its file, or its name."""
        return self.doc.display if self.doc is not None else f"agent '{self.name}'"

    @property
    def variable_names(self) -> list[str]:
        """Every variable the agent declares, with a default or without (one built in
        code declares those it has defaults for)."""
        declared = self.doc.data.get("variables") if self.doc is not None else None
        return list(declared) if isinstance(declared, dict) else list(self.variables)

    def own_variables(self, inputs: Mapping[str, Any] | None) -> dict[str, Any]:
        """The inputs that are this agent's variables. A test case's input (or a target's
        inputs) also fills the question template, so it holds names like ``question``
        that are not the agent's: those stay out of the system prompt, which then
        renders as ``oxy run --question`` renders it, plus the overrides."""
        names = set(self.variable_names)
        return {k: v for k, v in (inputs or {}).items() if k in names}

    def template_values(
        self,
        variables: Mapping[str, Any] | None = None,
        context: Mapping[str, str] | None = None,
        *,
        question: str = "",
        describe: Callable[[str], ContextMap] | None = None,
    ) -> dict[str, Any]:
        """What ``system_instructions`` renders with, the one rule for every way an agent
        runs (``oxy run --question``, ``oxy test``, a workflow's agent task, a test case,
        and the load-time check of a case): the variable defaults, then the given
        variables, then oxy's built-in context (``databases``, ``tools``, ``globals``: it
        takes a same-named variable's place, as in oxy; ``question`` is ``tools.prompt``,
        ``describe`` reads a database's DDL, without it every DDL is an empty stand-in),
        then ``context`` (the context files' text by name)."""
        values = {**self.variables, **(variables or {})}
        if self.builtins is not None:
            values.update(self.builtins.values(question, describe))
        values["context"] = {**{n: [] for n in self.absent_contexts}, **(context or {})}
        return values

    @property
    def reads_question(self) -> bool:
        """The system prompt depends on the question (``tools.prompt``), so it is
        rendered for each question rather than once."""
        return self.builtins is not None and "tools" in referenced_names(self.system_instructions)


@dataclass(frozen=True)
class _Checked:
    system: TemplateRef
    context: list[ContextSpec]
    tests: list[TestSpec]
    builtins: BuiltinContext
    absent_contexts: tuple[str, ...]


def _check_agent(doc: Document, project: Project, problems: list[Diagnostic]) -> _Checked:
    """Checks beyond the schema: model names, databases, templates, tests."""
    data = doc.data
    check_model(doc, ("model",), data.get("model"), project, problems, "model")
    if data.get("type") == "routing":
        problems.append(
            doc.diagnostic(
                ("type",),
                "routing agents are not supported by oxyeval yet; they validate but cannot run",
                severity="warning",
            )
        )
    source = data.get("system_instructions", "")
    system = TemplateRef(source if isinstance(source, str) else "", doc, ("system_instructions",))
    problems.extend(template_diagnostics(system))
    context = [
        ContextSpec(
            c["name"], c["type"], tuple([c["src"]] if isinstance(c["src"], str) else c["src"])
        )
        for c in data.get("context") or []
    ]
    for i, ctx in enumerate(context):
        if ctx.type != "file":
            problems.append(
                doc.diagnostic(
                    ("context", i, "type"),
                    f"context type '{ctx.type}' is not supported by oxyeval yet; "
                    f"{{{{ context.{ctx.name} }}}} will fail if used",
                    severity="warning",
                )
            )
        else:
            _check_context_files(doc, project.root, i, ctx, problems)
    tools = data.get("tools") or []
    globals_: dict[str, Any] = {}
    if "globals" in referenced_names(system):  # the folder is read only when used
        globals_, found = read_globals(project.root, project.globals_cache)
        problems.extend(found)
    builtins = BuiltinContext(
        agent_name=str(data.get("name") or _stem(doc.path)),
        tools=tuple(str(t.get("name") or t.get("type")) for t in tools),
        databases=project.databases,
        globals=globals_,
    )
    absent = _check_system_names(doc, system, data.get("variables"), context, builtins, problems)
    for i, tool in enumerate(tools):
        db = tool.get("database")
        if tool.get("type") == "execute_sql" and db is not None:
            problem = database_use_problem(project.databases, str(db), project.config.display)
            if problem:
                problems.append(doc.diagnostic(("tools", i, "database"), problem))
    check_variables(doc, data.get("variables"), problems)
    tests = parse_tests(doc, project, problems, owner="agent")
    return _Checked(system, context, tests, builtins, absent)


def _check_system_names(
    doc: Document,
    system: TemplateRef,
    variables: Any,
    context: list[ContextSpec],
    builtins: BuiltinContext,
    problems: list[Diagnostic],
) -> tuple[str, ...]:
    """``system_instructions`` renders with the agent's variables, ``context`` and oxy's
    built-in context (:meth:`Agent.template_values`): any other name, a context that is
    not declared, or a database, tool or globals file the project does not have fails
    every run, so it fails the file instead (as ``oxy test`` would, before any model
    call). One exception, as oxy renders it: a loop over a context the agent does not
    declare loops over nothing (a warning); those contexts are returned."""
    if template_diagnostics(system):
        return ()
    declared = list(variables) if isinstance(variables, dict) else []
    known = {*declared, "context", *BUILTIN_NAMES}
    for name in sorted(referenced_names(system) - known - JINJA_NAMES):
        listed = ", ".join(declared) or "none"
        problems.append(
            _at_line(
                doc,
                system,
                name,
                f"system_instructions uses '{name}', which is not a variable of this agent"
                f"{did_you_mean(name, known)} (variables: {listed}; and oxy's context, "
                "databases, tools, globals); declare it under variables:",
            )
        )
    check_builtin_reads(doc, system, builtins, declared, problems)
    names = [c.name for c in context]
    looped = loop_only_reads(system, "context") - set(names)
    warned: set[str] = set()
    for attr, line in attribute_reads(system, "context"):
        if attr in names or attr in warned:
            continue
        where = doc.text_line(("system_instructions",), line)
        message = (
            f"system_instructions reads context.{attr}, but the agent has no context "
            f"'{attr}'{did_you_mean(attr, names)} (context: {', '.join(names) or 'none'})"
        )
        if attr in looped:  # once per name
            warned.add(attr)
            message += ": oxy loops over nothing there, and so does oxyeval"
        severity = "warning" if attr in looped else "error"
        problems.append(
            doc.diagnostic(("system_instructions",), message, line=where, severity=severity)
        )
    return tuple(sorted(looped))


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".agent.yml", ".agent.yaml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _at_line(doc: Document, ref: TemplateRef, name: str, message: str) -> Diagnostic:
    """A diagnostic on the first line of ``ref`` that mentions ``name``."""
    import re

    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
    line = None
    for number, text in enumerate(ref.source.splitlines(), 1):
        if pattern.search(text):
            line = doc.text_line(ref.key, number)
            break
    return doc.diagnostic(ref.key, message, line=line)


def _check_context_files(
    doc: Document, root: Path, index: int, ctx: ContextSpec, problems: list[Diagnostic]
) -> None:
    """What reading a file context would refuse (``workflow.agent.read_context``), found
    when the file loads: a glob leaving the project, one matching no file."""
    root = root.resolve()
    for pattern in ctx.src:
        key = ("context", index, "src")
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            problems.append(
                doc.diagnostic(
                    key,
                    f"context '{ctx.name}': {pattern!r} must stay inside the project folder "
                    f"{root} (no absolute paths or '..')",
                )
            )
            continue
        try:
            matches = [p for p in root.glob(pattern) if p.is_file()]
        except (OSError, ValueError, NotImplementedError) as exc:
            problems.append(doc.diagnostic(key, f"context '{ctx.name}': {pattern!r}: {exc}"))
            continue
        if not matches:
            problems.append(
                doc.diagnostic(
                    key,
                    f"context '{ctx.name}': {pattern!r} matches no file under {root} (paths "
                    "are relative to the project folder)",
                )
            )
        elif any(not p.resolve().is_relative_to(root) for p in matches):
            problems.append(
                doc.diagnostic(
                    key, f"context '{ctx.name}': {pattern!r} reaches a file outside {root}"
                )
            )


def load_agent(project: Project, path: str | os.PathLike[str]) -> Agent:
    """Load, validate and check one agent file against its project."""
    doc = load_yaml(path)
    problems = validate_document(doc, "agent")
    schema_ok = not any(p.severity == "error" for p in problems)
    if not isinstance(doc.data, dict):
        raise LoadError(problems)
    try:
        parts = _check_agent(doc, project, problems)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError):
        # Semantic checks also run on a file with schema errors, to report everything at
        # once; where the data's shape is too broken for them, the schema errors suffice.
        if schema_ok:
            raise
        parts = None
    if parts is None or any(p.severity == "error" for p in problems):
        raise LoadError(sorted(problems, key=lambda d: (d.line or 0, d.column or 0)))
    checked = parts
    data = doc.data
    variables = {}
    for name, spec in (data.get("variables") or {}).items():
        if not isinstance(spec, dict):
            variables[name] = spec  # oxy's short form: the value is the default
        elif "default" in spec:
            variables[name] = spec["default"]
        # A declared variable without a default stays undefined, so a template that uses
        # it fails naming it instead of rendering the word "None".
    return Agent(
        name=_stem(doc.path),
        path=doc.path,
        doc=doc,
        model=data["model"],
        system_instructions=checked.system,
        description=data.get("description", ""),
        context=checked.context,
        tools=[{"name": t.get("type"), **t} for t in data.get("tools") or []],
        max_tool_calls=data.get("max_tool_calls", 10),
        variables=variables,
        params=GenerateParams(
            temperature=data.get("temperature"), max_tokens=data.get("max_tokens")
        ),
        tests=checked.tests,
        warnings=[p for p in problems if p.severity == "warning"],
        kind=data.get("type", "default"),
        builtins=checked.builtins,
        absent_contexts=checked.absent_contexts,
    )
