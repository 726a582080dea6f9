"""Each (case, baseline)'s kept window of recent scores and lengths is exactly what a walk
of its executions reads, on SQLite and PostgreSQL, and is read without the walk."""

from __future__ import annotations

import random
from typing import Any

import pytest
import sqlalchemy as sa

from oxyeval.store import Store, _recent

from ._helpers import make_case, new

CASES = ("c1", "c2", "c3")
BASELINES = (("positive", "lexical"), ("negative", "lexical"), ("positive", "embedding:e"))


def _requests() -> list[tuple[str, tuple[str, str]]]:
    return [(case, baseline) for case in CASES for baseline in BASELINES]


def _agree(store: Store, recents: tuple[int, ...] = (1, 3, 10, 11, 25)) -> None:
    """Every request's kept answer equals the walk's, for windows shorter and longer
    than the one kept."""
    for recent in recents:
        walked = store.stats.histories(_requests(), recent)
        kept = store.stats.baselines(_requests(), recent)
        for w, k, request in zip(walked, kept, _requests(), strict=True):
            assert k.recent_scores == tuple(p.score for p in w.recent), (request, recent)
            assert k.recent_lengths == tuple(
                p.actual_length for p in w.recent if p.actual_length is not None
            ), (request, recent)
            assert (k.total_runs, k.historical_pass_rate, k.avg_score, k.avg_length) == (
                w.total_runs,
                w.historical_pass_rate,
                w.avg_score,
                w.avg_length,
            ), (request, recent)


def _walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many keys each walk of the executions read (the kept windows' fallback)."""
    from oxyeval.store import _stats

    counted: list[int] = []
    real = _recent.walk

    def walk(conn: Any, keys: Any, limit: int, *rest: Any) -> Any:
        keys = list(keys)
        counted.append(len(keys))
        return real(conn, keys, limit, *rest)

    monkeypatch.setattr(_stats, "walk", walk)
    return counted


def _random_batch(rng: random.Random, day: int) -> list[Any]:
    """A batch of executions of the cases under several baselines: judged and not,
    outputs of many lengths (none where not judged), scores or none, times in order with ties."""
    batch = []
    for n in range(rng.randint(1, 12)):
        case = rng.choice(CASES)
        expected, method = rng.choice(BASELINES)
        status = rng.choice(("passed", "passed", "failed", "error", "pending"))
        judged = status in ("passed", "failed")
        output = None if not judged and rng.random() < 0.5 else "x" * rng.randint(0, 40)
        score = None if rng.random() < 0.1 else round(rng.random(), rng.randint(1, 6))
        at = f"2026-01-{day:02d}T00:00:{min(59, n // 2):02d}.000Z"
        batch.append(
            new(
                case,
                status=status,
                actual_output=output,
                score=score,
                expected_output=expected,
                similarity_method=method,
                created_at=at,
            )
        )
    return batch


def test_the_kept_window_is_what_the_walk_reads_and_is_read_without_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for case in CASES:
        make_case(store, case)
    walks = _walks(monkeypatch)
    rng = random.Random(7)
    for day in range(1, 25):
        store.executions.record_many(_random_batch(rng, day))
        _agree(store)
    walks.clear()
    store.stats.baselines(_requests(), 10)
    assert walks == [0]  # every window kept: nothing walked for the default ``recent``
    # more than a window holds, of a case with a longer history: walked
    assert max(h.total_runs for h in store.stats.baselines(_requests(), 11)) > 11
    assert walks[-1] > 0


def test_an_execution_older_than_the_window_s_newest_is_put_in_its_place(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs writing one case out of time order: the window is walked again, so it
    stays the newest executions by time, as the walk orders them."""
    make_case(store, "c1")
    at = "2026-01-0{}T00:00:00.000Z"
    store.executions.record_many([_judged(0.1, "a", created_at=at.format(5))])
    store.executions.record_many([_judged(0.9, "bbbb", created_at=at.format(2))])
    store.executions.record_many([_judged(0.5, "cc", created_at=at.format(5))])
    walks = _walks(monkeypatch)
    (kept,) = store.stats.baselines([("c1", ("positive", "lexical"))], 10)
    assert walks == [0]
    # newest first: the two of day 5 in the order written, then day 2's
    assert kept.recent_scores == (0.5, 0.1, 0.9) and kept.recent_lengths == (2, 1, 4)
    _agree(store)


def _forget_windows(store: Store) -> None:
    with store.write("test") as conn:
        conn.execute(sa.text("UPDATE case_baselines SET recent = NULL, recent_at = NULL"))


def test_a_row_with_no_window_is_walked_until_its_next_write_keeps_one(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a history upgraded from before the window holds (and a rebuild leaves)."""
    for case in CASES:
        make_case(store, case)
    rng = random.Random(11)
    for day in range(1, 15):
        store.executions.record_many(_random_batch(rng, day))
    _forget_windows(store)
    walks = _walks(monkeypatch)
    _agree(store)
    assert walks[-1] > 0  # no window: walked, with the same answer
    for day in range(15, 20):
        store.executions.record_many(_random_batch(rng, day))
        _agree(store)
    store.stats.rebuild()
    _agree(store)
    store.executions.record_many(_random_batch(rng, 21))
    _agree(store)


def _judged(score: float, output: str, **kw: Any) -> Any:
    return new("c1", score=score, actual_output=output, similarity_method="lexical", **kw)


def test_a_damaged_window_is_walked_and_made_again(store: Store) -> None:
    make_case(store, "c1")
    for n in range(4):
        store.executions.record_many([_judged(n / 4, "y" * n)])
    with store.write("test") as conn:
        conn.execute(sa.text("UPDATE case_baselines SET recent = 'not json'"))
    (kept,) = store.stats.baselines([("c1", ("positive", "lexical"))], 10)
    assert kept.recent_scores == (0.75, 0.5, 0.25, 0.0)
    store.executions.record_many([_judged(1.0, "z")])
    with store.read("test") as conn:
        text = conn.execute(sa.text("SELECT recent FROM case_baselines")).scalar_one()
    assert text == "[[1.0,1],[0.75,3],[0.5,2],[0.25,1],[0.0,0]]"


def test_a_kept_length_is_the_length_of_what_is_stored(store: Store, backend: Any) -> None:
    """A surrogate pair is stored as its one character, and SQLite's length() stops at a
    NUL: the kept lengths are those the walk reads, not Python's count of the text given."""
    make_case(store, "c1")
    outputs = ["ab\ud83d\ude00", "caf\u00e9 \U0001f600"]
    if backend.name == "sqlite":  # PostgreSQL text holds no NUL
        outputs.append("ab\x00cd")
    for n, output in enumerate(outputs):
        store.executions.record_many([_judged(n / 4, output)])
    walked = store.stats.histories([("c1", ("positive", "lexical"))], 10)[0]
    kept = store.stats.baselines([("c1", ("positive", "lexical"))], 10)[0]
    assert kept.recent_lengths == tuple(p.actual_length for p in walked.recent)
    assert kept.recent_lengths[-1] == 3  # the pair: one character
