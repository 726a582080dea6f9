"""Each result's previous one in the history: what a drop is measured against and a
regression paired with. Apart from the recorder, which reads it as it writes a batch,
because a kind may read it sooner (a test-case run reads it with each case's history,
ahead of the cases, so no write waits on it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..evaluation import (
    Previous,
    Result,
    Tally,
    add_tallies,
    result_kind,
    tally_of_row,
)

if TYPE_CHECKING:
    from ..store import Store
    from .history_store import RunStore

__all__ = ["baseline_tally", "earlier_results", "previous_results"]

#: Earlier results of one subject read to find its previous scored one outside this run:
#: the latest few first, up to _LOOKBACK for a subject none of those answers.
_FIRST_LOOK = 3
_LOOKBACK = 20


def baseline_tally(store: RunStore | Store, kind: str, subject: str, run_id: str) -> Tally | None:
    """The subject's (passes, samples) in run ``run_id``, all its results there together:
    the baseline ``--fail-on-regression`` pairs this run's tally with."""
    rows = store.results.tally_rows(kind, [(subject, run_id)]).get((subject, run_id), [])
    return add_tallies(tally_of_row(kind, *row) for row in rows)


def earlier_results(
    store: RunStore | Store, run_id: str | None, items: Sequence[tuple[Result, Any]]
) -> list[Previous | None]:
    """Each result's previous one from the history's ``results`` table: the latest scored
    result of the same kind and subject in another run (what ``--fail-on-drop`` measures
    a drop against), with its tally there (what ``--fail-on-regression`` pairs with), for
    every kind that keeps no detail rows of its own to ask. A few statements for the
    whole batch, whatever its size."""
    return previous_results(store, run_id, [(result.kind, result.subject) for result, _ in items])


def previous_results(
    store: RunStore | Store, run_id: str | None, keys: Sequence[tuple[str, str]]
) -> list[Previous | None]:
    """:func:`earlier_results` of each (kind, subject): for a subject whose previous result
    is read before it has one in this run (``run_id`` None then)."""
    unknown = {kind: result_kind(kind).unknown for kind, _subject in keys}

    def scored(kind: str, row: tuple[str, str, float | None, str]) -> bool:
        """A scored result of another run: a previous one."""
        return row[0] != run_id and row[2] is not None and row[1] not in unknown[kind]

    recent: dict[str, dict[str, list[tuple[str, str, float | None, str]]]] = {}
    for kind in unknown:
        subjects = [subject for k, subject in keys if k == kind]
        found = recent[kind] = store.results.recent(kind, subjects, limit=_FIRST_LOOK)
        # Nearly always one of a subject's latest few rows is its previous scored result;
        # only where none is (errors, this run's own repeats) are more rows read.
        further = [
            subject
            for subject, rows in found.items()
            if len(rows) == _FIRST_LOOK and not any(scored(kind, r) for r in rows)
        ]
        if further:
            found.update(store.results.recent(kind, further, limit=_LOOKBACK))
    chosen: list[tuple[str, str, tuple[str, str, float | None, str]] | None] = []
    for kind, subject in keys:
        row = next((r for r in recent[kind].get(subject, ()) if scored(kind, r)), None)
        chosen.append(None if row is None else (kind, subject, row))
    baselines: dict[str, dict[tuple[str, str], list[Any]]] = {}
    for kind in {c[0] for c in chosen if c is not None}:
        pairs = [(c[1], c[2][0]) for c in chosen if c is not None and c[0] == kind]
        baselines[kind] = store.results.tally_rows(kind, pairs)
    previous: list[Previous | None] = []
    for c in chosen:
        if c is None:
            previous.append(None)
            continue
        kind, subject, (earlier_run, _status, score, created_at) = c
        rows = baselines[kind].get((subject, earlier_run), [])
        tally = add_tallies(tally_of_row(kind, *row) for row in rows)
        previous.append(Previous(score, created_at, earlier_run, tally))  # type: ignore[arg-type]
    return previous
