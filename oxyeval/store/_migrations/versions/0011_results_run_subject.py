"""``ix_results_run_subject``: a result looked up by its run and subject, what a run
reads once per batch of results to pair each with its baseline in an earlier run.
Without it the lookup scanned the whole earlier run (``ix_results_run``) per batch,
quadratic in the number of cases.

Revision ID: 0011
Revises: 0010

Frozen history: never edit a released revision, add the next one.
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_results_run_subject", "results", ["run_id", "kind", "subject"])


def downgrade() -> None:
    """Only for the migration tests."""
    op.drop_index("ix_results_run_subject", table_name="results")
