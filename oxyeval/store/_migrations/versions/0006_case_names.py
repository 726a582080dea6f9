"""A test case's name is used once per prompt among live cases, held by the database: a
partial unique index on ``test_cases (prompt_id, name) WHERE deleted_at IS NULL``, so two
writers checking the name at once cannot both create it. A deleted case keeps its name
(and its history) without blocking a new case of that name.

A history may already hold live cases sharing a name (two API requests that raced):
before the index is made, each such group keeps its name on one case (the one declared
in a file, else the oldest) and the others are renamed ``<name> (<id>)``, so nothing is
lost and every case stays reachable by its id.

Revision ID: 0006
Revises: 0005

Frozen history: never edit a released revision, add the next one.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

LIVE = sa.text("deleted_at IS NULL")

_cases = sa.table(
    "test_cases",
    sa.column("seq", sa.Integer),
    sa.column("id", sa.Text),
    sa.column("prompt_id", sa.Text),
    sa.column("name", sa.Text),
    sa.column("source_file", sa.Text),
    sa.column("deleted_at", sa.Text),
)


def _rename_duplicates(conn: sa.engine.Connection) -> None:
    c = _cases.c
    live = c.deleted_at.is_(None)
    groups = conn.execute(
        sa.select(c.prompt_id, c.name)
        .where(live)
        .group_by(c.prompt_id, c.name)
        .having(sa.func.count() > 1)
    ).all()
    for prompt_id, name in groups:
        rows = conn.execute(
            sa.select(c.id, c.source_file)
            .where(live, c.prompt_id == prompt_id, c.name == name)
            .order_by(c.seq)
        ).all()
        declared = [r for r in rows if r.source_file is not None and r.id == f"{prompt_id}::{name}"]
        keeper = (declared or rows)[0].id
        taken = set(conn.execute(sa.select(c.name).where(live, c.prompt_id == prompt_id)).scalars())
        for row in rows:
            if row.id == keeper:
                continue
            new = f"{name} ({row.id})"
            while new in taken:
                new += "'"
            taken.add(new)
            conn.execute(_cases.update().where(c.id == row.id).values(name=new))


def upgrade() -> None:
    _rename_duplicates(op.get_bind())
    op.create_index(
        "uq_test_cases_live_name",
        "test_cases",
        ["prompt_id", "name"],
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )


def downgrade() -> None:
    """Only for the migration tests: names are no longer held unique by the database."""
    op.drop_index("uq_test_cases_live_name", table_name="test_cases")
