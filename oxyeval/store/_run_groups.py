"""Run groups: the shards of one sharded run (``--shard i/N --run-group ID``), each
kept as its run document once decided, so ``oxy report --run-group ID`` merges them
on whichever machine reads the shared history."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ._tables import run_group_shards
from ._util import redact_json, utc_timestamp

if TYPE_CHECKING:
    from ._core import Store

__all__ = ["RunGroups", "ShardRow"]

_S = run_group_shards.c


@dataclass(frozen=True)
class ShardRow:
    """One shard of a run group as it was kept: its place (``shard`` of ``shards``), the
    command's run kind, the split's fingerprint (``plan``), its share of the selection
    (``tests`` of ``total``), its own exit code (``code``) and its run document (decoded)."""

    run_group: str
    shard: int
    shards: int
    kind: str
    plan: str
    tests: int
    total: int
    code: int
    document: Any
    host: str | None
    finished_at: str


class RunGroups:
    def __init__(self, store: Store) -> None:
        self._store = store

    def record(
        self,
        run_group: str,
        shard: int,
        shards: int,
        *,
        kind: str,
        plan: str,
        tests: int,
        total: int,
        code: int,
        document: dict[str, Any],
    ) -> None:
        """Keep one shard's outcome, replacing what an earlier attempt of the same shard
        kept (a CI retry). Its texts are scrubbed of secrets like every stored row."""
        text = json.dumps(redact_json(document), ensure_ascii=False, separators=(",", ":"))
        where = sa.and_(_S.run_group == run_group, _S.shard == shard)
        with self._store.write("recording a shard of a run group") as conn:
            conn.execute(run_group_shards.delete().where(where))
            conn.execute(
                run_group_shards.insert().values(
                    run_group=run_group,
                    shard=shard,
                    shards=shards,
                    kind=kind,
                    plan=plan,
                    tests=tests,
                    total=total,
                    code=code,
                    document=text,
                    host=self._store.host,
                    finished_at=utc_timestamp(),
                )
            )

    def shards(self, run_group: str) -> list[ShardRow]:
        """Every shard kept under ``run_group``, by shard number."""
        with self._store.read("reading a run group") as conn:
            rows = conn.execute(
                sa.select(run_group_shards).where(_S.run_group == run_group).order_by(_S.shard)
            ).all()
        return [
            ShardRow(
                run_group=r.run_group,
                shard=r.shard,
                shards=r.shards,
                kind=r.kind,
                plan=r.plan,
                tests=r.tests,
                total=r.total,
                code=r.code,
                document=json.loads(r.document),
                host=r.host,
                finished_at=r.finished_at,
            )
            for r in rows
        ]
