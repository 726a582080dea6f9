"""The cache of model answers and judge verdicts: one row per key hash.

The store does not know what a key is made of: callers (``oxyeval.suites.run_cache``) hash
the canonical JSON of everything that decides an answer and hand over the hash, the
kind and the value. Values are redacted before they are written, like every other text
the history keeps. Expiry is the caller's to decide (``newer_than`` on reads,
``clear(older_than=...)`` to purge), so one database can serve projects with different
``ttl_days``.

One repository for both writers: :class:`Caches` is plain SQL text with named
parameters, portable across SQLite and PostgreSQL, run through whichever connection
the store has (a SQLAlchemy connection in :class:`~._core.Store`, the stdlib's sqlite3
in the lean :class:`~._lite.LiteStore` that ``oxy test`` and ``oxy run`` use). So an
entry means the same whichever path wrote or reads it, and importing this module costs
no SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from ._util import canonical_json, loads, redact_json, rows_in, utc_timestamp

__all__ = [
    "CACHE_KINDS",
    "CacheEntry",
    "CacheKindStats",
    "CacheStats",
    "Caches",
    "NewCacheEntry",
    "Sql",
]

CACHE_KINDS = ("answer", "verdict")  # also the table's CHECK (``_tables``)

_SELECT = "SELECT key_hash, kind, model, value, created_at, hits FROM cache_entries"
_UPSERT = (
    "INSERT INTO cache_entries (key_hash, kind, model, value, size, created_at, hits, "
    "last_hit_at) VALUES (:key_hash, :kind, :model, :value, :size, :created_at, 0, NULL) "
    "ON CONFLICT (key_hash) DO UPDATE SET kind = excluded.kind, model = excluded.model, "
    "value = excluded.value, size = excluded.size, created_at = excluded.created_at, "
    "hits = 0, last_hit_at = NULL"
)
_ADD_HITS = "UPDATE cache_entries SET hits = hits + :n, last_hit_at = :now WHERE key_hash = :k"
_STATS = (
    "SELECT kind, COUNT(*), COALESCE(SUM(size), 0), MIN(created_at), MAX(created_at), "
    "COALESCE(SUM(hits), 0), MAX(last_hit_at) FROM cache_entries GROUP BY kind"
)


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


class Sql(Protocol):
    """One transaction's way to run this module's SQL text (``:name`` parameters) on a
    store's driver."""

    def rows(self, sql: str, params: Mapping[str, Any]) -> Iterable[Sequence[Any]]: ...

    def run(self, sql: str, params: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> int:
        """Execute (a sequence of parameter sets: once per set); rows changed."""
        ...


#: ``action -> transaction``: a store's read or write transaction, as :class:`Sql`.
Transaction = Callable[[str], AbstractContextManager[Sql]]


def _check_kind(kind: str | None) -> None:
    if kind is not None and kind not in CACHE_KINDS:
        raise ValueError(f"cache kind must be one of {', '.join(CACHE_KINDS)}, not {kind!r}")


class Caches:
    """``store.cache``: answers and verdicts by key hash, on either store (``read`` and
    ``write`` are its transactions)."""

    def __init__(
        self,
        read: Transaction,
        write: Transaction,
        *,
        elsewhere: Callable[[Sequence[NewCacheEntry]], int | None] | None = None,
    ) -> None:
        self._read = read
        self._write = write
        # Who may write a batch of entries for us (the store's writer process); None
        # from it, or none at all: written here.
        self._elsewhere = elsewhere

    def get_many(
        self, key_hashes: Sequence[str], *, newer_than: str | None = None
    ) -> dict[str, CacheEntry]:
        """The entries of these keys that exist and were written after ``newer_than``
        (an ISO timestamp; None: any age)."""
        found: dict[str, CacheEntry] = {}
        keys = list(dict.fromkeys(key_hashes))
        if not keys:
            return found
        age, params = "", {}
        if newer_than is not None:
            age, params = " AND created_at > :newer_than", {"newer_than": utc_timestamp(newer_than)}
        query = _SELECT + " WHERE key_hash IN ({marks})" + age
        with self._read("reading the cache") as sql:
            for key, kind, model, value, created_at, hits in rows_in(sql, query, keys, params):
                found[key] = CacheEntry(key, kind, model, loads(value), created_at, hits)
        return found

    def following(
        self,
        after: tuple[str, str],
        *,
        newer_than: str | None = None,
        limit: int = 1024,
        max_bytes: int = 4 << 20,
    ) -> list[tuple[str, str, str]]:
        """The entries written after position ``after`` (a ``(created_at, key_hash)``
        pair; ``(created_at, "")`` starts at that time), in the order written, as
        ``(created_at, key_hash, value text)``: what a replay reads ahead. At most
        ``limit`` entries and about ``max_bytes`` of values (the entry that crosses it is
        the last); none newer than ``newer_than`` is left out, as :meth:`get_many`
        would."""
        at, key = after
        params: dict[str, Any] = {"at": at, "key": key, "limit": max(1, int(limit))}
        age = ""
        if newer_than is not None:
            age, params["newer_than"] = " AND created_at > :newer_than", utc_timestamp(newer_than)
        with self._read("reading the cache ahead") as sql:
            placed = sql.rows(
                "SELECT created_at, key_hash, size FROM cache_entries "
                "WHERE created_at >= :at AND (created_at > :at OR key_hash > :key)"
                f"{age} ORDER BY created_at, key_hash LIMIT :limit",
                params,
            )
            chosen: list[tuple[str, str]] = []
            total = 0
            for created_at, key_hash, size in placed:
                chosen.append((created_at, key_hash))
                total += int(size or 0)
                if total >= max_bytes:
                    break
            text = "SELECT key_hash, value FROM cache_entries WHERE key_hash IN ({marks})"
            values = dict(rows_in(sql, text, [k for _at, k in chosen]))
        return [(at, k, values[k]) for at, k in chosen if k in values]

    def get(self, key_hash: str, *, newer_than: str | None = None) -> CacheEntry | None:
        return self.get_many([key_hash], newer_than=newer_than).get(key_hash)

    def put_many(self, entries: Sequence[NewCacheEntry]) -> int:
        """Write entries in one transaction (a key written again is replaced: its age
        starts over and its hits go back to 0). Returns how many were written."""
        if not entries:
            return 0
        if self._elsewhere is not None:
            from ._writer import Lost

            try:
                done = self._elsewhere(entries)
            except Lost:  # perhaps written: writing an entry again only replaces it
                done = None
            if done is not None:
                return done
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
            }
        with self._write("writing the cache") as sql:
            sql.run(_UPSERT, list(rows.values()))
        return len(rows)

    def put(self, entry: NewCacheEntry) -> None:
        self.put_many([entry])

    def add_hits(self, counts: Mapping[str, int]) -> None:
        """Count replays (key hash -> how many), for ``oxy cache stats``."""
        if not counts:
            return
        now = utc_timestamp()
        with self._write("counting cache hits") as sql:
            sql.run(_ADD_HITS, [{"k": k, "n": int(n), "now": now} for k, n in counts.items()])

    def stats(self) -> CacheStats:
        with self._read("reading cache statistics") as sql:
            by_kind = {r[0]: r for r in sql.rows(_STATS, {})}
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
        where: list[str] = []
        params: dict[str, Any] = {}
        if kind is not None:
            where.append("kind = :kind")
            params["kind"] = kind
        if older_than is not None:
            where.append("created_at <= :older_than")
            params["older_than"] = utc_timestamp(older_than)
        text = "DELETE FROM cache_entries" + (f" WHERE {' AND '.join(where)}" if where else "")
        with self._write("clearing the cache") as sql:
            return sql.run(text, params)
