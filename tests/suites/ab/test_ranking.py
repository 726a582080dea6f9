"""A/B ranking on scripted tables: each criterion's order, unknowns, errors, ties, the Pareto
front (checked over random tables), and the significance call on scripted noise."""

from __future__ import annotations

import math
import random

import pytest

from oxyeval.suites.ab.ranking import (
    CRITERIA,
    DEFAULT_CRITERIA,
    BranchScore,
    dominates,
    higher_is_better,
    rank,
    significance,
    winner_distribution,
)


def b(
    name: str,
    quality: float | None = None,
    latency: float | None = None,
    cost: float | None = None,
    *,
    control: bool = False,
    ok: bool = True,
) -> BranchScore:
    return BranchScore(f"case@{name}", name, control, ok, quality, latency, cost)


def ids(*names: str) -> tuple[str, ...]:
    return tuple(f"case@{n}" for n in names)


#: Five branches whose order differs under every criterion.
TABLE = [
    b("Alpha", 0.80, 900, 0.010, control=True),
    b("Bravo", 0.95, 1500, 0.030),
    b("Charlie", 0.70, 300, 0.002),
    b("Delta", 0.60, 500, None),  # no price
    b("Echo", 0.20, 2000, 0.001),
]


@pytest.mark.parametrize(
    ("criteria", "order"),
    [
        ("best_quality", ("Bravo", "Alpha", "Charlie", "Delta", "Echo")),
        ("fastest", ("Charlie", "Delta", "Alpha", "Bravo", "Echo")),
        ("cheapest", ("Echo", "Charlie", "Alpha", "Bravo", "Delta")),
        # values: Charlie 350, Echo 200, Alpha 80, Bravo 31.7, Delta none
        ("best_value", ("Charlie", "Echo", "Alpha", "Bravo", "Delta")),
        # 0.4 q + 0.3 speed + 0.3 cost: Charlie .856, Alpha .721, Bravo .488, Delta .478, Echo .3
        ("balanced", ("Charlie", "Alpha", "Bravo", "Delta", "Echo")),
    ],
)
def test_each_criterion_orders_the_scripted_table(criteria: str, order: tuple[str, ...]) -> None:
    r = rank(TABLE, criteria)
    assert r.order == ids(*order)
    assert r.winner == ids(order[0])[0]
    assert sorted(r.ranks.values()) == [1, 2, 3, 4, 5]
    assert r.criteria == criteria


def test_scores_are_the_criterion_values() -> None:
    assert rank(TABLE, "best_quality").scores["case@Bravo"] == 0.95
    assert rank(TABLE, "fastest").scores["case@Charlie"] == 300
    assert rank(TABLE, "cheapest").scores["case@Delta"] is None
    value = rank(TABLE, "best_value").scores
    assert value["case@Charlie"] == pytest.approx(350) and value["case@Delta"] is None
    balanced = rank(TABLE, "balanced").scores
    assert balanced["case@Charlie"] == pytest.approx(0.4 * 0.5 / 0.75 + 0.3 + 0.3 * 0.028 / 0.029)
    assert balanced["case@Echo"] == pytest.approx(0.3)
    assert balanced["case@Delta"] == pytest.approx(0.4 * 0.4 / 0.75 + 0.3 * 1500 / 1700)


def test_default_criteria_is_best_quality() -> None:
    assert DEFAULT_CRITERIA == "best_quality" and rank(TABLE).criteria == "best_quality"
    assert higher_is_better("best_quality") and higher_is_better("balanced")
    assert not higher_is_better("fastest") and not higher_is_better("cheapest")
    assert higher_is_better("best_value")


