"""``results.outcome``: what a result counts as in its run (passed, failed, unknown,
neutral or unjudged), stored as its writer's kind said it, so a reader counts any kind's
results, a kind registered only in the process that wrote them included, by one rule
with no knowledge of the kind; and ``run_totals``, each run's results counted by it (and
their regressions), kept as they are written, so the runs list never scans a run.

Existing rows get the outcome their kind gave them on this day: ``cases`` counts an error
as unknown and a pending case as neutral, ``workflow`` a failed or interrupted run as
unknown, every other kind an error or an interruption; then ``passed`` says passed or
failed, and a result with no check of its own is unjudged.

Revision ID: 0007
Revises: 0006

Frozen history: never edit a released revision, add the next one. (The statuses below
are this revision's own copy of the kinds' rules, as a migration must not import the
code of a later day.)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
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


# A test case's regressions were flagged on its execution (same id as its result).
_TOTALS = """
INSERT INTO run_totals (run_id, outcome, status, results, scored, score_sum, regressions)
SELECT r.run_id, r.outcome, r.status, count(*), count(r.score), coalesce(sum(r.score), 0.0),
       sum(CASE WHEN e.is_regression THEN 1 ELSE 0 END)
FROM results r LEFT JOIN executions e ON e.id = r.id
WHERE r.run_id IS NOT NULL
GROUP BY r.run_id, r.outcome, r.status
"""


def upgrade() -> None:
    op.add_column(
        "results",
        sa.Column("outcome", sa.Text, nullable=False, server_default="unjudged"),
    )
    op.get_bind().execute(sa.text(_BACKFILL))
    op.create_table(
        "run_totals",
        sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column("outcome", sa.Text, primary_key=True),
        sa.Column("status", sa.Text, primary_key=True),
        sa.Column("results", sa.Integer, nullable=False),
        sa.Column("scored", sa.Integer, nullable=False),
        sa.Column("score_sum", sa.Float, nullable=False),
        sa.Column("regressions", sa.Integer, nullable=False),
    )
    op.get_bind().execute(sa.text(_TOTALS))


def downgrade() -> None:
    """Only for the migration tests: the outcome is read from the kinds again."""
    op.drop_table("run_totals")
    # Not a batch copy of the table: SQLite would refuse to drop ``results`` under the
    # scores' foreign key. (SQLite 3.35 and later drop a column in place.)
    op.get_bind().exec_driver_sql("ALTER TABLE results DROP COLUMN outcome")
