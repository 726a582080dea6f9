"""ttl_days purges a project's own SQLite file, but never a shared PostgreSQL history,
where other projects may keep entries longer: there an expired entry is only ignored."""

from __future__ import annotations

import sqlalchemy as sa

from oxyeval.store import Store
from oxyeval.store._cache import NewCacheEntry
from oxyeval.suites.run_cache import CachePolicy, _finish

from .conftest import Backend


def test_an_expired_entry_is_ignored_everywhere_and_deleted_only_from_sqlite(
    store: Store, backend: Backend
) -> None:
    store.cache.put_many(
        [
            NewCacheEntry("old", "answer", {"text": "then"}, "m"),
            NewCacheEntry("new", "answer", {"text": "now"}, "m"),
        ]
    )
    with store.write("ageing an entry") as conn:
        conn.execute(
            sa.text("UPDATE cache_entries SET created_at = :at WHERE key_hash = 'old'"),
            {"at": "2000-01-01T00:00:00.000Z"},
        )
    cutoff = CachePolicy(ttl_days=30).cutoff()
    assert set(store.cache.get_many(["old", "new"], newer_than=cutoff)) == {"new"}
    _finish(store, {"new": 2}, cutoff)
    kept = set(store.cache.get_many(["old", "new"]))
    assert kept == ({"new"} if backend.name == "sqlite" else {"old", "new"})
    assert store.cache.get("new") is not None and store.cache.get("new").hits == 2  # type: ignore[union-attr]