def test_balanced_picks_the_compromise_no_single_metric_picks() -> None:
    table = [b("Precise", 1.0, 1000, 0.01), b("Quick", 0.5, 100, 0.01), b("Middle", 0.9, 300, 0.01)]
    r = rank(table, "balanced")
    assert r.winner == "case@Middle"
    assert rank(table, "best_quality").winner == "case@Precise"
    assert rank(table, "fastest").winner == "case@Quick"
    assert "balanced: every branch has the same cost; each gets its 0.3" in r.notes
    # all equal on cost -> 1.0 each, so Middle = 0.4*0.8 + 0.3*(700/900) + 0.3
    assert r.scores["case@Middle"] == pytest.approx(0.32 + 0.3 * 700 / 900 + 0.3)


def test_balanced_one_branch_scores_full_marks() -> None:
    r = rank([b("Solo", 0.3, 5000, 0.5)], "balanced")
    assert r.winner == "case@Solo" and r.scores["case@Solo"] == pytest.approx(1.0)
    assert r.ranks == {"case@Solo": 1} and r.pareto == {"case@Solo": ()}
    assert any("one branch" in n for n in r.notes)


def test_balanced_all_equal_ties_break_control_first_then_name() -> None:
    table = [
        b("Zed", 0.7, 100, 0.01, control=True),
        b("Bee", 0.7, 100, 0.01),
        b("Ant", 0.7, 100, 0.01),
    ]
    r = rank(table, "balanced")
    assert all(s == pytest.approx(1.0) for s in r.scores.values())
    assert r.order == ids("Zed", "Ant", "Bee")
    assert any("Zed and Ant tie" in n and "control first" in n for n in r.notes)


def test_balanced_missing_metric_counts_zero_and_says_so() -> None:
    table = [b("Priced", 0.8, 200, 0.01), b("Unpriced", 0.8, 200, None)]
    r = rank(table, "balanced")
    assert r.scores["case@Priced"] == pytest.approx(1.0)
    assert r.scores["case@Unpriced"] == pytest.approx(0.7)  # its cost part counts 0
    assert r.winner == "case@Priced"
    assert "balanced: Unpriced has no price; that part (0.3) counts 0" in r.notes
    nothing = rank([b("Blank"), b("Some", 0.5)], "balanced")
    assert nothing.scores["case@Blank"] is None and nothing.winner == "case@Some"


def test_cheapest_ranks_unpriced_after_priced_and_says_so() -> None:
    table = [b("Free?", 0.9, 100, None), b("Paid", 0.5, 900, 0.2), b("Local", 0.9, 50, None)]
    r = rank(table, "cheapest")
    assert r.winner == "case@Paid"
    assert r.order == ids("Paid", "Local", "Free?")  # unpriced: same quality, Local faster
    assert "cheapest: 2 branches have no price (Free?, Local) and rank after the priced ones" in (
        r.notes
    )
    none_priced = rank([b("A", 0.9, 100), b("B", 0.8, 90)], "cheapest")
    assert none_priced.winner is None
    assert any("no winner" in n for n in none_priced.notes)
    assert none_priced.ranks == {"case@A": 1, "case@B": 2}  # still ranked: quality next


def test_best_value_free_branches_first_by_quality_unpriced_last() -> None:
    table = [
        b("Cloud", 0.95, 500, 0.001),  # 950 per dollar
        b("Local", 0.40, 800, 0.0),
        b("Laptop", 0.60, 900, 0.0),
        b("Broken", 0.00, 100, 0.0),  # free and worthless: value 0, not infinite
        b("Mystery", 0.99, 100, None),
    ]
    r = rank(table, "best_value")
    assert r.order == ids("Laptop", "Local", "Cloud", "Broken", "Mystery")
    assert r.scores["case@Laptop"] == math.inf and r.scores["case@Broken"] == 0.0
    assert any("Laptop, Local cost nothing" in n for n in r.notes)
    assert any("best_value: 1 branch has no price (Mystery)" in n for n in r.notes)


