"""The answer cache read ahead while a run replays it in the order it was written.

A ``--cache`` rerun asks the history for each answer while the case holds one of its
``--concurrency`` slots, so a replay of 10,000 cached cases at the default of 8 went
no faster than eight lookups at a time, each a trip to a worker thread and a read
transaction. Yet a rerun asks for its answers in nearly the order the run before wrote
them. So once a lookup finds stored answers, the entries written from then on are read
a page at a time, in that order, and held: a lookup that finds its answer there is
served at once. Each page is read when the held ones run low, and only while they are
being used: a run that asks in another order stops it after a page, and its lookups go
to the history as before.

What is held is bounded (about :data:`_HELD_BYTES` of answer text, :data:`_HELD` entries),
kept as stored text until used, and follows the same rule of age as a lookup (the
project's ``ttl_days``). Reading ahead is only a head start: when a page cannot be read,
nothing more is, and every lookup still has the history.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..inputs import lenient_loads

if TYPE_CHECKING:
    from ..store import CacheEntry
    from .history_store import RunStore

__all__ = ["MISSING", "ReadAhead"]

#: What :meth:`ReadAhead.take` answers for a key it does not hold.
MISSING: Any = object()
#: Entries, and bytes of their text, one page reads at most.
_PAGE = 1024
_PAGE_BYTES = 4 << 20
#: A page is read when fewer than these are held.
_HELD = 2048
_HELD_BYTES = 8 << 20


class ReadAhead:
    """Cache entries read ahead of a replay's lookups (see the module's docstring)."""

    def __init__(self, cutoff: str | None) -> None:
        self._cutoff = cutoff
        self._held: dict[str, str] = {}  # key hash -> stored value text
        self._bytes = 0
        self._next: tuple[str, str] | None = None  # where the next page starts
        self._done = False
        self._task: asyncio.Task[None] | None = None

    def take(self, digest: str) -> Any:
        """The value held for ``digest`` (given up: a key is replayed once from here), or
        :data:`MISSING`."""
        text = self._held.pop(digest, None)
        if text is None:
            return MISSING
        self._bytes -= len(text)
        return lenient_loads(text)

    def begin(self, store: RunStore, found: Iterable[CacheEntry]) -> None:
        """Start reading at the first of ``found`` (entries a lookup just found), once."""
        if self._next is not None or self._done:
            return
        times = [entry.created_at for entry in found]
        if times:
            self._next = (min(times), "")
            self.more(store)

    def more(self, store: RunStore | None) -> None:
        """Read the next page in the background if the entries held run low."""
        if self._done or self._next is None or self._task is not None or store is None:
            return
        if len(self._held) >= _HELD or self._bytes >= _HELD_BYTES:
            return
        self._task = asyncio.ensure_future(self._page(store, self._next))

    async def _page(self, store: RunStore, after: tuple[str, str]) -> None:
        try:
            rows = await asyncio.to_thread(
                store.cache.following,
                after,
                newer_than=self._cutoff,
                limit=_PAGE,
                max_bytes=_PAGE_BYTES,
            )
        except Exception:  # a head start only: the lookups still ask the history
            self._done = True
            return
        finally:
            self._task = None
        if not rows:
            self._done = True
            return
        for _at, key, text in rows:
            if key not in self._held:
                self._held[key] = text
                self._bytes += len(text)
        self._next = (rows[-1][0], rows[-1][1])

    async def aclose(self) -> None:
        """Stop reading; nothing is held any more."""
        self._done = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._held.clear()
        self._bytes = 0
