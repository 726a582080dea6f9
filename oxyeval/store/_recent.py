"""Each (case, baseline)'s newest judged scores and lengths, kept beside its totals.

Why: regression detection compares a case's answer with its newest few comparable
executions. A walk of the executions index reads up to ``recent`` rows per case, so a
replay of a large suite would slow down with every run behind it (10 runs: ten rows per
case, more than writing the new one). The newest :data:`RECENT_WINDOW` of them are kept
in the case's ``case_baselines`` row instead, as its executions are written: a run reads
one row per case however long its history. Lengths are those SQL's ``length()`` reads of
what is stored (:func:`entry`), as the walk's are.

A window is kept as JSON, newest first, ``[[score, length], ...]``, with ``recent_at``,
the time of its newest entry. It is trusted only when it holds every judged execution
up to its size (``min(runs, RECENT_WINDOW)`` entries); a row written before the window
existed, or after a rebuild of the aggregates, has none, and is walked as before (and
its window made at its next write). An execution older than the window's newest (two
runs writing one case out of time order) makes the writer walk that window again, so
the window is always exactly what the walk would read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..inputs import valid_text
from ._core import _SaSql
from ._util import LATEST_CHUNK, chunks, in_list, newest_of_each

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

__all__ = [
    "RECENT_WINDOW",
    "Baseline",
    "Window",
    "entry",
    "next_windows",
    "read_baselines",
    "usable",
    "walk",
]

#: Judged executions kept per (case, baseline): the default ``recent`` of a prompt. A
#: prompt that compares with more reads its executions instead (slower, same answer).
RECENT_WINDOW = 10

Key = tuple[str, str]  # (test case id, baseline key)


class Baseline(NamedTuple):
    """A (case, baseline)'s row: its totals and its kept window as stored (None: none)."""

    runs: int
    passes: int
    score_sum: float
    scored: int
    length_sum: int
    window: str | None
    at: str | None


def read_baselines(conn: Connection, keys: Sequence[Key]) -> dict[Key, Baseline]:
    """The ``case_baselines`` rows of ``keys`` (absent: no judged execution yet), a
    statement per few hundred keys."""
    sql = _SaSql(conn)
    found: dict[Key, Baseline] = {}
    for chunk in chunks(sorted(set(keys))):
        names, ids = in_list(sorted({case_id for case_id, _key in chunk}), "i")
        kinds, marks = in_list(sorted({key for _case_id, key in chunk}), "k")
        names.update(kinds)
        statement = (
            "SELECT test_case_id, baseline_key, runs, passes, score_sum, scored, length_sum, "
            f"recent, recent_at FROM case_baselines WHERE test_case_id IN ({ids}) "
            f"AND baseline_key IN ({marks})"
        )
        wanted = set(chunk)
        for r in sql.rows(statement, names):
            key = (r[0], r[1])
            if key in wanted:
                found[key] = Baseline(*r[2:])
    return found


Window = tuple[tuple[Any, ...], tuple[Any, ...]]  # (scores, lengths), newest first


def _complete(kept: int, runs: int) -> bool:
    """Whether a window of ``kept`` entries holds every judged run it should."""
    return kept >= min(runs, RECENT_WINDOW)


def usable(baseline: Baseline, recent: int) -> Window | None:
    """The newest ``recent`` scores and lengths from the kept window, or None when it
    cannot answer: none kept (or damaged), or ``recent`` is more than it keeps of a
    longer history. Read as JSON and transposed, never made into a tuple per entry (a
    replay of 100,000 cases reads a million entries)."""
    if baseline.window is None:
        return None
    try:
        window = json.loads(baseline.window)
        kept = len(window)
        if not _complete(kept, baseline.runs) or (recent > kept and baseline.runs > kept):
            return None
        window = window[:recent]
        scores, lengths = zip(*window, strict=True) if window else ((), ())
    except (ValueError, TypeError):  # hand-edited or damaged: walked instead
        return None
    return scores, lengths


