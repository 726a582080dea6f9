from __future__ import annotations

import asyncio
import random
from itertools import combinations

import pytest

from oxyeval.judge.consistency import (
    judge_comparisons,
    normalize,
    plan_comparisons,
    plan_pairs,
    score_comparisons,
)
from oxyeval.judge.judge import JudgeResult

SCORES = {"A": 1.0, "B": 0.0}


def test_plan_pairs() -> None:
    assert plan_pairs([1, 2, 3, 4]) == [(1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)]
    assert plan_pairs([1, 2, 3, 4], "ring") == [(1, 2), (2, 3), (3, 4), (4, 1)]
    assert plan_pairs([1, 3], "ring") == [(1, 3)]
    assert plan_pairs([5]) == []
    with pytest.raises(ValueError):
        plan_pairs([1, 2], "star")


def test_normalize_ignores_whitespace_only() -> None:
    assert normalize("  42 users\n\n") == normalize("42   users")
    assert normalize("42 users") != normalize("42 Users")


def _judge_by_first_word(a: str, b: str) -> str:
    return "A" if a.split()[0] == b.split()[0] else "B"


async def _compare_with(verdict_of, calls: list[tuple[str, str]]):
    async def compare(s1: str, s2: str):
        calls.append((s1, s2))
        return JudgeResult(verdict_of(s1, s2), f"{s1} vs {s2}", "", 1, None)

    return compare


def _run(texts: dict[int, str], pairing: str = "all", verdict_of=_judge_by_first_word):
    comps = plan_comparisons(texts, pairing)
    calls: list[tuple[str, str]] = []

    async def go() -> None:
        await judge_comparisons(comps, texts, await _compare_with(verdict_of, calls), concurrency=3)

    asyncio.run(go())
    return comps, calls, score_comparisons(comps, sorted(texts), SCORES)


def test_identical_outputs_are_not_judged_and_count_as_consistent() -> None:
    texts = {1: "42 users", 2: "42  users ", 3: "42 users", 4: "41 users"}
    comps, calls, score = _run(texts)
    # Distinct texts: "42 users" (x3) and "41 users" (x1) -> one judge call.
    assert len(calls) == 1
    assert score.judge_calls == 1
    assert score.pairs == 6
    assert sum(c.weight for c in comps if c.identical) == 3
    assert score.accuracy == pytest.approx(3 / 6)  # 3 identical pairs A, 3 pairs judged B


@pytest.mark.parametrize("pairing", ["all", "ring"])
@pytest.mark.parametrize("seed", range(25))
def test_dedup_score_equals_judging_every_pair(seed: int, pairing: str) -> None:
    rng = random.Random(seed)
    vocab = ["42 a", "42 b", "43 a", "44 c", "42 a "]
    texts = {run: rng.choice(vocab) for run in range(1, rng.randint(2, 12) + 1)}
    _comps, calls, score = _run(texts, pairing)
    naive = [
        1.0
        if normalize(texts[i]) == normalize(texts[j])
        else SCORES[_judge_by_first_word(texts[i], texts[j])]
        for i, j in plan_pairs(sorted(texts), pairing)
    ]
    assert score.accuracy == pytest.approx(sum(naive) / len(naive))
    assert score.pairs == len(naive)
    distinct = {
        tuple(sorted((normalize(texts[i]), normalize(texts[j]))))
        for i, j in plan_pairs(sorted(texts), pairing)
    }
    assert len(calls) == sum(1 for a, b in distinct if a != b)


def test_per_run_consistency_and_selection() -> None:
    texts = {1: "41 x", 2: "42 y", 3: "42 z", 4: "42 w"}
    _comps, _calls, score = _run(texts)
    assert score.per_run == {
        1: 0.0,
        2: pytest.approx(2 / 3),
        3: pytest.approx(2 / 3),
        4: pytest.approx(2 / 3),
    }
    assert score.selected == 2  # tie among 2, 3, 4: the earliest run


def test_selection_tie_break_is_the_earliest_run_even_when_listed_later() -> None:
    texts = {3: "42 a", 1: "42 b", 2: "42 c"}
    _c, _calls, score = _run(texts)
    assert score.selected == 1


