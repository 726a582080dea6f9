"""Which batch a model call belongs to, carried in context variables: the run's
:class:`~oxyeval.providers.batching.Batcher`, whether this pass only collects calls, and
the phase and subject the batch's rows name. Apart from the batcher so that the stages
that label their calls (the judge, the suites, the recorder) import no batching machinery.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .batching import Batcher

__all__ = [
    "batch_phase",
    "batch_scope",
    "batch_subject",
    "collecting",
    "current_batcher",
    "current_phase",
    "current_subject",
    "in_collecting_pass",
]

_BATCHER: contextvars.ContextVar[Batcher | None] = contextvars.ContextVar(
    "oxyeval_batcher", default=None
)
_COLLECTING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "oxyeval_batch_collecting", default=False
)
_PHASE: contextvars.ContextVar[str] = contextvars.ContextVar(
    "oxyeval_batch_phase", default="generation"
)
_SUBJECT: contextvars.ContextVar[str] = contextvars.ContextVar("oxyeval_batch_subject", default="")


@contextlib.contextmanager
def batch_scope(batcher: Batcher) -> Iterator[Batcher]:
    """Every model call made inside goes through ``batcher``."""
    token = _BATCHER.set(batcher)
    try:
        yield batcher
    finally:
        _BATCHER.reset(token)


def current_batcher() -> Batcher | None:
    return _BATCHER.get()


@contextlib.contextmanager
def collecting() -> Iterator[None]:
    """A collecting pass: calls are noted, and the run's results are not recorded (the
    recorder keeps no rows; the last pass is the run)."""
    token = _COLLECTING.set(True)
    try:
        yield
    finally:
        _COLLECTING.reset(token)


def in_collecting_pass() -> bool:
    return _COLLECTING.get()


@contextlib.contextmanager
def batch_phase(phase: str) -> Iterator[None]:
    """Calls made inside belong to ``phase`` (``judge``), as the batch's rows say."""
    token = _PHASE.set(phase)
    try:
        yield
    finally:
        _PHASE.reset(token)


class batch_subject:
    """Calls made inside belong to ``subject`` (a test, a case), as the batch's rows say.
    A class rather than a generator: every unit of every run enters one (10,000 for a
    file of 10,000 cases), and a generator's context manager costs twice as much."""

    __slots__ = ("_subject", "_token")

    def __init__(self, subject: str) -> None:
        self._subject = subject

    def __enter__(self) -> None:
        self._token = _SUBJECT.set(self._subject)

    def __exit__(self, *_exc: object) -> None:
        _SUBJECT.reset(self._token)


def current_phase() -> str:
    return _PHASE.get()


def current_subject() -> str:
    return _SUBJECT.get()
