"""pairing: cluster against all-pairs on scripted judges whose answers are known."""

from __future__ import annotations

import asyncio

from oxyeval.judge.cluster_pairing import check_count
from oxyeval.judge.consistency import assess, pair_count, plan_pairs
from oxyeval.judge.judge import JudgeResult


def _scripted(verdict_of, calls: list[tuple[str, str]]):
    async def compare(s1: str, s2: str) -> JudgeResult:
        calls.append((s1, s2))
        choice = verdict_of(s1, s2)
        if choice is None:
            return JudgeResult(None, "", "", 1, "judge timed out")
        return JudgeResult(choice, f"{s1} vs {s2}", "", 1, None)

    return compare


def _same_first_word(a: str, b: str) -> str:
    return "A" if a.split()[0] == b.split()[0] else "B"


def _assess(texts, pairing, verdict_of=_same_first_word):
    calls: list[tuple[str, str]] = []
    out = asyncio.run(
        assess(texts, _scripted(verdict_of, calls), n=len(texts), pairing=pairing, concurrency=4)
    )
    return out, calls


def _two_clusters(n: int) -> dict[int, str]:
    # 14 runs say yes, 6 say no, every text distinct: 190 distinct pairs for all-pairs.
    return {r: f"{'yes' if r % 10 < 7 else 'no'} variant {r}" for r in range(1, n + 1)}


def test_cluster_pairing_gives_the_all_pairs_verdict_with_far_fewer_calls() -> None:
    texts = _two_clusters(20)
    full, full_calls = _assess(texts, "all")
    fast, fast_calls = _assess(texts, "cluster")
    assert len(full_calls) == 190
    check = fast.pairing_check
    assert check is not None
    # Each answer is judged against at most two representatives (19 + 18 - 1 = 37 at
    # most), plus the sample of inferred pairs that is checked.
    assert check.checked == check_count(190 - (check.judged - check.checked))
    assert len(fast_calls) == check.judged <= 37 + check.checked
    assert check.calls_saved == 190 - len(fast_calls) > 120
    assert check.disagreements == []
    assert fast.accuracy == full.accuracy
    assert abs(fast.accuracy - (91 + 15) / 190) < 1e-12  # C(14,2) + C(6,2) of 190 pairs
    assert fast.score.per_run == full.score.per_run
    assert fast.selected == full.selected
    assert pair_count(20, "cluster") == 190 == len(plan_pairs(list(texts), "cluster"))


def test_the_check_reports_a_judge_that_is_not_transitive() -> None:
    # a~b and b~c, but a and c are not consistent: c joins no cluster through a, and the
    # inferred "b and c differ" is then checked (the only inferred pair) and contradicted.
    said = {
        frozenset({"a", "b"}): "A",
        frozenset({"b", "c"}): "A",
        frozenset({"a", "c"}): "B",
    }
    out, calls = _assess({1: "a", 2: "b", 3: "c"}, "cluster", lambda x, y: said[frozenset({x, y})])
    check = out.pairing_check
    assert check is not None and check.checked == 1 and len(calls) == 3
    assert check.disagreements == [{"runs": [2, 3], "inferred": "B", "judged": "A"}]
    # The checked pair keeps the judge's verdict: 2 of 3 pairs consistent.
    assert abs(out.accuracy - 2 / 3) < 1e-12
    inferred = [c for c in out.comparisons if c.inferred]
    assert inferred == []


def test_a_judge_error_against_a_representative_leaves_its_pairs_unjudged() -> None:
    def verdict(x: str, y: str) -> str | None:
        if {x.split()[1], y.split()[1]} == {"1", "3"}:
            return None  # the call of answer 3 against the first cluster fails
        return _same_first_word(x, y)

    texts = {r: f"yes {r}" for r in range(1, 7)}
    out, _calls = _assess(texts, "cluster", verdict)
    by_runs = {c.runs: c for c in out.comparisons}
    assert by_runs[(1, 3)].error == "judge timed out"
    # Answer 3 started a cluster of its own, but nothing is inferred between it and run
    # 1's cluster (runs 1 and 2): "not consistent" there would be made up.
    assert by_runs[(2, 3)].choice is None and not by_runs[(2, 3)].inferred
    assert by_runs[(3, 4)].choice == "A"
    assert all(c.choice == "A" for c in out.comparisons if c.choice is not None)


def test_the_checked_sample_is_the_same_on_every_run() -> None:
    texts = _two_clusters(20)
    first = [c.runs for c in _assess(texts, "cluster")[0].comparisons if c.judge_calls]
    again = [c.runs for c in _assess(texts, "cluster")[0].comparisons if c.judge_calls]
    assert first == again
