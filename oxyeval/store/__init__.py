"""The history store: prompts, versions, test cases, runs, executions, test and workflow results.

SQLite by default (``.oxy/oxyeval.db`` in the project: embedded, WAL, nothing to set up);
PostgreSQL for a team's shared history (``--db postgresql://user@host:5432/db``,
``OXY_DB``, or ``history: {url: ..., password_var: NAME}`` in config.yml; needs
``pip install 'oxyeval[postgres]'``). The schema is migrated with Alembic when a store is
opened for writing.

    from oxyeval.store import open_store, NewExecution

    with open_store(".oxy/oxyeval.db") as store:
        for case in store.cases.list():
            print(case.name, case.pass_rate)

A :class:`Store` has one repository per concern: ``prompts``, ``cases``, ``executions``,
``runs``, ``stats``, ``tests`` (consistency results of ``oxy test``) and ``workflows``.
Rows are frozen dataclasses with snake_case fields; the seed API's camelCase shaping is
:mod:`oxyeval.report.cases`. Calls are synchronous: from async code, use
``asyncio.to_thread``.

SQLAlchemy is imported only when a store is opened, so importing this package is cheap.
``open_results`` is ``oxy test``'s lean writer on the stdlib's sqlite3 (see ``_lite``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._engine import DEFAULT_TIMEOUT, Location, resolve_location
from ._errors import AlreadyExistsError, EmptyHistoryError, LocationError, NotFoundError, StoreError
from ._lite import LiteStore, open_results
from ._rows import (
    CaseHistory,
    CaseStats,
    ConsistencyResult,
    ConsistencyRunSummary,
    Execution,
    ExecutionSummary,
    HistoryPoint,
    NewConsistencyResult,
    NewExecution,
    NewWorkflowRun,
    NewWorkflowTask,
    Prompt,
    PromptVersion,
    Run,
    TestCase,
    TrendPoint,
    WorkflowRunRecord,
    WorkflowTask,
)
from ._util import canonical_json, content_hash, utc_timestamp

if TYPE_CHECKING:
    from ._core import Store, open_store

__all__ = [
    "DEFAULT_TIMEOUT",
    "AlreadyExistsError",
    "CaseHistory",
    "CaseStats",
    "ConsistencyResult",
    "ConsistencyRunSummary",
    "EmptyHistoryError",
    "Execution",
    "ExecutionSummary",
    "HistoryPoint",
    "LiteStore",
    "Location",
    "LocationError",
    "NewConsistencyResult",
    "NewExecution",
    "NewWorkflowRun",
    "NewWorkflowTask",
    "NotFoundError",
    "Prompt",
    "PromptVersion",
    "Run",
    "Store",
    "StoreError",
    "TestCase",
    "TrendPoint",
    "WorkflowRunRecord",
    "WorkflowTask",
    "canonical_json",
    "content_hash",
    "open_results",
    "open_store",
    "resolve_location",
    "utc_timestamp",
]


def __getattr__(name: str) -> Any:
    # Store and open_store pull in SQLAlchemy: loaded on first use, not on import.
    if name in ("Store", "open_store"):
        from . import _core

        value = getattr(_core, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'oxyeval.store' has no attribute {name!r}")
