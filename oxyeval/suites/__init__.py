"""Stage 7, suites: what gets run and scored.

Consistency tests (``oxy test``: n runs of a target, judged in pairs), test cases
(``oxy cases``: a prompt version against expected outputs, with regressions) and A/B
tests (``oxy ab``, ``ab/``: one case's prompt on several model configurations, measured
and ranked), each stored in the history as it finishes, as are workflow runs
(``oxy run``), and judged pass/fail tests (``passfail/``: ``oxy chattest`` and oxy's
``*.test.yml`` files). Each runs inside a :class:`SuiteRun` (its histories, its cache,
its event stream, the final status rule): a :class:`SuiteRun` of its registered kind, a
:class:`Target` (an agent, a prompt version or a workflow task) called inside an
:class:`oxyeval.workflow.RunContext`, scored with :func:`oxyeval.judge.assess` or a
rubric, results recorded and decided by the evaluation core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "load_test_files": "passfail",
    "run_test_files": "passfail",
    "run_test_files_async": "passfail",
    "run_chattest": "passfail",
    "run_chattest_async": "passfail",
    "Criterion": "passfail",
    "CriterionResult": "passfail",
    "PassFailRun": "passfail",
    "Subject": "passfail",
    "SubjectResult": "passfail",
    "pass_fail_judge": "passfail",
    "run_passfail": "passfail",
    "ABCaseResult": "ab",
    "ABRun": "ab",
    "BranchOutcome": "ab",
    "BranchSummary": "ab",
    "find_branch": "ab",
    "preview_branches": "ab",
    "run_ab_test": "ab",
    "run_ab_test_async": "ab",
    "run_ab_tests": "ab",
    "run_ab_tests_async": "ab",
    "ValidationReport": "validate",
    "validate_paths": "validate",
    "ProgressSink": "suite",
    "SuiteRun": "suite",
    "final_status": "suite",
    "progress_events": "suite",
    "collect_files": "consistency",
    "run_tests": "consistency",
    "run_tests_async": "consistency",
    "OutputRecord": "results",
    "ConsistencyTestResult": "results",
    "ConsistencyRun": "results",
    "ThresholdResult": "results",
    "DropResult": "results",
    "Previous": "results",
    "StoredRun": "results",
    "CaseResult": "cases",
    "CaseRun": "cases",
    "accept_baseline": "cases",
    "API_SOURCE": "cases",
    "create_prompt": "cases",
    "latest_ab_run": "ab",
    "stored_ab_result": "ab",
    "ResultChange": "compare",
    "RunComparison": "compare",
    "compare_runs": "compare",
    "run_cases": "cases",
    "run_cases_async": "cases",
    "check_accept": "cases",
    "find_case": "cases",
    "run_workflow": "workflows",
    "ask": "workflows",
    "AgentTarget": "targets",
    "PromptTarget": "targets",
    "Target": "targets",
    "WorkflowTarget": "targets",
    "cache_factory": "cache",
    "history_location": "history",
    "open_history": "history",
    "clear_cache": "cache",
    "TestHistory": "history_queries",
    "history_of_test": "history_queries",
    "StoredRunView": "history_queries",
    "stored_run": "history_queries",
    "recent_runs": "history_queries",
    "preview_cases": "cases.selection",
}
__all__ = [
    "API_SOURCE",
    "ABCaseResult",
    "ABRun",
    "AgentTarget",
    "BranchOutcome",
    "BranchSummary",
    "CaseResult",
    "CaseRun",
    "ConsistencyRun",
    "ConsistencyTestResult",
    "Criterion",
    "CriterionResult",
    "DropResult",
    "OutputRecord",
    "PassFailRun",
    "Previous",
    "ProgressSink",
    "PromptTarget",
    "ResultChange",
    "RunComparison",
    "StoredRun",
    "StoredRunView",
    "Subject",
    "SubjectResult",
    "SuiteRun",
    "Target",
    "TestHistory",
    "ThresholdResult",
    "ValidationReport",
    "WorkflowTarget",
    "accept_baseline",
    "ask",
    "cache_factory",
    "check_accept",
    "clear_cache",
    "collect_files",
    "compare_runs",
    "create_prompt",
    "final_status",
    "find_branch",
    "find_case",
    "history_location",
    "history_of_test",
    "latest_ab_run",
    "load_test_files",
    "open_history",
    "pass_fail_judge",
    "preview_branches",
    "preview_cases",
    "progress_events",
    "recent_runs",
    "run_ab_test",
    "run_ab_test_async",
    "run_ab_tests",
    "run_ab_tests_async",
    "run_cases",
    "run_cases_async",
    "run_chattest",
    "run_chattest_async",
    "run_passfail",
    "run_test_files",
    "run_test_files_async",
    "run_tests",
    "run_tests_async",
    "run_workflow",
    "stored_ab_result",
    "stored_run",
    "validate_paths",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .ab import (
        ABCaseResult,
        ABRun,
        BranchOutcome,
        BranchSummary,
        find_branch,
        latest_ab_run,
        preview_branches,
        run_ab_test,
        run_ab_test_async,
        run_ab_tests,
        run_ab_tests_async,
        stored_ab_result,
    )
    from .cache import cache_factory, clear_cache
    from .cases import (
        API_SOURCE,
        CaseResult,
        CaseRun,
        accept_baseline,
        check_accept,
        create_prompt,
        find_case,
        run_cases,
        run_cases_async,
    )
    from .cases.selection import preview_cases
    from .compare import ResultChange, RunComparison, compare_runs
    from .consistency import collect_files, run_tests, run_tests_async
    from .history import history_location, open_history
    from .history_queries import (
        StoredRunView,
        TestHistory,
        history_of_test,
        recent_runs,
        stored_run,
    )
    from .passfail import (
        Criterion,
        CriterionResult,
        PassFailRun,
        Subject,
        SubjectResult,
        load_test_files,
        pass_fail_judge,
        run_chattest,
        run_chattest_async,
        run_passfail,
        run_test_files,
        run_test_files_async,
    )
    from .results import (
        ConsistencyRun,
        ConsistencyTestResult,
        DropResult,
        OutputRecord,
        Previous,
        StoredRun,
        ThresholdResult,
    )
    from .suite import ProgressSink, SuiteRun, final_status, progress_events
    from .targets import AgentTarget, PromptTarget, Target, WorkflowTarget
    from .validate import ValidationReport, validate_paths
    from .workflows import ask, run_workflow
