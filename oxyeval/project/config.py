"""A project: the folder holding ``config.yml``, and what that file declares (models,
embedding models, databases, judge settings, where the history lives, where A/B
branches that name a vendor send their requests).

Loading collects every problem (schema, unknown model, a path that leaves the
project) and raises them together, so a user fixes a file in one pass. The result is
plain specs: nothing here opens a connection or holds a client.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError, Diagnostic, LoadError, OxyError
from ..patterns import PatternError, compile_pattern
from ..providers import (
    GenerateParams,
    MissingCredential,
    ModelSpec,
    Price,
    ProviderEndpoint,
    canonical_vendor,
    default_embedding_model,
    default_key_var,
    endpoint_defaults,
    price_for,
    vendor_model_spec,
)
from ..redact import is_secret_name, register_credentials, register_secret
from .databases import database_absences, database_problems
from .document import Document, KeyPath, load_yaml
from .files import CONFIG_NAMES, find_config
from .schema import did_you_mean, validate_document

__all__ = [
    "JudgeSettings",
    "Project",
    "check_model",
    "load_project",
    "with_limits",
]

#: Entry keys handed to the vendor class as ``ModelSpec.options``: the mock's script,
#: and the embedding options (batch_size, task_type, dims).
_OPTION_KEYS = (
    "outputs",
    "sample",
    "seed",
    "rules",
    "latency_ms",
    "token_ms",
    "batch_size",
    "task_type",
    "dims",
)


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
    #: ``swap``: every consistency pair judged in both orders (a test's ``judge_swap``
    #: overrides it); two orders that disagree are a judge error, not a verdict.
    swap: bool = False


#: Paths whose project-relative form a project keeps (a long-lived server's project asks
#: for many over its life).
_RELATIVE_KEPT = 4_096


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
    #: config.yml's ``pricing:`` (model id -> price); look prices up with
    #: ``oxyeval.providers.price_for(model_id, project.pricing)``, which adds the built-ins.
    pricing: dict[str, Price] = field(default_factory=dict)
    #: config.yml's ``providers:`` (vendor as written there -> endpoint), where A/B
    #: branches naming a vendor send requests; look one up with
    #: ``oxyeval.providers.configured_endpoint(project.providers, vendor)``, which takes
    #: either spelling (``gemini``/``google``).
    providers: dict[str, ProviderEndpoint] = field(default_factory=dict)
    #: The ``globals/`` folder once read (``oxyeval.project.globals``): agents of one
    #: project share it.
    globals_cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: :meth:`relative` of the paths asked for (a file's 10,000 cases each ask for it).
    relative_cache: dict[Path, str] = field(default_factory=dict, repr=False, compare=False)

    def provider_model_spec(
        self,
        vendor: str,
        model_id: str,
        *,
        params: GenerateParams | None = None,
        environ: Mapping[str, str] | None = None,
        name: str | None = None,
    ) -> ModelSpec:
        """:func:`oxyeval.providers.vendor_model_spec` with this project's ``providers:``
        and ``pricing:``; a missing key that config.yml's ``providers:`` names is an
        error at that line of config.yml (a LoadError), like a model's."""
        try:
            return vendor_model_spec(
                vendor,
                model_id,
                params=params,
                endpoints=self.providers,
                pricing=self.pricing,
                environ=environ,
                name=name,
            )
        except MissingCredential as exc:
            if exc.where and self.config.get(exc.where) is not None:
                diagnostic = self.config.diagnostic(exc.where, str(exc))
                raise LoadError([diagnostic]) from None
            raise

    def provider_credential_warnings(
        self, vendors: Iterable[str], environ: Mapping[str, str] | None = None
    ) -> list[Diagnostic]:
        """For ``oxy validate``: what a model of each of ``vendors`` (the ``provider:``
        of the branches the checked files define; list only vendors something uses) would
        lack when called (an API key not set, a base URL in the environment that is not
        one), as warnings, since the files are valid without them. Placed at the
        vendor's ``providers:`` entry when config.yml has one."""
        found: list[Diagnostic] = []
        seen: set[str] = set()
        for vendor in vendors:
            canonical = canonical_vendor(vendor)
            if canonical in seen:
                continue
            seen.add(canonical)
            section = next((k for k in self.providers if canonical_vendor(k) == canonical), vendor)
            where: KeyPath = ("providers", section)
            try:
                vendor_model_spec(
                    vendor,
                    "any",
                    endpoints=self.providers,
                    pricing=self.pricing,
                    environ=environ,
                    name=vendor,
                )
                continue
            except MissingCredential as exc:
                where = exc.where or where
                message = str(exc)
                if not (os.environ if environ is None else environ).get(exc.variable, "").strip():
                    message = (
                        f"environment variable {exc.variable} is not set: branches with "
                        f"provider '{vendor}' cannot be run without it (oxy ab run stops with "
                        "exit 2 when it runs one); the files are valid"
                    )
            except ConfigError as exc:  # a base URL in the environment that is not one
                message = str(exc)
            if self.config.get(where) is None:  # nothing in config.yml to point at
                found.append(Diagnostic(self.config.display, message, severity="warning"))
            else:
                found.append(self.config.diagnostic(where, message, severity="warning"))
        return found

    def model_place(self, name: str) -> str:
        """``config.yml:17``: where model ``name`` is defined, for messages naming it."""
        where = self.model_keys.get(name)
        pos = self.config.locate((*where, "name")) if where is not None else None
        return f"{self.config.display}{f':{pos.line}' if pos else ''}"

    def model_error(self, name: str, message: str, where: KeyPath = ()) -> OxyError:
        """An error about model ``name`` (its missing API key, say) pointing at its entry in
        config.yml: at ``where`` in the entry (``("headers", "X", "env_var")``) when given,
        else at ``key_var`` when it has one, so the user sees which variable to set."""
        key = self.model_keys.get(name)
        if key is None:
            return ConfigError(message)
        entry = self.config.get(key) or {}
        if where and self.config.get((*key, *where)) is not None:
            return LoadError([self.config.diagnostic((*key, *where), message)])
        at = (*key, "key_var") if "key_var" in entry else key
        return LoadError([self.config.diagnostic(at, message, at_key="key_var" in entry)])

    def relative(self, path: Path) -> str:
        """``path`` as the project names it (relative to its root, in / form), or as given
        when it lies outside; resolved once per path (a few files, asked for per case)."""
        found = self.relative_cache.get(path)
        if found is not None:
            return found
        try:
            found = path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            found = str(path)
        if len(self.relative_cache) >= _RELATIVE_KEPT:
            self.relative_cache.clear()
        self.relative_cache[path] = found
        return found


