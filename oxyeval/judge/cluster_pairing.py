"""``pairing: cluster``: judge each distinct answer against one representative per cluster.

All-pairs judging costs d(d-1)/2 calls for d distinct answers; most of them only confirm
what a few already said. Here the answers are taken in run order and each new one is
judged against the representative (first answer) of every cluster found so far: it joins
the clusters it is consistent with (merging them if several), or starts a new one. That
is about d·k calls for k clusters. Every other pair's verdict is *inferred* from the
clusters: consistent inside one, not consistent across two.

The inference assumes the judge's "consistent" is transitive (A~B and B~C make A~C).
To see whether it held, a seeded sample of the inferred pairs is judged for real; a
checked pair keeps the judge's own verdict, and one that differs from the inference is
reported as a disagreement with the assumption. A judge error against a representative
leaves that answer's pairs with the cluster unjudged rather than inferred "not
consistent".
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._tasks import gather_settled
from .swap import judge_comparison

if TYPE_CHECKING:
    from .consistency import Compare, Comparison

__all__ = ["CHECK_SEED", "ClusterPairing", "check_count", "judge_by_cluster"]

#: The sample of inferred pairs checked is drawn with this seed: the same answers check
#: the same pairs on every run, so a rerun is served from the verdict cache.
CHECK_SEED = 0
#: Inferred pairs checked: this share of them, at least ``_MIN_CHECKS`` and at most
#: ``_MAX_CHECKS`` (never more than there are).
CHECK_SHARE = 0.1
_MIN_CHECKS = 2
_MAX_CHECKS = 20


def check_count(inferred: int) -> int:
    """How many of ``inferred`` pairs are judged to check the transitivity assumption."""
    wanted = max(_MIN_CHECKS, math.ceil(CHECK_SHARE * inferred))
    return min(inferred, _MAX_CHECKS, wanted)


@dataclass
class ClusterPairing:
    """What ``pairing: cluster`` judged, inferred and found when it checked."""

    #: Judge calls all-pairs judging would have sent (distinct-answer pairs).
    all_pairs_calls: int = 0
    #: Comparisons sent to the judge (against representatives, then the checks).
    judged: int = 0
    inferred: int = 0
    checked: int = 0
    #: Checked pairs whose judged verdict differs from the inferred one.
    disagreements: list[dict[str, Any]] = field(default_factory=list)

    @property
    def calls_saved(self) -> int:
        return self.all_pairs_calls - self.judged

    def to_dict(self) -> dict[str, Any]:
        return {
            "allPairsCalls": self.all_pairs_calls,
            "judged": self.judged,
            "callsSaved": self.calls_saved,
            "inferred": self.inferred,
            "checked": self.checked,
            "disagreements": list(self.disagreements),
        }


def _leaders(comparisons: Sequence[Comparison]) -> list[int]:
    found: set[int] = set()
    for comp in comparisons:
        if not comp.identical:
            found.update(comp.runs)
    return sorted(found)


async def judge_by_cluster(
    comparisons: Sequence[Comparison],
    texts: Mapping[int, str],
    compare: Compare,
    *,
    concurrency: int = 10,
    on_done: Callable[[Comparison], None] | None = None,
    seed: int = CHECK_SEED,
    swap: bool = False,
) -> ClusterPairing:
    """Fill the verdicts of an all-pairs plan (:func:`.plan_comparisons` with ``all``):
    judged against representatives, inferred from the clusters, a sample checked."""
    semaphore = asyncio.Semaphore(max(1, concurrency))
    by_pair = {comp.runs: comp for comp in comparisons if not comp.identical}
    report = ClusterPairing(all_pairs_calls=len(by_pair))
    sent: set[tuple[int, int]] = set()

    def comp_of(a: int, b: int) -> Comparison:
        return by_pair[(min(a, b), max(a, b))]

    async def judge(comp: Comparison) -> None:
        sent.add(comp.runs)
        await judge_comparison(comp, texts, compare, semaphore, swap=swap)
        report.judged += 1
        if on_done is not None:
            on_done(comp)

    clusters: list[list[int]] = []
    #: (answer, a cluster member) pairs left unjudged: the answer's call against that
    #: cluster's representative failed, so nothing is inferred between them.
    unknown: set[tuple[int, int]] = set()
    for answer in _leaders(comparisons):
        asked = [(cluster, comp_of(answer, cluster[0])) for cluster in clusters]
        await gather_settled(*(judge(comp) for _, comp in asked))
        joined = [cluster for cluster, comp in asked if comp.choice == "A"]
        for cluster, comp in asked:
            if comp.choice is None:
                unknown.update((answer, member) for member in cluster)
        if not joined:
            clusters.append([answer])
            continue
        merged = [answer]
        for cluster in joined:
            merged.extend(cluster)
            clusters.remove(cluster)
        clusters.append(sorted(merged))
        clusters.sort(key=lambda c: c[0])
    home = {member: k for k, cluster in enumerate(clusters) for member in cluster}
    inferred: list[tuple[Comparison, str]] = []
    for (a, b), comp in sorted(by_pair.items()):
        if (a, b) in sent or (a, b) in unknown or (b, a) in unknown:
            continue
        choice = "A" if home[a] == home[b] else "B"
        comp.choice, comp.inferred = choice, True
        comp.reasoning = "inferred from the answer clusters (pairing: cluster): " + (
            "same cluster" if choice == "A" else "different clusters"
        )
        inferred.append((comp, choice))
    report.inferred = len(inferred)
    sample = random.Random(seed).sample(inferred, check_count(len(inferred)))
    for comp, _ in sample:
        comp.choice, comp.inferred = None, False
    await gather_settled(*(judge(comp) for comp, _ in sample))
    report.checked = len(sample)
    for comp, guess in sorted(sample, key=lambda s: s[0].runs):
        if comp.choice is not None and comp.choice != guess:
            report.disagreements.append(
                {"runs": list(comp.runs), "inferred": guess, "judged": comp.choice}
            )
    report.inferred -= len(sample)
    return report
