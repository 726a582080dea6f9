"""Runs record their owner's identity beyond its pid (host name, boot id, PID namespace,
process start time), so a live run in another container is never taken for a dead one.

Revision ID: 0003
Revises: 0002

Frozen history: never edit a released revision, add the next one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("owner", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("owner")
