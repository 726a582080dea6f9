"""``results.outcome``: what a result counts as in its run (passed, failed, unknown,
neutral or unjudged), stored as its writer's kind said it, so a reader counts any kind's
results, a kind registered only in the process that wrote them included, by one rule
with no knowledge of the kind.

Existing rows get the outcome their kind gave them on this day: ``cases`` counts an error
as unknown and a pending case as neutral, ``workflow`` a failed or interrupted run as
unknown, every other kind an error or an interruption; then ``passed`` says passed or
failed, and a result with no check of its own is unjudged.

Revision ID: 0007
Revises: 0005

Frozen history: never edit a released revision, add the next one. (The statuses below
are this revision's own copy of the kinds' rules, as a migration must not import the
code of a later day.)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0005"
branch_labels = None
depends_on = None

_BACKFILL = """
UPDATE results SET outcome = CASE
    WHEN kind = 'cases' AND status = 'error' THEN 'unknown'
    WHEN kind = 'cases' AND status = 'pending' THEN 'neutral'
    WHEN kind = 'workflow' AND status IN ('failed', 'interrupted') THEN 'unknown'
    WHEN kind NOT IN ('cases', 'workflow') AND status IN ('error', 'interrupted') THEN 'unknown'
    WHEN passed IS TRUE THEN 'passed'
    WHEN passed IS FALSE THEN 'failed'
    ELSE 'unjudged'
END
"""


def upgrade() -> None:
    op.add_column(
        "results",
        sa.Column("outcome", sa.Text, nullable=False, server_default="unjudged"),
    )
    op.get_bind().execute(sa.text(_BACKFILL))
    # What the runs list counts, read from the index alone.
    op.create_index("ix_results_run_outcome", "results", ["run_id", "outcome", "status", "score"])


def downgrade() -> None:
    """Only for the migration tests: the outcome is read from the kinds again."""
    op.drop_index("ix_results_run_outcome", table_name="results")
    with op.batch_alter_table("results") as batch:
        batch.drop_column("outcome")
