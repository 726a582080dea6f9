"""The cache of model answers and judge verdicts (``oxy test --cache``, ``oxy cache``).

Revision ID: 0002
Revises: 0001

Frozen history: never edit a released revision, add the next one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cache_entries",
        sa.Column("key_hash", sa.Text, primary_key=True),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("model", sa.Text, nullable=False, server_default=""),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("size", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("hits", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_hit_at", sa.Text),
        sa.CheckConstraint("kind IN ('answer', 'verdict')", name="ck_cache_entries_kind"),
    )
    op.create_index("ix_cache_entries_created", "cache_entries", ["created_at"])
    op.create_index("ix_cache_entries_kind_created", "cache_entries", ["kind", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_cache_entries_kind_created", table_name="cache_entries")
    op.drop_index("ix_cache_entries_created", table_name="cache_entries")
    op.drop_table("cache_entries")
