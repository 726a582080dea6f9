"""A/B tests: one test case's prompt run on several model configurations (branches),
measured (latency, time to first token, tokens per second, cost, quality), ranked by a
winner criterion, with the Pareto front, and with iterations a significance call.

``plan`` finds everything that can be bad input before any call (branches synced and
checked, each branch's model, the messages); ``run`` makes the calls and ``writer``
stores them as they finish (``results``: what it returns); ``ranking`` holds the Testing API's
winner criteria; ``summary`` turns executions into ranks and a verdict; ``branches``
shows what a command sees without writing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

_EXPORTS = {
    "AB": "results",
    "ABCaseResult": "results",
    "ABRun": "results",
    "BranchOutcome": "results",
    "BranchSummary": "results",
    "find_branch": "branches",
    "preview_branches": "branches",
    "BALANCED_WEIGHTS": "ranking",
    "CRITERIA": "ranking",
    "DEFAULT_CRITERIA": "ranking",
    "MIN_SAMPLES": "ranking",
    "BranchScore": "ranking",
    "Ranking": "ranking",
    "Significance": "ranking",
    "dominates": "ranking",
    "higher_is_better": "ranking",
    "rank": "ranking",
    "significance": "ranking",
    "winner_distribution": "ranking",
    "MAX_ITERATIONS": "plan",
    "sync_declared": "plan",
    "latest_ab_run": "stored",
    "stored_ab_result": "stored",
    "run_ab_test": "run",
    "run_ab_test_async": "run",
    "run_ab_tests": "run",
    "run_ab_tests_async": "run",
}
__all__ = [
    "AB",
    "BALANCED_WEIGHTS",
    "CRITERIA",
    "DEFAULT_CRITERIA",
    "MAX_ITERATIONS",
    "MIN_SAMPLES",
    "ABCaseResult",
    "ABRun",
    "BranchOutcome",
    "BranchScore",
    "BranchSummary",
    "Ranking",
    "Significance",
    "dominates",
    "find_branch",
    "higher_is_better",
    "latest_ab_run",
    "preview_branches",
    "rank",
    "run_ab_test",
    "run_ab_test_async",
    "run_ab_tests",
    "run_ab_tests_async",
    "significance",
    "stored_ab_result",
    "sync_declared",
    "winner_distribution",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .branches import find_branch, preview_branches
    from .plan import MAX_ITERATIONS, sync_declared
    from .ranking import (
        BALANCED_WEIGHTS,
        CRITERIA,
        DEFAULT_CRITERIA,
        MIN_SAMPLES,
        BranchScore,
        Ranking,
        Significance,
        dominates,
        higher_is_better,
        rank,
        significance,
        winner_distribution,
    )
    from .results import AB, ABCaseResult, ABRun, BranchOutcome, BranchSummary
    from .run import (
        run_ab_test,
        run_ab_test_async,
        run_ab_tests,
        run_ab_tests_async,
    )
    from .stored import latest_ab_run, stored_ab_result