#: What a walk reads of each judged execution, newest first per key.
_WALKED = (
    "e.test_case_id, e.baseline_key, e.score, length(e.actual_output) AS actual_length, "
    "e.created_at, e.seq"
)


def walk(
    conn: Connection, keys: Iterable[Key], limit: int, columns: str = _WALKED
) -> dict[Key, list[Any]]:
    """Each key's newest ``limit`` judged executions (``columns`` of each, which must
    include the key, ``created_at`` and ``seq``), newest first: a backward walk of
    ix_executions_case_baseline per key, a statement per LATEST_CHUNK keys."""
    found: dict[Key, list[Any]] = {}
    if limit <= 0:
        return found
    for part in chunks(sorted(set(keys)), LATEST_CHUNK):
        names: dict[str, Any] = {"limit": limit}
        wheres = []
        for n, (case_id, key) in enumerate(part):
            names[f"c{n}"], names[f"k{n}"] = case_id, key
            wheres.append(f"e.test_case_id = :c{n} AND e.baseline_key = :k{n}")
        statement = newest_of_each(
            f"SELECT {columns} FROM executions e WHERE e.status IN ('passed', 'failed')",
            wheres,
            "e.created_at DESC, e.seq DESC",
        )
        rows = _SaSql(conn).rows(statement, names)
        rows.sort(key=lambda r: (r.test_case_id, r.baseline_key, r.created_at, r.seq))
        for r in reversed(rows):  # newest first
            found.setdefault((r.test_case_id, r.baseline_key), []).append(r)
    return found


def next_windows(
    conn: Connection, added: Mapping[Key, Sequence[tuple[str, str]]]
) -> dict[Key, tuple[str, str | None]]:
    """Each key's window (JSON) and newest time once ``added`` is stored: its judged
    executions of this batch, (created_at, :func:`entry`) in the order they are inserted. Called
    after they are inserted (a window walked again reads them too) and before the totals
    are added. A kept window is extended as text, never parsed: the writer of a large
    run does this for every case."""
    old = read_baselines(conn, list(added))
    made: dict[Key, tuple[str, str | None]] = {}
    again: list[Key] = []
    for key, entries in added.items():
        row = old.get(key)
        window: list[str] | None = []
        at = None
        if row is not None:
            window, at = _entries(row.window), row.at
            if window is not None and not _complete(len(window), row.runs):
                window = None
        if window is not None:
            for created_at, _new in entries:
                if at is not None and created_at < at:  # older than what the window holds
                    window = None
                    break
                at = created_at
        if window is None:
            again.append(key)
            continue
        newest_first = [text for _at, text in reversed(entries)] + window
        made[key] = (_text(newest_first), at)
    for key, rows in walk(conn, again, RECENT_WINDOW).items():
        texts = [_entry(r.score, r.actual_length) for r in rows]
        made[key] = (_text(texts), rows[0].created_at)
    return made


def entry(score: float | None, output: str | None, sqlite: bool) -> str:
    """A judged execution's window entry, as the writer adds it: its score, and the length
    SQL's ``length()`` gives of its output once stored, as the walk reads it (a surrogate
    pair is stored as its one character, :func:`~oxyeval.inputs.valid_text`, as the
    store's statements make it; SQLite counts up to a NUL only)."""
    length = None
    if output is not None:
        if not output.isascii():
            output = valid_text(output)
        end = output.find("\x00") if sqlite else -1
        length = end if end >= 0 else len(output)
    return _entry(score, length)


def _entries(text: str | None) -> list[str] | None:
    """A kept window's entries as text (``"0.5,12"``), or None when there is none."""
    if text == "[]":
        return []
    if text is None or not (text.startswith("[[") and text.endswith("]]")):
        return None
    return text[2:-2].split("],[")


def _entry(score: float | None, length: int | None) -> str:
    """One entry as JSON writes it (a float as its repr, None as null)."""
    return f"{'null' if score is None else repr(float(score))},{'null' if length is None else int(length)}"


def _text(entries: list[str]) -> str:
    return "[[" + "],[".join(entries[:RECENT_WINDOW]) + "]]" if entries else "[]"