def test_judge_errors_are_excluded_from_score() -> None:
    texts = {1: "a", 2: "b", 3: "c"}
    comps = plan_comparisons(texts)

    async def compare(s1: str, s2: str):
        if {s1, s2} == {"a", "c"}:
            return JudgeResult(None, "", "", 2, "judge failed")
        return JudgeResult("A" if "b" in (s1, s2) else "B", "", "", 1, None)

    asyncio.run(judge_comparisons(comps, texts, compare))
    score = score_comparisons(comps, [1, 2, 3], SCORES)
    assert score.accuracy == 1.0  # only a-b and b-c were judged, both A
    assert score.judged_pairs == 2
    assert score.pairs == 3
    assert score.judge_calls == 4
    assert score.per_run[1] == 1.0 and score.per_run[3] == 1.0


def test_no_valid_verdicts_means_no_accuracy() -> None:
    texts = {1: "a", 2: "b"}
    comps = plan_comparisons(texts)

    async def compare(s1: str, s2: str):
        return JudgeResult(None, "", "", 2, "no verdict")

    asyncio.run(judge_comparisons(comps, texts, compare))
    score = score_comparisons(comps, [1, 2], SCORES)
    assert score.accuracy is None
    assert score.selected is None


def test_custom_scores_weight_the_mean() -> None:
    texts = {1: "a", 2: "b", 3: "b"}
    comps = plan_comparisons(texts)

    async def compare(s1: str, s2: str):
        return JudgeResult("B", "", "", 1, None)

    asyncio.run(judge_comparisons(comps, texts, compare))
    score = score_comparisons(comps, [1, 2, 3], {"A": 1.0, "B": 0.5})
    # pairs: (1,2) B, (1,3) B, (2,3) identical A -> (0.5 + 0.5 + 1) / 3
    assert score.accuracy == pytest.approx(2 / 3)


def test_submission_order_is_canonical_whichever_run_gave_which() -> None:
    # the same two outputs in the other runs make the same judge prompt, so a
    # rerun whose runs finished in the other order is served from the verdict cache.
    comps_1, calls_1, _ = _run({1: "first", 2: "second"}, verdict_of=lambda a, b: "A")
    comps_2, calls_2, _ = _run({1: "second", 2: "first"}, verdict_of=lambda a, b: "A")
    assert calls_1 == calls_2 and len(calls_1) == 1
    # Runs stay in run order for reports; the comparison says which was submission 1.
    assert comps_1[0].runs == comps_2[0].runs == (1, 2)
    assert comps_1[0].swapped != comps_2[0].swapped
    assert comps_1[0].judged_order == tuple(reversed(comps_2[0].judged_order))


@pytest.mark.parametrize("pairing", ["all", "ring"])
@pytest.mark.parametrize("seed", range(10))
def test_the_judged_pairs_do_not_depend_on_run_order(seed: int, pairing: str) -> None:
    rng = random.Random(seed)
    vocab = ["42 a", "42 b", "43 a", "44 c", "45 d"]
    texts = {run: rng.choice(vocab) for run in range(1, rng.randint(3, 9) + 1)}
    shuffled = list(texts.values())
    rng.shuffle(shuffled)
    other = dict(zip(texts, shuffled, strict=True))
    _c, calls, _s = _run(texts, pairing)
    _c, calls_other, _s = _run(other, pairing)
    if pairing == "all":  # the same texts: the same distinct pairs, each once, same order
        assert sorted(calls) == sorted(calls_other)
    # Whatever the pairs, each is asked in one order only: a pair never appears reversed.
    asked = set(calls) | set(calls_other)
    assert not any((b, a) in asked for a, b in asked)


def test_all_pairs_count() -> None:
    texts = {i: f"{i} distinct" for i in range(1, 11)}
    _c, calls, score = _run(texts, verdict_of=lambda a, b: "A")
    assert score.pairs == len(list(combinations(range(10), 2))) == 45
    assert len(calls) == 45


def test_assess_needs_min_judged_share_of_all_n_runs() -> None:
    from oxyeval.judge.consistency import assess

    async def compare(s1: str, s2: str) -> JudgeResult:
        return JudgeResult("A", "", "", 1)

    texts = {1: "a", 2: "b"}  # 2 of 4 runs succeeded: 1 of 6 pairs can be judged
    low = asyncio.run(assess(texts, compare, n=4, min_judged=0.5))
    assert low.score.accuracy == 1.0 and low.accuracy is None and low.selected is None
    assert low.total_pairs == 6
    assert "only 1 of 6 run pairs got a verdict (17%; min_judged is 50%)" in (low.error or "")
    assert "2 of 4 runs failed" in (low.error or "")
    ok = asyncio.run(assess(texts, compare, n=4, min_judged=0.1))
    assert ok.error is None and ok.accuracy == 1.0 and ok.selected == 1
