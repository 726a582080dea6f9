"""``run_group_shards``: one row per shard of a sharded run (``--shard i/N --run-group
ID``), holding the shard's run document, so ``oxy report --run-group ID`` decides on the
shards together from any machine that reads the history. A shard that runs again (a CI
retry) replaces its row.

Revision ID: 0009
Revises: 0008

Frozen history: never edit a released revision, add the next one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_group_shards",
        sa.Column("run_group", sa.Text, primary_key=True),
        sa.Column("shard", sa.Integer, primary_key=True),
        sa.Column("shards", sa.Integer, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("plan", sa.Text, nullable=False),
        sa.Column("tests", sa.Integer, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("code", sa.Integer, nullable=False),
        sa.Column("document", sa.Text, nullable=False),
        sa.Column("host", sa.Text),
        sa.Column("finished_at", sa.Text, nullable=False),
    )


def downgrade() -> None:
    """Only for the migration tests."""
    op.drop_table("run_group_shards")