def test_best_value_without_quality_has_no_value() -> None:
    r = rank([b("Judged", 0.5, 100, 0.01), b("Unjudged", None, 100, 0.001)], "best_value")
    assert r.winner == "case@Judged" and r.scores["case@Unjudged"] is None
    assert any("no quality score (Unjudged)" in n for n in r.notes)


def test_an_errored_branch_ranks_last_never_wins_and_is_off_the_front() -> None:
    table = [
        b("Zulu", 0.99, 10, 0.0, ok=False),
        b("Apex", None, 5, None, ok=False),
        b("Good", 0.50, 900, 0.05),
        b("Fine", 0.40, 950, 0.06),
    ]
    for criteria in CRITERIA:
        r = rank(table, criteria)
        assert r.winner == "case@Good", criteria
        assert r.order[2:] == ids("Apex", "Zulu")  # last, by name
        assert r.scores["case@Zulu"] is None
        assert r.pareto["case@Zulu"] == ids("Good", "Fine")
        assert not r.pareto_optimal("case@Zulu") and r.pareto_optimal("case@Good")
        assert r.errored == frozenset(ids("Zulu", "Apex"))
        assert "2 branches errored (Apex, Zulu): ranked last and cannot win" in r.notes
    balanced = rank(table, "balanced")  # errored branches are not normalised against
    assert balanced.scores["case@Good"] == pytest.approx(1.0)


def test_every_branch_errored_means_no_winner() -> None:
    r = rank([b("A", 0.9, ok=False), b("B", 0.8, ok=False)], "best_quality")
    assert r.winner is None and r.order == ids("A", "B")
    assert "every branch errored: no winner" in r.notes
    assert not r.pareto_optimal("case@A") and r.pareto["case@A"] == ()


def test_no_branches() -> None:
    r = rank([], "fastest")
    assert r.winner is None and r.ranks == {} and r.notes == ["no branches: no winner"]


def test_full_ties_break_control_first_then_name() -> None:
    table = [
        b("Charlie", 0.8, 100, 0.01),
        b("Bravo", 0.8, 100, 0.01),
        b("Zulu", 0.8, 100, 0.01, control=True),
    ]
    for criteria in CRITERIA:
        assert rank(table, criteria).order == ids("Zulu", "Bravo", "Charlie"), criteria
    no_control = [b("Charlie", 0.8, 100, 0.01), b("Bravo", 0.8, 100, 0.01)]
    r = rank(no_control)
    assert r.order == ids("Bravo", "Charlie")
    assert "best_quality: Bravo and Charlie tie at 0.8; Bravo ranks first (by name)" in r.notes


def test_a_tie_on_the_criterion_is_broken_so_a_dominated_branch_cannot_win() -> None:
    # same latency; the control is worse on quality, so it is dominated and must not win
    table = [b("Control", 0.5, 100, 0.01, control=True), b("Better", 0.9, 100, 0.01)]
    r = rank(table, "fastest")
    assert r.winner == "case@Better"
    assert r.pareto == {"case@Better": (), "case@Control": ids("Better")}
    assert (
        "fastest: Better and Control tie at 100; Better ranks first (Control is dominated)"
        in r.notes
    )
    cheap = rank(
        [b("Control", 0.9, 300, 0.01, control=True), b("Snappy", 0.9, 100, 0.01)], "cheapest"
    )
    assert cheap.winner == "case@Snappy"
    assert any("(Control is dominated)" in n for n in cheap.notes)
    # Not dominated (an unknown makes no claim): the seed's tie rule, control then name.
    unjudged = rank(
        [b("Unjudged", None, 100, 0.01, control=True), b("Judged", 0.9, 100, 0.01)], "fastest"
    )
    assert unjudged.winner == "case@Unjudged"
    assert any("(control first)" in n for n in unjudged.notes)
    named = rank([b("Zed", 0.9, 100, 0.01), b("Abe", 0.9, 100, 0.01)], "fastest")
    assert named.winner == "case@Abe" and any("(by name)" in n for n in named.notes)


