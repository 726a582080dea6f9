"""A test case's result keeps its named scores in its ``executions`` row only.

A cases result's three named scores (score, exact match, similarity) are that
execution's own columns, so from this revision on they are read from there and no
longer written as ``scores`` rows too (three rows per execution were a third of a large
run's rows). The schema does not change, and rows written before stay and are read as
they are. The revision marks the change of what is written: an older oxyeval, which
reads a cases result's scores from ``scores`` only, refuses the history as too new
instead of showing its new results without scores.

Revision ID: 0012
Revises: 0011

Frozen history: never edit a released revision, add the next one.
"""

from __future__ import annotations

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing to change in the schema (see the module's docstring)."""


def downgrade() -> None:
    """Only for the migration tests."""
