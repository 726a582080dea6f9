"""How a test-case run's results go into the history, and find their previous ones.

Apart from the runner so the two concerns of a large run's history (what is written per
case, what is read per case) sit together and the runner only names them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...store import new_ids, utc_timestamp
from ..earlier import earlier_results
from ..recorder import Stamp

if TYPE_CHECKING:
    from ...evaluation import Previous, Result
    from ..history_store import RunStore

__all__ = ["earlier_cases", "execution_rows", "unread_cases"]


def execution_rows(
    store: RunStore, run_id: str, items: Sequence[tuple[Result, Any]]
) -> list[Stamp]:
    """The cases' execution rows (with their result rows), all in one transaction. Each
    execution's id and time are chosen here, so nothing is read back: the run needs only
    those two (the report's ``id`` and ``createdAt``), and rebuilding every stored row
    cost more than writing it."""
    now = utc_timestamp()
    stamps = [Stamp(new, now) for new in new_ids(len(items))]
    store.executions.record_many(
        [
            case.new_execution(run_id, id=stamp.id, created_at=stamp.created_at)
            for (_result, case), stamp in zip(items, stamps, strict=True)
        ]
    )
    return stamps


def _unread(case: Any) -> bool:
    return getattr(case, "previous_unread", True)


def unread_cases(items: Sequence[tuple[Result, Any]]) -> bool:
    """Whether :func:`earlier_cases` has anything to read for ``items``."""
    return any(_unread(case) for _r, case in items)


def earlier_cases(
    store: RunStore, run_id: str | None, items: Sequence[tuple[Result, Any]]
) -> list[Previous | None]:
    """Each case's previous scored result (:func:`~oxyeval.suites.earlier.earlier_results`),
    read only for the cases whose previous result is not known yet: a case new to the
    history has none, and one whose history was read ahead of it got its previous result
    with it, so a run of 10,000 cases reads nothing here. ``items`` pair each result with
    its :class:`~.results.CaseResult`."""
    asked = [n for n, (_r, case) in enumerate(items) if _unread(case)]
    found: list[Previous | None] = [None] * len(items)
    if asked:
        read = earlier_results(store, run_id, [items[n] for n in asked])
        for n, previous in zip(asked, read, strict=True):
            found[n] = previous
    return found
