"""How an SDK run's results are kept: the core's ``results`` rows under the run's row
(the suite run's recorder writes them, several to a transaction), each compared first
with the same test case's previous result under the same metric.

A regression (a score lower than that previous one) is the SDK's own notion, so it is
worked out here from the history's earlier result, not by the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..evaluation import Previous
from ..suites import Storage

if TYPE_CHECKING:
    from ..evaluation import Result

__all__ = ["STORAGE", "compare_with_earlier", "previous_result"]

#: Earlier results read to find a subject's previous scored one outside this run.
_LOOKBACK = 20
_EPS = 1e-12


def previous_result(store: Any, subject: str, run_id: str | None) -> Previous | None:
    """The latest scored result of ``subject`` stored before, outside run ``run_id``."""
    for earlier in store.results.history("sdk", subject, limit=_LOOKBACK):
        if earlier.run_id != run_id and earlier.score is not None:
            return Previous(earlier.score, earlier.created_at, earlier.run_id)
    return None


def _compare(store: Any, run_id: str | None, results: Sequence[Result]) -> None:
    """Give each result its previous one and, when its score fell, the regression."""
    for result in results:
        previous = previous_result(store, result.subject, run_id)
        result.previous = previous
        if previous is None or result.score is None:
            continue
        if result.score < previous.accuracy - _EPS:
            why = (
                f"score fell from {previous.accuracy:.3f} to {result.score:.3f} against "
                f"{previous.at}"
            )
            result.regressions = (*result.regressions, why)
            result.details["regressions"] = list(result.regressions)


def compare_with_earlier(
    store: Any, run_id: str | None, items: Sequence[tuple[Result, Any]]
) -> list[Previous | None]:
    """In a worker thread, before the results are stored: each one's previous result
    and, when its score fell, the regression (see :func:`_compare`)."""
    results = [result for result, _extra in items]
    _compare(store, run_id, results)
    return [result.previous for result in results]


#: How an SDK run's results become history rows: the core's result rows, each compared
#: with the same subject's previous one first.
STORAGE = Storage(previous=compare_with_earlier)
