"""``oxy validate``: check files or whole projects without calling any model."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError, Diagnostic, LoadError
from ..project import dataset_problems, is_dataset
from ..project.agents import load_agent
from ..project.config import Project, load_project
from ..project.document import KeyPath, load_yaml, path_problem
from ..project.files import file_kind, find_config, project_files
from ..project.schema import validate_document

__all__ = ["ValidationReport", "credential_warnings", "history_problems", "validate_paths"]


@dataclass
class ValidationReport:
    files: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    projects: dict[Path, Project] = field(default_factory=dict, repr=False)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]


def _project_or_own_schema(
    target: Path, kind: str, project_dir: str | None, report: ValidationReport
) -> Project | None:
    """The file's project; if config.yml is broken, still check the file's own schema,
    so one bad config.yml does not hide every problem of the files next to it."""
    try:
        return load_project(target, project_dir=project_dir, cache=report.projects)
    except (LoadError, ConfigError) as exc:
        doc = load_yaml(target)
        if kind == "test" and is_dataset(doc):
            report.diagnostics.extend(dataset_problems(doc))
        else:
            report.diagnostics.extend(validate_document(doc, kind))
        if isinstance(exc, LoadError):
            report.diagnostics.extend(exc.diagnostics)
        else:
            report.diagnostics.append(Diagnostic(str(target), str(exc)))
        return None


def history_problems(project: Project) -> list[Diagnostic]:
    """config.yml's ``history:`` checked as the commands that use it check it: an
    unsupported URL, a password written into it or a path leaving the project is an
    error; a folder that does not exist (and will not be created) or an unset
    ``password_var`` a warning (validating needs no secrets, like an unset key_var; the commands connect
    without it, so PGPASSWORD or ~/.pgpass may still do)."""
    from .history_store import history_location

    try:
        # config.yml's entry itself, whatever OXY_DB says for this shell.
        environ = {k: v for k, v in os.environ.items() if k != "OXY_DB"}
        location = history_location(project, environ=environ)
    except LoadError as exc:
        return list(exc.diagnostics)
    from ..store import missing_folder

    found = []
    folder = missing_folder(location)
    if folder is not None:  # the folder may be made before the run (CI): a warning
        found.append(project.config.diagnostic(("history", "url"), folder, severity="warning"))
    var = location.unset_password_var
    if var is not None:
        message = (
            f"history.password_var names the environment variable {var}, which is not set; "
            "commands will connect without it (PGPASSWORD or ~/.pgpass may supply the "
            "password), and oxy test / oxy run go on without history if the server refuses"
        )
        found.append(
            project.config.diagnostic(("history", "password_var"), message, severity="warning")
        )
    return found


def credential_warnings(
    project: Project, environ: Mapping[str, str] | None = None
) -> list[Diagnostic]:
    """Environment variables the project's models need (API keys, header values) that are
    not set: one warning per variable, at the first model that names it. Warnings, since
    the files are valid without them (CI often validates with no secrets); a command that
    calls such a model still stops with exit 2, naming the variable."""
    from ..providers import missing_credentials

    entries = {
        **{name: ("models", i) for i, name in enumerate(_names(project, "models"))},
        **{name: ("embeddings", i) for i, name in enumerate(_names(project, "embeddings"))},
    }
    found: dict[str, tuple[KeyPath, list[str]]] = {}
    for section in (project.models, project.embeddings):
        for spec in section.values():
            try:
                problems = missing_credentials(spec, environ)
            except ConfigError:  # no variable to name (a plugin vendor without key_var)
                continue
            for problem in problems:
                where = (*entries.get(spec.name, ()), *problem.where)
                found.setdefault(problem.variable, (where, []))[1].append(spec.name)
    warnings = []
    for variable, (where, names) in found.items():
        listed = ", ".join(f"'{n}'" for n in names)
        message = (
            f"environment variable {variable} is not set: model(s) {listed} cannot be called "
            "without it (oxy test, oxy run and oxy cases run stop with exit 2 when they call "
            "one); the files are valid"
        )
        warnings.append(project.config.diagnostic(where, message, severity="warning"))
    return warnings


def _names(project: Project, section: str) -> list[str]:
    entries = project.config.data.get(section) or []
    return [e.get("name", "") if isinstance(e, dict) else "" for e in entries]


def _load_workflow(project: Project, path: Path) -> list[Diagnostic]:
    """A test file's workflow target loaded and compiled as ``oxy test`` would (the
    project stage cannot import the workflow stage): its errors raise, its warnings
    (its sub-workflows' too) are returned."""
    from ..workflow.compile import compile_workflow
    from ..workflow.spec import load_workflow

    return list(compile_workflow(load_workflow(project, path)).all_warnings())


def _as_typed(folder: Path) -> str:
    """A found project folder as the user would have typed it: relative to where they
    stand ('.', '..'), so the files listed and the diagnostics read like the ones of
    ``oxy validate agents/``."""
    try:
        return os.path.relpath(folder)
    except ValueError:  # another drive (Windows): nothing shorter to say
        return str(folder)


def _chattest_targets(path: Path) -> list[Path]:
    """The chattest folders under ``path``, or ``path`` itself when it is a chattest JSON
    file (in a ``prompts/`` or ``models/`` folder)."""
    from ..project import chattest_folders

    if not path.is_dir():
        return [path] if path.parent.name in ("prompts", "models") else []
    return chattest_folders(path)


def _validate_chattest(target: Path, project_dir: str | None, report: ValidationReport) -> None:
    """A chattest folder or file checked as ``oxy chattest`` loads it: the same schemas,
    messages and project (its models may name config.yml's); nothing is called."""
    from ..project import chattest_files, load_chattest

    prompts, models = chattest_files(target)
    report.files.extend(str(f) for f in [*prompts, *models] if str(f) not in report.files)
    project = None
    if project_dir is not None or find_config(target) is not None:
        try:
            project = load_project(target, project_dir=project_dir, cache=report.projects)
        except (LoadError, ConfigError):
            return  # config.yml's own problems are reported with it
    try:
        suite = load_chattest([target], project=project)
    except LoadError as exc:
        report.diagnostics.extend(exc.diagnostics)
        return
    report.diagnostics.extend(suite.warnings)


def validate_paths(paths: list[str], project_dir: str | None = None) -> ValidationReport:
    """Validate the given files, or every project file under the given folders."""
    report = ValidationReport()
    targets: list[Path] = []
    if project_dir is not None and not Path(project_dir).is_dir():
        # Never fall back to the parent folder: for a typo that is '/', the whole disk.
        raise ConfigError(f"--project {project_dir}: no such folder")
    if not paths:
        config = Path(project_dir) if project_dir else find_config(Path.cwd())
        if config is None:
            raise ConfigError(
                f"no config.yml in {Path.cwd()} or above; pass files or folders to validate, "
                "or --project DIR (`oxy init` makes a project here)"
            )
        # --project as given; a config.yml found from here as '.' or '..'.
        paths = [project_dir] if project_dir else [_as_typed(config.parent)]
    chattest: list[Path] = []  # chattest folders and files: checked together, as run
    for raw in paths:
        path = Path(raw)
        if path.is_dir() or (path.suffix.lower() == ".json" and not path.is_dir()):
            found_chattest = _chattest_targets(path)
            chattest.extend(found_chattest)
            if found_chattest and not path.is_dir():
                continue
        if path.is_dir():
            config = find_config(path) if project_dir is None else Path(project_dir) / "config.yml"
            found = project_files(path, ("agent", "workflow", "prompt", "cases", "test"))
            if config is not None and config.parent.resolve() == path.resolve():
                found.insert(0, path / config.name)  # under the folder as the user gave it
            if not found and not chattest:  # "0 files checked" would pass CI having checked nothing
                report.diagnostics.append(
                    Diagnostic(
                        raw,
                        "is a folder with no config.yml, *.agent.yml, *.procedure.yml (*.workflow.yml), "
                        "*.prompt.yml, *.cases.yml or *.test.yml files to check",
                    )
                )
            targets.extend(found)
        else:
            targets.append(path)
    seen: set[Path] = set()
    for target in targets:
        problem = path_problem(target)
        if problem is not None:  # missing, a symlink loop, a device: say which, per file
            report.files.append(str(target))
            report.diagnostics.append(Diagnostic(str(target), problem))
            continue
        resolved = target.resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        report.files.append(str(target))
        kind = file_kind(target)
        try:
            if kind == "config":
                project = load_project(target, cache=report.projects)
                report.diagnostics.extend(project.warnings)
                report.diagnostics.extend(credential_warnings(project))
                report.diagnostics.extend(history_problems(project))
            elif kind in ("agent", "workflow", "prompt", "cases", "test"):
                project = _project_or_own_schema(target, kind, project_dir, report)
                if project is None:
                    continue
                if kind == "test":
                    from ..project.agent_tests import load_test_file

                    doc = load_yaml(target)
                    if is_dataset(doc):
                        report.diagnostics.extend(dataset_problems(doc))
                    else:
                        tests = load_test_file(
                            project, target, load_workflow=_load_workflow, doc=doc
                        )
                        report.diagnostics.extend(tests.warnings)
                elif kind == "agent":
                    report.diagnostics.extend(load_agent(project, target).warnings)
                elif kind in ("prompt", "cases"):
                    from ..project.prompts import load_prompts

                    prompts = load_prompts(project, [target])
                    vendors = {
                        b.provider
                        for p in prompts
                        for c in p.cases
                        for b in p.branches_of(c)
                        if b.provider is not None
                    }
                    report.diagnostics.extend(project.provider_credential_warnings(sorted(vendors)))
                else:
                    from ..workflow.compile import compile_workflow
                    from ..workflow.spec import load_workflow

                    workflow = load_workflow(project, target)
                    report.diagnostics.extend(workflow.warnings)
                    # Compiling checks the agents and sub-workflows it runs, too.
                    report.diagnostics.extend(compile_workflow(workflow).all_warnings())
            else:
                report.diagnostics.append(
                    Diagnostic(
                        str(target),
                        "unknown file kind: expected config.yml, *.agent.yml, *.procedure.yml (or "
                        "*.workflow.yml), "
                        "*.prompt.yml, *.cases.yml or *.test.yml",
                    )
                )
        except LoadError as exc:
            report.diagnostics.extend(exc.diagnostics)
        except ConfigError as exc:
            report.diagnostics.append(Diagnostic(str(target), str(exc)))
    for target in dict.fromkeys(chattest):
        _validate_chattest(target, project_dir, report)
    for project in report.projects.values():
        # The commands that run a file open its project's history: a bad history.url is
        # an error of every file of the project, as it is for them (oxy test a.agent.yml).
        report.diagnostics.extend(d for d in history_problems(project) if d.severity == "error")
    # An agent's load re-reports its config's problems; keep each problem once.
    unique: dict[tuple[object, ...], Diagnostic] = {}
    for d in report.diagnostics:
        unique.setdefault((d.file, d.line, d.column, d.key, d.message), d)
    report.diagnostics = list(unique.values())
    return report
