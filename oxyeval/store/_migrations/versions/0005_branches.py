"""A/B branches: ``test_branches`` (one model configuration of a test case, with the
counters its aggregates are derived from), ``branch_outputs`` (how often each distinct
output came back, for the consistency score) and an index on ``results (branch, seq)`` so
a branch's executions (results of kind ``ab``) read without a scan.

Revision ID: 0005
Revises: 0004

Frozen history: never edit a released revision, add the next one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

Seq = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _counter(name: str, *, real: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.Float if real else sa.Integer, nullable=False, server_default="0")


def upgrade() -> None:
    op.create_table(
        "test_branches",
        sa.Column("seq", Seq, primary_key=True, autoincrement=True),
        sa.Column("id", sa.Text, nullable=False, unique=True),
        sa.Column("test_case_id", sa.Text, sa.ForeignKey("test_cases.id"), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("provider", sa.Text),
        sa.Column("model", sa.Text, nullable=False),
        sa.Column("temperature", sa.Float, nullable=False, server_default="0.7"),
        sa.Column("max_tokens", sa.Integer, nullable=False, server_default="2048"),
        sa.Column("top_p", sa.Float, nullable=False, server_default="1.0"),
        sa.Column("is_control", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("is_active", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("other_params", sa.Text, nullable=False, server_default="{}"),
        sa.Column("source_file", sa.Text),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
        sa.Column("deleted_at", sa.Text),
        _counter("runs"),
        _counter("errors"),
        _counter("latency_n"),
        _counter("latency_sum", real=True),
        _counter("cost_n"),
        _counter("cost_sum", real=True),
        _counter("quality_n"),
        _counter("quality_sum", real=True),
        _counter("passes"),
        _counter("tps_n"),
        _counter("tps_sum", real=True),
        _counter("hashed_runs"),
        _counter("top_hash_runs"),
    )
    op.create_index("ix_test_branches_case", "test_branches", ["test_case_id", "seq"])
    op.create_table(
        "branch_outputs",
        sa.Column("branch_id", sa.Text, sa.ForeignKey("test_branches.id"), primary_key=True),
        sa.Column("consistency_hash", sa.Text, primary_key=True),
        sa.Column("runs", sa.Integer, nullable=False),
    )
    op.create_index("ix_results_branch", "results", ["branch", "seq"])


def downgrade() -> None:
    """Only for the migration tests: an A/B history loses its branches."""
    op.drop_index("ix_results_branch", table_name="results")
    op.drop_table("branch_outputs")
    op.drop_index("ix_test_branches_case", table_name="test_branches")
    op.drop_table("test_branches")
