"""oxy's pass/fail test files (``*.test.yml``): a target, settings and judged cases.

A test file names an agent or a workflow (``target:``, or by its own name:
``sales.agent.test.yml`` tests ``sales.agent.yml`` beside it) and cases: a prompt, what
a correct answer says (``expected``), tags, and optionally a ``tool`` every run must
call. Loading checks everything that can be checked without calling a model (the
target loads, the judge model exists, the tool is one the target can call, case names
are unique) and reports all of a file's problems at once, like every project file.

The workflow stage comes after this one, so a workflow target is only read here (its
schema, and the agents its tasks name, for ``tool:``); pass ``load_workflow`` to have
it loaded fully, with its errors reported as the target's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Diagnostic, LoadError
from ..redact import clip
from .agents import Agent, load_agent
from .config import Project, check_model
from .document import Document, KeyPath, load_yaml, path_problem
from .files import TEST_SUFFIXES, file_kind, inside_project, outside_project, project_files
from .schema import did_you_mean, validate_document
from .templates import TemplateRef, answer_prompt
from .test_datasets import is_dataset
from .tests import DEFAULT_MIN_JUDGED

__all__ = [
    "DEFAULT_TEST_FILE_CONCURRENCY",
    "DEFAULT_TEST_FILE_RUNS",
    "MAX_TEST_FILE_RUNS",
    "TestCaseSpec",
    "TestFile",
    "TestFileSettings",
    "WorkflowLoader",
    "case_display_name",
    "collect_test_files",
    "load_test_file",
    "select_cases",
]

DEFAULT_TEST_FILE_RUNS = 3  # oxy's default
DEFAULT_TEST_FILE_CONCURRENCY = 5  # oxy's default
#: Runs per case: each is a target run plus a judge call, so the cost grows with it
#: linearly; the schema carries the same number (tests check they agree).
MAX_TEST_FILE_RUNS = 1_000
#: Characters of a prompt that name a case without a ``name:``.
CASE_NAME_WIDTH = 60

#: Loads a workflow fully (the workflow stage's loader and compiler): raises LoadError
#: with its problems, returns its warnings.
WorkflowLoader = Callable[[Project, Path], Sequence[Diagnostic]]


@dataclass(frozen=True)
class TestFileSettings:
    """``settings:``, defaults filled in. ``judge_model`` None: the project's default judge."""

    __test__ = False  # not a pytest class

    runs: int = DEFAULT_TEST_FILE_RUNS
    concurrency: int = DEFAULT_TEST_FILE_CONCURRENCY
    #: Share of a case's runs that must get a verdict (``min_judged``, an extension).
    min_judged: float = DEFAULT_MIN_JUDGED
    judge_model: str | None = None
    #: ``judge_prompt`` (an extension): the judge's own prompt; None: the PASS/FAIL default.
    judge_prompt: TemplateRef | None = None


@dataclass(frozen=True)
class TestCaseSpec:
    """One case: ``prompt`` is run ``runs`` times and each output judged against ``expected``.

    ``name`` is unique in its file (the one given, else :func:`case_display_name` of the
    prompt); ``named`` says whether the file gave it. ``tool``: a tool every run must
    call (checked on the run's recorded tool calls, before any judge call).
    """

    __test__ = False  # not a pytest class

    name: str
    prompt: str
    expected: str
    tags: tuple[str, ...] = ()
    tool: str | None = None
    named: bool = True
    index: int = 0  # 0-based position in the file's cases:
    key: KeyPath = ()  # ("cases", index); () for one built in code
    doc: Document | None = field(default=None, compare=False, repr=False)

    def diagnostic(
        self, message: str, *, field_name: str = "", severity: str = "error"
    ) -> Diagnostic:
        """A problem of this case found later (at run time), at its line in the file."""
        key = (*self.key, field_name) if field_name else self.key
        if self.doc is None:
            return Diagnostic(f"case '{self.name}'", message, severity=severity)
        return self.doc.diagnostic(key, message, severity=severity)


@dataclass(frozen=True)
class TestFile:
    """A loaded ``*.test.yml`` file: what it tests, how, and its cases.

    ``agent`` is the loaded target for an agent target (None for a workflow).
    ``tools`` are the tool names the target can call: the agent's, or every agent task's
    of a workflow (its sub-workflows' too); None when they could not all be found (a
    workflow whose agents could not be resolved), which a case's ``tool:`` then reports.
    """

    __test__ = False  # not a pytest class

    name: str
    path: Path
    target: Path
    target_kind: str  # "agent" | "workflow"
    settings: TestFileSettings
    cases: tuple[TestCaseSpec, ...]
    tools: frozenset[str] | None = None
    warnings: tuple[Diagnostic, ...] = ()
    doc: Document | None = field(default=None, compare=False, repr=False)
    agent: Agent | None = field(default=None, compare=False, repr=False)

    @property
    def display(self) -> str:
        """The file as the user would type it, for messages."""
        return self.doc.display if self.doc is not None else str(self.path)


