"""A project: the folder holding ``config.yml``, its models, and the files in it.

Loading a file collects every problem (schema, unknown model, bad template) and
raises them together, so a user fixes a file in one pass instead of one error
per run.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, Diagnostic, LoadError, OxyError
from ..providers import (
    GenerateParams,
    ModelSpec,
    canonical_vendor,
    default_embedding_model,
    default_key_var,
)
from ..redact import register_secret
from .document import SYMLINK_LOOP, Document, KeyPath, load_yaml, path_problem
from .limits import MAX_ALL_PAIRS_RUNS, MAX_RUNS
from .schema import did_you_mean, validate_document
from .templates import TemplateRef, referenced_names, template_diagnostics

__all__ = [
    "CONFIG_NAMES",
    "Agent",
    "ContextSpec",
    "JudgeSettings",
    "JudgeSpec",
    "Project",
    "TestSpec",
    "file_kind",
    "find_config",
    "load_agent",
    "load_project",
    "project_files",
]

CONFIG_NAMES = ("config.yml", "config.yaml")
DEFAULT_SCORES = {"A": 1.0, "B": 0.0}
DEFAULT_N = 10
DEFAULT_TEST_CONCURRENCY = 10
#: Share of a test's run pairs that must get a verdict for its accuracy to count.
DEFAULT_MIN_JUDGED = 0.5
_SECRET_HEADER = re.compile(r"(?i)auth|key|token|secret|password|cookie|signature")
#: Entry keys handed to the vendor class as ``ModelSpec.options``: the mock's script,
#: and the embedding options (batch_size, task_type, dims).
_OPTION_KEYS = (
    "outputs",
    "sample",
    "seed",
    "rules",
    "latency_ms",
    "batch_size",
    "task_type",
    "dims",
)


def file_kind(path: Path) -> str | None:
    """``agent``, ``workflow`` or ``config`` from the file name (oxy's conventions)."""
    name = path.name.lower()
    if name.endswith((".agent.yml", ".agent.yaml")):
        return "agent"
    if name.endswith((".workflow.yml", ".workflow.yaml", ".automation.yml", ".automation.yaml")):
        return "workflow"
    if name in CONFIG_NAMES:
        return "config"
    if name.endswith((".prompt.yml", ".prompt.yaml")):
        return "prompt"
    if name.endswith((".cases.yml", ".cases.yaml")):
        return "cases"
    return None


SKIP_DIRS = frozenset({"node_modules", "__pycache__", "target", "dist", "build"})


def project_files(root: Path, kinds: tuple[str, ...]) -> list[Path]:
    """Files of the given kinds under ``root``, sorted, skipping hidden and build folders."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        out.extend(Path(dirpath) / n for n in sorted(filenames) if file_kind(Path(n)) in kinds)
    return out


def find_config(start: Path) -> Path | None:
    """Walk up from ``start`` (a file or folder) to the nearest config.yml."""
    try:
        here = start.resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        raise LoadError([Diagnostic(str(start), path_problem(start) or SYMLINK_LOOP)]) from None
    if here.is_file() or not here.exists():
        here = here.parent
    for folder in (here, *here.parents):
        for name in CONFIG_NAMES:
            candidate = folder / name
            if candidate.is_file():
                return candidate
    return None


@dataclass(frozen=True)
class JudgeSettings:
    """config.yml's ``judge:`` section: how every judge call of a project is made.

    ``structured``: ``auto`` asks for a JSON verdict from vendors whose class supports
    it and falls back to text if the server refuses; ``on`` insists (a refusal is a
    judge error); ``off`` asks for text only. ``max_tokens``: None means the judge
    model's own setting, else :data:`oxyeval.judge.judge.DEFAULT_JUDGE_MAX_TOKENS` (512).
    """

    structured: str = "auto"
    max_tokens: int | None = None


@dataclass(repr=False)
class Project:
    def __repr__(self) -> str:  # short: asyncio may repr results (3.11 SIGINT check)
        return f"Project({str(self.root)!r})"

    root: Path
    config: Document
    models: dict[str, ModelSpec]
    default_model: str
    default_judge: str
    databases: dict[str, dict[str, Any]]
    warnings: list[Diagnostic] = field(default_factory=list)
    embeddings: dict[str, ModelSpec] = field(default_factory=dict)
    model_keys: dict[str, KeyPath] = field(default_factory=dict)  # name -> place in config.yml
    judge: JudgeSettings = field(default_factory=JudgeSettings)  # config.yml's judge: section

    def model_error(self, name: str, message: str) -> OxyError:
        """An error about model ``name`` (its missing API key, say) pointing at its entry in
        config.yml: at ``key_var`` when it has one, so the user sees which variable to set."""
        key = self.model_keys.get(name)
        if key is None:
            return ConfigError(message)
        entry = self.config.get(key) or {}
        where = (*key, "key_var") if "key_var" in entry else key
        return LoadError([self.config.diagnostic(where, message, at_key="key_var" in entry)])

    def relative(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


def _model_spec(
    entry: dict[str, Any], path: KeyPath, doc: Document, problems: list[Diagnostic]
) -> ModelSpec:
    vendor = canonical_vendor(entry["vendor"])
    headers: dict[str, str] = {}
    for name, value in (entry.get("headers") or {}).items():
        if isinstance(value, dict):
            var = value["env_var"]
            resolved = os.environ.get(var)
            if resolved is None:
                problems.append(
                    doc.diagnostic(
                        (*path, "headers", name, "env_var"),
                        f"header '{name}' reads environment variable {var}, which is not set",
                    )
                )
                continue
            register_secret(resolved)
            headers[name] = resolved
        else:
            headers[name] = str(value)
            if _SECRET_HEADER.search(name):
                # A literal credential in config.yml: scrub it like a key from key_var.
                register_secret(headers[name])
                register_secret(headers[name].split(" ", 1)[-1])
    api_key = entry.get("api_key")
    if api_key:
        register_secret(api_key)
    # Known from the start, not only once a call resolves it: commands that never call
    # a model (oxy cases show|list|accept, oxy history) print stored text too.
    key_var = entry.get("key_var") or (None if entry.get("api_url") else default_key_var(vendor))
    if key_var:
        register_secret(os.environ.get(key_var, "").strip())
    params = GenerateParams(
        temperature=entry.get("temperature"),
        max_tokens=entry.get("max_tokens"),
        top_p=entry.get("top_p"),
        seed=entry.get("seed") if vendor != "mock" else None,
    )
    options = {k: entry[k] for k in _OPTION_KEYS if k in entry}
    spec = ModelSpec(
        name=entry["name"],
        vendor=vendor,
        model_ref=entry.get("model_ref", ""),
        key_var=entry.get("key_var"),
        api_url=entry.get("api_url"),
        headers=headers,
        params=params,
        options=options,
        api_key=api_key or None,
        **{k: entry[k] for k in ("timeout", "max_retries", "concurrency") if k in entry},
    )
    return spec


def load_project(
    start: str | os.PathLike[str] | None = None,
    *,
    project_dir: str | None = None,
    cache: dict[Path, Project] | None = None,
) -> Project:
    """Find and load the project that ``start`` belongs to (or ``project_dir``).

    ``cache`` (config path -> Project) lets a command that handles many files of one
    project parse and check its config.yml once.
    """
    if project_dir is not None:
        root = Path(project_dir)
        config_path = next((root / n for n in CONFIG_NAMES if (root / n).is_file()), None)
        if config_path is None:
            raise ConfigError(f"--project {project_dir}: no config.yml in that folder")
    else:
        origin = Path(start) if start is not None else Path.cwd()
        config_path = find_config(origin)
        if config_path is None:
            raise ConfigError(
                f"no config.yml found in {origin.resolve()} or any folder above it. A project "
                "is a folder with a config.yml that lists models; pass --project DIR to point at one."
            )
    if cache is not None:
        known = cache.get(config_path.resolve())
        if known is not None:
            return known
        project = load_project(config_path, project_dir=project_dir)
        cache[config_path.resolve()] = project
        return project
    doc = load_yaml(config_path)
    problems = validate_document(doc, "config")
    if any(p.severity == "error" for p in problems):
        raise LoadError(problems)
    data = doc.data
    models: dict[str, ModelSpec] = {}
    model_keys: dict[str, KeyPath] = {}
    for i, entry in enumerate(data["models"]):
        name = entry["name"]
        if name in models:
            problems.append(
                doc.diagnostic(("models", i, "name"), f"model name '{name}' is used twice")
            )
            continue
        models[name] = _model_spec(entry, ("models", i), doc, problems)
        model_keys[name] = ("models", i)
    for i, entry in enumerate(data["models"]):
        for rule_index, rule in enumerate(entry.get("rules") or []):
            import re

            try:
                re.compile(rule["match"])
            except re.error as exc:
                problems.append(
                    doc.diagnostic(
                        ("models", i, "rules", rule_index, "match"),
                        f"invalid regular expression: {exc}",
                    )
                )
    embeddings: dict[str, ModelSpec] = {}
    for i, entry in enumerate(data.get("embeddings") or []):
        if entry["name"] in embeddings:
            problems.append(
                doc.diagnostic(
                    ("embeddings", i, "name"), f"embedding name '{entry['name']}' is used twice"
                )
            )
            continue
        entry = {"model_ref": default_embedding_model(entry["vendor"]) or "", **entry}
        embeddings[entry["name"]] = _model_spec(entry, ("embeddings", i), doc, problems)
    databases: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(data.get("databases") or []):
        if entry["name"] in databases:
            problems.append(
                doc.diagnostic(
                    ("databases", i, "name"), f"database name '{entry['name']}' is used twice"
                )
            )
        databases[entry["name"]] = entry
        for key in ("dataset", "file_search_path", "path"):
            # The sandbox opens the dataset folder to every query, model-written ones too.
            value = entry.get(key)
            if isinstance(value, str) and _leaves(config_path.parent.resolve(), value):
                problems.append(
                    doc.diagnostic(
                        ("databases", i, key),
                        f"database '{entry['name']}': {key} {value!r} leaves the project folder "
                        f"{config_path.parent.resolve()}; SQL can read everything in it, so it "
                        "must stay inside the project",
                    )
                )
    defaults = data.get("defaults") or {}
    names = list(models)
    for key in ("model", "judge_model"):
        if key in defaults and defaults[key] not in models:
            problems.append(
                doc.diagnostic(
                    ("defaults", key),
                    f"unknown model '{defaults[key]}'{did_you_mean(defaults[key], names)}; "
                    f"models defined above: {', '.join(names)}",
                )
            )
    if "database" in defaults and defaults["database"] not in databases:
        problems.append(
            doc.diagnostic(
                ("defaults", "database"),
                f"unknown database '{defaults['database']}'{did_you_mean(defaults['database'], list(databases))}",
            )
        )
    if any(p.severity == "error" for p in problems):
        raise LoadError(problems)
    default_model = defaults.get("model") or names[0]
    judge = data.get("judge") or {}
    structured = judge.get("structured", "auto")
    if isinstance(structured, bool):  # YAML 1.1 reads a bare on/off as true/false
        structured = "on" if structured else "off"
    return Project(
        root=config_path.parent.resolve(),
        config=doc,
        models=models,
        default_model=default_model,
        default_judge=defaults.get("judge_model") or default_model,
        databases=databases,
        warnings=[p for p in problems if p.severity == "warning"],
        embeddings=embeddings,
        model_keys=model_keys,
        judge=JudgeSettings(structured=structured, max_tokens=judge.get("max_tokens")),
    )


def _leaves(root: Path, text: str) -> bool:
    """Whether a project-relative path points outside the project (links followed)."""
    try:
        return not (root / text).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return True


@dataclass(frozen=True)
class ContextSpec:
    name: str
    type: str
    src: tuple[str, ...]


@dataclass
class JudgeSpec:
    """How one metric judges a pair: its prompt (None = built-in), model and scores."""

    prompt: TemplateRef | None
    model: str
    scores: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_SCORES))
    key: KeyPath = ()  # where it is declared; () for one built in code
    settings: JudgeSettings = field(default_factory=JudgeSettings)  # the project's judge:


@dataclass
class TestSpec:
    """One consistency test as declared in a file, defaults filled in.

    Every field has a default, so a test can be built in code (the SDK) as well as
    loaded: ``TestSpec(name="capital", task_description="...", judges=[JudgeSpec(None, "m")])``.
    """

    __test__ = False  # not a pytest class

    index: int = 0  # 0-based position in the file's tests:
    name: str = "Test 1"
    file: Path | None = None  # None: built in code, not read from a file
    display: str = "<code>"
    key: KeyPath = ()
    n: int = DEFAULT_N
    task_description: str | None = None
    task_ref: str | None = None
    concurrency: int = DEFAULT_TEST_CONCURRENCY
    pairing: str = "all"
    judges: list[JudgeSpec] = field(default_factory=list)
    min_judged: float = DEFAULT_MIN_JUDGED  # share of run pairs that must get a verdict


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

    def __post_init__(self) -> None:
        if isinstance(self.system_instructions, str):  # built in code from plain text
            self.system_instructions = TemplateRef(self.system_instructions)

    @property
    def display(self) -> str:
        """Where the agent comes from, for messages: its file, or its name."""
        return self.doc.display if self.doc is not None else f"agent '{self.name}'"


def _check_model(
    doc: Document, path: KeyPath, name: Any, project: Project, problems: list[Diagnostic], what: str
) -> None:
    if isinstance(name, str) and name not in project.models:
        names = list(project.models)
        problems.append(
            doc.diagnostic(
                path,
                f"unknown {what} '{name}'{did_you_mean(name, names)}; models in "
                f"{project.config.display}: {', '.join(names)}",
            )
        )


def _check_judge_prompt(ref: TemplateRef, problems: list[Diagnostic]) -> None:
    found = template_diagnostics(ref)
    problems.extend(found)
    if found or ref.doc is None:
        return
    names = referenced_names(ref)
    missing = [v for v in ("submission_1", "submission_2") if v not in names]
    if missing:
        problems.append(
            ref.doc.diagnostic(
                ref.key,
                "judge prompt never uses {{ "
                + " }} or {{ ".join(missing)
                + " }}, so the judge cannot see what it compares",
                severity="warning",
            )
        )
    unknown = names - {"submission_1", "submission_2", "task_description"}
    if unknown:
        problems.append(
            ref.doc.diagnostic(
                ref.key,
                f"judge prompt uses unknown variable(s) {', '.join(sorted(unknown))}; only "
                "submission_1, submission_2 and task_description are available",
            )
        )


def parse_tests(
    doc: Document, project: Project, problems: list[Diagnostic], *, owner: str
) -> list[TestSpec]:
    """Consistency tests of an agent or workflow file; other test types are skipped (warned)."""
    specs: list[TestSpec] = []
    names_seen: set[str] = set()
    for i, test in enumerate(doc.data.get("tests") or []):
        if test.get("type") != "consistency":
            continue
        key: KeyPath = ("tests", i)
        metrics = test.get("metrics")
        judges: list[JudgeSpec] = []
        if metrics:
            for flat in ("prompt", "model_ref", "scores"):
                if flat in test:
                    problems.append(
                        doc.diagnostic(
                            (*key, flat),
                            f"give '{flat}' either on the test or in its metrics, not both",
                        )
                    )
            for m, metric in enumerate(metrics):
                if metric.get("type") != "similarity":
                    continue
                judges.append(_judge(doc, (*key, "metrics", m), metric, project, problems))
        else:
            judges.append(_judge(doc, key, test, project, problems))
        if owner == "agent" and not test.get("task_description"):
            problems.append(
                doc.diagnostic(
                    key,
                    "an agent's consistency test needs task_description: the question the "
                    "agent answers n times",
                    at_key=True,
                )
            )
        if owner == "agent" and "task_ref" in test:
            problems.append(
                doc.diagnostic(
                    (*key, "task_ref"),
                    "task_ref is for workflow tests; agents use task_description",
                )
            )
        n = test.get("n", DEFAULT_N)
        if (
            test.get("pairing", "all") == "all"
            and isinstance(n, int)
            and MAX_ALL_PAIRS_RUNS < n <= MAX_RUNS
        ):
            problems.append(
                doc.diagnostic(
                    (*key, "n"),
                    f"{n} runs with pairing: all make {n * (n - 1) // 2:,} pairs to judge; "
                    f"pairing: all takes at most {MAX_ALL_PAIRS_RUNS} runs (pairing: ring "
                    f"takes up to {MAX_RUNS:,})",
                )
            )
        name = test.get("name") or f"Test {i + 1}"
        if name in names_seen:
            problems.append(
                doc.diagnostic(
                    (*key, "name"),
                    f"test name '{name}' is used twice in this file; reports and thresholds name tests by it",
                )
            )
        names_seen.add(name)
        specs.append(
            TestSpec(
                index=i,
                name=name,
                file=doc.path,
                display=doc.display,
                key=key,
                n=n,
                task_description=test.get("task_description"),
                task_ref=test.get("task_ref"),
                concurrency=test.get("concurrency", DEFAULT_TEST_CONCURRENCY),
                pairing=test.get("pairing", "all"),
                judges=judges,
                min_judged=float(test.get("min_judged", DEFAULT_MIN_JUDGED)),
            )
        )
    return specs


def _judge(
    doc: Document, key: KeyPath, entry: dict[str, Any], project: Project, problems: list[Diagnostic]
) -> JudgeSpec:
    prompt = None
    if entry.get("prompt"):
        prompt = TemplateRef(entry["prompt"], doc, (*key, "prompt"))
        _check_judge_prompt(prompt, problems)
    model = entry.get("model_ref") or project.default_judge
    _check_model(doc, (*key, "model_ref"), entry.get("model_ref"), project, problems, "judge model")
    scores = {**DEFAULT_SCORES, **{k: float(v) for k, v in (entry.get("scores") or {}).items()}}
    for letter, value in scores.items():
        if not math.isfinite(value):  # YAML's .nan passes every numeric bound
            problems.append(
                doc.diagnostic(
                    (*key, "scores", letter), f"score must be a number between 0 and 1, got {value}"
                )
            )
    return JudgeSpec(prompt=prompt, model=model, scores=scores, key=key, settings=project.judge)


def variable_error(schema: dict[str, Any], value: Any) -> str | None:
    """Why ``value`` does not fit a variable's JSON Schema (None when it does)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    check = {k: v for k, v in schema.items() if k not in ("default", "description")}
    try:
        error = next(iter(Draft202012Validator(check).iter_errors(value)), None)
    except SchemaError as exc:
        return f"invalid variable schema: {exc.message}"
    return None if error is None else error.message


def check_variable_defaults(doc: Document, variables: Any, problems: list[Diagnostic]) -> None:
    """A variable's default must satisfy its own schema (a string default for an integer)."""
    if not isinstance(variables, dict):
        return
    for name, spec in variables.items():
        if isinstance(spec, dict) and "default" in spec:
            error = variable_error(spec, spec["default"])
            if error is not None:
                problems.append(
                    doc.diagnostic(
                        ("variables", name, "default"),
                        f"default does not match the variable's schema: {error}",
                    )
                )


def _check_agent(
    doc: Document, project: Project, problems: list[Diagnostic]
) -> tuple[TemplateRef, list[ContextSpec], list[TestSpec]]:
    """Checks beyond the schema: model names, databases, templates, tests."""
    data = doc.data
    _check_model(doc, ("model",), data.get("model"), project, problems, "model")
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
    for i, tool in enumerate(data.get("tools") or []):
        db = tool.get("database")
        if tool.get("type") == "execute_sql" and db is not None and db not in project.databases:
            names = list(project.databases)
            problems.append(
                doc.diagnostic(
                    ("tools", i, "database"),
                    f"unknown database '{db}'{did_you_mean(db, names)}; databases in "
                    f"{project.config.display}: {', '.join(names) or 'none'}",
                )
            )
    check_variable_defaults(doc, data.get("variables"), problems)
    tests = parse_tests(doc, project, problems, owner="agent")
    return system, context, tests


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
    system, context, tests = parts
    data = doc.data
    variables = {}
    for name, spec in (data.get("variables") or {}).items():
        if not isinstance(spec, dict):
            variables[name] = spec  # oxy's short form: the value is the default
        elif "default" in spec:
            variables[name] = spec["default"]
        # A declared variable without a default stays undefined, so a template that uses
        # it fails naming it instead of rendering the word "None".
    name = doc.path.name
    for suffix in (".agent.yml", ".agent.yaml"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return Agent(
        name=name,
        path=doc.path,
        doc=doc,
        model=data["model"],
        system_instructions=system,
        description=data.get("description", ""),
        context=context,
        tools=[{"name": t.get("type"), **t} for t in data.get("tools") or []],
        max_tool_calls=data.get("max_tool_calls", 10),
        variables=variables,
        params=GenerateParams(
            temperature=data.get("temperature"), max_tokens=data.get("max_tokens")
        ),
        tests=tests,
        warnings=[p for p in problems if p.severity == "warning"],
        kind=data.get("type", "default"),
    )
