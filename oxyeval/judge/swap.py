"""One comparison's verdict, optionally judged in both orders (``judge_swap``).

LLM judges favour a position: swapping the two answers flips a large share of pairwise
verdicts (Wang et al., "Large Language Models are not Fair Evaluators", ACL 2024). With
the swap on, each distinct pair is judged as (1, 2) and as (2, 1); a verdict stands only
when both orders give it. Two orders that disagree are a position-bias disagreement: the
judge could not tell, so it is a judge error (no verdict, it lowers the judged share)
rather than either order's verdict.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .consistency import Compare, Comparison

__all__ = ["judge_comparison", "position_bias_error"]


def position_bias_error(first: str, second: str) -> str:
    """The judge error of a pair whose two orders disagree."""
    return (
        f"position-bias disagreement: the judge said {first} with the answers in one order "
        f"and {second} with them swapped (judge_swap); no verdict"
    )


async def judge_comparison(
    comp: Comparison,
    texts: Mapping[int, str],
    compare: Compare,
    semaphore: asyncio.Semaphore,
    *,
    swap: bool = False,
) -> None:
    """Judge ``comp`` and set its verdict fields; with ``swap``, in both orders."""
    i, j = comp.judged_order

    async def one(a: int, b: int):
        async with semaphore:
            return await compare(texts[a], texts[b])

    if not swap:
        r = await one(i, j)
        comp.choice, comp.reasoning, comp.error = r.choice, r.reasoning, r.error
        comp.judge_calls, comp.cached = r.calls, r.cached_calls > 0
        return
    forward, backward = await asyncio.gather(one(i, j), one(j, i))
    comp.swap_judged = True
    comp.judge_calls = forward.calls + backward.calls
    comp.cached = forward.cached_calls > 0 and backward.cached_calls > 0
    comp.reasoning = forward.reasoning
    comp.error = forward.error or backward.error
    if comp.error is not None:
        comp.choice = None
    elif forward.choice != backward.choice:
        comp.choice, comp.position_bias = None, True
        comp.error = position_bias_error(str(forward.choice), str(backward.choice))
        comp.reasoning = f"{forward.reasoning}\n(swapped:) {backward.reasoning}".strip()
    else:
        comp.choice = forward.choice
