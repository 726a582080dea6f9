"""Batches handed to the writer process whose answers are waited for later.

A run's writer thread that waits for each batch's commit before it builds and sends the
next leaves the child idle for that while (a few milliseconds a batch, a fifth of a
10,000-case run's writing). Inside :func:`deferred_writes` a batch is only sent, and its
:class:`Sent` is waited on elsewhere, so the next one is in the pipe when the child
finishes. What a batch is known by afterwards does not change: the caller waits on every
:class:`Sent` before it counts the batch as stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._writer import ProcessWriter, Ticket

__all__ = ["Sent", "deferred_writes", "deferring"]


class Sent:
    """One batch sent to the writer process, not yet answered."""

    __slots__ = ("_fallback", "_ticket", "_writer")

    def __init__(self, writer: ProcessWriter, ticket: Ticket, fallback: Callable[[], int]) -> None:
        self._writer, self._ticket, self._fallback = writer, ticket, fallback

    def wait(self) -> int:
        """The count written once the child committed it; what it raised is raised here
        (a batch behind a failed one of its chain gets the same error). A batch the child
        took without answering is written here, as one that may be stored already."""
        from ._writer import Lost

        try:
            return int(self._writer.wait(self._ticket))
        except Lost:
            return self._fallback()


class _Deferral:
    __slots__ = ("chain", "sent")

    def __init__(self, chain: str) -> None:
        self.chain = chain
        self.sent: list[Sent] = []


_DEFERRAL: ContextVar[_Deferral | None] = ContextVar("oxy_deferred_writes", default=None)


@contextmanager
def deferred_writes(chain: str) -> Iterator[list[Sent]]:
    """Batches of executions the writer process takes inside this block are sent and not
    waited for: the list gets a :class:`Sent` for each, to wait on before they count as
    stored. ``chain`` names the writes that stop at their first failure (one run's)."""
    deferral = _Deferral(chain)
    token = _DEFERRAL.set(deferral)
    try:
        yield deferral.sent
    finally:
        _DEFERRAL.reset(token)


def deferring() -> _Deferral | None:
    """The deferral this thread is in, if any."""
    return _DEFERRAL.get()
