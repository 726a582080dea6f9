"""Consistency tests (``oxy test`` on agent and workflow files): a kind on the run
pipeline. ``loading`` finds and checks the files, ``judging`` runs one test n times and
judges its answers in pairs, ``run`` is the kind and the library call, ``results`` what
they produce.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

_EXPORTS = {
    "Consistency": "run",
    "new_result": "run",
    "run_tests": "run",
    "run_tests_async": "run",
    "collect_files": "loading",
    "ConsistencyRun": "results",
    "ConsistencyTestResult": "results",
    "OutputRecord": "results",
    "test_result": "results",
}
__all__ = [
    "Consistency",
    "ConsistencyRun",
    "ConsistencyTestResult",
    "OutputRecord",
    "collect_files",
    "new_result",
    "run_tests",
    "run_tests_async",
    "test_result",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .loading import collect_files
    from .results import ConsistencyRun, ConsistencyTestResult, OutputRecord, test_result
    from .run import Consistency, new_result, run_tests, run_tests_async
