"""Where a model named by vendor and model id alone is sent: an A/B branch's
``provider: openai, model: gpt-4o-mini`` has no config.yml ``models:`` entry.

The chain, per field: config.yml's ``providers:`` entry for the vendor, then the
vendor's standard environment variables (the ones its own SDK reads, so a shell already
set up for the SDK works unchanged), then the vendor class's public endpoint.

Base URLs from the environment follow each SDK's convention, which is not the same for
every vendor, and are turned into the ``api_url`` form the vendor classes take (what a
``models:`` entry's ``api_url`` holds):

* ``OPENAI_BASE_URL`` includes the version (``https://api.openai.com/v1``, a proxy's
  ``https://host/openai/v1``): the OpenAI SDK appends only ``/chat/completions``, so
  the value is used as it is.
* ``ANTHROPIC_BASE_URL`` does not (``https://api.anthropic.com``): the Anthropic SDK
  appends ``/v1/messages``, so ``/v1`` is appended here (not twice when the value
  already ends with it).
* ``GEMINI_BASE_URL`` (or ``GOOGLE_GEMINI_BASE_URL``, the google-genai SDK's name)
  does not either: the SDK appends its API version, ``v1beta``; appended here unless
  the value already ends with a version (``/v1``, ``/v1beta``, ``/v1alpha``).
* ``OLLAMA_HOST`` is a server address as Ollama's CLI and Python client read it:
  ``host``, ``host:port`` or a URL. Without a scheme it is ``http://`` and without a
  port Ollama's 11434; with a scheme the scheme's own default port applies, as in
  Ollama's clients. ``/v1`` (the OpenAI-compatible endpoint the Ollama class speaks)
  is appended.

A config.yml ``providers:`` entry's ``api_url`` is read like a ``models:`` entry's
(``https://api.anthropic.com`` and ``https://api.anthropic.com/v1`` both work), and an
entry with ``api_url`` but no ``key_var`` sends no key, like a model pointed at a local
server. A URL's user name and password are registered as secrets before anything may
quote it; a bad URL from the environment is an error naming the variable, never its
value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..redact import register_credentials
from ._checks import api_url_problem
from ._registry import MissingCredential, canonical_vendor, default_key_var, resolve_api_key
from .pricing import price_for
from .variants import model_spec

if TYPE_CHECKING:
    from ._base import GenerateParams, ModelSpec
    from .pricing import Price

__all__ = [
    "ENV_BASE_URLS",
    "OLLAMA_DEFAULT_PORT",
    "ProviderEndpoint",
    "configured_endpoint",
    "vendor_endpoint",
    "vendor_model_spec",
]

#: Ollama's port when ``OLLAMA_HOST`` names none (and gives no scheme).
OLLAMA_DEFAULT_PORT = 11434

#: Canonical vendor -> the environment variables its base URL is read from, first set wins.
ENV_BASE_URLS: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_BASE_URL",),
    "anthropic": ("ANTHROPIC_BASE_URL",),
    "google": ("GEMINI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"),
    "ollama": ("OLLAMA_HOST",),
}

_VERSIONED = re.compile(r"/v\d+[a-z0-9]*$")


@dataclass(frozen=True)
class ProviderEndpoint:
    """One config.yml ``providers:`` entry: where a vendor's ``provider:`` branches go.

    ``vendor`` is the canonical name (``google`` for ``gemini:``); ``api_url`` None: the
    vendor's standard variable, else its public endpoint; ``key_var`` None: the vendor's
    standard variable (``OPENAI_API_KEY``...), or no key when ``api_url`` is set.
    """

    vendor: str
    api_url: str | None = None
    key_var: str | None = None


def configured_endpoint(
    endpoints: Mapping[str, ProviderEndpoint], vendor: str
) -> ProviderEndpoint | None:
    """The entry for ``vendor`` in ``endpoints`` under either spelling (``gemini`` and
    ``google`` are one vendor), None when there is none."""
    canonical = canonical_vendor(vendor)
    found = endpoints.get(canonical) or endpoints.get(vendor)
    if found is not None:
        return found
    return next((e for k, e in endpoints.items() if canonical_vendor(k) == canonical), None)


def _env_url(shown: str, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """``(variable, api_url)`` from the vendor's base-URL variables, or None; ``shown``
    is the vendor as the caller spelled it, for the message."""
    vendor = canonical_vendor(shown)
    for var in ENV_BASE_URLS.get(vendor, ()):
        value = environ.get(var, "").strip()
        if not value:
            continue
        register_credentials(value)  # http://user:token@proxy: scrubbed wherever it shows
        if vendor == "ollama":
            url = _ollama_url(var, value)
        elif vendor == "anthropic":
            url = value.rstrip("/")
            url = url if url.endswith("/v1") else url + "/v1"
        elif vendor == "google":
            url = value.rstrip("/")
            url = url if _VERSIONED.search(url) else url + "/v1beta"
        else:
            url = value
        problem = api_url_problem(url)
        if problem is not None:
            raise ConfigError(
                f"the environment variable {var} (the {shown} base URL) is not a usable URL: "
                f"{problem.replace('api_url', 'its value', 1)}. Fix or unset {var}, or set "
                f"providers.{shown}.api_url in config.yml"
            )
        return var, url
    return None


def _ollama_url(var: str, value: str) -> str:
    """``OLLAMA_HOST`` as Ollama's clients read it, then its ``/v1`` endpoint."""
    if "://" in value:
        base = value
    else:
        authority, slash, path = value.partition("/")
        if not authority:
            authority = "127.0.0.1"  # Ollama's clients: an empty host is the local one
        if not re.search(r":\d+$", authority) or authority.endswith("]"):
            authority += f":{OLLAMA_DEFAULT_PORT}"
        base = f"http://{authority}{slash}{path}"
    return base.rstrip("/") + "/v1"


