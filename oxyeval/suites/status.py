"""How a run ended, and where its results went: the one status rule every kind's run row
gets, and the note a run keeps of each history it wrote to."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

__all__ = ["StoredRun", "final_status", "interrupted_by"]


def interrupted_by(exc_type: type[BaseException] | None) -> bool:
    """What ended a block was a signal (SIGINT/SIGTERM become a cancellation or a
    KeyboardInterrupt), not an error."""
    return exc_type is not None and issubclass(
        exc_type, (asyncio.CancelledError, KeyboardInterrupt)
    )


def final_status(*, interrupted: bool = False, failed: bool = False) -> str:
    """A run's final status, the one rule for every kind (and its history row):
    ``interrupted`` (SIGINT/SIGTERM, cancelled) wins; then ``failed`` when the run did not
    do all its work: it stopped on an error, or a subject could not be tested (a result in
    error: a provider down, a test that could not be scored); else ``completed``. A run
    whose tests ran and failed their checks *completed*: pass or fail is the decision's."""
    if interrupted:
        return "interrupted"
    return "failed" if failed else "completed"


@dataclass
class StoredRun:
    """Where a run's results went: one history database, its run row, how many results
    it holds, and why not all (the history failed; the results are still reported)."""

    db: str  # as shown to users (a URL's password masked)
    run_id: str | None = None
    stored: int = 0
    error: str | None = None  # why this run's results are not (all) stored
    #: Why the earlier results could not be read (None: they were, or there were none), so
    #: ``--fail-on-drop`` cannot rule out a drop. A history that is read but not written
    #: has ``error`` alone.
    read_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "db": self.db,
            "run_id": self.run_id,
            "stored": self.stored,
            "error": self.error,
            "read_error": self.read_error,
        }
