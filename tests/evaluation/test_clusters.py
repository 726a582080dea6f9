"""Answer clusters from pairwise verdicts, on scripted verdicts whose clusters are known."""

from __future__ import annotations

import math

import pytest

from oxyeval.evaluation import answer_clusters
from oxyeval.evaluation.clusters import MAX_TRIPLES


def test_one_outlier_among_twelve_runs_is_one_small_cluster() -> None:
    # Answers 0 (runs 1-6), 1 (runs 7-11, said differently but consistent with 0), 2 (run 12).
    answers = {0: [1, 2, 3, 4, 5, 6], 1: [7, 8, 9, 10, 11], 2: [12]}
    verdicts = {(0, 1): True, (0, 2): False, (1, 2): False}
    found = answer_clusters(answers, verdicts)
    assert [c.size for c in found.clusters] == [11, 1]
    assert found.clusters[0].answers == (0, 1) and found.clusters[0].representative == 1
    assert found.clusters[1].runs == (12,) and found.clusters[1].representative == 12
    assert found.majority_rate == pytest.approx(11 / 12)
    expected = -(11 / 12) * math.log2(11 / 12) - (1 / 12) * math.log2(1 / 12)
    assert found.entropy_bits == pytest.approx(expected) and round(expected, 4) == 0.4138
    assert found.nontransitive_count == 0 and found.unjudged == 0


def test_agreement_is_zero_bits_and_an_even_split_one_bit() -> None:
    same = answer_clusters({0: [1, 2, 3]}, {})
    assert same.majority_rate == 1.0 and same.entropy_bits == 0.0
    split = answer_clusters({0: [1, 2], 1: [3, 4]}, {(1, 0): False})
    assert split.entropy_bits == 1.0 and split.majority_rate == 0.5
    # Ties in size: the cluster with the earliest run first.
    assert [c.runs for c in split.clusters] == [(1, 2), (3, 4)]


def test_the_representative_is_the_most_frequent_answer() -> None:
    found = answer_clusters({0: [1], 1: [2, 3, 4]}, {(0, 1): True})
    assert found.clusters[0].representative == 2


def test_a_non_transitive_triple_is_reported_whichever_answer_is_in_the_middle() -> None:
    answers = {0: [1], 1: [2], 2: [3]}
    for middle in (0, 1, 2):
        a, c = (x for x in (0, 1, 2) if x != middle)
        verdicts = {(a, middle): True, (middle, c): True, (a, c): False}
        found = answer_clusters(answers, verdicts)
        assert found.nontransitive_count == 1
        assert found.nontransitive[0][1] == middle
        assert len(found.clusters) == 1  # merged, and the doubt said beside it


def test_unjudged_pairs_neither_join_nor_count_as_judged() -> None:
    found = answer_clusters({0: [1], 1: [2], 2: [3]}, {(0, 1): None, (1, 2): True})
    assert [c.answers for c in found.clusters] == [(1, 2), (0,)]
    assert found.unjudged == 1 and found.nontransitive_count == 0


def test_listed_triples_are_capped_and_all_are_counted() -> None:
    # A star: every answer consistent with 0, none with each other.
    n = 12
    answers = {a: [a + 1] for a in range(n)}
    verdicts = {(0, a): True for a in range(1, n)}
    verdicts |= {(a, b): False for a in range(1, n) for b in range(a + 1, n)}
    found = answer_clusters(answers, verdicts)
    assert found.nontransitive_count == (n - 1) * (n - 2) // 2
    assert len(found.nontransitive) == MAX_TRIPLES
    assert found.to_dict()["nontransitiveCount"] == 55


def test_no_answers_has_no_rates() -> None:
    found = answer_clusters({}, {})
    assert found.majority_rate is None and found.entropy_bits is None
    assert found.to_dict()["count"] == 0
