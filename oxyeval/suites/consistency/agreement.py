"""``oxy test --judge-agreement MODEL``: a second judge re-judges a sample of each test's
pairs, and Cohen's kappa between the two judges says how far the verdicts depend on
which judge gave them.

Only pairs the first judge actually judged are sampled (identical answers and verdicts
inferred from answer clusters say nothing about a judge). The sample is seeded, so the
same answers send the same pairs and a rerun is served from the verdict cache. A second
judge's error leaves its pair out of the agreement and is counted.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...evaluation import cohens_kappa
from ...judge import Compare, Comparison

__all__ = ["AGREEMENT_SAMPLE", "agreement_summary", "second_opinion"]

#: Pairs of one test re-judged by the second judge, at most.
AGREEMENT_SAMPLE = 20


async def second_opinion(
    comparisons: Sequence[Comparison],
    texts: Mapping[int, str],
    compare: Compare,
    *,
    model: str,
    concurrency: int = 10,
    sample: int = AGREEMENT_SAMPLE,
    seed: int = 0,
) -> dict[str, Any]:
    """Re-judge a seeded sample of the judged pairs, in the order the first judge saw
    them; the pairs with both verdicts and their kappa."""
    judged = sorted(
        (c for c in comparisons if not c.identical and not c.inferred and c.choice is not None),
        key=lambda c: c.runs,
    )
    chosen = sorted(
        random.Random(seed).sample(judged, min(sample, len(judged))), key=lambda c: c.runs
    )
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(comp: Comparison) -> dict[str, Any]:
        i, j = comp.judged_order
        async with semaphore:
            r = await compare(texts[i], texts[j])
        return {
            "runs": list(comp.runs),
            "first": comp.choice,
            "second": r.choice if r.error is None else None,
            "error": r.error,
        }

    pairs = list(await asyncio.gather(*(one(c) for c in chosen)))
    return {"model": model, "pairs": pairs, **_kappa(pairs)}


def _kappa(pairs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    both = [p for p in pairs if p["second"] is not None]
    errors = sum(1 for p in pairs if p["second"] is None)
    found = cohens_kappa([p["first"] for p in both], [p["second"] for p in both])
    return {
        "compared": len(both),
        "errors": errors,
        "agreement": None if found is None else found.to_dict(),
    }


def agreement_summary(per_test: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The run's agreement over every test's sample (None: no test was re-judged)."""
    if not per_test:
        return None
    models = sorted({str(t["model"]) for t in per_test})
    pairs = [p for t in per_test for p in t["pairs"]]
    return {"model": ", ".join(models), "pairs": len(pairs), **_kappa(pairs)}
