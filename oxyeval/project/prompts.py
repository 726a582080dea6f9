"""Prompts and their test cases, as declared in YAML.

A prompt (``*.prompt.yml``, or an agent named by a ``*.cases.yml`` file) is
identified by its name, and each distinct resolved content (template, system,
model, params) becomes a numbered version in the store. Cases are identified by
``<prompt>::<case name>`` (``oxyeval.store.case_id``, the rule for cases created
through the API too) so their history survives edits to the file. Accepting a new
baseline rewrites the one value in the YAML file in place, leaving every comment and
the rest of the layout untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Diagnostic, LoadError
from ..providers import GenerateParams
from .agents import Agent, load_agent
from .branches import BranchDef, branch_problems, parse_branches
from .config import Project
from .document import Document, KeyPath, load_yaml, not_found
from .files import file_kind, outside_project, project_files
from .rewrite import rewrite_expected_output
from .schema import did_you_mean, validate_document
from .templates import TemplateRef, render, template_diagnostics

#: Score a case must reach to pass, unless its prompt or the case says otherwise.
DEFAULT_THRESHOLD = 0.8

__all__ = [
    "DEFAULT_THRESHOLD",
    "CaseDef",
    "PromptDef",
    "collect_case_files",
    "load_prompts",
    "rewrite_expected_output",
]

DEFAULT_RECENT = 10


@dataclass(repr=False, slots=True)
class CaseDef:
    name: str
    input: dict[str, Any]
    expected_output: str | None
    description: str = ""
    threshold: float | None = None
    doc: Document | None = None  # where it is declared (None: created through the API)
    key: KeyPath = ()
    #: Its own A/B branches (None: the prompt's, if any).
    branches: list[BranchDef] | None = None

    def __repr__(self) -> str:
        return f"CaseDef({self.name!r})"

    @property
    def where(self) -> str:
        if self.doc is None:
            return f"case '{self.name}'"
        pos = self.doc.locate(self.key)
        line = f":{pos.line}" if pos else ""
        return f"{self.doc.display}{line} (case '{self.name}')"


@dataclass(repr=False)
class PromptDef:
    """A prompt (or an agent) whose versions test cases run against, as declared in a
    ``*.prompt.yml``/``*.cases.yml`` file or built in code (``file``/``doc`` None)."""

    id: str
    kind: str  # "prompt" | "agent"
    model: str
    template: TemplateRef
    file: Path | None = None
    doc: Document | None = None
    system: TemplateRef | None = None
    params: GenerateParams = field(default_factory=GenerateParams)
    agent: Agent | None = None
    similarity: str = "lexical"
    threshold: float = DEFAULT_THRESHOLD
    recent: int = DEFAULT_RECENT
    cases: list[CaseDef] = field(default_factory=list)
    #: A/B branches for every case without its own (``branches:`` in the prompt file).
    branches: list[BranchDef] = field(default_factory=list)
    #: A/B tests: the config.yml model that grades answers (None: quality is similarity).
    quality_judge: str | None = None

    def __repr__(self) -> str:
        return f"PromptDef({self.id!r}, {len(self.cases)} cases)"

    def branches_of(self, case: CaseDef) -> list[BranchDef]:
        """The branches an A/B test of ``case`` runs: its own, else the prompt's."""
        return self.branches if case.branches is None else case.branches

    def content(self, project: Project) -> dict[str, Any]:
        """What defines a version: any change here is a new version number."""
        spec = project.models[self.model]
        params = {k: v for k, v in self.params.__dict__.items() if v is not None and k != "tools"}
        content: dict[str, Any] = {
            "kind": self.kind,
            "model": self.model,
            "model_ref": spec.model_ref,
            "vendor": spec.vendor,
            "template": self.template.source,
            "system": self.system.source if self.system is not None else None,
            "params": params,
        }
        if self.agent is not None:
            content["agent"] = (
                project.relative(self.agent.path) if self.agent.path else self.agent.name
            )
            content["tools"] = [t.get("name") for t in self.agent.tools]
        return content


def collect_case_files(project: Project, paths: list[str]) -> list[Path]:
    """Prompt and cases files: the given ones, or all under given folders / the project."""
    roots = [Path(p) for p in paths] or [project.root]
    out: list[Path] = []
    for root in roots:
        if root.is_file():
            if file_kind(root) not in ("prompt", "cases"):
                raise LoadError(
                    [
                        Diagnostic(
                            str(root), "not a test-case file: expected *.prompt.yml or *.cases.yml"
                        )
                    ]
                )
            out.append(root)
            continue
        if not root.exists():
            raise LoadError([Diagnostic(str(root), not_found(root))])
        out.extend(project_files(root, ("prompt", "cases")))
    return out


def _cases(doc: Document, items: list[dict[str, Any]], key: KeyPath) -> list[CaseDef]:
    out = []
    for i, item in enumerate(items):
        out.append(
            CaseDef(
                name=item["name"],
                input=item.get("input") or {},  # not copied: a big file holds 100,000
                expected_output=item.get("expected_output"),
                description=item.get("description", ""),
                threshold=item.get("threshold"),
                doc=doc,
                key=(*key, i),
                branches=(
                    None
                    if item.get("branches") is None
                    else parse_branches(doc, item["branches"], (*key, i, "branches"))
                ),
            )
        )
    return out


