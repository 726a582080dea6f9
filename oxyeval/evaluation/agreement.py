"""How far two raters agree beyond chance: Cohen's kappa with its interval.

A judge is only as good as its agreement with people. Raw agreement flatters a judge on
a skewed set (a judge that always says "consistent" agrees 90% on a set that is 90%
consistent); kappa subtracts the agreement chance would give with the same label
frequencies: ``(p_o - p_e) / (1 - p_e)``, 1 for perfect agreement, 0 for chance. Its
standard error is Cohen's large-sample one, ``sqrt(p_o (1 - p_o) / (n (1 - p_e)^2))``,
and the interval is cut to [-1, 1]. Used for a judge against human labels and for two
judges against each other. Pure and stdlib only, like :mod:`.stats`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from .stats import Interval, normal_quantile

__all__ = ["Kappa", "cohens_kappa"]


@dataclass(frozen=True)
class Kappa:
    """Agreement of two raters over ``n`` items."""

    n: int
    #: Share of items both labelled alike.
    observed: float
    #: Share chance would give with the same label frequencies.
    expected: float
    #: None when chance alone agrees fully (both raters used one and the same label).
    value: float | None
    interval: Interval | None
    #: (first rater's label, second rater's label) -> items.
    confusion: dict[tuple[str, str], int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "observed": round(self.observed, 6),
            "expected": round(self.expected, 6),
            "kappa": None if self.value is None else round(self.value, 6),
            "interval": None
            if self.interval is None
            else {"low": round(self.interval.low, 6), "high": round(self.interval.high, 6)},
            "confusion": [
                {"first": a, "second": b, "count": c}
                for (a, b), c in sorted(self.confusion.items())
            ],
        }


def cohens_kappa(
    first: Sequence[Hashable], second: Sequence[Hashable], confidence: float = 0.95
) -> Kappa | None:
    """Kappa between two raters' labels of the same items, in the same order; None for
    no items."""
    if len(first) != len(second):
        raise ValueError(f"two raters label the same items: {len(first)} != {len(second)}")
    n = len(first)
    if n == 0:
        return None
    pairs = [(str(a), str(b)) for a, b in zip(first, second, strict=True)]
    observed = sum(1 for a, b in pairs if a == b) / n
    left, right = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(left[label] * right[label] for label in left) / (n * n)
    value: float | None = None
    interval: Interval | None = None
    if expected < 1.0:
        value = (observed - expected) / (1.0 - expected)
        se = math.sqrt(observed * (1.0 - observed) / n) / (1.0 - expected)
        half = normal_quantile(confidence) * se
        interval = Interval(max(-1.0, value - half), min(1.0, value + half), value)
    return Kappa(
        n=n,
        observed=observed,
        expected=expected,
        value=value,
        interval=interval,
        confusion=dict(Counter(pairs)),
    )
