"""``oxy cache stats``: how much the cache holds, by kind, for people and for machines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .documents import document

if TYPE_CHECKING:
    from rich.console import Console

    from ..store import CacheStats

__all__ = ["cache_stats_json", "human_size", "render_cache_stats"]


def human_size(size: int) -> str:
    """Bytes as people read them: 812 B, 14.2 KB, 3.1 MB."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def cache_stats_json(stats: CacheStats | None, db: str) -> dict[str, Any]:
    """``oxy cache stats --format json``: every kind listed (zeros when the history holds
    none, or does not exist yet)."""
    kinds: dict[str, Any] = {}
    for kind in ("answer", "verdict"):
        k = stats.kind(kind) if stats is not None else None
        kinds[kind] = {
            "entries": k.entries if k else 0,
            "sizeBytes": k.size_bytes if k else 0,
            "oldest": k.oldest if k else None,
            "newest": k.newest if k else None,
            "hits": k.hits if k else 0,
            "lastHit": k.last_hit if k else None,
        }
    return document(
        "cacheStats",
        {
            "db": db,
            "entries": sum(k["entries"] for k in kinds.values()),
            "sizeBytes": sum(k["sizeBytes"] for k in kinds.values()),
            "hits": sum(k["hits"] for k in kinds.values()),
            "kinds": kinds,
        },
    )


def render_cache_stats(stats: CacheStats | None, db: str, console: Console) -> None:
    from rich.table import Table

    doc = cache_stats_json(stats, db)
    if not doc["entries"]:
        console.print(f"the cache is empty ({db})", markup=False, highlight=False)
        return
    table = Table()
    for column in ("kind", "entries", "size", "oldest", "newest", "hits"):
        table.add_column(
            column, justify="right" if column in ("entries", "size", "hits") else "left"
        )
    for kind, k in doc["kinds"].items():
        table.add_row(
            kind,
            str(k["entries"]),
            human_size(k["sizeBytes"]),
            (k["oldest"] or "-")[:19].replace("T", " "),
            (k["newest"] or "-")[:19].replace("T", " "),
            str(k["hits"]),
        )
    console.print(table)
    console.print(
        f"{doc['entries']} entries, {human_size(doc['sizeBytes'])}, {doc['hits']} hits in {db}",
        markup=False,
        highlight=False,
    )
