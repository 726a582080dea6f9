"""Stage 6, the history store: prompts, versions, test cases, runs, executions, test and workflow results.

SQLite by default (``.oxy/oxyeval.db`` in the project: embedded, WAL, nothing to set up);
PostgreSQL for a team's shared history (``--db postgresql://user@host:5432/db``,
``OXY_DB``, or ``history: {url: ..., password_var: NAME}`` in config.yml; needs
``pip install 'oxyeval[postgres]'``). The schema is migrated with Alembic when a store is
opened for writing.

    from oxyeval.store import open_store, NewExecution

    with open_store(".oxy/oxyeval.db") as store:
        for case in store.cases.list():
            print(case.name, case.pass_rate)

A :class:`Store` has one repository per concern: ``prompts``, ``cases``, ``branches`` (A/B
model configurations of a case, their rules and executions), ``executions``,
``runs``, ``stats``, ``tests`` (consistency results of ``oxy test``), ``workflows``,
``cache`` (model answers and judge verdicts kept for reruns) and ``results``: every
kind's results with named scores and a daily rollup (where a new kind of test
writes to alone, registered with :func:`oxyeval.evaluation.register_kind`; the older
kinds write their detail tables and it together).
Rows are frozen dataclasses with snake_case fields; the Testing API's camelCase shaping is
:mod:`oxyeval.report.cases`. Calls are synchronous: from async code, use
``asyncio.to_thread``.

SQLAlchemy is imported only when a store is opened, so importing this package is cheap.
``open_results`` is the lean store of ``oxy test`` and ``oxy run`` on the stdlib's sqlite3:
their results and the cache, without SQLAlchemy (see ``_lite``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from ._engine import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_STATEMENT_TIMEOUT,
    DEFAULT_TIMEOUT,
    Location,
    missing_folder,
    resolve_location,
)
from ._errors import (
    AlreadyExistsError,
    BranchRuleError,
    EmptyHistoryError,
    LocationError,
    NameTakenError,
    NotFoundError,
    OldSchemaError,
    StoreError,
)
from ._util import (
    branch_id,
    canonical_json,
    case_id,
    content_hash,
    new_ids,
    text_hash,
    utc_timestamp,
)
from .kinds import (
    BRANCH_PROVIDERS,
    BRANCH_STATUSES,
    CONSISTENCY_STATUSES,
    EXECUTION_STATUSES,
    FINISHED_RUN_STATUSES,
    MAX_BRANCHES,
    RESERVED_RUN_KINDS,
    RESULT_OUTCOMES,
    RUN_KIND_ALIASES,
    RUN_KINDS,
    RUN_STATUSES,
    WORKFLOW_STATUSES,
)

# Loaded on first use: the row types (some twenty dataclasses, ~20 ms to build, on the
# start-up path of every command that only needs a Location; the few that oxy test and
# oxy run write are apart, in _result_rows), the cache's types and the Store itself
# (SQLAlchemy).
_EXPORTS = {
    **dict.fromkeys(
        (
            "CaseActivity",
            "CaseHistory",
            "CaseStats",
            "Execution",
            "ExecutionSummary",
            "HistoryPoint",
            "NewExecution",
            "Prompt",
            "PromptVersion",
            "Run",
            "TestCase",
            "TrendPoint",
            "WorkflowRunRecord",
            "WorkflowTask",
        ),
        "_rows",
    ),
    **dict.fromkeys(
        ("ConsistencyResult", "NewConsistencyResult", "NewWorkflowRun", "NewWorkflowTask"),
        "_result_rows",
    ),
    **dict.fromkeys(("BranchExecution", "NewBranchExecution", "TestBranch"), "_branch_rows"),
    **dict.fromkeys(("CacheEntry", "CacheKindStats", "CacheStats", "NewCacheEntry"), "_cache"),
    **dict.fromkeys(("DailyTotals", "Results", "StoredResult", "StoredScore"), "_results_read"),
    **dict.fromkeys(("RunGroups", "ShardRow"), "_run_groups"),
    **dict.fromkeys(("CalibrationRow", "Calibrations"), "_calibrations"),
    "Store": "_core",
    "open_store": "_core",
    "LiteStore": "_lite",
    "open_results": "_lite",
    "hurry_history": "_watchdog",
    "Sent": "_deferred",
    "deferred_writes": "_deferred",
}

if TYPE_CHECKING:
    from ._branch_rows import BranchExecution, NewBranchExecution, TestBranch
    from ._cache import CacheEntry, CacheKindStats, CacheStats, NewCacheEntry
    from ._calibrations import CalibrationRow, Calibrations
    from ._core import Store, open_store
    from ._deferred import Sent, deferred_writes
    from ._lite import LiteStore, open_results
    from ._result_rows import (
        ConsistencyResult,
        NewConsistencyResult,
        NewWorkflowRun,
        NewWorkflowTask,
    )
    from ._results_read import DailyTotals, Results, StoredResult, StoredScore
    from ._rows import (
        CaseActivity,
        CaseHistory,
        CaseStats,
        Execution,
        ExecutionSummary,
        HistoryPoint,
        NewExecution,
        Prompt,
        PromptVersion,
        Run,
        TestCase,
        TrendPoint,
        WorkflowRunRecord,
        WorkflowTask,
    )
    from ._run_groups import RunGroups, ShardRow
    from ._watchdog import hurry_history

__all__ = [
    "BRANCH_PROVIDERS",
    "BRANCH_STATUSES",
    "CONSISTENCY_STATUSES",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_STATEMENT_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "EXECUTION_STATUSES",
    "FINISHED_RUN_STATUSES",
    "MAX_BRANCHES",
    "RESERVED_RUN_KINDS",
    "RESULT_OUTCOMES",
    "RUN_KINDS",
    "RUN_KIND_ALIASES",
    "RUN_STATUSES",
    "WORKFLOW_STATUSES",
    "AlreadyExistsError",
    "BranchExecution",
    "BranchRuleError",
    "CacheEntry",
    "CacheKindStats",
    "CacheStats",
    "CalibrationRow",
    "Calibrations",
    "CaseActivity",
    "CaseHistory",
    "CaseStats",
    "ConsistencyResult",
    "DailyTotals",
    "EmptyHistoryError",
    "Execution",
    "ExecutionSummary",
    "HistoryPoint",
    "LiteStore",
    "Location",
    "LocationError",
    "NameTakenError",
    "NewBranchExecution",
    "NewCacheEntry",
    "NewConsistencyResult",
    "NewExecution",
    "NewWorkflowRun",
    "NewWorkflowTask",
    "NotFoundError",
    "OldSchemaError",
    "Prompt",
    "PromptVersion",
    "Results",
    "Run",
    "RunGroups",
    "Sent",
    "ShardRow",
    "Store",
    "StoreError",
    "StoredResult",
    "StoredScore",
    "TestBranch",
    "TestCase",
    "TrendPoint",
    "WorkflowRunRecord",
    "WorkflowTask",
    "branch_id",
    "canonical_json",
    "case_id",
    "content_hash",
    "deferred_writes",
    "hurry_history",
    "missing_folder",
    "new_ids",
    "open_results",
    "open_store",
    "resolve_location",
    "text_hash",
    "utc_timestamp",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
