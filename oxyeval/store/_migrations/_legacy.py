"""Converting a history file written by oxyeval 0.1.0 (the sqlite3 store) to the Alembic schema.

0.1.0 versioned its schema with ``PRAGMA user_version`` (1 or 2) and used SQLite-only
storage (``WITHOUT ROWID``, rowid order, partial indexes). This runs once per file, inside
the opening transaction, so a failure leaves the 0.1.0 file as it was:

1. rename the old tables to ``legacy_*`` (and drop their indexes, whose names we reuse);
2. create revision 0001 with Alembic;
3. copy every row, translating what changed: the ``error`` column meant "not judged"
   (pending cases were stored as errors; provider errors were never stored), so it becomes
   an explicit ``status`` (pending, or error with its message); rowid order becomes ``seq``;
4. build the per-baseline rollup regression detection reads, and drop the ``legacy_*``
   tables.

Aggregates (per case and per day) are copied as they were: 0.1.0 counted judged executions
only, which is what the new schema counts too. Texts that may hold model output or error
text pass through :func:`oxyeval.redact.redact` on the way, like every other write.

Reading rowids and PRAGMAs is SQLite-only on purpose: only an SQLite file can be a 0.1.0
history.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

__all__ = ["LEGACY_REVISION", "convert"]

LEGACY_REVISION = "0001"  # the revision whose tables the copy below targets
_TABLES = ("prompts", "prompt_versions", "test_cases", "runs", "executions", "case_daily")
_DROP_ORDER = ("executions", "case_daily", "runs", "test_cases", "prompt_versions", "prompts")

_COPY = (
    """INSERT INTO prompts (id, name, source, created_at)
       SELECT id, name, source, created_at FROM legacy_prompts ORDER BY rowid""",
    """INSERT INTO prompt_versions (prompt_id, version, content_hash, content, created_at)
       SELECT prompt_id, version, content_hash, content, created_at
       FROM legacy_prompt_versions ORDER BY prompt_id, version""",
    """INSERT INTO test_cases (id, prompt_id, name, description, input, expected_output,
           threshold, source_file, created_at, updated_at, deleted_at, total_runs, pass_count,
           score_sum, scored_runs, length_sum, last_run, last_passed)
       SELECT id, prompt_id, name, description, input, oxy_redact(expected_output), threshold,
           source_file, created_at, updated_at, deleted_at, total_runs, pass_count, score_sum,
           scored_runs, length_sum, last_run, last_passed
       FROM legacy_test_cases ORDER BY rowid""",
    """INSERT INTO runs (id, kind, prompt_id, prompt_version, started_at, finished_at, status,
           total, done, pid, host)
       SELECT id, 'cases', prompt_id, prompt_version, started_at, finished_at, status, total,
           done, pid, host
       FROM legacy_runs ORDER BY rowid""",
)

_COPY_EXECUTIONS = """
INSERT INTO executions (id, test_case_id, run_id, execution_id, status, score, actual_output,
    expected_output, output_diff, exact_match, semantic_score, similarity_method, length_diff,
    token_diff, token_method, is_regression, regression_type, regression_types, prompt_version,
    run_duration_ms, latency_ms, input_tokens, output_tokens, finish_reason, error_message,
    baseline_key, created_at)
SELECT id, test_case_id, run_id, execution_id,
    CASE WHEN error IS NULL THEN (CASE WHEN passed THEN 'passed' ELSE 'failed' END)
         WHEN error LIKE 'pending:%' OR expected_output IS NULL THEN 'pending'
         ELSE 'error' END,
    score, oxy_redact(actual_output), oxy_redact(expected_output), oxy_redact(output_diff),
    exact_match, semantic_score, similarity_method, length_diff, token_diff, token_method,
    is_regression, regression_type, {regression_types}, prompt_version, run_duration_ms,
    latency_ms, input_tokens, output_tokens, NULL,
    CASE WHEN error LIKE 'pending:%' THEN NULL ELSE oxy_redact(error) END,
    CASE WHEN error IS NULL
         THEN oxy_baseline_key(oxy_redact(expected_output), similarity_method) END,
    created_at
FROM legacy_executions ORDER BY rowid
"""
_BASELINES = """INSERT INTO case_baselines (test_case_id, baseline_key, runs, passes, score_sum,
        scored, length_sum)
    SELECT test_case_id, baseline_key, count(*),
        sum(CASE WHEN status = 'passed' THEN 1 ELSE 0 END), total(score), count(score),
        coalesce(sum(length(actual_output)), 0)
    FROM executions WHERE baseline_key IS NOT NULL
    GROUP BY test_case_id, baseline_key"""

# Version 1 kept one regression type per execution and had no daily rollup.
_V1_TYPES = "CASE WHEN regression_type IS NULL THEN '[]' ELSE '[\"' || regression_type || '\"]' END"
_COPY_DAILY = """INSERT INTO case_daily (test_case_id, day, runs, passes, score_sum, scored)
    SELECT test_case_id, day, runs, passes, score_sum, scored FROM legacy_case_daily"""
_REBUILD_DAILY = """INSERT INTO case_daily (test_case_id, day, runs, passes, score_sum, scored)
    SELECT test_case_id, substr(created_at, 1, 10), count(*), sum(passed), total(score),
        count(score)
    FROM legacy_executions WHERE error IS NULL
    GROUP BY test_case_id, substr(created_at, 1, 10)"""


def convert(conn: Connection, create: Callable[[str], None]) -> None:
    """Convert in the caller's transaction; ``create(revision)`` runs Alembic up to it."""
    from ...redact import redact
    from .._util import baseline_key

    raw = conn.connection.driver_connection  # the sqlite3 connection: SQL calls Python here
    raw.create_function(
        "oxy_redact", 1, lambda t: None if t is None else redact(t), deterministic=True
    )
    raw.create_function("oxy_baseline_key", 2, baseline_key, deterministic=True)
    present = {
        r[0]
        for r in conn.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    indexes = [
        r[0]
        for r in conn.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        )
    ]
    for name in indexes:
        conn.exec_driver_sql(f'DROP INDEX "{name}"')
    for table in _TABLES:
        if table in present:
            conn.exec_driver_sql(f'ALTER TABLE "{table}" RENAME TO "legacy_{table}"')
    create(LEGACY_REVISION)
    for sql in _COPY:
        conn.exec_driver_sql(sql)
    columns = {r[1] for r in conn.exec_driver_sql("PRAGMA table_info(legacy_executions)")}
    types = "regression_types" if "regression_types" in columns else _V1_TYPES
    conn.exec_driver_sql(_COPY_EXECUTIONS.format(regression_types=types))
    conn.exec_driver_sql(_COPY_DAILY if "case_daily" in present else _REBUILD_DAILY)
    conn.exec_driver_sql(_BASELINES)
    for table in _DROP_ORDER:
        if table in present:
            conn.exec_driver_sql(f'DROP TABLE "legacy_{table}"')
