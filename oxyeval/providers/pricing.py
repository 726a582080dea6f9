"""What an answer cost: USD per million input and output tokens, by the vendor's model id.

config.yml's ``pricing:`` (model id -> ``{input, output}``) is laid over the built-in
table below, which is small on purpose (each vendor's current flagship and small models)
and dated: prices change, and a price that is wrong is worse than none, so anything not
listed has no price and its answers cost None (never 0). A model id with a date or a
``models/`` prefix (``claude-sonnet-4-5-20250929``, ``gpt-4o-2024-08-06``,
``models/gemini-2.5-flash``) is priced as the model it names.

This module imports nothing heavy; the store and reports may read it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["BATCH_SHARE", "BUILTIN_PRICES", "PRICES_DATE", "Price", "cost_of", "price_for"]


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float


#: When the vendors' published prices below were taken (standard tier, text, prompts
#: under 200k tokens, no caching or batch discount). Override in config.yml's pricing:.
PRICES_DATE = "2025-11-25"

#: Sources: openai.com/api/pricing, claude.com/pricing#api,
#: ai.google.dev/gemini-api/docs/pricing, as of :data:`PRICES_DATE`.
BUILTIN_PRICES: Mapping[str, Price] = {
    # OpenAI
    "gpt-5": Price(1.25, 10.0),
    "gpt-5-mini": Price(0.25, 2.0),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-4.1": Price(2.0, 8.0),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4o": Price(2.50, 10.0),
    "gpt-4o-mini": Price(0.15, 0.60),
    # Anthropic
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    # Google
    "gemini-3-pro-preview": Price(2.0, 12.0),
    "gemini-2.5-pro": Price(1.25, 10.0),
    "gemini-2.5-flash": Price(0.30, 2.50),
    "gemini-2.5-flash-lite": Price(0.10, 0.40),
}

#: What a batch costs of the same calls made live: OpenAI, Anthropic and Google all bill
#: their batch APIs at half their standard prices (same sources and date).
BATCH_SHARE = 0.5

_DATED = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


def _names(model_id: str) -> tuple[str, ...]:
    """The id as given, then without its ``models/`` prefix and date suffix."""
    plain = _DATED.sub("", model_id.removeprefix("models/"))
    return (model_id,) if plain == model_id else (model_id, plain)


def price_for(model_id: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model_id``: config.yml's (``overrides``) first, then the built-in
    table; None when neither knows it."""
    if not model_id:
        return None
    names = _names(model_id)
    for table in (overrides or {}, BUILTIN_PRICES):
        for name in names:
            price = table.get(name)
            if price is not None:
                return price
    return None


def cost_of(
    price: Price | None, input_tokens: int | None, output_tokens: int | None
) -> float | None:
    """USD for these tokens; None when the price or either count is unknown."""
    if price is None or input_tokens is None or output_tokens is None:
        return None
    return (input_tokens * price.input + output_tokens * price.output) / 1_000_000