def test_pareto_names_the_dominating_branches_best_first() -> None:
    r = rank(TABLE, "best_quality")
    # Charlie is better and faster than Delta, but Delta has no price: no claim
    for name in ("Alpha", "Bravo", "Charlie", "Delta", "Echo"):
        assert r.pareto[f"case@{name}"] == (), name
    laggard = rank([*TABLE, b("Laggard", 0.1, 3000, 0.05)], "fastest")
    assert laggard.pareto["case@Laggard"] == ids("Charlie", "Alpha", "Bravo", "Echo")


def test_unknown_values_never_dominate_a_known_one() -> None:
    priced = b("Priced", 0.5, 500, 0.001)
    unpriced = b("Unpriced", 0.9, 100, None)
    assert not dominates(unpriced, priced)  # its price might be anything
    assert not dominates(priced, unpriced)
    r = rank([priced, unpriced], "cheapest")
    assert r.winner == "case@Priced" and r.pareto_optimal("case@Priced")
    # nor the other way: "dominated" is said only on figures both have
    assert not dominates(b("P", 0.9, 100, 0.01), b("U", 0.5, 500, None))
    assert dominates(b("P", 0.9, 100, None), b("U", 0.5, 500, None))  # both unpriced
    assert not dominates(b("Same", 0.5, 100, 0.01), b("Same2", 0.5, 100, 0.01))  # nothing strict
    assert not dominates(b("Q", None, 100, 0.01), b("R", 0.5, 200, 0.02))


@pytest.mark.parametrize("criteria", CRITERIA)
def test_property_winner_is_on_the_front_and_dominators_rank_ahead(criteria: str) -> None:
    """Over random tables with ties, unknowns and errors: the winner is never dominated,
    a dominating branch always ranks ahead of the one it dominates, every branch ranked."""
    rng = random.Random(f"pareto-{criteria}")

    def pick(choices: list[float]) -> float | None:
        return None if rng.random() < 0.2 else rng.choice(choices)

    winners = 0
    for _ in range(600):
        n = rng.randint(1, 5)
        table = [
            BranchScore(
                f"id{i}",
                rng.choice(["a", "b", "c"]),
                is_control=i == 0 and rng.random() < 0.5,
                ok=rng.random() > 0.15,
                quality=pick([0.0, 0.5, 0.7, 0.7, 1.0]),
                latency_ms=pick([100.0, 100.0, 250.0, 800.0]),
                cost=pick([0.0, 0.001, 0.001, 0.01]),
            )
            for i in range(n)
        ]
        r = rank(table, criteria)
        assert sorted(r.ranks.values()) == list(range(1, n + 1))
        ok = [x for x in table if x.ok]
        assert all(r.ranks[x.branch_id] <= len(ok) for x in ok)  # errored ones last
        for x in ok:
            for y in ok:
                if x is not y and dominates(x, y):
                    assert r.ranks[x.branch_id] < r.ranks[y.branch_id], (table, criteria)
                    assert x.branch_id in r.pareto[y.branch_id]
        if r.winner is not None:
            winners += 1
            assert r.pareto_optimal(r.winner), (table, criteria)
            assert r.ranks[r.winner] == 1 and r.scores[r.winner] is not None
        else:
            assert not ok or r.scores[r.order[0]] is None
    assert winners > 300  # the property was exercised, not vacuously true


@pytest.mark.parametrize(
    "bad",
    [
        {"cost": -0.01},
        {"latency_ms": float("nan")},
        {"quality": float("inf")},
    ],
)
def test_branch_scores_reject_impossible_numbers(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="X"):
        BranchScore("id", "X", **bad)


def test_rank_rejects_unknown_criteria_and_duplicate_ids() -> None:
    with pytest.raises(ValueError, match="best_quality, fastest, cheapest, best_value, balanced"):
        rank(TABLE, "quickest")
    with pytest.raises(ValueError, match="case@A"):
        rank([b("A"), b("A")])


