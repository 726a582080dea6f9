"""``case_baselines.recent`` and ``recent_at``: each (case, baseline)'s newest judged
scores and lengths, kept as its executions are written, so regression detection reads
one row per case instead of walking up to ``recent`` executions of each.

Existing rows get no window (NULL): they are walked as before until their next write,
which makes it. Filling them here would walk every case's executions inside the upgrade.

Revision ID: 0013
Revises: 0012

Frozen history: never edit a released revision, add the next one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("case_baselines", sa.Column("recent", sa.Text))
    op.add_column("case_baselines", sa.Column("recent_at", sa.Text))


def downgrade() -> None:
    """Only for the migration tests. (SQLite 3.35 and later drop a column in place.)"""
    op.get_bind().exec_driver_sql("ALTER TABLE case_baselines DROP COLUMN recent_at")
    op.get_bind().exec_driver_sql("ALTER TABLE case_baselines DROP COLUMN recent")
