"""JSON documents written piece by piece, so a run of 100,000 results is never one
string (nor one dict of dicts) in memory.

A document is built as usual, except that a long list may be a :class:`Streamed`: a
way to produce its items, called when the writer reaches it. :func:`write_streamed`
writes what ``json.dumps(doc, indent=2)`` would, but for each item of a streamed list
on a line of its own (one execution per line: what ``grep`` and ``jq`` take as well),
each item scrubbed of secrets and of numbers JSON cannot hold as it is written.
:func:`plain` makes the whole document for what needs it whole (a document kept in the
history).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TextIO

import orjson

from ..inputs import finite_json

__all__ = ["Streamed", "listed", "plain", "write_streamed"]


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


def listed(items: Callable[[], Iterable[Any]], length: int, *, stream: bool) -> Any:
    """``items`` as a document's list: a :class:`Streamed` one when ``stream`` (a run kept
    on disk, or one too long to build whole), else made now."""
    return Streamed(items, length) if stream else list(items())


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


#: The one-line encoder, made once (``json.dumps`` with options builds one per call: a
#: streamed list calls it per item).
_ONE_LINE = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=False).encode
#: orjson as ``json.dumps(default=str)`` writes: what it has no type for (a dataclass, a
#: date) is written as its text, not as orjson would.
_OR_OPTIONS = (
    orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
)


def _fast(data: Any, indent: int | None) -> str | None:
    """``data`` by orjson: one line (with no space after ``:`` and ``,``), or indented by
    2 as ``json.dumps`` indents. NaN and infinities are null, as below. None where orjson
    cannot write it (an integer past 64 bits, a lone surrogate, nesting past its depth):
    the standard library's encoder does."""
    if indent not in (None, 2):
        return None
    try:
        option = _OR_OPTIONS if indent is None else _OR_OPTIONS | orjson.OPT_INDENT_2
        return orjson.dumps(data, default=_as_json_does, option=option).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return None


def _as_json_does(value: Any) -> Any:
    """What ``json`` makes of a value orjson leaves to ``default``: a float subclass
    (numpy's float64) a number (a NaN one null, by orjson), a tuple subclass (a named
    tuple) a list, anything else its text."""
    if isinstance(value, float):
        return float(value)
    if isinstance(value, tuple):
        return list(value)
    return str(value)


def _strict(data: Any, indent: int | None) -> str:
    """``data`` as strict JSON: a number JSON cannot hold (NaN, an integer too long to
    print) written as null. Walked for such numbers only when there is one."""
    fast = _fast(data, indent)
    if fast is not None:
        return fast
    try:
        if indent is None:
            return _ONE_LINE(data)
        return json.dumps(data, indent=indent, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:
        data = finite_json(data)
        return json.dumps(data, indent=indent, ensure_ascii=False, default=str, allow_nan=False)


def _dump(value: Any, clean: Callable[[Any], Any], level: int) -> str:
    text = _strict(clean(value), 2)
    return text.replace("\n", "\n" + "  " * level) if level else text


def _line(item: Any, clean: Callable[[Any], Any]) -> str:
    """One item of a streamed list on one line (json's indenting encoder is pure Python:
    3 s of a 10,000-case document)."""
    return _strict(clean(item), None)


_PIECE = 1 << 16


def write_streamed(value: Any, out: TextIO, clean: Callable[[Any], Any], level: int = 0) -> None:
    """``value`` as ``json.dumps(value, indent=2)`` writes it, onto ``out``, except that
    each item of a :class:`Streamed` list is written on a line of its own; ``clean``
    scrubs each piece of secrets before it is dumped (a number JSON cannot hold is
    written as null), the keys of a streamed document's mappings included."""
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
    if isinstance(value, Streamed):
        # Lines go out in pieces of about 64 KB: each write of the CLI's stream checks
        # and scrubs what it is given, a cost per call as much as per character.
        pending: list[str] = []
        size = 0
        for item in value:
            line = ("," if written else "[") + inner + _line(item, clean)
            pending.append(line)
            size += len(line)
            written = True
            if size >= _PIECE:
                out.write("".join(pending))
                pending, size = [], 0
        if pending:
            out.write("".join(pending))
    else:
        for item in value:
            out.write(("," if written else "[") + inner)
            write_streamed(item, out, clean, level + 1)
            written = True
    out.write("\n" + "  " * level + "]" if written else "[]")
