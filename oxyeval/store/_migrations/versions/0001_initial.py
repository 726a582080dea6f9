"""The first Alembic schema: SQLite and PostgreSQL, run kinds and groups, execution statuses,
consistency-test results and workflow runs.

Revision ID: 0001
Revises: (none; a 0.1.0 history file is converted into this revision, see _legacy.py)

Frozen history: never edit a released revision, add the next one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

Seq = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _seq() -> sa.Column:
    return sa.Column("seq", Seq, primary_key=True, autoincrement=True)


def upgrade() -> None:
    op.create_table(
        "prompts",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("source", sa.Text, nullable=False, server_default=""),
        sa.Column("created_at", sa.Text, nullable=False),
    )
    op.create_table(
        "prompt_versions",
        sa.Column("prompt_id", sa.Text, sa.ForeignKey("prompts.id"), primary_key=True),
        sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("content_hash", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.UniqueConstraint("prompt_id", "content_hash", name="uq_prompt_versions_hash"),
        sa.CheckConstraint("version >= 1", name="ck_prompt_versions_version"),
    )
    op.create_table(
        "test_cases",
        _seq(),
        sa.Column("id", sa.Text, nullable=False, unique=True),
        sa.Column("prompt_id", sa.Text, sa.ForeignKey("prompts.id"), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("input", sa.Text, nullable=False, server_default="{}"),
        sa.Column("expected_output", sa.Text),
        sa.Column("threshold", sa.Float),
        sa.Column("source_file", sa.Text),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
        sa.Column("deleted_at", sa.Text),
        sa.Column("total_runs", sa.Integer, nullable=False, server_default="0"),
        sa.Column("pass_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("score_sum", sa.Float, nullable=False, server_default="0"),
        sa.Column("scored_runs", sa.Integer, nullable=False, server_default="0"),
        sa.Column("length_sum", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("last_run", sa.Text),
        sa.Column("last_passed", sa.Boolean),
    )
    op.create_index("ix_test_cases_prompt", "test_cases", ["prompt_id", "created_at", "seq"])
    op.create_table(
        "runs",
        _seq(),
        sa.Column("id", sa.Text, nullable=False, unique=True),
        sa.Column("kind", sa.Text, nullable=False, server_default="cases"),
        sa.Column("group_id", sa.Text),
        sa.Column("subject", sa.Text),
        sa.Column("prompt_id", sa.Text),
        sa.Column("prompt_version", sa.Integer),
        sa.Column("started_at", sa.Text, nullable=False),
        sa.Column("finished_at", sa.Text),
        sa.Column("status", sa.Text, nullable=False, server_default="running"),
        sa.Column("total", sa.Integer, nullable=False, server_default="0"),
        sa.Column("done", sa.Integer, nullable=False, server_default="0"),
        sa.Column("pid", sa.Integer),
        sa.Column("host", sa.Text),
        sa.CheckConstraint(
            "status IN ('running', 'completed', 'interrupted', 'failed')", name="ck_runs_status"
        ),
        sa.CheckConstraint(
            "kind IN ('cases', 'consistency', 'workflow', 'ab', 'passfail')", name="ck_runs_kind"
        ),
    )
    op.create_index("ix_runs_started", "runs", ["started_at", "seq"])
    op.create_index("ix_runs_kind_started", "runs", ["kind", "started_at", "seq"])
    op.create_index("ix_runs_status", "runs", ["status"])
    op.create_index("ix_runs_group", "runs", ["group_id"])
    op.create_table(
        "executions",
        _seq(),
        sa.Column("id", sa.Text, nullable=False, unique=True),
        sa.Column("test_case_id", sa.Text, sa.ForeignKey("test_cases.id"), nullable=False),
        sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id")),
        sa.Column("execution_id", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("score", sa.Float),
        sa.Column("actual_output", sa.Text),
        sa.Column("expected_output", sa.Text),
        sa.Column("output_diff", sa.Text),
        sa.Column("exact_match", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("semantic_score", sa.Float),
        sa.Column("similarity_method", sa.Text, nullable=False, server_default=""),
        sa.Column("length_diff", sa.Integer),
        sa.Column("token_diff", sa.Integer),
        sa.Column("token_method", sa.Text, nullable=False, server_default=""),
        sa.Column("is_regression", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("regression_type", sa.Text),
        sa.Column("regression_types", sa.Text, nullable=False, server_default="[]"),
        sa.Column("prompt_version", sa.Integer, nullable=False),
        sa.Column("run_duration_ms", sa.Float, nullable=False, server_default="0"),
        sa.Column("latency_ms", sa.Float),
        sa.Column("input_tokens", sa.Integer),
        sa.Column("output_tokens", sa.Integer),
        sa.Column("finish_reason", sa.Text),
        sa.Column("error_message", sa.Text),
        sa.Column("baseline_key", sa.Text),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.CheckConstraint(
            "status IN ('passed', 'failed', 'pending', 'error')", name="ck_executions_status"
        ),
    )
    op.create_index(
        "ix_executions_case_created", "executions", ["test_case_id", "created_at", "seq"]
    )
    op.create_index(
        "ix_executions_case_regression",
        "executions",
        ["test_case_id", "is_regression", "created_at", "seq"],
    )
    op.create_index("ix_executions_run", "executions", ["run_id"])
    op.create_index(
        "ix_executions_case_baseline",
        "executions",
        ["test_case_id", "baseline_key", "created_at", "seq"],
    )
    op.create_table(
        "case_daily",
        sa.Column("test_case_id", sa.Text, sa.ForeignKey("test_cases.id"), primary_key=True),
        sa.Column("day", sa.Text, primary_key=True),
        sa.Column("runs", sa.Integer, nullable=False),
        sa.Column("passes", sa.Integer, nullable=False),
        sa.Column("score_sum", sa.Float, nullable=False),
        sa.Column("scored", sa.Integer, nullable=False),
    )
    op.create_table(
        "case_baselines",
        sa.Column("test_case_id", sa.Text, sa.ForeignKey("test_cases.id"), primary_key=True),
        sa.Column("baseline_key", sa.Text, primary_key=True),
        sa.Column("runs", sa.Integer, nullable=False),
        sa.Column("passes", sa.Integer, nullable=False),
        sa.Column("score_sum", sa.Float, nullable=False),
        sa.Column("scored", sa.Integer, nullable=False),
        sa.Column("length_sum", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "test_results",
        _seq(),
        sa.Column("id", sa.Text, nullable=False, unique=True),
        sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("file", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("test_index", sa.Integer, nullable=False, server_default="0"),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("accuracy", sa.Float),
        sa.Column("n", sa.Integer, nullable=False, server_default="0"),
        sa.Column("runs_ok", sa.Integer, nullable=False, server_default="0"),
        sa.Column("pairing", sa.Text, nullable=False, server_default=""),
        sa.Column("model", sa.Text, nullable=False, server_default=""),
        sa.Column("judge_model", sa.Text, nullable=False, server_default=""),
        sa.Column("pairs_total", sa.Integer, nullable=False, server_default="0"),
        sa.Column("pairs_judged", sa.Integer, nullable=False, server_default="0"),
        sa.Column("identical_pairs", sa.Integer, nullable=False, server_default="0"),
        sa.Column("judge_calls", sa.Integer, nullable=False, server_default="0"),
        sa.Column("selected_run", sa.Integer),
        sa.Column("selected_output", sa.Text),
        sa.Column("run_errors", sa.Text, nullable=False, server_default="[]"),
        sa.Column("error_message", sa.Text),
        sa.Column("duration_ms", sa.Float, nullable=False, server_default="0"),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.CheckConstraint(
            "status IN ('scored', 'error', 'interrupted')", name="ck_test_results_status"
        ),
    )
    op.create_index("ix_test_results_test", "test_results", ["file", "name", "created_at", "seq"])
    op.create_index("ix_test_results_run", "test_results", ["run_id"])
    op.create_table(
        "workflow_runs",
        sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column("workflow", sa.Text, nullable=False),
        sa.Column("variables", sa.Text, nullable=False, server_default="{}"),
        sa.Column("output", sa.Text),
        sa.Column("error_message", sa.Text),
        sa.Column("duration_ms", sa.Float, nullable=False, server_default="0"),
    )
    op.create_index("ix_workflow_runs_workflow", "workflow_runs", ["workflow"])
    op.create_table(
        "workflow_tasks",
        _seq(),
        sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("type", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("started_ms", sa.Float),
        sa.Column("duration_ms", sa.Float),
        sa.Column("output", sa.Text),
        sa.Column("error_message", sa.Text),
    )
    op.create_index("ix_workflow_tasks_run", "workflow_tasks", ["run_id", "seq"])


def downgrade() -> None:
    raise NotImplementedError("history migrations only go forward")
