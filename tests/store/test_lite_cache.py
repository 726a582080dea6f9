"""The cache through the lean sqlite3 store: what ``oxy test`` and ``oxy run`` read and write
without SQLAlchemy must mean exactly what the full store reads and writes (SQLite only; the
full store's own tests run on PostgreSQL too)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from oxyeval.redact import register_secret
from oxyeval.store import NewCacheEntry, content_hash, open_results, open_store, utc_timestamp
from oxyeval.store import resolve_location as where

Opener = Callable[[Path], Any]


@contextmanager
def lite(path: Path) -> Iterator[Any]:
    store = open_results(where(str(path), environ={}))
    assert store is not None
    try:
        yield store
    finally:
        store.close()


@contextmanager
def full(path: Path) -> Iterator[Any]:
    with open_store(path) as store:
        yield store


PATHS = {"lean": lite, "full": full}


def _history(tmp_path: Path, name: str = "oxyeval.db") -> Path:
    path = tmp_path / name
    open_store(path).close()  # created and migrated by the full store
    return path


def entry(n: int, kind: str = "answer", **value: object) -> NewCacheEntry:
    return NewCacheEntry(content_hash({"n": n, "kind": kind}), kind, {"text": f"v{n}", **value})


def _rows(path: Path) -> list[tuple[Any, ...]]:
    """Every cache row as stored, timestamps left out (they are 'now')."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT key_hash, kind, model, value, size, hits, last_hit_at IS NULL "
            "FROM cache_entries ORDER BY key_hash"
        ).fetchall()
    finally:
        conn.close()


def _age(path: Path, key_hash: str, days: float) -> None:
    when = utc_timestamp(datetime.now(timezone.utc) - timedelta(days=days))
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE cache_entries SET created_at = ? WHERE key_hash = ?", (when, key_hash))
    conn.close()


def _ago(days: float) -> str:
    return utc_timestamp(datetime.now(timezone.utc) - timedelta(days=days))


def test_the_lean_store_writes_the_rows_the_full_store_writes(tmp_path: Path) -> None:
    secret = "sk-lite-cache-secret-5151"
    register_secret(secret)
    entries = [
        entry(1, structured={"a": [1, 2]}),
        NewCacheEntry(content_hash({"v": 1}), "verdict", {"choice": "A"}, "openai/judge"),
        entry(2, note=f"the key is {secret}"),
        entry(1, text="written twice in one batch: the last wins"),
    ]
    stored: dict[str, list[tuple[Any, ...]]] = {}
    for name, opener in PATHS.items():
        path = _history(tmp_path, f"{name}.db")
        with opener(path) as store:
            assert store.cache.put_many(entries) == 3
            store.cache.add_hits({entries[1].key_hash: 2, "no such key": 1})
            store.cache.put_many([entry(2, text="replaced")])  # its age and hits start over
        stored[name] = _rows(path)
    assert stored["lean"] == stored["full"]
    assert len(stored["lean"]) == 3 and not any(secret in str(r) for r in stored["lean"])
    verdict = next(r for r in stored["lean"] if r[1] == "verdict")
    assert (verdict[5], verdict[6]) == (2, 0)  # two hits counted, when is set


@pytest.mark.parametrize(("writer", "reader"), [("lean", "full"), ("full", "lean")])
def test_entries_read_back_identically_through_the_other_path(
    tmp_path: Path, writer: str, reader: str
) -> None:
    path = _history(tmp_path)
    entries = [entry(n) for n in range(1200)]  # more than one IN (...) list
    verdict = NewCacheEntry(content_hash({"v": 2}), "verdict", {"score": 0.5}, "openai/j")
    with PATHS[writer](path) as store:
        store.cache.put_many([*entries, verdict])
        store.cache.add_hits({verdict.key_hash: 3})
        mine = store.cache.get_many([verdict.key_hash, entries[7].key_hash])
    _age(path, entries[0].key_hash, 10)
    wanted = [e.key_hash for e in entries] + [verdict.key_hash, "missing", verdict.key_hash]
    with PATHS[reader](path) as store:
        theirs = store.cache.get_many([verdict.key_hash, entries[7].key_hash])
        everything = store.cache.get_many(wanted)
        fresh = store.cache.get_many(wanted, newer_than=_ago(7))
        single = store.cache.get(entries[3].key_hash)
        assert store.cache.get_many([]) == {}
    with PATHS[writer](path) as store:
        again = store.cache.get_many(wanted, newer_than=_ago(7))
    assert theirs == mine and theirs[verdict.key_hash].hits == 3  # every field, both ways
    assert len(everything) == 1201 and set(fresh) == set(everything) - {entries[0].key_hash}
    assert fresh == again  # both paths agree on what has expired
    assert single is not None and (single.kind, single.model, single.value) == (
        "answer",
        "",
        {"text": "v3"},
    )
    assert theirs[verdict.key_hash].value == {"score": 0.5}


@pytest.mark.parametrize("purger", ["lean", "full"])
def test_expired_entries_are_purged_the_same_way(tmp_path: Path, purger: str) -> None:
    path = _history(tmp_path)
    answers = [entry(n) for n in range(4)]
    verdicts = [entry(n, "verdict") for n in range(2)]
    with full(path) as store:
        store.cache.put_many([*answers, *verdicts])
    _age(path, answers[0].key_hash, 10)
    _age(path, verdicts[0].key_hash, 10)
    with PATHS[purger](path) as store:
        assert store.cache.clear(kind="answer", older_than=_ago(7)) == 1
        assert store.cache.clear(older_than=_ago(7)) == 1  # the old verdict
        assert store.cache.clear(older_than=_ago(7)) == 0
        with pytest.raises(ValueError, match="answer, verdict"):
            store.cache.clear(kind="answers")
        with pytest.raises(ValueError, match="answer, verdict"):
            store.cache.put_many([NewCacheEntry("h", "other", {})])
    with full(path) as store:
        stats = store.cache.stats()
    assert (stats.kind("answer").entries, stats.kind("verdict").entries) == (3, 1)
    with lite(path) as store:
        assert store.cache.stats() == stats  # the lean store reads the same statistics
        assert store.cache.clear(kind="verdict") == 1 and store.cache.clear() == 3
        assert store.cache.stats().entries == 0


def test_a_locked_history_is_a_store_error_and_the_cache_stays_usable(tmp_path: Path) -> None:
    from oxyeval.store import StoreError

    path = _history(tmp_path)
    store = open_results(where(str(path), environ={}), timeout=0.2)
    assert store is not None
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process writing
    with pytest.raises(StoreError, match="is locked by another process"):
        store.cache.put_many([entry(1)])
    blocker.execute("ROLLBACK")
    blocker.close()
    assert store.cache.put_many([entry(1)]) == 1
    assert store.cache.get(entry(1).key_hash) is not None
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.cache.get(entry(1).key_hash)
