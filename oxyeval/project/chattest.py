"""chattest files: prompts judged PASS/FAIL over repeated runs, and the HTTP models they run on.

A chattest folder holds ``prompts/*.json`` (``key``, ``prompt``, ``models``, ``tests``,
``runVolume``, ``testModel``, ``successThreshold``) and ``models/*.json`` (``key``,
``url``, ``apiKey``, ``apiKeyHeader``). :func:`load_chattest` reads them (JSON, with the
file, line and key of every problem), checks them against ``chattest-prompt`` and
``chattest-model`` schemas and against each other, and returns plain specs; it calls no
model. The rules chosen where the chattest spec is silent:

* ``runVolume`` absent: 1 (each model answers once); at most 1000.
  ``successThreshold`` absent: 0, as the spec says; it is a share from 0 to 1.
  ``minJudged`` (extension) absent: 0.5: a cell whose runs got a verdict less than half
  the time is an error, not a pass rate of the few that did.
  ``testModel`` absent: config.yml's judge model, when a project is given.
* The wire format comes from the URL's path: ``.../chat/completions`` is OpenAI chat
  (vendor ``openai``, ``api_url`` the URL without ``/chat/completions``), ``.../completions``
  OpenAI's legacy completions (vendor ``openai-completions``), ``.../messages`` Anthropic,
  ``.../models/<id>:generateContent`` Gemini (vendor ``google``, the model id from the
  path). Otherwise ``format`` (an oxyeval extension: ``openai-chat``,
  ``openai-completions``, ``anthropic``, ``gemini``, ``mock``) says it, and the URL is the
  API's base URL. (Anthropic and Gemini URLs whose path is nothing but ``/messages`` or
  ``/models/...`` get the vendor's ``/v1`` / ``/v1beta`` added, as config.yml's
  ``api_url`` does.)
* The model id sent: the one in a Gemini URL, else the model's ``key``; an optional
  ``model`` field (extension) sets it.
* ``apiKey``: ``${ENV_VAR}`` is read from the environment now (unset or empty: an error
  naming the variable); a literal key is allowed, as the spec shows, registered for
  redaction before anything is printed, and warned about (:attr:`ChatTestSuite.warnings`).
  It is sent in ``apiKeyHeader``: ``Authorization`` as ``Bearer <key>``, any other header
  bare. Without ``apiKeyHeader`` the format's own header is used (``Authorization:
  Bearer`` for both OpenAI formats, ``x-api-key`` for Anthropic, ``x-goog-api-key`` for
  Gemini), since a default ``Authorization`` would be refused by the last two.
* ``"url": "mock:"`` (or ``"format": "mock"``) is an offline scripted model, with
  ``outputs``, ``rules``, ``sample``, ``seed``, ``latencyMs`` as config.yml's mock vendor
  takes them, so examples and CI run without a network.
* A model file without ``url`` uses the config.yml model of the same name (with a
  project); a prompt (or ``testModel``) may also name a config.yml model that has no
  model file. A model file with a ``url`` wins over a config.yml model of its name.
* ``maxTokens``, ``timeout`` and ``concurrency`` (extensions) are config.yml's
  ``max_tokens``, ``timeout`` and ``concurrency``, set over a config.yml model's own when
  the file has no ``url``; unset, the defaults of every model apply (an answer cap of
  2048 tokens, 120 s per attempt, 16 requests in flight, 1 for a local endpoint).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import Diagnostic, LoadError
from ..patterns import PatternError, compile_pattern
from ..providers import ModelSpec, api_url_problem, endpoint_defaults, header_problem, value_problem
from ..redact import register_credentials, register_secret
from .chattest_reading import ENV_REF, chattest_files, collect, load_json, read
from .config import Project, with_limits
from .document import Document, KeyPath
from .schema import did_you_mean, validate_document
from .templates import TemplateRef, answer_prompt
from .tests import DEFAULT_MIN_JUDGED

__all__ = [
    "CHATTEST_FORMATS",
    "DEFAULT_RUN_VOLUME",
    "DEFAULT_SUCCESS_THRESHOLD",
    "MAX_RUN_VOLUME",
    "ChatModel",
    "ChatPrompt",
    "ChatTestSuite",
    "chattest_files",
    "detect_format",
    "load_chattest",
    "load_json",
]

DEFAULT_RUN_VOLUME = 1
MAX_RUN_VOLUME = 1000  # also the schema's maximum
DEFAULT_SUCCESS_THRESHOLD = 0.0
#: Wire formats a model file may name; ``config`` marks a config.yml model.
CHATTEST_FORMATS = ("openai-chat", "openai-completions", "anthropic", "gemini", "mock")
_VENDORS = {
    "openai-chat": "openai",
    "openai-completions": "openai-completions",
    "anthropic": "anthropic",
    "gemini": "google",
}
_MOCK_FIELDS = {"outputs": "outputs", "rules": "rules", "sample": "sample", "seed": "seed"}
_GEMINI = re.compile(r"^(?P<base>.*)/models/(?P<id>[^/:]+):(?:stream)?[gG]enerateContent$")


@dataclass(repr=False)
class ChatModel:
    """A model file (or a config.yml model a prompt names): what a run calls through
    ``spec`` (a :class:`~oxyeval.providers.ModelSpec` named ``key``, its key already in
    it). ``api_key`` is the resolved key, kept out of every repr; never print it."""

    key: str
    url: str  # as written; "" for a config.yml model
    format: str  # one of CHATTEST_FORMATS, or "config"
    spec: ModelSpec
    api_key_header: str | None = None  # as written; None: the format's own header
    doc: Document | None = None  # None for a config.yml model without a file
    where: KeyPath = ()
    api_key: str | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return f"ChatModel({self.key!r}, format={self.format!r})"

    @property
    def location(self) -> str:
        """``file:line (model 'key')`` for messages about this model."""
        if self.doc is None:
            return f"config.yml model '{self.key}'"
        pos = self.doc.locate(self.where)
        return f"{self.doc.display}{f':{pos.line}' if pos else ''} (model '{self.key}')"


@dataclass(repr=False)
class ChatPrompt:
    """A prompt file: every model of ``models`` answers ``prompt`` ``run_volume`` times,
    ``test_model`` judges each answer against each of ``tests``; a test passes for a
    model when its pass rate reaches ``success_threshold`` (0 to 1)."""

    key: str
    prompt: str
    models: tuple[str, ...]
    tests: tuple[str, ...]
    test_model: str
    run_volume: int = DEFAULT_RUN_VOLUME
    success_threshold: float = DEFAULT_SUCCESS_THRESHOLD
    #: Share of a model's runs that must get a verdict (``minJudged``, an extension).
    min_judged: float = DEFAULT_MIN_JUDGED
    doc: Document | None = None
    where: KeyPath = ()
    #: ``testPrompt`` (an extension): the judge's own prompt; None: the PASS/FAIL default.
    test_prompt: TemplateRef | None = None

    def __repr__(self) -> str:
        return f"ChatPrompt({self.key!r}, {len(self.models)} models, {len(self.tests)} tests)"

    @property
    def location(self) -> str:
        if self.doc is None:
            return f"prompt '{self.key}'"
        pos = self.doc.locate(self.where)
        return f"{self.doc.display}{f':{pos.line}' if pos else ''} (prompt '{self.key}')"


@dataclass
class ChatTestSuite:
    """What :func:`load_chattest` read: prompts in file order, every model they name
    (answering or judging) by key, and warnings for ``oxy validate`` (a literal key)."""

    prompts: list[ChatPrompt]
    models: dict[str, ChatModel]
    warnings: list[Diagnostic] = field(default_factory=list)

    def specs(self) -> dict[str, ModelSpec]:
        """Every model a run calls, by key: what a ``ModelPool`` is built from."""
        return {key: model.spec for key, model in self.models.items()}


# --------------------------------------------------------------------------- URLs


def detect_format(url: str) -> tuple[str, str, str | None] | None:
    """``(format, api_url, model id or None)`` from an endpoint URL's path, or None when
    the path names no known API (see the module docstring)."""
    base = url.rstrip("/")
    path = base.split("://", 1)[-1]
    path = path[path.find("/") :] if "/" in path else ""
    gemini = _GEMINI.match(base)
    if gemini is not None and "/" in path:
        return "gemini", gemini.group("base"), gemini.group("id")
    for suffix, name in (
        ("/chat/completions", "openai-chat"),
        ("/completions", "openai-completions"),
        ("/messages", "anthropic"),
    ):
        if path.endswith(suffix):
            return name, base[: -len(suffix)], None
    return None


# --------------------------------------------------------------------------- loading


def load_chattest(
    paths: Sequence[str | os.PathLike[str]],
    *,
    project: Project | None = None,
    environ: Mapping[str, str] | None = None,
) -> ChatTestSuite:
    """Read chattest prompts and models: each path a folder holding ``prompts/`` and
    ``models/`` (or a ``prompts/`` folder itself, its models beside it), or a file (a
    prompt file brings the ``models/`` folder beside its own). Every problem of every
    file is raised together (LoadError); nothing is called."""
    env = os.environ if environ is None else environ
    problems: list[Diagnostic] = []
    prompt_files, model_files = collect([Path(p) for p in paths] or [Path(".")], problems)
    docs = {file: read(file, problems) for file in [*model_files, *prompt_files]}
    warnings: list[Diagnostic] = []
    models: dict[str, ChatModel] = {}
    broken: set[str] = set()  # keys of model files with errors: not "unknown" to prompts too
    for file in model_files:
        doc = docs[file]
        model = None
        if doc is not None and not _invalid(doc, "chattest-model", problems, warnings):
            model = _model(doc, project, env, problems, warnings)
        if model is None:
            data = doc.data if doc is not None else None
            if isinstance(data, dict) and isinstance(data.get("key"), str):
                broken.add(data["key"])
            continue
        if model.key in models:
            first = models[model.key].location
            problems.append(
                doc.diagnostic(("key",), f"model key '{model.key}' is also defined in {first}")
            )
            continue
        if model.format != "config" and project is not None and model.key in project.models:
            problems.append(_clash(doc, model.key, project))
            continue
        models[model.key] = model
    prompts: list[ChatPrompt] = []
    for file in prompt_files:
        doc = docs[file]
        if doc is None or _invalid(doc, "chattest-prompt", problems, warnings):
            continue
        prompt = _prompt(doc, project, problems)
        if prompt is None:
            continue
        clash = next((p for p in prompts if p.key == prompt.key), None)
        if clash is not None:
            problems.append(
                doc.diagnostic(
                    ("key",), f"prompt key '{prompt.key}' is also defined in {clash.location}"
                )
            )
            continue
        prompts.append(prompt)
        _resolve_references(prompt, models, broken, project, problems)
    if not prompts and not problems:
        shown = ", ".join(str(p) for p in paths) or "."
        problems.append(Diagnostic(shown, "no chattest prompt files found (prompts/*.json)"))
    if any(p.severity == "error" for p in problems):
        raise LoadError(problems)
    return ChatTestSuite(prompts, models, warnings)


def _clash(doc: Document, key: str, project: Project) -> Diagnostic:
    """A model file with its own endpoint named like a config.yml model: prompts name
    models by key alone (a file without a url is how one says "config.yml's model")."""
    return doc.diagnostic(
        ("key",),
        f"model key '{key}' is also a model in {project.model_place(key)}, the project this "
        "chattest folder belongs to; rename one of them (prompts name models by key)",
    )


def _invalid(
    doc: Document, kind: str, problems: list[Diagnostic], warnings: list[Diagnostic]
) -> bool:
    found = validate_document(doc, kind)
    problems.extend(d for d in found if d.severity == "error")
    warnings.extend(d for d in found if d.severity != "error")
    return any(d.severity == "error" for d in found)


def _model(
    doc: Document,
    project: Project | None,
    env: Mapping[str, str],
    problems: list[Diagnostic],
    warnings: list[Diagnostic],
) -> ChatModel | None:
    data: dict[str, Any] = doc.data
    key, url, fmt = data["key"], data.get("url"), data.get("format")
    count = len(problems)
    mock = url == "mock:" or fmt == "mock"
    if not mock:
        for name in (*_MOCK_FIELDS, "latencyMs"):
            if name in data:
                problems.append(
                    doc.diagnostic(
                        (name,), f'\'{name}\' is only for mock models ("url": "mock:")', at_key=True
                    )
                )
    if url is None and not mock:
        if project is not None and key in project.models:
            for name in ("apiKey", "apiKeyHeader", "format", "model"):
                if name in data:
                    problems.append(
                        doc.diagnostic(
                            (name,),
                            f"'{name}' needs a url; without one the config.yml model '{key}' is used as it is",
                            at_key=True,
                        )
                    )
            spec = _own(project.models[key], data)
            return None if len(problems) > count else ChatModel(key, "", "config", spec, doc=doc)
        hint = f" or a model named '{key}' in config.yml" if project is not None else ""
        problems.append(
            doc.diagnostic((), f"missing required key 'url' (the model's endpoint{hint})")
        )
        return None
    if mock:
        return _mock(doc, data, problems, count)
    register_credentials(url)  # a key in the URL's userinfo or query
    problem = api_url_problem(url)
    if problem is not None:
        problems.append(doc.diagnostic(("url",), problem.replace("api_url", "url")))
        return None
    if "?" in url or "#" in url:
        problems.append(
            doc.diagnostic(
                ("url",), "url must not have a query string or fragment; put a key in apiKey"
            )
        )
        return None
    found = detect_format(url)
    if found is None and fmt is None:
        problems.append(
            doc.diagnostic(
                ("url",),
                "cannot tell the API from the url's path; end it with /v1/chat/completions, "
                '/v1/completions, /v1/messages or /models/<id>:generateContent, or set "format" '
                f"({', '.join(CHATTEST_FORMATS)}) and give the API's base URL",
            )
        )
        return None
    if found is not None and fmt is not None and found[0] != fmt:
        problems.append(
            doc.diagnostic(
                ("format",),
                f"format '{fmt}' does not match the url, whose path is a {found[0]} endpoint",
            )
        )
        return None
    fmt, api_url, model_id = found if found is not None else (fmt, url.rstrip("/"), None)
    if model_id is not None and data.get("model") not in (None, model_id):
        problems.append(
            doc.diagnostic(
                ("model",), f"the url names model '{model_id}'; model must match it or be left out"
            )
        )
    headers, api_key = _key(doc, data, env, problems, warnings)
    if len(problems) > count:
        return None
    vendor = _VENDORS[fmt]
    spec = ModelSpec(
        name=key,
        vendor=vendor,
        model_ref=data.get("model") or model_id or key,
        api_url=api_url,
        headers=headers,
        api_key=api_key if data.get("apiKeyHeader") is None else None,
        **endpoint_defaults(vendor, api_url),
    )
    spec = _own(spec, data)
    return ChatModel(key, url, fmt, spec, data.get("apiKeyHeader"), doc, api_key=api_key)


def _own(spec: ModelSpec, data: Mapping[str, Any]) -> ModelSpec:
    return with_limits(spec, data.get("maxTokens"), data.get("timeout"), data.get("concurrency"))


def _mock(
    doc: Document, data: dict[str, Any], problems: list[Diagnostic], count: int
) -> ChatModel | None:
    if data.get("url") not in (None, "mock:"):
        problems.append(doc.diagnostic(("url",), 'a mock model\'s url is "mock:"'))
    if "outputs" not in data and "rules" not in data:
        problems.append(doc.diagnostic((), "a mock model needs outputs or rules"))
    for i, rule in enumerate(data.get("rules") or []):
        try:  # matched with RE2, in linear time: see oxyeval.patterns
            compile_pattern(rule["match"])
        except PatternError as exc:
            problems.append(
                doc.diagnostic(("rules", i, "match"), f"invalid regular expression: {exc}")
            )
    if len(problems) > count:
        return None
    options = {opt: data[name] for name, opt in _MOCK_FIELDS.items() if name in data}
    if "latencyMs" in data:
        options["latency_ms"] = data["latencyMs"]
    key = data["key"]
    spec = ModelSpec(name=key, vendor="mock", model_ref=data.get("model") or key, options=options)
    return ChatModel(key, "mock:", "mock", spec, doc=doc)


def _key(
    doc: Document,
    data: dict[str, Any],
    env: Mapping[str, str],
    problems: list[Diagnostic],
    warnings: list[Diagnostic],
) -> tuple[dict[str, str], str | None]:
    """The headers the key goes in (when ``apiKeyHeader`` is set) and the key itself."""
    written, header = data.get("apiKey"), data.get("apiKeyHeader")
    if header is not None:
        problem = header_problem(header, "")
        if problem is not None:
            problems.append(doc.diagnostic(("apiKeyHeader",), problem))
            return {}, None
    if written is None:
        return {}, None
    ref = ENV_REF.fullmatch(written.strip())
    if ref is not None:
        var = ref.group(1)
        key = env.get(var, "").strip()
        if not key:
            problems.append(
                doc.diagnostic(
                    ("apiKey",),
                    f"the environment variable {var} is not set (or empty); export it to run this model",
                )
            )
            return {}, None
        register_secret(key)
        where = f"the environment variable {var}"
    elif "${" in written:
        problems.append(
            doc.diagnostic(
                ("apiKey",), 'write an environment variable as the whole value: "${NAME}"'
            )
        )
        return {}, None
    else:
        key = written.strip()
        register_secret(key)
        where = "apiKey"
        warnings.append(
            doc.diagnostic(
                ("apiKey",),
                'a literal API key is stored in this file; prefer "${ENV_VAR}" and keep the key in the environment',
                severity="warning",
            )
        )
    problem = value_problem(key)
    if problem is not None:
        problems.append(
            doc.diagnostic(
                ("apiKey",), f"{where} holds {problem}; an API key is one line of ASCII text"
            )
        )
        return {}, None
    if header is None:
        return {}, key
    value = f"Bearer {key}" if header.lower() == "authorization" else key
    register_secret(value)
    return {header: value}, key


def _prompt(
    doc: Document, project: Project | None, problems: list[Diagnostic]
) -> ChatPrompt | None:
    data: dict[str, Any] = doc.data
    test_model = data.get("testModel")
    if test_model is None:
        if project is None:
            problems.append(
                doc.diagnostic((), "missing required key 'testModel' (the model that judges)")
            )
            return None
        test_model = project.default_judge
    return ChatPrompt(
        key=data["key"],
        prompt=data["prompt"],
        models=tuple(data["models"]),
        tests=tuple(data["tests"]),
        test_model=test_model,
        run_volume=data.get("runVolume", DEFAULT_RUN_VOLUME),
        success_threshold=float(data.get("successThreshold", DEFAULT_SUCCESS_THRESHOLD)),
        min_judged=float(data.get("minJudged", DEFAULT_MIN_JUDGED)),
        doc=doc,
        test_prompt=answer_prompt(doc, ("testPrompt",), data.get("testPrompt"), problems),
    )


def _resolve_references(
    prompt: ChatPrompt,
    models: dict[str, ChatModel],
    broken: set[str],
    project: Project | None,
    problems: list[Diagnostic],
) -> None:
    """Each model the prompt names is a model file's key or a config.yml model (added to
    ``models`` as format ``config``); an unknown one is an error at its place."""
    assert prompt.doc is not None
    configured = list(project.models) if project is not None else []
    places: list[tuple[KeyPath, str, str]] = [
        (("models", i), name, "model") for i, name in enumerate(prompt.models)
    ]
    # testModel, or config.yml's judge when it is absent (placed at the prompt's key then)
    at: KeyPath = ("testModel",) if prompt.doc.get(("testModel",)) is not None else ("key",)
    places.append((at, prompt.test_model, "test model"))
    for where, name, what in places:
        if name in models or name in broken:
            continue
        if project is not None and name in project.models:
            models[name] = ChatModel(name, "", "config", replace(project.models[name], name=name))
            continue
        known = sorted({*models, *configured})
        shown = ", ".join(known) if known else "none"
        problems.append(
            prompt.doc.diagnostic(
                where, f"unknown {what} '{name}'{did_you_mean(name, known)} (models: {shown})"
            )
        )
