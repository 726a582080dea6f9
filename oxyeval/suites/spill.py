"""A run's finished results, kept on disk past a memory budget so a run of 100,000 cases
holds no more of them in memory than a run of a few thousand.

Why: a report lists every result, but only once the run ends, and only one at a time;
holding each result's answer, expected text and diff until then made a run's memory
grow by kilobytes per case. :class:`SpillList` keeps items as a list while they fit
:data:`IN_MEMORY_BYTES` (by the owner's estimate of an item's size) or, with no
estimate, :data:`IN_MEMORY` items; past that, each item is pickled to an unnamed
temporary file (gone with the process, whatever ends it) and read back, one at a time,
when the list is iterated. What stays in memory per spilled item is two integers.

A budget in bytes rather than a count: results of a few short answers cost about
1.6 KB each, and reading back a pickled one costs more than the case's own scoring,
so a run of 10,000 such cases is faster held whole; a run of long answers spills
after fewer.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, Generic, TypeVar, overload

__all__ = ["IN_MEMORY", "IN_MEMORY_BYTES", "SpillList", "on_disk", "put_in_place"]

T = TypeVar("T")

#: Items kept as a plain list before the list moves them to disk, when the list has no
#: estimate of an item's size (``OXY_RESULTS_IN_MEMORY`` sets a count for every list:
#: lower on a machine short of memory).
IN_MEMORY = 2_000

#: Estimated bytes of items kept as a plain list, when the list's owner estimates them.
IN_MEMORY_BYTES = 32 << 20

#: Bytes read at once when results are read back in the order they were kept.
_WINDOW = 1 << 20


def _in_memory() -> int | None:
    raw = os.environ.get("OXY_RESULTS_IN_MEMORY", "")
    return int(raw) if raw.isdigit() else None


class SpillList(Generic[T]):
    """A list that appends, counts, sorts and iterates like one, and keeps its items on
    disk once it holds more than ``limit`` items, or (with ``size``, an item's estimated
    bytes, and no count set) more than ``budget`` bytes of them. Indexing reads one
    item; an item read back is a copy (changing it changes nothing kept)."""

    def __init__(
        self,
        items: Iterable[T] = (),
        *,
        limit: int | None = None,
        size: Callable[[T], int] | None = None,
        budget: int = IN_MEMORY_BYTES,
        place: Callable[[T], int] | None = None,
    ) -> None:
        count = _in_memory() if limit is None else max(0, limit)
        # Each item's place (an integer the owner reads off it), kept as it is appended,
        # so putting a spilled list in order (:meth:`in_place_order`) reads nothing back.
        self._place = place
        self._places = array("q")
        self._size = size if count is None else None
        self._limit = IN_MEMORY if count is None else count
        self._room = budget  # estimated bytes left before the list spills (with ``size``)
        self._memory: list[T] = []
        self._file: IO[bytes] | None = None
        self._starts = array("q")  # each spilled item's offset in the file, in list order
        self._sizes = array("q")
        self._end = 0
        self._moved = False
        for item in items:
            self.append(item)

    @property
    def spilled(self) -> bool:
        return self._file is not None

    @property
    def keeps_places(self) -> bool:
        """Whether it keeps each item's place (:meth:`in_place_order`)."""
        return self._place is not None

    def append(self, item: T) -> None:
        if self._place is not None:
            self._places.append(self._place(item))
        if self._file is None:
            self._memory.append(item)
            if self._size is not None:
                self._room -= self._size(item)
                if self._room < 0:
                    self._spill()
            elif len(self._memory) > self._limit:
                self._spill()
            return
        self._write(item)

    def extend(self, items: Iterable[T]) -> None:
        for item in items:
            self.append(item)

    def _spill(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="oxyeval-results-")  # noqa: SIM115 - lives with the list
        held, self._memory = self._memory, []
        for item in held:
            self._write(item)

    def _write(self, item: T) -> None:
        assert self._file is not None
        data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        if self._moved:  # a read moved the file's position (a seek flushes: only then)
            self._file.seek(self._end)
            self._moved = False
        self._file.write(data)
        self._starts.append(self._end)
        self._sizes.append(len(data))
        self._end += len(data)

    def _read(self, k: int) -> T:
        assert self._file is not None
        self._moved = True
        self._file.seek(self._starts[k])
        return pickle.loads(self._file.read(self._sizes[k]))

    def __len__(self) -> int:
        return len(self._starts) if self._file is not None else len(self._memory)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __iter__(self) -> Iterator[T]:
        if self._file is None:
            yield from list(self._memory)  # a snapshot: appending meanwhile is allowed
            return
        self._file.flush()
        # Read a window at a time where items follow each other in the file (the order
        # they were kept in), else one item at a time. Read, never mapped: a mapped
        # file's pages count in the process's memory (RSS) once touched, and a pass over
        # 100,000 results touched 76 MB of them.
        starts, sizes = self._starts, self._sizes
        window = memoryview(b"")
        base = 0
        for k in range(len(starts)):
            start, size = starts[k], sizes[k]
            if not base <= start <= start + size <= base + len(window):
                follows = k + 1 < len(starts) and starts[k + 1] == start + size
                base = start
                window = memoryview(self._pread(max(size, _WINDOW) if follows else size, start))
            yield pickle.loads(window[start - base : start - base + size])

    def _pread(self, size: int, offset: int) -> bytes:
        assert self._file is not None
        pread = getattr(os, "pread", None)
        if pread is not None:  # no seek: a write after this needs no repositioning
            return pread(self._file.fileno(), size, offset)
        self._moved = True
        self._file.seek(offset)
        return self._file.read(size)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if self._file is None:
            return self._memory[index]
        if isinstance(index, slice):
            return [self._read(k) for k in range(*index.indices(len(self)))]
        k = index + len(self) if index < 0 else index
        if not 0 <= k < len(self):
            raise IndexError("SpillList index out of range")
        return self._read(k)

    def sort(self, *, key: Callable[[T], Any], reverse: bool = False) -> None:
        """Sorted in place, stably; a spilled list reads each item once for its key and
        moves only offsets."""
        if self._file is None:
            self._memory.sort(key=key, reverse=reverse)
            if self._place is not None:
                self._places = array("q", map(self._place, self._memory))
            return
        keys = [key(item) for item in self]
        self._reorder(sorted(range(len(keys)), key=keys.__getitem__, reverse=reverse))

    def in_place_order(self) -> None:
        """Sorted by each item's place (``place``, given when the list was made),
        stably, without reading a spilled item back: a pass over 100,000 results read
        from disk only to sort them cost half a second."""
        if self._place is None:
            raise TypeError("this list keeps no places: sort(key=...) it")
        places = self._places
        order = sorted(range(len(places)), key=places.__getitem__)
        if self._file is None:
            self._memory = [self._memory[k] for k in order]
            self._places = array("q", (places[k] for k in order))
            return
        self._reorder(order)

    def _reorder(self, order: list[int]) -> None:
        self._starts = array("q", (self._starts[k] for k in order))
        self._sizes = array("q", (self._sizes[k] for k in order))
        if self._place is not None:
            self._places = array("q", (self._places[k] for k in order))

    def close(self) -> None:
        """The file let go now rather than when the list is collected."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self._starts, self._sizes, self._end = array("q"), array("q"), 0
            self._places = array("q")

    def __repr__(self) -> str:
        where = "on disk" if self._file is not None else "in memory"
        return f"SpillList({len(self)} items {where})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (SpillList, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def on_disk(items: object) -> bool:
    """Whether ``items`` (a run's results) is a :class:`SpillList` that moved them to
    disk: its report then writes them one at a time as it reads them back."""
    return isinstance(items, SpillList) and items.spilled


def put_in_place(items: SpillList[T] | list[T], place: Callable[[T], int]) -> None:
    """``items`` sorted by ``place``, stably: a :class:`SpillList` that keeps its items'
    places is not read back for it, a plain list (a caller's own) is sorted as usual."""
    if isinstance(items, SpillList) and items.keeps_places:
        items.in_place_order()
    else:
        items.sort(key=place)