def _noisy(
    rng: random.Random, means: dict[str, float], sd: float, n: int
) -> list[dict[str, float | None]]:
    return [{k: rng.gauss(m, sd) for k, m in means.items()} for _ in range(n)]


def test_significance_clear_gap_is_significant() -> None:
    rng = random.Random(1)
    its = _noisy(rng, {"a": 0.9, "b": 0.6, "c": 0.5}, 0.03, 10)
    s = significance(its, True)
    assert (s.winner, s.runner_up, s.significant, s.reason) == ("a", "b", True, "significant")
    assert not s.intervals["a"].overlaps(s.intervals["b"])
    assert s.samples == {"a": 10, "b": 10, "c": 10}


def test_significance_overlapping_noise_is_not() -> None:
    rng = random.Random(2)
    its = _noisy(rng, {"a": 0.70, "b": 0.69}, 0.1, 10)
    s = significance(its, True)
    assert s.winner in {"a", "b"} and not s.significant and s.reason == "overlap"
    assert s.intervals["a"].overlaps(s.intervals["b"])


def test_significance_lower_is_better_for_latency() -> None:
    rng = random.Random(3)
    its = _noisy(rng, {"slow": 900.0, "quick": 200.0}, 20.0, 8)
    s = significance(its, higher_is_better("fastest"))
    assert s.winner == "quick" and s.runner_up == "slow" and s.significant


def test_significance_needs_enough_scored_iterations() -> None:
    its: list[dict[str, float | None]] = [{"a": 0.9, "b": 0.1}] * 4 + [{"a": 0.9, "b": None}] * 3
    s = significance(its, True)
    assert s.samples == {"a": 7, "b": 4}
    assert s.winner == "a" and not s.significant and s.reason == "too_few"
    assert significance(its, True, min_samples=4).significant  # zero-width, far apart


def test_significance_with_one_or_no_scored_branch() -> None:
    one = significance([{"a": 0.9, "b": None}] * 6, True)
    assert (one.winner, one.runner_up, one.significant, one.reason) == (
        "a",
        None,
        False,
        "one_branch",
    )
    assert "b" not in one.intervals
    none = significance([{"a": None}], True)
    assert (none.winner, none.significant, none.reason) == (None, False, "no_scores")
    assert significance([], True).reason == "no_scores"


def test_significance_is_deterministic_for_a_seed_and_breaks_ties_by_order() -> None:
    rng = random.Random(4)
    its = _noisy(rng, {"a": 0.8, "b": 0.75}, 0.05, 12)
    assert significance(its, True, seed=7) == significance(its, True, seed=7)
    assert significance(its, True, seed=7).intervals != significance(its, True, seed=8).intervals
    tied: list[dict[str, float | None]] = [{"x": 0.5, "y": 0.5}] * 5
    assert significance(tied, True).winner == "x"
    assert significance(tied, True, tie_order=["y", "x"]).winner == "y"
    assert significance(tied, True).reason == "overlap"


def test_significance_over_ranking_scores_with_free_branches() -> None:
    """best_value scores a free branch as infinity; its interval must not turn into NaN."""
    its: list[dict[str, float | None]] = [{"free": math.inf, "paid": 90.0 + i} for i in range(6)]
    s = significance(its, True)
    assert s.winner == "free" and s.significant
    assert s.intervals["free"].low == math.inf


def test_winner_distribution_counts_most_first_and_skips_no_winner() -> None:
    dist = winner_distribution(["b", "a", "b", None, "c", "a", "b"])
    assert dist == {"b": 3, "a": 2, "c": 1}
    assert list(dist) == ["b", "a", "c"]
    assert winner_distribution(["z", "y"]) == {"z": 1, "y": 1} and list(
        winner_distribution(["z", "y"])
    ) == ["z", "y"]
    assert winner_distribution([None, None]) == {} and winner_distribution([]) == {}
