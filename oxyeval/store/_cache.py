"""The cache of model answers and judge verdicts: one row per key hash.

The store does not know what a key is made of: callers (``oxyeval.suites.cache``) hash
the canonical JSON of everything that decides an answer and hand over the hash, the
kind and the value. Values are redacted before they are written, like every other text
the history keeps. Expiry is the caller's to decide (``newer_than`` on reads,
``clear(older_than=...)`` to purge), so one database can serve projects with different
``ttl_days``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ._tables import CACHE_KINDS, cache_entries
from ._util import canonical_json, loads, redact_json, utc_timestamp

if TYPE_CHECKING:
    from ._core import Store

__all__ = ["CacheEntry", "CacheKindStats", "CacheStats", "Caches", "NewCacheEntry"]

_C = cache_entries.c
_CHUNK = 500  # keys per IN (...) list: well under SQLite's bound-parameter limit


@dataclass(frozen=True)
class NewCacheEntry:
    key_hash: str
    kind: str  # "answer" or "verdict"
    value: Any  # JSON-ready
    model: str = ""  # vendor/model id, shown by oxy cache stats


@dataclass(frozen=True)
class CacheEntry:
    key_hash: str
    kind: str
    model: str
    value: Any
    created_at: str
    hits: int


@dataclass(frozen=True)
class CacheKindStats:
    kind: str
    entries: int
    size_bytes: int
    oldest: str | None
    newest: str | None
    hits: int
    last_hit: str | None


@dataclass(frozen=True)
class CacheStats:
    """Per kind (every kind listed, empty ones with zeros), and the totals."""

    kinds: tuple[CacheKindStats, ...]

    @property
    def entries(self) -> int:
        return sum(k.entries for k in self.kinds)

    @property
    def size_bytes(self) -> int:
        return sum(k.size_bytes for k in self.kinds)

    @property
    def hits(self) -> int:
        return sum(k.hits for k in self.kinds)

    def kind(self, name: str) -> CacheKindStats:
        return next(k for k in self.kinds if k.kind == name)


def _check_kind(kind: str | None) -> None:
    if kind is not None and kind not in CACHE_KINDS:
        raise ValueError(f"cache kind must be one of {', '.join(CACHE_KINDS)}, not {kind!r}")


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _entry(r: Any) -> CacheEntry:
    return CacheEntry(r.key_hash, r.kind, r.model, loads(r.value), r.created_at, r.hits)


def _upsert(conn: Any) -> Any:
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


class Caches:
    """``store.cache``: answers and verdicts by key hash."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def get_many(
        self, key_hashes: Sequence[str], *, newer_than: str | None = None
    ) -> dict[str, CacheEntry]:
        """The entries of these keys that exist and were written after ``newer_than``
        (an ISO timestamp; None: any age)."""
        found: dict[str, CacheEntry] = {}
        keys = list(dict.fromkeys(key_hashes))
        if not keys:
            return found
        with self._store.read("reading the cache") as conn:
            for chunk in _chunks(keys):
                query = sa.select(cache_entries).where(_C.key_hash.in_(chunk))
                if newer_than is not None:
                    query = query.where(_C.created_at > utc_timestamp(newer_than))
                for row in conn.execute(query):
                    found[row.key_hash] = _entry(row)
        return found

    def get(self, key_hash: str, *, newer_than: str | None = None) -> CacheEntry | None:
        return self.get_many([key_hash], newer_than=newer_than).get(key_hash)

    def put_many(self, entries: Sequence[NewCacheEntry]) -> int:
        """Write entries in one transaction (a key written again is replaced: its age
        starts over). Returns how many were written."""
        if not entries:
            return 0
        now = utc_timestamp()
        rows: dict[str, dict[str, Any]] = {}
        for entry in entries:
            _check_kind(entry.kind)
            value = canonical_json(redact_json(entry.value))
            rows[entry.key_hash] = {
                "key_hash": entry.key_hash,
                "kind": entry.kind,
                "model": entry.model,
                "value": value,
                "size": len(value.encode("utf-8")),
                "created_at": now,
                "hits": 0,
                "last_hit_at": None,
            }
        with self._store.write("writing the cache") as conn:
            insert = _upsert(conn)
            stmt = insert(cache_entries)
            stmt = stmt.on_conflict_do_update(
                index_elements=["key_hash"],
                set_={
                    "kind": stmt.excluded.kind,
                    "model": stmt.excluded.model,
                    "value": stmt.excluded.value,
                    "size": stmt.excluded.size,
                    "created_at": stmt.excluded.created_at,
                    "hits": 0,
                    "last_hit_at": None,
                },
            )
            conn.execute(stmt, list(rows.values()))  # one statement, every row
        return len(rows)

    def put(self, entry: NewCacheEntry) -> None:
        self.put_many([entry])

    def add_hits(self, counts: Mapping[str, int]) -> None:
        """Count replays (key hash -> how many), for ``oxy cache stats``."""
        if not counts:
            return
        now = utc_timestamp()
        stmt = (
            cache_entries.update()
            .where(_C.key_hash == sa.bindparam("k"))
            .values(hits=_C.hits + sa.bindparam("n", type_=sa.Integer), last_hit_at=now)
        )
        with self._store.write("counting cache hits") as conn:
            conn.execute(stmt, [{"k": k, "n": int(n)} for k, n in counts.items()])

    def stats(self) -> CacheStats:
        with self._store.read("reading cache statistics") as conn:
            rows = conn.execute(
                sa.select(
                    _C.kind,
                    sa.func.count(),
                    sa.func.coalesce(sa.func.sum(_C.size), 0),
                    sa.func.min(_C.created_at),
                    sa.func.max(_C.created_at),
                    sa.func.coalesce(sa.func.sum(_C.hits), 0),
                    sa.func.max(_C.last_hit_at),
                ).group_by(_C.kind)
            ).all()
        by_kind = {r[0]: r for r in rows}
        kinds = []
        for kind in CACHE_KINDS:
            r = by_kind.get(kind)
            if r is None:
                kinds.append(CacheKindStats(kind, 0, 0, None, None, 0, None))
            else:
                kinds.append(CacheKindStats(kind, r[1], int(r[2]), r[3], r[4], int(r[5]), r[6]))
        return CacheStats(tuple(kinds))

    def clear(self, *, kind: str | None = None, older_than: str | None = None) -> int:
        """Delete entries (of one kind; written before ``older_than``); how many went."""
        _check_kind(kind)
        stmt = cache_entries.delete()
        if kind is not None:
            stmt = stmt.where(_C.kind == kind)
        if older_than is not None:
            stmt = stmt.where(_C.created_at <= utc_timestamp(older_than))
        with self._store.write("clearing the cache") as conn:
            return conn.execute(stmt).rowcount or 0
