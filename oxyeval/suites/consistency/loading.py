"""Which files hold consistency tests, loaded and checked before the first model call:
bad input fails fast with every problem listed, and a run never dies halfway through on a
config error."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError, Diagnostic, LoadError
from ...project.agents import Agent, load_agent
from ...project.config import Project, load_project
from ...project.document import path_problem
from ...project.files import file_kind, project_files
from ...project.tests import TestSpec
from ...workflow.compile import CompiledWorkflow, compile_workflow
from ...workflow.spec import load_workflow

__all__ = ["Subject", "collect_files", "load_all"]


def collect_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files to test: given files as they are, folders searched for agent/workflow files;
    each file once, however many of the paths name it (a folder and a file in it)."""
    out: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = project_files(path, ("agent", "workflow"))
            if not found:
                raise ConfigError(
                    f"{path}: no *.agent.yml, *.procedure.yml or *.workflow.yml files in this folder"
                )
        elif (problem := path_problem(path)) is not None:
            raise LoadError([Diagnostic(str(path), problem)])
        else:
            found = [path]
        for file in found:
            if file.resolve() not in seen:
                seen.add(file.resolve())
                out.append(file)
    return out


@dataclass
class Subject:
    """What a test runs n times: an agent answering, or a workflow producing a task's output."""

    project: Project
    file: Path
    tests: list[TestSpec]
    model: str  # shown in reports: the agent's model, or "workflow"
    agent: Agent | None = None
    plan: CompiledWorkflow | None = None


def load_all(files: list[Path], project_dir: str | None) -> tuple[list[Subject], list[str]]:
    projects: dict[Path, Project] = {}  # config path -> project, loaded once
    subjects: list[Subject] = []
    problems: list[Diagnostic] = []
    warnings: list[str] = []
    for file in files:
        kind = file_kind(file)
        try:
            project = load_project(file, project_dir=project_dir, cache=projects)
            if kind == "workflow":
                plan = compile_workflow(load_workflow(project, file))
                warnings.extend(w.format() for w in plan.workflow.warnings)
                subjects.append(Subject(project, file, plan.workflow.tests, "workflow", plan=plan))
                continue
            if kind != "agent":
                raise LoadError(
                    [
                        Diagnostic(
                            str(file),
                            "not a test file: oxy test takes *.agent.yml, *.procedure.yml or *.workflow.yml files",
                        )
                    ]
                )
            agent = load_agent(project, file)
            if agent.kind == "routing" and agent.tests:
                raise ConfigError(
                    f"{agent.display}: routing agents are not supported by oxyeval yet, so "
                    "their tests cannot run"
                )
        except LoadError as exc:
            problems.extend(exc.diagnostics)
            continue
        subjects.append(Subject(project, file, agent.tests, agent.model, agent=agent))
        warnings.extend(w.format() for w in agent.warnings)
    if problems:
        raise LoadError(problems)
    for project in projects.values():
        warnings[:0] = [w.format() for w in project.warnings]
    return subjects, warnings
