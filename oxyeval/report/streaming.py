"""JSON documents written piece by piece, so a run of 100,000 results is never one
string (nor one dict of dicts) in memory.

A document is built as usual, except that a long list may be a :class:`Streamed`: a
way to produce its items, called when the writer reaches it. :func:`write_streamed`
writes exactly what ``json.dumps(doc, indent=2)`` would (the same bytes: a reader, a
fingerprint or a diff cannot tell), each item scrubbed of secrets and of numbers JSON
cannot hold as it is written. :func:`plain` makes the whole document for what needs it
whole (a document kept in the history).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TextIO

__all__ = ["Streamed", "plain", "write_streamed"]


class Streamed:
    """A list in a document, produced item by item when written (``items`` is called
    once per writing), with its length known beforehand."""

    def __init__(self, items: Callable[[], Iterable[Any]], length: int) -> None:
        self._items = items
        self.length = length

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"Streamed({self.length} items)"


def _has_stream(value: Any) -> bool:
    if isinstance(value, Streamed):
        return True
    if isinstance(value, Mapping):
        return any(_has_stream(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_stream(v) for v in value)
    return False


def plain(value: Any) -> Any:
    """``value`` with every :class:`Streamed` made a list (what ``json.dumps`` takes)."""
    if isinstance(value, Streamed):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()} if _has_stream(value) else value
    if isinstance(value, (list, tuple)) and _has_stream(value):
        return [plain(v) for v in value]
    return value


def _dump(value: Any, clean: Callable[[Any], Any], level: int) -> str:
    text = json.dumps(clean(value), indent=2, ensure_ascii=False, default=str, allow_nan=False)
    return text.replace("\n", "\n" + "  " * level) if level else text


def write_streamed(value: Any, out: TextIO, clean: Callable[[Any], Any], level: int = 0) -> None:
    """``value`` as ``json.dumps(value, indent=2)`` writes it, onto ``out``; ``clean``
    makes each piece writable (secrets scrubbed, numbers JSON cannot hold as null)
    before it is dumped, the keys of a streamed document's mappings included."""
    if not _has_stream(value):
        out.write(_dump(value, clean, level))
        return
    inner = "\n" + "  " * (level + 1)
    if isinstance(value, Mapping):
        if not value:
            out.write("{}")
            return
        out.write("{")
        for n, (key, item) in enumerate(value.items()):
            out.write(("," if n else "") + inner)
            out.write(json.dumps(str(clean(key)), ensure_ascii=False) + ": ")
            write_streamed(item, out, clean, level + 1)
        out.write("\n" + "  " * level + "}")
        return
    written = False
    for item in value:
        out.write(("," if written else "[") + inner)
        write_streamed(item, out, clean, level + 1)
        written = True
    out.write("\n" + "  " * level + "]" if written else "[]")
