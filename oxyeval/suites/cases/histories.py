"""Each case's regression inputs and previous result, read from the history a few
hundred cases at a time as a run reaches them: apart from the run so that a large run's
reads are one concern, bounded by :data:`HISTORY_CHUNK` cases per statement."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ...store import CaseHistory
from ..earlier import previous_results
from .results import CASES

if TYPE_CHECKING:
    from ...evaluation import Previous
    from ...store import Store, TestCase

__all__ = ["HISTORY_CHUNK", "CaseHistories", "Earlier", "read_chunk"]

HISTORY_CHUNK = 400  # cases whose history is read together, in plan order


class Earlier(NamedTuple):
    """What the history held of a case when the run began: its regression inputs, and its
    previous scored result (``read`` False: not read with them, so its write reads it)."""

    history: CaseHistory
    previous: Previous | None = None
    read: bool = False


#: A case with no judged execution yet (what a read would find): a first run of 10,000
#: cases asks the history nothing, and waits on no read before it scores.
_NONE = Earlier(CaseHistory(0, None, None, None, ()), None, True)


def _retrieved(future: asyncio.Future[object]) -> None:
    if not future.cancelled():
        future.exception()


class CaseHistories:
    """Each case's regression inputs from the history, read for a few hundred cases of
    a prompt version at a time as the run reaches them (two statements per chunk instead
    of two per case), and let go once its case has them. Read before any of them is
    stored, so no case is its own baseline."""

    def __init__(self, store: Store, cases: Sequence[TestCase], method: str, recent: int) -> None:
        self._store = store
        # Each case is let go of as its chunk is read, and each chunk once all its cases
        # have their history: a case is held by the run only until it has run.
        self._cases: list[TestCase | None] = list(cases)
        self.method = method
        self._recent = recent
        self._index = {case.id: i for i, case in enumerate(cases)}
        self._chunks: dict[int, asyncio.Future[dict[str, Earlier]]] = {}

    async def get(self, case: TestCase, expected: str) -> Earlier:
        earlier = None
        position = self._index.pop(case.id, None)
        if not case.total_runs:  # no judged execution when the run began: nothing to read
            if position is not None:
                self._cases[position] = None  # let go of it, as a read would
            return _NONE
        if position is not None:  # else asked before (a retry): read on its own below
            chunk = position // HISTORY_CHUNK
            loading = self._load(chunk)
            # The next chunk is read meanwhile: its cases find their history waiting.
            self._load(chunk + 1)
            if loading is not None:
                found = await asyncio.shield(loading)
                earlier = found.pop(case.id, None)
                if not found:
                    self._chunks.pop(chunk, None)
        if earlier is None:  # read already by this case (a retry), or its expected changed
            (alone,) = await asyncio.to_thread(
                self._store.stats.baselines, [(case.id, (expected, self.method))], self._recent
            )
            return Earlier(alone)  # its previous result is read when it is written
        return earlier

    def _load(self, chunk: int) -> asyncio.Future[dict[str, Earlier]] | None:
        """The read of ``chunk``'s histories, begun now unless it was already (None: no
        chunk there, or none of its cases has a history to read)."""
        loading = self._chunks.get(chunk)
        low, high = chunk * HISTORY_CHUNK, (chunk + 1) * HISTORY_CHUNK
        if loading is None and low < len(self._cases):
            held = self._cases[low:high]
            self._cases[low:high] = [None] * len(held)
            part = [c for c in held if c is not None and c.total_runs]
            if part:
                loading = self._chunks[chunk] = asyncio.ensure_future(
                    asyncio.to_thread(self._read, part)
                )
                # A read ahead that failed, for a chunk the run never reaches, is not
                # reported as an exception nobody retrieved (a case that does reach it
                # gets the error).
                loading.add_done_callback(_retrieved)
        return loading

    def _read(self, part: Sequence[TestCase]) -> dict[str, Earlier]:
        """The chunk's histories and previous results, read by the history's writer
        process when it has one (on its core: read here, they shared the interpreter's
        lock with the cases, and a replay's cases waited on them), else here."""
        asked = [(c.id, c.expected_output) for c in part if c.expected_output is not None]
        done, found = self._store.read_elsewhere(_READ_CHUNK, asked, self.method, self._recent)
        return found if done else read_chunk(self._store, asked, self.method, self._recent)  # type: ignore[no-any-return]


def read_chunk(
    store: Store, asked: Sequence[tuple[str, str]], method: str, recent: int
) -> dict[str, Earlier]:
    """Each (case id, expected output)'s regression inputs and previous result, read
    before any of the cases has run (so none of this run's results is among them, and no
    run id is needed). Module-level: the writer process runs it by name."""
    read = store.stats.baselines([(cid, (expected, method)) for cid, expected in asked], recent)
    previous = previous_results(store, None, [(CASES.name, cid) for cid, _expected in asked])
    return {cid: Earlier(h, p, True) for (cid, _), h, p in zip(asked, read, previous, strict=True)}


_READ_CHUNK = f"{__name__}:{read_chunk.__name__}"
