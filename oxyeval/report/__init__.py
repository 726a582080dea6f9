"""Stage 8, reports: a suite's results as a CI verdict (threshold, exit code), as text
for people (pretty) and as JSON for machines.

A report never decides: every outcome it shows is the one decision's
(:func:`oxyeval.evaluation.decide`). One module per concern: ``kinds`` (how each kind of
run is reported: its JSON, pretty and JUnit forms), ``verdict`` (``oxy test``'s verdict
on a run: :func:`decide`, the code and every reason), ``documents`` (the one family of
JSON documents: its version, the envelope every run shares, the error document) and
``schemas`` (their JSON Schemas), ``json`` (the JSON writer and ``oxy test``'s own keys),
``pretty`` (``oxy test`` for people), ``cases`` and ``cases_pretty`` (``oxy cases`` and
``oxy history``), ``workflow`` (``oxy run``), ``cache`` (``oxy cache stats``), ``junit``
(``--junit``: JUnit XML for CI servers), ``saved`` (a saved run read back for ``oxy
report``). A new format is a new module beside them.

Every JSON document is camelCase (oxy's top-level ``accuracy`` aside), the Testing API's
types (``passRate``, ``lastRun``) among them, served unchanged by the GraphQL API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "RunReporter": "kinds",
    "reporter": "kinds",
    "saved_reporter": "kinds",
    "passfail_junit": "junit",
    "chattest_json": "passfail",
    "passfail_label": "passfail",
    "render_chattest": "passfail",
    "render_test_files": "passfail",
    "test_files_json": "passfail",
    "ab_case_json": "ab",
    "ab_run_json": "ab",
    "branch_execution_json": "ab",
    "branch_json": "ab",
    "render_ab_run": "ab",
    "render_branch": "ab",
    "render_branches": "ab",
    "ab_junit": "junit",
    "cache_stats_json": "cache",
    "calibration_history_json": "calibration",
    "calibration_json": "calibration",
    "render_calibration": "calibration",
    "render_calibration_history": "calibration",
    "render_cache_stats": "cache",
    "case_run_json": "cases",
    "plain": "streaming",
    "Streamed": "streaming",
    "case_json": "cases",
    "case_result_json": "cases",
    "history_of_test_json": "history",
    "run_json": "history",
    "stats_json": "cases",
    "render_case_list": "cases_pretty",
    "render_case_run": "cases_pretty",
    "render_case_stats": "cases_pretty",
    "render_history": "history",
    "render_stored_run": "history",
    "stored_run_json": "history",
    "sparkline": "cases_pretty",
    "render_test_history": "history",
    "cases_junit": "junit",
    "consistency_junit": "junit",
    "error_junit": "junit",
    "to_json": "json",
    "consistency_body": "json",
    "ask_json": "workflow",
    "workflow_json": "workflow",
    **dict.fromkeys(
        (
            "OUTPUT_SCHEMAS",
            "load_output_schema",
            "output_schema_name",
            "output_schema_path",
            "output_validator",
        ),
        "schemas",
    ),
    **dict.fromkeys(
        (
            "DOCUMENTS",
            "SCHEMA_VERSION",
            "decision_json",
            "document",
            "error_document",
            "result_json",
            "run_document",
            "with_decision",
        ),
        "documents",
    ),
    "validation_json": "json",
    "write_json": "json",
    "render_pretty": "pretty",
    "cached_calls_line": "pretty",
    "shown": "text",
    "load_saved_run": "saved",
    "merge_shards": "run_group",
    "MergedGroup": "run_group",
    "MissingShardsError": "run_group",
    "comparison_json": "compare",
    "daily_json": "compare",
    "render_comparison": "compare",
    "execution_json": "cases",
    "prompt_json": "cases",
    "version_json": "cases",
    **dict.fromkeys(("Decision", "Gates", "decide", "gate_option_error"), "verdict"),
}
__all__ = [
    "DOCUMENTS",
    "OUTPUT_SCHEMAS",
    "SCHEMA_VERSION",
    "Decision",
    "Gates",
    "MergedGroup",
    "MissingShardsError",
    "RunReporter",
    "Streamed",
    "ab_case_json",
    "ab_junit",
    "ab_run_json",
    "ask_json",
    "branch_execution_json",
    "branch_json",
    "cache_stats_json",
    "cached_calls_line",
    "calibration_history_json",
    "calibration_json",
    "case_json",
    "case_result_json",
    "case_run_json",
    "cases_junit",
    "chattest_json",
    "comparison_json",
    "consistency_body",
    "consistency_junit",
    "daily_json",
    "decide",
    "decision_json",
    "document",
    "error_document",
    "error_junit",
    "execution_json",
    "gate_option_error",
    "history_of_test_json",
    "load_output_schema",
    "load_saved_run",
    "merge_shards",
    "output_schema_name",
    "output_schema_path",
    "output_validator",
    "passfail_junit",
    "passfail_label",
    "plain",
    "prompt_json",
    "render_ab_run",
    "render_branch",
    "render_branches",
    "render_cache_stats",
    "render_calibration",
    "render_calibration_history",
    "render_case_list",
    "render_case_run",
    "render_case_stats",
    "render_chattest",
    "render_comparison",
    "render_history",
    "render_pretty",
    "render_stored_run",
    "render_test_files",
    "render_test_history",
    "reporter",
    "result_json",
    "run_document",
    "run_json",
    "saved_reporter",
    "shown",
    "sparkline",
    "stats_json",
    "stored_run_json",
    "test_files_json",
    "to_json",
    "validation_json",
    "version_json",
    "with_decision",
    "workflow_json",
    "write_json",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .ab import (
        ab_case_json,
        ab_run_json,
        branch_execution_json,
        branch_json,
        render_ab_run,
        render_branch,
        render_branches,
    )
    from .cache import cache_stats_json, render_cache_stats
    from .calibration import (
        calibration_history_json,
        calibration_json,
        render_calibration,
        render_calibration_history,
    )
    from .cases import (
        case_json,
        case_result_json,
        case_run_json,
        execution_json,
        prompt_json,
        stats_json,
        version_json,
    )
    from .cases_pretty import (
        render_case_list,
        render_case_run,
        render_case_stats,
        sparkline,
    )
    from .compare import comparison_json, daily_json, render_comparison
    from .documents import (
        DOCUMENTS,
        SCHEMA_VERSION,
        decision_json,
        document,
        error_document,
        result_json,
        run_document,
        with_decision,
    )
    from .history import (
        history_of_test_json,
        render_history,
        render_stored_run,
        render_test_history,
        run_json,
        stored_run_json,
    )
    from .json import consistency_body, to_json, validation_json, write_json
    from .junit import ab_junit, cases_junit, consistency_junit, error_junit, passfail_junit
    from .kinds import RunReporter, reporter, saved_reporter
    from .passfail import (
        chattest_json,
        passfail_label,
        render_chattest,
        render_test_files,
        test_files_json,
    )
    from .pretty import cached_calls_line, render_pretty
    from .run_group import MergedGroup, MissingShardsError, merge_shards
    from .saved import load_saved_run
    from .schemas import (
        OUTPUT_SCHEMAS,
        load_output_schema,
        output_schema_name,
        output_schema_path,
        output_validator,
    )
    from .streaming import Streamed, plain
    from .text import shown
    from .verdict import Decision, Gates, decide, gate_option_error
    from .workflow import ask_json, workflow_json
