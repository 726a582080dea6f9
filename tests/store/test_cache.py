"""store.cache on SQLite and PostgreSQL: entries by key hash, expiry by age, replays
counted, statistics, clearing by kind and age, and secrets never written."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest

from oxyeval.redact import register_secret
from oxyeval.store import NewCacheEntry, Store, content_hash, open_store, utc_timestamp

from .conftest import Backend


def entry(n: int, kind: str = "answer", **value: object) -> NewCacheEntry:
    return NewCacheEntry(
        content_hash({"n": n, "kind": kind}), kind, {"text": f"v{n}", **value}, "openai/m"
    )


def _age(store: Store, key_hash: str, days: float) -> None:
    """Backdate an entry (the repository always writes 'now')."""
    import sqlalchemy as sa

    when = utc_timestamp(datetime.now(timezone.utc) - timedelta(days=days))
    with store.write("test") as conn:
        conn.execute(
            sa.text("UPDATE cache_entries SET created_at = :w WHERE key_hash = :k"),
            {"w": when, "k": key_hash},
        )


def test_put_then_get(store: Store) -> None:
    e = entry(1, structured={"a": [1, 2]})
    assert store.cache.get(e.key_hash) is None
    assert store.cache.put_many([e]) == 1
    got = store.cache.get(e.key_hash)
    assert got is not None
    assert (got.kind, got.model, got.value, got.hits) == ("answer", "openai/m", e.value, 0)


def test_get_many_returns_only_what_exists(store: Store) -> None:
    entries = [entry(n) for n in range(5)]
    store.cache.put_many(entries)
    wanted = [entries[0].key_hash, "missing", entries[3].key_hash, entries[0].key_hash]
    found = store.cache.get_many(wanted)
    assert set(found) == {entries[0].key_hash, entries[3].key_hash}
    assert found[entries[3].key_hash].value == {"text": "v3"}
    assert store.cache.get_many([]) == {}


def test_many_keys_are_read_in_chunks(store: Store) -> None:
    entries = [entry(n) for n in range(1200)]  # more than one IN (...) list
    store.cache.put_many(entries)
    found = store.cache.get_many([e.key_hash for e in entries])
    assert len(found) == 1200


def test_a_key_written_again_is_replaced_and_its_age_starts_over(store: Store) -> None:
    first = entry(1)
    store.cache.put_many([first])
    store.cache.add_hits({first.key_hash: 3})
    _age(store, first.key_hash, 30)
    store.cache.put_many([NewCacheEntry(first.key_hash, "answer", {"text": "new"}, "openai/m")])
    got = store.cache.get(
        first.key_hash, newer_than=utc_timestamp(datetime.now(timezone.utc) - timedelta(days=1))
    )
    assert got is not None and got.value == {"text": "new"} and got.hits == 0


def test_expired_entries_are_ignored(store: Store) -> None:
    old, new = entry(1), entry(2)
    store.cache.put_many([old, new])
    _age(store, old.key_hash, 10)
    cutoff = utc_timestamp(datetime.now(timezone.utc) - timedelta(days=7))
    assert set(store.cache.get_many([old.key_hash, new.key_hash], newer_than=cutoff)) == {
        new.key_hash
    }
    assert store.cache.get(old.key_hash) is not None  # without a cutoff: still there


def test_hits_and_stats_by_kind(store: Store) -> None:
    answers = [entry(n) for n in range(3)]
    verdict = entry(9, "verdict", choice="A")
    store.cache.put_many([*answers, verdict])
    store.cache.add_hits({answers[0].key_hash: 2, verdict.key_hash: 1, "unknown": 5})
    _age(store, answers[2].key_hash, 2)
    stats = store.cache.stats()
    a, v = stats.kind("answer"), stats.kind("verdict")
    assert (a.entries, a.hits, v.entries, v.hits) == (3, 2, 1, 1)
    assert a.oldest is not None and a.newest is not None and a.oldest < a.newest
    assert a.size_bytes > 0 and stats.size_bytes == a.size_bytes + v.size_bytes
    assert v.last_hit is not None and stats.entries == 4 and stats.hits == 3


def test_stats_of_an_empty_cache_list_every_kind(store: Store) -> None:
    stats = store.cache.stats()
    assert [(k.kind, k.entries, k.size_bytes, k.hits) for k in stats.kinds] == [
        ("answer", 0, 0, 0),
        ("verdict", 0, 0, 0),
    ]


def test_clear_all_by_kind_and_by_age(store: Store) -> None:
    answers = [entry(n) for n in range(4)]
    verdicts = [entry(n, "verdict") for n in range(2)]
    store.cache.put_many([*answers, *verdicts])
    _age(store, answers[0].key_hash, 10)
    _age(store, verdicts[0].key_hash, 10)
    week_ago = utc_timestamp(datetime.now(timezone.utc) - timedelta(days=7))
    assert store.cache.clear(kind="answer", older_than=week_ago) == 1
    assert store.cache.clear(older_than=week_ago) == 1  # the old verdict
    assert store.cache.clear(kind="verdict") == 1
    assert store.cache.stats().entries == 3
    assert store.cache.clear() == 3
    assert store.cache.stats().entries == 0


def test_kinds_are_checked(store: Store) -> None:
    with pytest.raises(ValueError, match="answer, verdict"):
        store.cache.put_many([NewCacheEntry("h", "other", {})])
    with pytest.raises(ValueError):
        store.cache.clear(kind="answers")


def test_secrets_are_scrubbed_before_they_are_written(backend: Backend) -> None:
    secret = "sk-live-CACHE-SECRET-0042"
    register_secret(secret)
    location = backend.fresh()
    with open_store(location) as s:
        e = NewCacheEntry("k1", "answer", {"text": f"the key is {secret}"}, "openai/m")
        s.cache.put_many([e])
        got = s.cache.get("k1")
        assert got is not None and secret not in got.value["text"]
    if location.path is not None:
        raw = b"".join(p.read_bytes() for p in location.path.parent.iterdir() if p.is_file())
        assert secret.encode() not in raw


def test_two_writers_of_the_same_keys_do_not_fail(backend: Backend) -> None:
    location = backend.fresh()
    open_store(location).close()
    entries = [entry(n) for n in range(50)]
    gate = threading.Barrier(3)
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with open_store(location) as s:
                gate.wait()
                s.cache.put_many(entries)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with open_store(location) as s:
        assert s.cache.stats().entries == 50


def test_entries_are_read_ahead_in_the_order_written(store: Store) -> None:
    """``following``: by time written, then key; from a time on; a byte cap; the age rule."""
    first = [entry(n) for n in range(5)]
    later = [entry(n) for n in range(5, 9)]
    store.cache.put_many(first)
    for e, days in zip(first, (5, 5, 5, 4, 4), strict=True):
        _age(store, e.key_hash, days)
    store.cache.put_many(later)
    every = store.cache.following(("", ""))
    keys = [k for _at, k, _text in every]
    assert len(keys) == 9
    assert [(at, k) for at, k, _t in every] == sorted((at, k) for at, k, _t in every)
    assert set(keys[:3]) == {e.key_hash for e in first[:3]}  # the oldest first
    assert set(keys[5:]) == {e.key_hash for e in later}
    assert every[0][2].startswith("{") and '"text"' in every[0][2]
    # from a position on, that position excluded; from a time on, all of it included
    assert store.cache.following((every[2][0], every[2][1])) == every[3:]
    assert store.cache.following((every[3][0], "")) == every[3:]
    assert store.cache.following(("", ""), limit=2) == every[:2]
    assert len(store.cache.following(("", ""), max_bytes=1)) == 1  # the one that crosses it
    cutoff = utc_timestamp(datetime.now(timezone.utc) - timedelta(days=4.5))
    assert [k for _a, k, _t in store.cache.following(("", ""), newer_than=cutoff)] == keys[3:]
