"""The one vendor registry: vendor names, their classes and what is known about them.

Everything oxyeval knows about a vendor, apart from its wire format, is here: the
names config.yml may give it (``gemini`` is ``google``), its chat class and its
embedding class (each in the vendor's own module, imported only when a model of that
vendor is used), the environment variable its key is read from by default, and its
default embedding model. Project loading, the model pools and the embedding pools
all ask this module; none keeps a table of its own.

A plugin adds a vendor with :func:`register_vendor` and/or
:func:`register_embedding_vendor`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..redact import is_secret_name, register_credentials, register_secret

if TYPE_CHECKING:
    from ._base import EmbeddingAPI, ModelAPI, ModelSpec, VendorAPI

__all__ = [
    "MissingCredential",
    "canonical_vendor",
    "default_embedding_model",
    "default_key_var",
    "embedding_vendor_class",
    "embedding_vendors",
    "missing_credentials",
    "register_embedding_vendor",
    "register_vendor",
    "resolve_api_key",
    "vendor_class",
    "vendors",
]


@dataclass(frozen=True)
class _Vendor:
    module: str  # under oxyeval.providers
    chat: str | None = None  # class name in that module
    embeddings: str | None = None
    key_var: str | None = None  # where the key is looked for when config.yml names none
    embedding_model: str | None = None  # model_ref of an embeddings: entry that gives none


_VENDORS: dict[str, _Vendor] = {
    "openai": _Vendor(
        "openai",
        "OpenAIAPI",
        "OpenAIEmbeddingAPI",
        key_var="OPENAI_API_KEY",
        embedding_model="text-embedding-3-small",
    ),
    "ollama": _Vendor("ollama", "OllamaAPI", "OllamaEmbeddingAPI"),
    "anthropic": _Vendor("anthropic", "AnthropicAPI", key_var="ANTHROPIC_API_KEY"),
    "google": _Vendor(
        "google",
        "GoogleAPI",
        "GoogleEmbeddingAPI",
        key_var="GEMINI_API_KEY",
        embedding_model="gemini-embedding-001",
    ),
    "mock": _Vendor("mock", "MockAPI", "MockEmbeddingAPI"),
    "openai-completions": _Vendor(
        "openai_completions", "OpenAICompletionsAPI", key_var="OPENAI_API_KEY"
    ),
}
#: Other names config.yml accepts (oxy's spellings).
_ALIASES = {"openai_compat": "openai", "open_ai_compat": "openai", "gemini": "google"}

_CHAT: dict[str, type[ModelAPI]] = {}  # loaded or registered classes, by name
_EMBEDDING: dict[str, type[EmbeddingAPI]] = {}
_KEY_VARS: dict[str, str] = {}  # registered plugins' default key variables


def canonical_vendor(name: str) -> str:
    """The vendor an alias stands for (``gemini`` -> ``google``); other names unchanged."""
    return _ALIASES.get(name, name)


def default_key_var(vendor: str) -> str | None:
    """The environment variable a vendor's key is read from when config.yml names none."""
    if vendor in _KEY_VARS:
        return _KEY_VARS[vendor]
    known = _VENDORS.get(canonical_vendor(vendor))
    return known.key_var if known else None


def default_embedding_model(vendor: str) -> str | None:
    """The model an ``embeddings:`` entry of this vendor uses when it gives no model_ref."""
    known = _VENDORS.get(canonical_vendor(vendor))
    return known.embedding_model if known else None


def register_vendor(name: str, cls: type[ModelAPI], *, key_var: str | None = None) -> None:
    """Add (or replace) a chat vendor; plugins call this to bring their own API class.

    ``key_var``: where its key is looked for when a model names no ``key_var``.
    """
    _CHAT[name] = cls
    if key_var is not None:
        _KEY_VARS[name] = key_var


def register_embedding_vendor(
    name: str, cls: type[EmbeddingAPI], *, key_var: str | None = None
) -> None:
    """Add (or replace) an embedding vendor; plugins call this to bring their own."""
    _EMBEDDING[name] = cls
    if key_var is not None:
        _KEY_VARS[name] = key_var


def vendors() -> list[str]:
    """Every name a chat model's vendor may have (aliases included)."""
    return _names(_CHAT, "chat")


def embedding_vendors() -> list[str]:
    """Every name an embedding model's vendor may have (aliases included)."""
    return _names(_EMBEDDING, "embeddings")


def vendor_class(name: str) -> type[ModelAPI]:
    """The chat class for ``name``; KeyError when no chat vendor has that name."""
    return _load(_CHAT, "chat", name)  # type: ignore[return-value]


def embedding_vendor_class(name: str) -> type[EmbeddingAPI]:
    """The embedding class for ``name``; KeyError when no embedding vendor has that name."""
    return _load(_EMBEDDING, "embeddings", name)  # type: ignore[return-value]


def _names(loaded: Mapping[str, Any], kind: str) -> list[str]:
    builtin = {name for name, v in _VENDORS.items() if getattr(v, kind)}
    aliases = {alias for alias, name in _ALIASES.items() if name in builtin}
    return sorted(builtin | aliases | set(loaded))


def _load(loaded: dict[str, Any], kind: str, name: str) -> type[VendorAPI]:
    cls = loaded.get(name) or loaded.get(canonical_vendor(name))
    if cls is not None:
        return cls  # type: ignore[no-any-return]
    vendor = _VENDORS.get(canonical_vendor(name))
    attr = getattr(vendor, kind) if vendor is not None else None
    if vendor is None or attr is None:
        raise KeyError(name)
    cls = getattr(importlib.import_module(f"oxyeval.providers.{vendor.module}"), attr)
    loaded[canonical_vendor(name)] = cls
    return cls  # type: ignore[no-any-return]


