"""``autoblocks.testing.run``: running a suite, and the grid search's combination."""

from __future__ import annotations

from .._grid import grid_search_ctx
from .._suites import GridSearchResult, SuiteResult, run_test_suite, run_test_suite_async

__all__ = [
    "GridSearchResult",
    "SuiteResult",
    "grid_search_ctx",
    "run_test_suite",
    "run_test_suite_async",
]