def _model_spec(entry: dict[str, Any]) -> ModelSpec:
    vendor = canonical_vendor(entry["vendor"])
    headers: dict[str, str] = {}
    header_vars: dict[str, str] = {}
    for name, value in (entry.get("headers") or {}).items():
        if isinstance(value, dict):
            # Read when the model is called (a missing one is an error then, naming it):
            # commands that never call this model need none of its secrets.
            header_vars[name] = value["env_var"]
            register_secret(os.environ.get(value["env_var"]))
        else:
            headers[name] = str(value)
            if is_secret_name(name):
                # A literal credential in config.yml: scrub it like a key from key_var.
                register_secret(headers[name])
    api_key = entry.get("api_key")
    if api_key:
        register_secret(api_key)
    register_credentials(entry.get("api_url"))  # http://user:password@host/v1
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
        header_vars=header_vars,
        params=params,
        options=options,
        api_key=api_key or None,
        **{k: entry[k] for k in ("timeout", "max_retries") if k in entry},
        # A local server answers one request at a time unless the entry says otherwise,
        # and is streamed to, so an abandoned call stops its generation.
        **endpoint_defaults(vendor, entry.get("api_url")),
    )
    return with_limits(spec, concurrency=entry.get("concurrency"))


def with_limits(
    spec: ModelSpec,
    max_tokens: int | None = None,
    timeout: float | None = None,
    concurrency: int | None = None,
) -> ModelSpec:
    """``spec`` with the keys every model definition may set (config.yml's models,
    chattest model files) laid over its own; None leaves a key as it is."""
    changes: dict[str, Any] = {}
    if max_tokens is not None:
        changes["params"] = spec.params.merged(GenerateParams(max_tokens=max_tokens))
    if timeout is not None:
        changes["timeout"] = float(timeout)
    if concurrency is not None:
        changes["concurrency"] = concurrency
    return replace(spec, **changes) if changes else spec


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
            raise ConfigError(
                f"--project {project_dir}: no config.yml in that folder "
                f"(`oxy init {project_dir}` makes one)"
            )
    else:
        origin = Path(start) if start is not None else Path.cwd()
        config_path = find_config(origin)
        if config_path is None:
            folder = origin.resolve() if origin.is_dir() else origin.resolve().parent
            raise ConfigError(
                f"no config.yml found in {folder} or any folder above it. A project "
                "is a folder with a config.yml that lists models: `oxy init` makes one "
                "here, or pass --project DIR to point at one."
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
        models[name] = _model_spec(entry)
        model_keys[name] = ("models", i)
    for section in ("models", "embeddings"):
        for i, entry in enumerate(data.get(section) or []):
            _request_problems(doc, (section, i), entry, problems)
    for i, entry in enumerate(data["models"]):
        for rule_index, rule in enumerate(entry.get("rules") or []):
            try:  # matched with RE2, in linear time: see oxyeval.patterns
                compile_pattern(rule["match"])
            except PatternError as exc:
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
        embeddings[entry["name"]] = _model_spec(entry)
    databases: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(data.get("databases") or []):
        if entry["name"] in databases:
            problems.append(
                doc.diagnostic(
                    ("databases", i, "name"), f"database name '{entry['name']}' is used twice"
                )
            )
        databases[entry["name"]] = entry
        # A warehouse's password, written here or in its variable: scrubbed from the start,
        # as a model's key is (a refused sign-in's message may quote what it was sent).
        if isinstance(entry.get("password"), str):
            register_secret(entry["password"])
        if entry.get("password_var"):
            register_secret(os.environ.get(str(entry["password_var"]), "").strip())
        absent = database_absences(entry, config_path.parent.resolve())
        for key, message in database_problems(entry, config_path.parent.resolve()):
            if key in absent:  # valid as oxy reads it: what queries it stops, not the file
                message += "; a command that queries this database stops on it"
                problems.append(doc.diagnostic(("databases", i, key), message, severity="warning"))
            else:
                problems.append(doc.diagnostic(("databases", i, key), message))
    # Shape and bounds checked by the schema (the YAML loader refuses .nan and .inf).
    pricing = {
        str(model_id): Price(float(entry["input"]), float(entry["output"]))
        for model_id, entry in (data.get("pricing") or {}).items()
    }
    models = {
        name: replace(spec, price=price_for(spec.model_ref, pricing))
        for name, spec in models.items()
    }
    providers = _providers(doc, data.get("providers") or {}, problems)
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
        judge=JudgeSettings(
            structured=structured,
            max_tokens=judge.get("max_tokens"),
            swap=bool(judge.get("swap", False)),
        ),
        pricing=pricing,
        providers=providers,
    )