def case_display_name(prompt: str, width: int = CASE_NAME_WIDTH) -> str:
    """A case's default name: its prompt on one line, cut to ``width`` characters."""
    return clip(" ".join(prompt.split()), width, total=True)


def _default_name(path: Path) -> str:
    """``sales.agent.test.yml`` -> ``sales.agent``: the file name before ``.test``."""
    name = path.name
    for suffix in TEST_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _inferred_target(path: Path) -> Path | None:
    """``x.agent.test.yml`` -> ``x.agent.yml`` beside it (or ``.yaml``, whichever exists;
    the test file's own extension first), when the name says agent or workflow."""
    base = _default_name(path)
    ext = path.suffix.lower()
    for suffix in dict.fromkeys((ext, ".yml", ".yaml")):
        candidate = path.parent / f"{base}{suffix}"
        if file_kind(candidate) not in ("agent", "workflow"):
            return None
        if candidate.exists():
            return candidate
    return path.parent / f"{base}{ext}"  # the one named first: "not found" names it


def _resolve_target(
    project: Project, doc: Document, problems: list[Diagnostic]
) -> tuple[Path, str] | None:
    """The target file and its kind, or None with the reason in ``problems``."""
    written = doc.data.get("target")
    if isinstance(written, str) and written:
        found = inside_project(project.root, written)
        if found is None:
            problems.append(
                doc.diagnostic(("target",), outside_project("target", written, project.root))
            )
            return None
        shown = repr(written)
    else:
        found = _inferred_target(doc.path)
        if found is None:
            problems.append(
                doc.diagnostic(
                    ("target",),
                    "no target: add target: <an *.agent.yml or *.workflow.yml file, relative "
                    "to the project folder>, or name this file <agent>.agent.test.yml / "
                    "<workflow>.workflow.test.yml to test the file of that name beside it",
                    at_key=True,
                )
            )
            return None
        if inside_project(project.root, str(found)) is None:
            problems.append(
                doc.diagnostic(("target",), outside_project("target", str(found), project.root))
            )
            return None
        shown = f"{found.name!r} (inferred from this file's name)"
    kind = file_kind(found)
    if kind not in ("agent", "workflow"):
        problems.append(
            doc.diagnostic(
                ("target",),
                f"target {shown} is not an *.agent.yml or *.workflow.yml file",
            )
        )
        return None
    problem = path_problem(found)
    if problem is not None:
        where = "relative to the project folder" if written else "beside this file"
        problem, hint, guess = problem.partition("; did you mean")
        problems.append(
            doc.diagnostic(
                ("target",), f"target {shown}: {problem} ({where}: {found}){hint}{guess}"
            )
        )
        return None
    return found, kind


def _project_file(project: Project, ref: str, kind: str) -> Path | None:
    """A file a workflow task names (``agent_ref``, ``src``), as the workflow stage
    resolves it: a path relative to the project, or a bare name found by file name."""
    found = inside_project(project.root, ref)
    if found is not None and found.is_file():
        return found
    if "/" in ref or found is None:
        return None
    names = {f"{ref}.{kind}.yml", f"{ref}.{kind}.yaml"}
    matches = [p for p in project_files(project.root, (kind,)) if p.name in names]
    # the same rule as the workflow stage's: a match that links out of the project is none
    inside = [real for p in matches if (real := inside_project(project.root, str(p))) is not None]
    return inside[0] if inside else None


def _workflow_tools(project: Project, path: Path) -> tuple[frozenset[str] | None, str]:
    """The tools of every agent task of a workflow and its sub-workflows, or None and
    why not: an agent or sub-workflow that cannot be found, or does not load, leaves
    the set unknown (the full loader reports those as errors of the workflow)."""
    tools: set[str] = set()
    seen: set[Path] = set()
    todo = [path.resolve()]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            data = load_yaml(current).data
        except LoadError:
            return None, f"workflow {current.name} does not load"
        for task in _tasks(data):
            kind = task.get("type")
            if kind not in ("agent", "workflow"):
                continue
            ref = task.get("agent_ref" if kind == "agent" else "src")
            if not isinstance(ref, str) or "{" in ref:
                return None, f"a {kind} task names its file with a template or not at all"
            found = _project_file(project, ref, kind)
            if found is None:
                return None, f"{kind} file '{ref}' (in {current.name}) is not found"
            if kind == "workflow":
                todo.append(found)
                continue
            try:
                tools.update(_tool_names(load_agent(project, found)))
            except LoadError:
                return None, f"agent file '{ref}' (in {current.name}) does not load"
    return frozenset(tools), ""


