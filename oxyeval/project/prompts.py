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

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, Diagnostic, LoadError
from ..providers import GenerateParams
from .agents import Agent, load_agent
from .config import Project
from .document import Document, KeyPath, load_yaml
from .files import file_kind, outside_project, project_files
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


@dataclass(repr=False)
class CaseDef:
    name: str
    input: dict[str, Any]
    expected_output: str | None
    description: str = ""
    threshold: float | None = None
    doc: Document | None = None  # where it is declared (None: created through the API)
    key: KeyPath = ()

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

    def __repr__(self) -> str:
        return f"PromptDef({self.id!r}, {len(self.cases)} cases)"

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
            raise LoadError([Diagnostic(str(root), "file not found")])
        out.extend(project_files(root, ("prompt", "cases")))
    return out


def _cases(doc: Document, items: list[dict[str, Any]], key: KeyPath) -> list[CaseDef]:
    out = []
    for i, item in enumerate(items):
        out.append(
            CaseDef(
                name=item["name"],
                input=dict(item.get("input") or {}),
                expected_output=item.get("expected_output"),
                description=item.get("description", ""),
                threshold=item.get("threshold"),
                doc=doc,
                key=(*key, i),
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


# -- accepting a new baseline in the YAML file ------------------------------------------


def _plain_ok(text: str) -> bool:
    """Whether ``text`` can be written unquoted and read back as the same string."""
    import re

    import yaml

    if (
        not text
        or text != text.strip()
        or "\n" in text
        or not re.fullmatch(r"[A-Za-z][\w .,!?'()/-]*", text)
    ):
        return False
    if ": " in text or " #" in text:
        return False
    try:
        return yaml.safe_load(f"k: {text}") == {"k": text}
    except yaml.YAMLError:
        return False


def _yaml_scalar(text: str, indent: int) -> str:
    """``text`` as a YAML value that reads back exactly: a literal block for multi-line
    text (what people write by hand), else a double-quoted (JSON) string."""
    lines = text.split("\n")
    simple_end = text.endswith("\n") and not text.endswith("\n\n")
    if (
        "\n" in text.rstrip("\n")
        and (simple_end or not text.endswith("\n"))
        and not lines[0].startswith(" ")
    ):
        chomp = "" if simple_end else "-"
        body = lines[:-1] if simple_end else lines
        pad = " " * indent
        return f"|{chomp}\n" + "\n".join(pad + line if line else "" for line in body)
    return text if _plain_ok(text) else json.dumps(text, ensure_ascii=False)


def _keep_block_header(text: str, start: int, new: str) -> str:
    """A block scalar's header line (``|   # keep me``) keeps its comment: the new value's
    own indicator (``|`` or ``|-``, what reads back exactly), then the old header's
    spacing and comment; a one-line new value keeps the comment after it."""
    import re

    header_end = text.find("\n", start)
    header = text[start : len(text) if header_end == -1 else header_end]
    comment = re.match(r"^[|>][-+0-9]*(\s+#.*)?$", header)
    if comment is None or not comment.group(1):
        return new
    if new.startswith("|"):
        first, _, body = new.partition("\n")
        return f"{first}{comment.group(1)}\n{body}"
    return f"{new}{comment.group(1)}"


def _content_end(text: str, start: int, end: int) -> int:
    """End of the last non-blank line in text[start:end], just after its line break."""
    last = start + len(text[start:end].rstrip(" \t\r\n"))
    newline = text.find("\n", last)
    return len(text) if newline == -1 else newline + 1


def rewrite_expected_output(case: CaseDef, output: str) -> Path:
    """Set ``expected_output`` of a YAML-declared case in place, keeping the file's layout.

    Only the characters of that one value change (or one line is added when the case
    had no expected output), so comments, ordering and formatting all survive. The
    file is re-read afterwards and must give back exactly ``output``.
    """
    if case.doc is None:
        raise ConfigError(f"case '{case.name}' is not declared in a file; nothing to rewrite")
    path = case.doc.path
    doc = load_yaml(path)  # the file as it is now, not as it was when the run started
    items = doc.get(case.key[:-1])
    index = next(
        (
            i
            for i, c in enumerate(items or [])
            if isinstance(c, dict) and c.get("name") == case.name
        ),
        None,
    )
    if index is None:
        raise ConfigError(f"{path}: case '{case.name}' is no longer in this file")
    item_key = (*case.key[:-1], index)
    text = doc.text
    item = doc.values[item_key]
    item_text = text[item.start : item.end]
    if "<<:" in item_text or "<< :" in item_text:
        raise ConfigError(
            f"{path}: case '{case.name}' inherits keys through a YAML merge key (<<); changing "
            "it in place could change other cases too, so set expected_output by hand"
        )
    name_key = doc.keys[(*item_key, "name")]
    key_indent = name_key.column - 1
    value_key = (*item_key, "expected_output")
    value = doc.values.get(value_key) if value_key in doc.keys else None
    if value is not None:
        key_pos = doc.keys[value_key]
        between = text[
            text.index(":", _offset(text, key_pos.line, key_pos.column)) + 1 : value.start
        ]
        raw = text[value.start : value.end]
        if "&" in between or "!" in between or raw.startswith(("&", "*", "!")):
            raise ConfigError(
                f"{path}: expected_output of case '{case.name}' carries a YAML anchor, alias or "
                "tag that other values may share; set it by hand"
            )
    if item.flow:
        if value is None:
            raise ConfigError(
                f"{path}: case '{case.name}' is a one-line mapping; add expected_output by hand"
            )
        flow_plain = _plain_ok(output) and not any(ch in output for ch in ",[]{}")
        scalar = output if flow_plain else json.dumps(output, ensure_ascii=False)
        new_text = text[: value.start] + scalar + text[value.end :]
    elif value is not None:
        line_end = text.find("\n", value.end)
        trailing = text[value.end : len(text) if line_end == -1 else line_end]
        if trailing.strip() and not value.block:
            # A comment follows on the same line: a block would swallow it; stay on one line.
            new = output if _plain_ok(output) else json.dumps(output, ensure_ascii=False)
        else:
            new = _yaml_scalar(output, key_indent + 2)
        end = _content_end(text, value.start, value.end) if value.block else value.end
        if value.block:  # the replaced span ended after a line break: keep one
            new = _keep_block_header(text, value.start, new) + "\n"
        new_text = text[: value.start] + new + text[end:]
    else:
        at = _content_end(text, item.start, item.end)
        line = " " * key_indent + "expected_output: " + _yaml_scalar(output, key_indent + 2) + "\n"
        if at == len(text) and not text.endswith("\n"):
            line = "\n" + line
        new_text = text[:at] + line + text[at:]
    if "\r\n" in text:  # keep the file's line endings
        new_text = new_text.replace("\r\n", "\n").replace("\n", "\r\n")
    _replace_file(path, text, new_text, lambda: load_yaml(path).get(value_key) == output, case.name)
    return path


def _offset(text: str, line: int, column: int) -> int:
    """Character offset of a 1-based line and column."""
    start = 0
    for _ in range(line - 1):
        start = text.index("\n", start) + 1
    return start + column - 1


def _replace_file(path: Path, old: str, new: str, check: Any, case_name: str) -> None:
    """Write ``new`` atomically with the file's permissions; put ``old`` back unless the
    result reads back right, so a failed accept never leaves a broken file."""
    import stat

    tmp = path.with_name(path.name + ".oxy-tmp")
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            handle.write(new)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(
            f"{path}: cannot write the new expected output ({exc.strerror or exc}); the file is unchanged"
        ) from None
    try:
        ok = check()
    except Exception:
        ok = False
    if not ok:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(old)
        raise ConfigError(
            f"{path}: could not write expected_output of case '{case_name}' so that it reads back "
            "exactly; the file is unchanged"
        )
