"""Answer clusters: which of n sampled answers say the same thing, from a judge's verdicts.

A consistency test asks a judge whether two answers are consistent. Read as a graph
(answers as nodes, a "consistent" verdict as an edge), its connected components are the
answer clusters: one component means the runs agree, a large one and a few strays mean
an outlier, two of equal size a coin flip. That is what a user needs to see instead of
the same failing comparison repeated for each pair with the outlier, and it gives two
numbers that do not depend on how many pairs were judged: the majority answer rate (the
share of runs in the largest cluster) and the entropy over clusters (semantic entropy,
Farquhar et al., Nature 2024: 0 bits when all agree, 1 bit for an even split of two).

Components assume the judge's "consistent" is transitive (A~B and B~C make A~C). Where
the judge said otherwise (A~B, B~C and A≁C all judged), the triple is reported as a
judge inconsistency rather than silently merged away. Pure and stdlib only, like
:mod:`.stats`: every kind that samples answers can use it, and a saved report's
comparisons give the same clusters as the live run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

__all__ = ["MAX_TRIPLES", "AnswerClusters", "Cluster", "answer_clusters"]

#: Non-transitive triples listed at most (all are counted): the list is for reading.
MAX_TRIPLES = 20


@dataclass(frozen=True)
class Cluster:
    """Answers the judge found consistent with each other (transitively).

    ``answers`` are distinct-answer numbers (groups of runs whose texts are equal after
    normalisation); ``runs`` every run that gave one of them; ``representative`` the run
    shown for the cluster: the first run of its most frequent answer."""

    answers: tuple[int, ...]
    runs: tuple[int, ...]
    representative: int

    @property
    def size(self) -> int:
        return len(self.runs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "representative": self.representative,
            "runs": list(self.runs),
            "answers": list(self.answers),
        }


@dataclass(frozen=True)
class AnswerClusters:
    """The clusters of one test's answers, largest first (ties: earliest run first)."""

    clusters: tuple[Cluster, ...]
    #: (a, b, c) distinct answers with a~b, b~c judged consistent and a, c judged not.
    nontransitive: tuple[tuple[int, int, int], ...]
    nontransitive_count: int
    #: Pairs of distinct answers with no verdict (a judge error, not judged yet): an
    #: unjudged pair never joins two clusters, so the split may be finer than the truth.
    unjudged: int

    @property
    def runs(self) -> int:
        return sum(c.size for c in self.clusters)

    @property
    def majority_rate(self) -> float | None:
        """Share of runs in the largest cluster (None with no answers)."""
        return self.clusters[0].size / self.runs if self.clusters else None

    @property
    def entropy_bits(self) -> float | None:
        """Shannon entropy of the cluster sizes in bits (None with no answers)."""
        total = self.runs
        if not total:
            return None
        value = -sum((c.size / total) * math.log2(c.size / total) for c in self.clusters)
        return abs(value)  # -0.0 for one cluster reads as 0

    def to_dict(self) -> dict[str, Any]:
        rate, entropy = self.majority_rate, self.entropy_bits
        return {
            "count": len(self.clusters),
            "majorityRate": None if rate is None else round(rate, 6),
            "entropyBits": None if entropy is None else round(entropy, 6),
            "clusters": [c.to_dict() for c in self.clusters],
            "nontransitive": [list(t) for t in self.nontransitive],
            "nontransitiveCount": self.nontransitive_count,
            "unjudgedPairs": self.unjudged,
        }


def answer_clusters(
    answers: Mapping[int, Sequence[int]],
    verdicts: Mapping[tuple[int, int], bool | None],
) -> AnswerClusters:
    """Cluster distinct answers from pairwise verdicts.

    ``answers`` maps each distinct answer to the runs that gave it; ``verdicts`` maps a
    pair of distinct answers (either order) to True (consistent), False (not) or None
    (no verdict). Pairs not in ``verdicts`` were not planned (a ring pairing): they
    neither join nor split clusters and are not counted as unjudged.
    """
    parent = {a: a for a in answers}

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    same: dict[tuple[int, int], bool | None] = {}
    for (a, b), verdict in verdicts.items():
        if a == b or a not in parent or b not in parent:
            continue
        same[(min(a, b), max(a, b))] = verdict
        if verdict:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    members: dict[int, list[int]] = {}
    for a in sorted(answers):
        members.setdefault(find(a), []).append(a)
    clusters = []
    for group in members.values():
        runs = tuple(sorted(r for a in group for r in answers[a]))
        if not runs:
            continue
        # The most frequent answer stands for the cluster; ties go to the earliest run.
        top = max(group, key=lambda a: (len(answers[a]), -min(answers[a], default=0)))
        clusters.append(Cluster(answers=tuple(group), runs=runs, representative=min(answers[top])))
    clusters.sort(key=lambda c: (-c.size, c.runs[0]))
    triples: list[tuple[int, int, int]] = []
    count = 0
    for a, b, c in combinations(sorted(answers), 3):
        ab, bc, ac = same.get((a, b)), same.get((b, c)), same.get((a, c))
        # Each of the three answers in turn as the one in the middle.
        for x, y, z, xy, yz, xz in (
            (a, b, c, ab, bc, ac),
            (b, a, c, ab, ac, bc),
            (a, c, b, ac, bc, ab),
        ):
            if xy is True and yz is True and xz is False:
                count += 1
                if len(triples) < MAX_TRIPLES:
                    triples.append((x, y, z))
    return AnswerClusters(
        clusters=tuple(clusters),
        nontransitive=tuple(triples),
        nontransitive_count=count,
        unjudged=sum(1 for v in same.values() if v is None),
    )