def _tasks(node: Any) -> Iterable[dict[str, Any]]:
    """Every task mapping of a workflow's data, nested ones too (loops, conditions)."""
    if isinstance(node, dict):
        if isinstance(node.get("type"), str) and "name" in node:
            yield node
        for value in node.values():
            yield from _tasks(value)
    elif isinstance(node, list):
        for item in node:
            yield from _tasks(item)


def _tool_names(agent: Agent) -> list[str]:
    return [str(t["name"]) for t in agent.tools if t.get("name")]


def _load_target(
    project: Project,
    target: Path,
    kind: str,
    load_workflow: WorkflowLoader | None,
    problems: list[Diagnostic],
    warnings: list[Diagnostic],
) -> tuple[Agent | None, frozenset[str] | None, str]:
    """Load the target; its errors pass through as the target file's diagnostics."""
    if kind == "agent":
        try:
            agent = load_agent(project, target)
        except LoadError as exc:
            problems.extend(exc.diagnostics)
            return None, None, "the target agent does not load"
        warnings.extend(agent.warnings)
        return agent, frozenset(_tool_names(agent)), ""
    try:
        if load_workflow is not None:
            warnings.extend(load_workflow(project, target))
        else:
            wdoc = load_yaml(target)
            found = validate_document(wdoc, "workflow")
            problems.extend(d for d in found if d.severity == "error")
            if any(d.severity == "error" for d in found):
                return None, None, "the target workflow does not load"
    except LoadError as exc:
        problems.extend(exc.diagnostics)
        return None, None, "the target workflow does not load"
    tools, why = _workflow_tools(project, target)
    return None, tools, why


def _cases(
    doc: Document,
    tools: frozenset[str] | None,
    why_unknown: str,
    target_display: str,
    kind: str,
    problems: list[Diagnostic],
) -> list[TestCaseSpec]:
    cases: list[TestCaseSpec] = []
    first_at: dict[str, int] = {}
    for i, case in enumerate(doc.data.get("cases") or []):
        key: KeyPath = ("cases", i)
        given = case.get("name")
        prompt = case["prompt"]
        name = given if isinstance(given, str) and given else case_display_name(prompt)
        if name in first_at:
            where = (*key, "name") if given else (*key, "prompt")
            reason = (
                f"case name '{name}' is also the name of cases[{first_at[name]}]"
                if given
                else f"this case has no name and its prompt, shortened, '{name}' is also "
                f"the name of cases[{first_at[name]}]"
            )
            problems.append(
                doc.diagnostic(
                    where,
                    f"{reason}; reports, --case and the history tell cases apart by name: "
                    "give each case its own name:",
                )
            )
        else:
            first_at[name] = i
        tool = case.get("tool")
        if isinstance(tool, str) and tool:
            _check_tool(
                doc, (*key, "tool"), tool, tools, why_unknown, target_display, kind, problems
            )
        cases.append(
            TestCaseSpec(
                name=name,
                prompt=prompt,
                expected=case["expected"],
                tags=tuple(case.get("tags") or ()),
                tool=tool or None,
                named=bool(given),
                index=i,
                key=key,
                doc=doc,
            )
        )
    return cases


def _check_tool(
    doc: Document,
    key: KeyPath,
    tool: str,
    tools: frozenset[str] | None,
    why_unknown: str,
    target_display: str,
    kind: str,
    problems: list[Diagnostic],
) -> None:
    if tools is None:
        if why_unknown.startswith("the target"):  # its own errors are already reported
            return
        problems.append(
            doc.diagnostic(
                key,
                f"cannot check tool '{tool}' against workflow {target_display}: {why_unknown}; "
                "tool: on a workflow target must name a tool of one of its agent tasks, "
                "whose agent_ref (and any sub-workflow's src) is a plain file path",
            )
        )
        return
    if tool in tools:
        return
    owner = f"agent {target_display}" if kind == "agent" else f"any agent task of {target_display}"
    listed = ", ".join(sorted(tools)) or "none"
    problems.append(
        doc.diagnostic(
            key,
            f"tool '{tool}' is not a tool of {owner}{did_you_mean(tool, tools)} (tools: {listed}); "
            "a run can only pass if it calls this tool",
        )
    )