class MissingCredential(ConfigError):
    """An environment variable a model's calls need (its API key, a header's value) is not
    set. Bad input for a command that calls the model; for ``oxy validate`` only a
    warning, since the files are valid without it (CI often validates with no secrets).
    ``where`` is the place in the model's config.yml entry that names the variable."""

    def __init__(self, message: str, *, variable: str, where: tuple[str, ...]) -> None:
        super().__init__(message)
        self.variable = variable
        self.where = where


def _key_var(spec: ModelSpec, api_class: type[VendorAPI] | None) -> str | None:
    """The variable ``spec``'s key is read from; None when its calls need no key."""
    if spec.api_key:  # a literal key in config.yml (oxy's ollama form), already registered
        return None
    if api_class is None:
        try:
            api_class = vendor_class(spec.vendor)
        except KeyError:
            api_class = embedding_vendor_class(spec.vendor)
    var = spec.key_var
    if var is None:
        if spec.api_url or not api_class.requires_key:
            return None
        var = default_key_var(spec.vendor)
        if var is None:
            raise ConfigError(
                f"model '{spec.name}' ({spec.vendor}) needs an API key; set key_var in "
                f"config.yml to the environment variable that holds it."
            )
    return var


def missing_credentials(
    spec: ModelSpec,
    environ: Mapping[str, str] | None = None,
    api_class: type[VendorAPI] | None = None,
) -> list[MissingCredential]:
    """Every variable ``spec``'s calls need that is not set, without raising: what
    :func:`resolve_api_key` would refuse, for checks that only warn (``oxy validate``)."""
    env = os.environ if environ is None else environ
    problems = []
    var = _key_var(spec, api_class)
    if var is not None and not env.get(var, "").strip():
        how = "named by key_var" if spec.key_var else "that the vendor uses by default"
        problems.append(
            MissingCredential(
                f"model '{spec.name}' ({spec.vendor}) needs an API key in the environment "
                f"variable {var} ({how}), which is not set. Export {var}, or set key_var in "
                f"config.yml to the variable that holds the key.",
                variable=var,
                where=("key_var",) if spec.key_var else (),
            )
        )
    elif var is not None:
        where = ("key_var",) if spec.key_var else ()
        problems.extend(filter(None, [_unsendable(spec, var, env[var].strip(), where)]))
    for header, header_var in spec.header_vars.items():
        if env.get(header_var) is None:
            problems.append(
                MissingCredential(
                    f"model '{spec.name}' ({spec.vendor}) sends header '{header}' from the "
                    f"environment variable {header_var}, which is not set. Export {header_var}.",
                    variable=header_var,
                    where=("headers", header, "env_var"),
                )
            )
        else:
            where = ("headers", header, "env_var")
            found = _unsendable(spec, header_var, env[header_var], where, header)
            problems.extend(filter(None, [found]))
    return problems


def _unsendable(
    spec: ModelSpec, var: str, value: str, where: tuple[str, ...], header: str | None = None
) -> MissingCredential | None:
    """An environment value an HTTP header cannot carry (a line break, a control or
    non-ASCII character; bytes that are not UTF-8 arrive as surrogate escapes), said
    before any call, naming the variable and never showing the value (it is a secret).
    The one check for API keys and ``headers: {X: {env_var: NAME}}`` alike: it used to
    surface mid-call as an internal error or be retried as a network error."""
    from ._checks import header_problem, value_problem

    problem = header_problem(header, "") if header is not None else None
    if problem is not None:  # a spec built in code; config.yml's names are checked at load
        message = f"model '{spec.name}' ({spec.vendor}): {problem}"
        return MissingCredential(message, variable=var, where=where)
    problem = value_problem(value)
    if problem is None:
        return None
    whose = "the API key in " if header is None else ""
    return MissingCredential(
        f"model '{spec.name}' ({spec.vendor}): {whose}the environment variable {var} holds "
        f"{problem}, which an HTTP header cannot carry (a key or header value is one line of "
        f"ASCII text). Check the value exported in {var}.",
        variable=var,
        where=where,
    )


def resolve_api_key(
    spec: ModelSpec,
    environ: Mapping[str, str] | None = None,
    api_class: type[VendorAPI] | None = None,
) -> ModelSpec:
    """Return ``spec`` with its API key and its headers read from the environment (``headers:
    {X: {env_var: NAME}}`` in config.yml), or raise :class:`MissingCredential`.

    The same rules for chat and embedding models: a literal key in config.yml wins;
    else ``key_var``, else the vendor's default variable. A model pointed at a custom
    ``api_url`` without ``key_var`` (vLLM, llama.cpp, LM Studio, Ollama) needs no key,
    nor does a vendor whose class says so; a hosted vendor without one is an error
    that names the variable to set. ``api_class`` is the class that will make the
    calls (default: the vendor's chat class, else its embedding class). Read when a
    model is about to be called, not when config.yml loads, so a command that never
    calls a model needs none of its secrets.
    """
    # Every credential the spec holds, by the one rule (a spec may be built in code, not
    # from config.yml): the literal key, literal credential headers, the URL's userinfo.
    register_secret(spec.api_key)
    register_credentials(spec.api_url)
    for header, value in spec.headers.items():
        if is_secret_name(header):
            register_secret(value)
    problems = missing_credentials(spec, environ, api_class)
    if problems:
        raise problems[0]
    env = os.environ if environ is None else environ
    headers = dict(spec.headers)
    for header, header_var in spec.header_vars.items():
        headers[header] = env[header_var]
        register_secret(headers[header])  # and "Bearer <token>"'s token
    spec = replace(spec, headers=headers, header_vars={})
    var = _key_var(spec, api_class)
    if var is None:
        return spec
    key = env.get(var, "").strip()
    register_secret(key)
    return replace(spec, api_key=key, key_var=var)
