"""Prompts and their content-addressed versions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ._rows import Prompt, PromptVersion
from ._tables import prompt_versions, prompts
from ._util import canonical_json, content_hash, utc_timestamp

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from ._core import Store

__all__ = ["Prompts", "ensure_prompt_row"]


def _upsert(conn: Connection) -> Any:
    """The backend's INSERT ... ON CONFLICT construct (both SQLite and PostgreSQL have it)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


def ensure_prompt_row(conn: Connection, prompt_id: str, now: str) -> None:
    """Test cases may be declared before their prompt is registered; keep the FK satisfied.
    ON CONFLICT DO NOTHING: two processes doing this at once must not fail."""
    insert = _upsert(conn)
    conn.execute(
        insert(prompts)
        .values(id=prompt_id, name=prompt_id, source="", created_at=now)
        .on_conflict_do_nothing(index_elements=["id"])
    )


def _prompt(r: Any) -> Prompt:
    return Prompt(r.id, r.name, r.source, r.created_at)


class Prompts:
    def __init__(self, store: Store) -> None:
        self._store = store

    def upsert(self, prompt_id: str, name: str, source: str = "") -> Prompt:
        now = utc_timestamp()
        with self._store.write("saving a prompt") as conn:
            insert = _upsert(conn)
            stmt = insert(prompts).values(
                id=prompt_id, name=name, source=source or "", created_at=now
            )
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=["id"],
                    set_={"name": stmt.excluded.name, "source": stmt.excluded.source},
                )
            )
            row = conn.execute(sa.select(prompts).where(prompts.c.id == prompt_id)).one()
        return _prompt(row)

    def get(self, prompt_id: str) -> Prompt | None:
        with self._store.read("reading a prompt") as conn:
            row = conn.execute(sa.select(prompts).where(prompts.c.id == prompt_id)).first()
        return None if row is None else _prompt(row)

    def list(self) -> list[Prompt]:
        with self._store.read("listing prompts") as conn:
            rows = conn.execute(sa.select(prompts).order_by(prompts.c.id)).all()
        return [_prompt(r) for r in rows]

    def ensure_version(
        self, prompt_id: str, content: Mapping[str, Any], *, created_at: str | None = None
    ) -> int:
        """Same content (canonically) -> same version; new content -> previous max + 1.

        The prompt row is locked first (FOR UPDATE; SQLite's write lock does the same), so
        two processes registering the same new content get the same number.
        """
        text = canonical_json(content)
        digest = content_hash(content)
        now = utc_timestamp(created_at)
        v = prompt_versions.c
        with self._store.write("saving a prompt version") as conn:
            ensure_prompt_row(conn, prompt_id, now)
            conn.execute(sa.select(prompts.c.id).where(prompts.c.id == prompt_id).with_for_update())
            found = conn.execute(
                sa.select(v.version).where(v.prompt_id == prompt_id, v.content_hash == digest)
            ).scalar()
            if found is not None:
                return int(found)
            version = int(
                conn.execute(
                    sa.select(sa.func.coalesce(sa.func.max(v.version), 0) + 1).where(
                        v.prompt_id == prompt_id
                    )
                ).scalar_one()
            )
            conn.execute(
                prompt_versions.insert().values(
                    prompt_id=prompt_id,
                    version=version,
                    content_hash=digest,
                    content=text,
                    created_at=now,
                )
            )
            return version

    def find_version(self, prompt_id: str, content: Mapping[str, Any]) -> int | None:
        """The version this content already has, without creating one (read commands)."""
        v = prompt_versions.c
        with self._store.read("reading prompt versions") as conn:
            found = conn.execute(
                sa.select(v.version).where(
                    v.prompt_id == prompt_id, v.content_hash == content_hash(content)
                )
            ).scalar()
        return None if found is None else int(found)

    def get_version(self, prompt_id: str, version: int) -> dict[str, Any] | None:
        """The content of one version (what a run of that version renders)."""
        v = prompt_versions.c
        with self._store.read("reading a prompt version") as conn:
            text = conn.execute(
                sa.select(v.content).where(v.prompt_id == prompt_id, v.version == version)
            ).scalar()
        return None if text is None else json.loads(text)

    def latest_version(self, prompt_id: str) -> int | None:
        v = prompt_versions.c
        with self._store.read("reading prompt versions") as conn:
            found = conn.execute(
                sa.select(sa.func.max(v.version)).where(v.prompt_id == prompt_id)
            ).scalar()
        return None if found is None else int(found)

    def versions(self, prompt_id: str) -> list[PromptVersion]:
        v = prompt_versions.c
        with self._store.read("listing prompt versions") as conn:
            rows = conn.execute(
                sa.select(v.prompt_id, v.version, v.content_hash, v.created_at)
                .where(v.prompt_id == prompt_id)
                .order_by(v.version)
            ).all()
        return [PromptVersion(r.prompt_id, r.version, r.content_hash, r.created_at) for r in rows]