def vendor_endpoint(
    vendor: str, configured: ProviderEndpoint | None, environ: Mapping[str, str]
) -> tuple[str | None, str | None]:
    """``(api_url, key_var)`` for a model of ``vendor`` that config.yml's ``models:``
    does not list; see the module docstring for the chain and the URL conventions.

    ``api_url`` None means the vendor class's public endpoint. ``key_var`` is the variable
    the key must be read from: config.yml's, else the vendor's standard one (None for
    Ollama, which needs no key, and for a config.yml ``api_url`` given without
    ``key_var``). A base URL from the environment that cannot be one is a ConfigError
    naming the variable.
    """
    canonical = canonical_vendor(vendor)
    api_url = configured.api_url if configured is not None else None
    key_var = configured.key_var if configured is not None else None
    if api_url is not None:
        register_credentials(api_url)
        return api_url, key_var
    from_env = _env_url(vendor, environ)
    if from_env is not None:
        api_url = from_env[1]
    return api_url, key_var or default_key_var(canonical)


def vendor_model_spec(
    vendor: str,
    model_id: str,
    *,
    params: GenerateParams | None = None,
    endpoints: Mapping[str, ProviderEndpoint] | None = None,
    pricing: Mapping[str, Price] | None = None,
    environ: Mapping[str, str] | None = None,
    name: str | None = None,
) -> ModelSpec:
    """The spec of ``model_id`` at ``vendor`` (an A/B branch's ``provider:`` and
    ``model:``), ready for :meth:`~oxyeval.providers.ModelPool.add`: sent where
    :func:`vendor_endpoint` says, priced by :func:`~oxyeval.providers.price_for`
    (config.yml's ``pricing:`` over the built-ins; None when unknown), its key read
    now and registered as a secret, as a config.yml model's is when it is called.

    A key that is not set is a :class:`~oxyeval.providers.MissingCredential` naming the
    variable and where to set it; its ``where`` is the place in config.yml
    (``("providers", "openai", "key_var")``) when config.yml named the variable, else
    ``()``. ``environ`` defaults to the process environment.
    """
    env = os.environ if environ is None else environ
    configured = configured_endpoint(endpoints or {}, vendor)
    api_url, key_var = vendor_endpoint(vendor, configured, env)
    spec = model_spec(
        vendor,
        model_id,
        api_url=api_url,
        key_var=key_var,
        name=name,
        params=params,
        price=price_for(model_id, pricing),
    )
    section = _section_name(vendor, endpoints or {})
    where: tuple[str, ...] = ()
    if configured is not None and configured.key_var is not None:
        where = ("providers", section, "key_var")
    if key_var is not None and not env.get(key_var, "").strip():
        how = (
            f"named by providers.{section}.key_var in config.yml"
            if where
            else "the vendor's standard variable"
        )
        advice = (
            f"Export {key_var}."
            if where
            else (
                f"Export {key_var}, or set providers.{section}.key_var in config.yml to the "
                "variable that holds the key."
            )
        )
        raise MissingCredential(
            f"model '{spec.name}' ({spec.vendor}) needs an API key in the environment "
            f"variable {key_var} ({how}), which is not set. {advice}",
            variable=key_var,
            where=where,
        )
    try:
        return resolve_api_key(spec, env)
    except MissingCredential as exc:  # a value no header can carry: placed in config.yml
        raise MissingCredential(str(exc), variable=exc.variable, where=where) from None


def _section_name(vendor: str, endpoints: Mapping[str, ProviderEndpoint]) -> str:
    """How config.yml spells the vendor's section: as written when it has one, else as
    the branch named it (``gemini``)."""
    canonical = canonical_vendor(vendor)
    for key in endpoints:
        if canonical_vendor(key) == canonical:
            return key
    return vendor