def _prompt_from_file(project: Project, doc: Document, problems: list[Diagnostic]) -> PromptDef:
    data = doc.data
    name = data.get("name") or doc.path.name.split(".prompt.")[0]
    model = data.get("model") or project.default_model
    if model not in project.models:
        problems.append(
            doc.diagnostic(
                ("model",),
                f"unknown model '{model}'{did_you_mean(model, list(project.models))}; models in "
                f"{project.config.display}: {', '.join(project.models)}",
            )
        )
    template = TemplateRef(data["template"], doc, ("template",))
    system = TemplateRef(data["system"], doc, ("system",)) if data.get("system") else None
    for ref in (template, system):
        if ref is not None:
            problems.extend(template_diagnostics(ref))
    params = GenerateParams(
        temperature=data.get("temperature"),
        max_tokens=data.get("max_tokens"),
        top_p=data.get("top_p"),
        seed=data.get("seed"),
    )
    return PromptDef(
        id=name,
        file=doc.path,
        doc=doc,
        kind="prompt",
        model=model,
        template=template,
        system=system,
        params=params,
        similarity=data.get("similarity") or _default_similarity(project),
        threshold=data.get("threshold", DEFAULT_THRESHOLD),
        recent=data.get("recent", DEFAULT_RECENT),
        cases=_cases(doc, data.get("cases") or [], ("cases",)),
        branches=parse_branches(doc, data.get("branches") or [], ("branches",)),
        quality_judge=data.get("quality_judge"),
    )


def _default_similarity(project: Project) -> str:
    return next(iter(project.embeddings), "")


def _check_similarity(
    project: Project, prompt: PromptDef, doc: Document, key: KeyPath, problems: list[Diagnostic]
) -> None:
    names = ["lexical", *project.embeddings]
    if not prompt.similarity:
        problems.append(
            doc.diagnostic(
                key,
                "no embedding model to compute semantic scores: add one under embeddings: in "
                f"{project.config.display} (e.g. vendor: openai, model_ref: text-embedding-3-small), or "
                "set similarity: lexical for an offline, non-semantic word-overlap score",
                at_key=True,
            )
        )
    elif prompt.similarity not in names:
        problems.append(
            doc.diagnostic(
                (*key, "similarity") if key == () else key,
                f"unknown similarity '{prompt.similarity}'{did_you_mean(prompt.similarity, names)}; "
                f"choose lexical or an embedding model from config.yml: {', '.join(names)}",
            )
        )


def _check_cases(prompt: PromptDef, problems: list[Diagnostic]) -> None:
    """Every case's input must render both templates: caught now, not mid-run."""
    seen: dict[str, CaseDef] = {}
    for case in prompt.cases:
        if case.name in seen and case.doc is not None:
            first = seen[case.name]
            problems.append(
                case.doc.diagnostic(
                    (*case.key, "name"),
                    f"case name '{case.name}' is used twice for prompt '{prompt.id}' "
                    f"(first at {first.where})",
                )
            )
        seen.setdefault(case.name, case)
        for ref, values in _renderings(prompt, case):
            try:
                render(ref, values)
            except LoadError as exc:
                for d in exc.diagnostics:
                    if case.doc is not None:
                        problems.append(
                            case.doc.diagnostic(
                                (*case.key, "input"),
                                f"case '{case.name}': {d.message} (in {d.location()})",
                            )
                        )


def _check_branches(project: Project, prompt: PromptDef, problems: list[Diagnostic]) -> None:
    """The prompt's branches once (they are every case's without its own), then each
    case's own; an agent's cases have none: an A/B test runs one rendered prompt on
    several models."""
    judge = prompt.quality_judge
    if judge is not None and judge not in project.models and prompt.doc is not None:
        problems.append(
            prompt.doc.diagnostic(
                ("quality_judge",),
                f"unknown model '{judge}'{did_you_mean(judge, list(project.models))} (models "
                f"in {project.config.display}: {', '.join(project.models)})",
            )
        )
    if prompt.branches:
        problems.extend(
            branch_problems(project, f"every case of prompt '{prompt.id}'", prompt.branches)
        )
    for case in prompt.cases:
        if case.branches is None:
            continue
        if prompt.kind == "agent" and case.doc is not None:
            problems.append(
                case.doc.diagnostic(
                    (*case.key, "branches"),
                    f"case '{case.name}': A/B branches run a prompt (*.prompt.yml) on several "
                    "models; the cases of an agent cannot have branches",
                    at_key=True,
                )
            )
            continue
        problems.extend(branch_problems(project, f"case '{case.name}'", case.branches))