def load_test_file(
    project: Project,
    path: str | os.PathLike[str],
    *,
    load_workflow: WorkflowLoader | None = None,
    doc: Document | None = None,
) -> TestFile:
    """Load, validate and check one ``*.test.yml`` file and its target against ``project``.

    Raises LoadError with every problem of the file (schema, target, judge model,
    duplicate case names, unknown tools) and of its target, which must load.
    ``load_workflow``: the workflow stage's full loader for a workflow target (see
    :data:`WorkflowLoader`); without it only the workflow's schema is checked here.
    ``doc``: the file already parsed (a caller that looked at it first), not read again.
    """
    doc = doc if doc is not None else load_yaml(path)
    if is_dataset(doc):
        raise LoadError(
            [
                doc.diagnostic(
                    (),
                    "this is a custom-test dataset (a list of query items that an agent's "
                    "tests: - type: custom reads), not a test file with target: and cases:; "
                    "oxyeval does not run custom tests yet",
                )
            ]
        )
    problems = validate_document(doc, "test")
    if not isinstance(doc.data, dict) or any(p.severity == "error" for p in problems):
        # The shape is wrong: checking targets and names on it would only add noise.
        raise LoadError(problems)
    warnings = [p for p in problems if p.severity == "warning"]
    problems = [p for p in problems if p.severity == "error"]
    data = doc.data
    settings_data = data.get("settings") or {}
    judge = settings_data.get("judge_model")
    check_model(doc, ("settings", "judge_model"), judge, project, problems, "judge model")
    resolved = _resolve_target(project, doc, problems)
    agent: Agent | None = None
    tools: frozenset[str] | None = None
    why = "the target does not load"
    if resolved is not None:
        target, kind = resolved
        agent, tools, why = _load_target(project, target, kind, load_workflow, problems, warnings)
        if agent is not None and agent.kind == "routing":
            problems.append(
                doc.diagnostic(
                    ("target",),
                    f"target {agent.display} is a routing agent; oxyeval cannot run those yet",
                )
            )
        shown = project.relative(target)
    else:
        target, kind, shown = doc.path, "agent", ""
    cases = _cases(doc, tools, why, shown, kind, problems)
    judge_prompt = answer_prompt(
        doc, ("settings", "judge_prompt"), settings_data.get("judge_prompt"), problems
    )
    if problems:
        raise LoadError(
            sorted(problems, key=lambda d: (d.file != doc.display, d.line or 0, d.column or 0))
        )
    return TestFile(
        name=data.get("name") or _default_name(doc.path),
        path=doc.path,
        target=target,
        target_kind=kind,
        settings=TestFileSettings(
            runs=settings_data.get("runs", DEFAULT_TEST_FILE_RUNS),
            concurrency=settings_data.get("concurrency", DEFAULT_TEST_FILE_CONCURRENCY),
            min_judged=float(settings_data.get("min_judged", DEFAULT_MIN_JUDGED)),
            judge_model=judge,
            judge_prompt=judge_prompt,
        ),
        cases=tuple(cases),
        tools=tools,
        warnings=tuple(warnings),
        doc=doc,
        agent=agent,
    )


def collect_test_files(
    project: Project, paths: Sequence[str | os.PathLike[str]] = ()
) -> list[Path]:
    """``*.test.yml`` files: the given ones, or every one under the given folders (default:
    the project folder); each once, in the order given (folders sorted)."""
    roots = [Path(p) for p in paths] or [project.root]
    out: list[Path] = []
    seen: set[Path] = set()
    for root in roots:
        if root.is_dir():
            # oxy's custom-test datasets share the suffix; a folder's test files are the rest.
            found = [f for f in project_files(root, ("test",)) if not _is_dataset_file(f)]
            if not found and paths:
                raise LoadError([Diagnostic(str(root), "is a folder with no *.test.yml files")])
        elif (problem := path_problem(root)) is not None:
            raise LoadError([Diagnostic(str(root), problem)])
        elif file_kind(root) != "test":
            raise LoadError(
                [Diagnostic(str(root), "not a pass/fail test file: expected *.test.yml")]
            )
        else:
            found = [root]
        for file in found:
            if file.resolve() not in seen:
                seen.add(file.resolve())
                out.append(file)
    return out


def _is_dataset_file(path: Path) -> bool:
    try:
        return is_dataset(load_yaml(path))
    except LoadError:  # a broken file is the loader's to report, as a test file
        return False


def select_cases(
    test_file: TestFile, tags: Iterable[str] = (), names: Iterable[str] = ()
) -> tuple[TestCaseSpec, ...]:
    """The cases to run: those carrying any of ``tags`` and named any of ``names`` (each
    filter applies only when given; both given: a case must pass both), in file order.

    A name that no case of the file has is not an error here: with several files, a
    ``--case`` usually names a case of one of them. The caller reports a name no file has.
    """
    wanted_tags = set(tags)
    wanted_names = set(names)
    return tuple(
        case
        for case in test_file.cases
        if (not wanted_tags or wanted_tags.intersection(case.tags))
        and (not wanted_names or case.name in wanted_names)
    )