def _providers(
    doc: Document, section: dict[str, Any], problems: list[Diagnostic]
) -> dict[str, ProviderEndpoint]:
    """config.yml's ``providers:`` (shape checked by the schema): one endpoint per vendor,
    its ``api_url`` checked as a model's is, and its credentials (the URL's userinfo, the
    key in its variable) registered as secrets from the start, as a model's are."""
    out: dict[str, ProviderEndpoint] = {}
    seen: dict[str, str] = {}
    for written, entry in section.items():
        vendor = canonical_vendor(written)
        if vendor in seen:
            problems.append(
                doc.diagnostic(
                    ("providers", written),
                    f"'{written}' and '{seen[vendor]}' are the same vendor; keep one entry",
                    at_key=True,
                )
            )
            continue
        seen[vendor] = written
        entry = entry or {}
        _request_problems(doc, ("providers", written), entry, problems)
        api_url, key_var = entry.get("api_url"), entry.get("key_var")
        register_credentials(api_url)
        var = key_var or (None if api_url else default_key_var(vendor))
        if var:
            register_secret(os.environ.get(var, "").strip())
        out[written] = ProviderEndpoint(vendor=vendor, api_url=api_url, key_var=key_var)
    return out


def _request_problems(
    doc: Document, key_path: KeyPath, entry: dict[str, Any], problems: list[Diagnostic]
) -> None:
    """What httpx could not send for this model: a header name or literal value it
    cannot carry (a line break, a non-ASCII character) and an ``api_url`` it cannot
    parse. Found when the file loads, at its line, instead of failing (or being retried
    as a network error) at the first call; ``oxy validate`` reports them too."""
    from ..providers import api_url_problem, header_problem, value_problem

    for name, value in (entry.get("headers") or {}).items():
        literal = value if isinstance(value, str) else ""
        problem = header_problem(str(name), literal, "the value in config.yml")
        if problem is not None:
            problems.append(doc.diagnostic((*key_path, "headers", name), problem, at_key=True))
    key = entry.get("api_key")
    if isinstance(key, str) and value_problem(key) is not None:
        problems.append(
            doc.diagnostic(
                (*key_path, "api_key"),
                f"api_key holds {value_problem(key)}; an API key is one line of ASCII text",
                at_key=True,
            )
        )
    url = entry.get("api_url")
    if isinstance(url, str):
        problem = api_url_problem(url)
        if problem is not None:
            problems.append(doc.diagnostic((*key_path, "api_url"), problem))


def check_model(
    doc: Document, path: KeyPath, name: Any, project: Project, problems: list[Diagnostic], what: str
) -> None:
    if isinstance(name, str) and name not in project.models:
        names = list(project.models)
        problems.append(
            doc.diagnostic(
                path,
                f"unknown {what} '{name}'{did_you_mean(name, names)} (the models in "
                f"{project.config.display}: {', '.join(names)})",
            )
        )
