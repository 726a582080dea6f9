"""Models without a config.yml entry: a model named by vendor and model id alone (and,
through :meth:`Model.variant` / :meth:`ModelPool.variant`, a configured model with other
sampling settings).

An A/B comparison runs one prompt on several configurations (GPT at temperature 0.2
and 0.9, or a vendor's model that config.yml does not list). A variant shares its base
model's endpoint limiter and HTTP client, so two variants of one model queue in one
limit, as two config.yml names for the same endpoint do; a spec made by
:func:`model_spec` goes through :meth:`~oxyeval.providers.ModelPool.add`, which gives
it the pool's client, the endpoint's limiter and the key from the vendor's variable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._base import GenerateParams, ModelSpec
from ._registry import canonical_vendor, vendors
from .local import endpoint_defaults

if TYPE_CHECKING:
    from .pricing import Price

__all__ = ["model_spec"]


def model_spec(
    vendor: str,
    model_id: str,
    *,
    api_url: str | None = None,
    key_var: str | None = None,
    name: str | None = None,
    params: GenerateParams | None = None,
    price: Price | None = None,
    concurrency: int | None = None,
) -> ModelSpec:
    """A spec for a model config.yml does not list: ``vendor`` (``openai``, ``anthropic``,
    ``gemini``/``google``, ``ollama``, ``mock``), the vendor's ``model_id``, and where to
    send it (``api_url``; default the vendor's public endpoint) with the key in
    ``key_var`` (default the vendor's variable, ``OPENAI_API_KEY``...). ``name`` defaults
    to ``vendor:model_id``; ``price`` to the built-in one for ``model_id``. What depends on
    where the endpoint is (a local server's concurrency, streaming and answer cap) comes
    from :func:`~oxyeval.providers.local.endpoint_defaults`, as for a config.yml model;
    ``concurrency`` overrides it.
    """
    canonical = canonical_vendor(vendor)
    if canonical not in vendors():
        raise ConfigError(f"unknown vendor '{vendor}'; vendors: {', '.join(vendors())}")
    if not model_id and canonical != "mock":
        raise ConfigError(f"vendor '{vendor}': a model id is needed")
    where = endpoint_defaults(canonical, api_url)
    if concurrency is not None:
        where["concurrency"] = concurrency
    return ModelSpec(
        name=name or f"{canonical}:{model_id}",
        vendor=canonical,
        model_ref=model_id,
        key_var=key_var,
        api_url=api_url,
        params=params or GenerateParams(),
        price=price,
        **where,
    )