def _renderings(prompt: PromptDef, case: CaseDef) -> list[tuple[TemplateRef, dict[str, Any]]]:
    """Each template a case fills and the values it renders with at run time. An agent's
    system prompt renders as the agent renders it (``Agent.template_values``: its
    defaults, the case's values for the variables it declares), with empty text standing
    in for its context files, which are read when the run starts."""
    pairs: list[tuple[TemplateRef, dict[str, Any]]] = []
    agent = prompt.agent
    if agent is not None:
        stand_in = {c.name: "" for c in agent.context}
        values = agent.template_values(agent.own_variables(case.input), stand_in)
        pairs.append((agent.system_instructions, values))
    elif prompt.system is not None:
        pairs.append((prompt.system, case.input))
    pairs.append((prompt.template, case.input))
    return pairs


def load_prompts(project: Project, files: list[Path]) -> list[PromptDef]:
    """Prompts with all their declared cases; all problems of all files reported together."""
    problems: list[Diagnostic] = []
    prompts: dict[str, PromptDef] = {}
    by_file: dict[Path, PromptDef] = {}
    cases_docs: list[Document] = []
    for path in files:
        try:
            doc = load_yaml(path)
        except LoadError as exc:
            problems.extend(exc.diagnostics)
            continue
        kind = file_kind(path)
        found = validate_document(doc, "prompt" if kind == "prompt" else "cases")
        problems.extend(found)
        if any(d.severity == "error" for d in found):
            continue
        if kind == "prompt":
            prompt = _prompt_from_file(project, doc, problems)
            _check_similarity(
                project,
                prompt,
                doc,
                () if "similarity" not in doc.data else ("similarity",),
                problems,
            )
            _merge(prompts, prompt, problems)
            by_file[doc.path] = prompts[prompt.id]
        else:
            cases_docs.append(doc)
    for doc in cases_docs:
        prompt = _prompt_for_cases(project, doc, by_file, prompts, problems)
        if prompt is not None:
            prompt.cases.extend(_cases(doc, doc.data.get("cases") or [], ("cases",)))
    for prompt in prompts.values():
        _check_cases(prompt, problems)
        _check_branches(project, prompt, problems)
    errors = [d for d in problems if d.severity == "error"]
    if errors:
        raise LoadError(problems)
    return list(prompts.values())


def _merge(prompts: dict[str, PromptDef], prompt: PromptDef, problems: list[Diagnostic]) -> None:
    other = prompts.get(prompt.id)
    if other is not None and other.file != prompt.file:
        problems.append(
            prompt.doc.diagnostic(
                ("name",),
                f"prompt name '{prompt.id}' is also used by {other.doc.display}; names identify "
                "prompts in the history, so they must be unique",
                at_key=True,
            )
        )
        return
    prompts[prompt.id] = prompt


def _prompt_for_cases(
    project: Project,
    doc: Document,
    by_file: dict[Path, PromptDef],
    prompts: dict[str, PromptDef],
    problems: list[Diagnostic],
) -> PromptDef | None:
    data = doc.data
    key = "prompt" if data.get("prompt") else "agent"
    target = (project.root / data[key]).resolve()
    if not target.is_relative_to(project.root):  # a cases file must not load any file on disk
        problems.append(doc.diagnostic((key,), outside_project(key, data[key], project.root)))
        return None
    if key == "prompt":
        if target in by_file:
            prompt = by_file[target]
        elif target.is_file() and file_kind(target) == "prompt":
            try:
                pdoc = load_yaml(target)
            except LoadError as exc:
                problems.extend(exc.diagnostics)
                return None
            found = validate_document(pdoc, "prompt")
            problems.extend(found)
            if any(d.severity == "error" for d in found):
                return None
            prompt = _prompt_from_file(project, pdoc, problems)
            _merge(prompts, prompt, problems)
            by_file[target] = prompt
        else:
            problems.append(
                doc.diagnostic(
                    ("prompt",), f"prompt file '{data['prompt']}' not found under {project.root}"
                )
            )
            return None
        for key in ("similarity", "threshold", "recent"):
            if key in data:
                problems.append(
                    doc.diagnostic(
                        (key,),
                        f"set {key} in the prompt file {prompt.doc.display}, not here",
                        severity="error",
                    )
                )
        return prompt
    if not target.is_file():
        problems.append(
            doc.diagnostic(
                ("agent",), f"agent file '{data['agent']}' not found under {project.root}"
            )
        )
        return None
    try:
        agent = load_agent(project, target)
    except LoadError as exc:
        problems.extend(exc.diagnostics)
        return None
    pid = data.get("name") or f"agent:{project.relative(target)}"
    template = TemplateRef(data.get("template", "{{ question }}"), doc, ("template",))
    problems.extend(template_diagnostics(template))
    prompt = prompts.get(pid)
    if prompt is None:
        prompt = PromptDef(
            id=pid,
            file=doc.path,
            doc=doc,
            kind="agent",
            model=agent.model,
            template=template,
            system=agent.system_instructions,
            params=agent.params,
            agent=agent,
            similarity=data.get("similarity") or _default_similarity(project),
            threshold=data.get("threshold", DEFAULT_THRESHOLD),
            recent=data.get("recent", DEFAULT_RECENT),
        )
        _check_similarity(
            project, prompt, doc, () if "similarity" not in data else ("similarity",), problems
        )
        prompts[pid] = prompt
    return prompt
