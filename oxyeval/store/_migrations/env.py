"""Alembic environment: runs on the connection the store passes in (no alembic.ini).

``oxyeval.store._migrations.upgrade`` puts an open connection, already inside its
transaction, in ``config.attributes["connection"]``; Alembic then runs every step in that
one transaction.
"""

from __future__ import annotations

from alembic import context

from oxyeval.store._migrations import VERSION_TABLE
from oxyeval.store._tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reached by a hand-run alembic command
    raise RuntimeError(
        "oxyeval's migrations run when a store is opened (oxyeval.store.open_store); "
        "there is no alembic.ini to run them by hand"
    )
context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=VERSION_TABLE,
    render_as_batch=True,  # SQLite cannot ALTER most things: batch mode copies the table
)
with context.begin_transaction():
    context.run_migrations()
