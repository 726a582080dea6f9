"""``judge_calibrations``: one row per ``oxy judge calibrate``, a judge's agreement with a
human-labelled set (Cohen's kappa, its interval, the confusion table) under its model
and prompt version, so a judge change that agrees less with people is visible.

Revision ID: 0010
Revises: 0009

Frozen history: never edit a released revision, add the next one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# An autoincrementing integer key: BIGINT identity on PostgreSQL, the rowid on SQLite.
_SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "judge_calibrations",
        sa.Column("seq", _SEQ, primary_key=True, autoincrement=True),
        sa.Column("id", sa.Text, nullable=False, unique=True),
        sa.Column("judge_model", sa.Text, nullable=False),
        sa.Column("prompt_version", sa.Text, nullable=False),
        sa.Column("file", sa.Text, nullable=False),
        sa.Column("items", sa.Integer, nullable=False),
        sa.Column("judged", sa.Integer, nullable=False),
        sa.Column("observed", sa.Float),
        sa.Column("kappa", sa.Float),
        sa.Column("kappa_low", sa.Float),
        sa.Column("kappa_high", sa.Float),
        sa.Column("confusion", sa.Text, nullable=False, server_default="[]"),
        sa.Column("created_at", sa.Text, nullable=False),
    )
    op.create_index(
        "ix_judge_calibrations_judge",
        "judge_calibrations",
        ["judge_model", "prompt_version", "created_at"],
    )


def downgrade() -> None:
    """Only for the migration tests."""
    op.drop_index("ix_judge_calibrations_judge", table_name="judge_calibrations")
    op.drop_table("judge_calibrations")
