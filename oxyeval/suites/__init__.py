"""Stage 6, suites: what gets run and scored.

Consistency tests (``oxy test``: n runs of a target, judged in pairs) and test cases
(``oxy cases``: a prompt version against expected outputs, with regressions), each
stored in the history as it finishes, as are workflow runs (``oxy run``). Later A/B
branches and judged pass/fail tests plug in beside them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "ValidationReport": "validate",
    "validate_paths": "validate",
    "ProgressSink": "consistency",
    "collect_files": "consistency",
    "run_tests": "consistency",
    "run_tests_async": "consistency",
    "OutputRecord": "results",
    "TestResult": "results",
    "TestRun": "results",
    "ThresholdResult": "results",
    "CaseResult": "cases",
    "CaseRun": "cases",
    "accept_baseline": "cases",
    "run_cases": "cases",
    "run_cases_async": "cases",
    "run_workflow": "workflows",
}
__all__ = [
    "CaseResult",
    "CaseRun",
    "OutputRecord",
    "ProgressSink",
    "TestResult",
    "TestRun",
    "ThresholdResult",
    "ValidationReport",
    "accept_baseline",
    "collect_files",
    "run_cases",
    "run_cases_async",
    "run_tests",
    "run_tests_async",
    "run_workflow",
    "validate_paths",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .cases import CaseResult, CaseRun, accept_baseline, run_cases, run_cases_async
    from .consistency import ProgressSink, collect_files, run_tests, run_tests_async
    from .results import OutputRecord, TestResult, TestRun, ThresholdResult
    from .validate import ValidationReport, validate_paths
    from .workflows import run_workflow
