"""``batches`` and ``batch_requests``: the provider batches a run submitted, and which
call each request of one is (its cache key's hash, the phase, the run index), with the
answer once the batch has ended.

Why in the history: a batch takes minutes to hours, and the process that submitted it
may be stopped meanwhile (Ctrl-C, a CI timeout, a closed laptop). The next run of the
same command finds the open batch for the same requests and collects it instead of
paying for them again; ``oxy batch status|resume|cancel`` read and act on the same rows.

Revision ID: 0008
Revises: 0007

Frozen history: never edit a released revision, add the next one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "batches",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("vendor", sa.Text, nullable=False),
        sa.Column("model", sa.Text, nullable=False),
        sa.Column("model_ref", sa.Text, nullable=False, server_default=""),
        sa.Column("api_url", sa.Text, nullable=False, server_default=""),
        sa.Column("remote_id", sa.Text, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("phase", sa.Text, nullable=False, server_default=""),
        sa.Column("kind", sa.Text, nullable=False, server_default=""),
        sa.Column("total", sa.Integer, nullable=False, server_default="0"),
        sa.Column("done", sa.Integer, nullable=False, server_default="0"),
        sa.Column("failed", sa.Integer, nullable=False, server_default="0"),
        sa.Column("consumed", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Text, nullable=False),
    )
    op.create_index("ix_batches_open", "batches", ["consumed", "state"])
    op.create_table(
        "batch_requests",
        sa.Column(
            "batch_id", sa.Text, sa.ForeignKey("batches.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("custom_id", sa.Text, primary_key=True),
        sa.Column("key_hash", sa.Text, nullable=False),
        sa.Column("phase", sa.Text, nullable=False, server_default=""),
        sa.Column("subject", sa.Text, nullable=False, server_default=""),
        sa.Column("run_index", sa.Integer, nullable=False, server_default="1"),
        sa.Column("status", sa.Text, nullable=False, server_default="pending"),
        sa.Column("answer", sa.Text),
        sa.Column("error", sa.Text),
    )
    op.create_index("ix_batch_requests_key", "batch_requests", ["key_hash"])


def downgrade() -> None:
    op.drop_table("batch_requests")
    op.drop_table("batches")
