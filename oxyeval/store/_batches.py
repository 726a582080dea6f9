"""Provider batches a run submitted, and what each of their requests is: ``store.batches``.

A batch outlives the process that submitted it, so its ids and its requests (each by the
hash of the call's cache key, with the phase and the run index) are kept here the moment
it is created; the answers are kept once it ends. A later run of the same command reads
the batches not yet consumed (:meth:`Batches.open_requests`) and collects them instead of
submitting the same requests again; the run that used a batch's answers marks it
consumed, so the next run asks afresh. Plain SQL text, like the cache's repository.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._cache import Transaction
from ._util import canonical_json, loads, new_id, redact_json, utc_timestamp

__all__ = ["BatchRecord", "BatchRequestRecord", "Batches"]

_BATCH_COLUMNS = (
    "id, vendor, model, model_ref, api_url, remote_id, state, phase, kind, total, done, "
    "failed, consumed, created_at, updated_at"
)


@dataclass(frozen=True)
class BatchRecord:
    id: str
    vendor: str
    model: str
    model_ref: str
    api_url: str
    remote_id: str
    state: str  # running, ended, expired, failed, cancelled
    phase: str
    kind: str
    total: int
    done: int
    failed: int
    consumed: bool
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class BatchRequestRecord:
    batch_id: str
    custom_id: str
    key_hash: str
    phase: str
    subject: str
    run_index: int
    status: str  # pending, succeeded, errored, missing
    answer: Any  # the answer's data (completion_data), once succeeded
    error: str | None


def _batch(row: Sequence[Any]) -> BatchRecord:
    values = list(row)
    values[12] = bool(values[12])
    return BatchRecord(*values)


class Batches:
    """``store.batches`` on a store's read and write transactions."""

    def __init__(self, read: Transaction, write: Transaction) -> None:
        self._read = read
        self._write = write

    def add(
        self,
        *,
        vendor: str,
        model: str,
        model_ref: str,
        api_url: str,
        remote_id: str,
        phase: str,
        kind: str,
        requests: Sequence[tuple[str, str, str, str, int]],
    ) -> str:
        """A batch just created at the vendor, with its requests ``(custom_id, key_hash,
        phase, subject, run_index)``; returns its id here."""
        batch_id, now = new_id(), utc_timestamp()
        with self._write("recording a batch") as sql:
            sql.run(
                f"INSERT INTO batches ({_BATCH_COLUMNS}) VALUES (:id, :vendor, :model, "
                ":model_ref, :api_url, :remote_id, 'running', :phase, :kind, :total, 0, 0, "
                ":consumed, :now, :now)",
                {
                    "id": batch_id, "vendor": vendor, "model": model, "model_ref": model_ref,
                    "api_url": api_url, "remote_id": remote_id, "phase": phase, "kind": kind,
                    "total": len(requests), "consumed": False, "now": now,
                },
            )  # fmt: skip
            sql.run(
                "INSERT INTO batch_requests (batch_id, custom_id, key_hash, phase, subject, "
                "run_index, status) VALUES (:b, :c, :k, :p, :s, :r, 'pending')",
                [
                    {"b": batch_id, "c": c, "k": k, "p": p, "s": s, "r": r}
                    for c, k, p, s, r in requests
                ],
            )
        return batch_id

    def update(self, batch_id: str, *, state: str, done: int, total: int, failed: int) -> None:
        with self._write("updating a batch") as sql:
            sql.run(
                "UPDATE batches SET state = :state, done = :done, total = :total, "
                "failed = :failed, updated_at = :now WHERE id = :id",
                {"state": state, "done": done, "total": total, "failed": failed,
                 "now": utc_timestamp(), "id": batch_id},
            )  # fmt: skip

    def save_results(
        self, batch_id: str, results: Sequence[tuple[str, str, Any, str | None]]
    ) -> None:
        """Each request's outcome ``(custom_id, status, answer data, error)``."""
        if not results:
            return
        with self._write("keeping a batch's results") as sql:
            sql.run(
                "UPDATE batch_requests SET status = :status, answer = :answer, error = :error "
                "WHERE batch_id = :b AND custom_id = :c",
                [
                    {
                        "b": batch_id,
                        "c": c,
                        "status": status,
                        "answer": None if answer is None else canonical_json(redact_json(answer)),
                        "error": error,
                    }
                    for c, status, answer, error in results
                ],
            )

    def consume(self, batch_ids: Sequence[str]) -> None:
        """The run used these batches' answers: the next run asks afresh."""
        with self._write("finishing batches") as sql:
            for batch_id in batch_ids:
                sql.run(
                    "UPDATE batches SET consumed = :yes, updated_at = :now WHERE id = :id",
                    {"yes": True, "now": utc_timestamp(), "id": batch_id},
                )

    def list(self, *, include_consumed: bool = False, limit: int = 50) -> list[BatchRecord]:
        where = "" if include_consumed else "WHERE consumed = :no "
        with self._read("reading batches") as sql:
            rows = sql.rows(
                f"SELECT {_BATCH_COLUMNS} FROM batches {where}ORDER BY created_at DESC, id "
                f"LIMIT {int(limit)}",
                {"no": False},
            )
            return [_batch(r) for r in rows]

    def get(self, batch_id: str) -> BatchRecord | None:
        with self._read("reading a batch") as sql:
            rows = list(
                sql.rows(
                    f"SELECT {_BATCH_COLUMNS} FROM batches WHERE id = :id OR remote_id = :id",
                    {"id": batch_id},
                )
            )
        return _batch(rows[0]) if rows else None

    def requests(self, batch_id: str) -> list[BatchRequestRecord]:
        with self._read("reading a batch's requests") as sql:
            rows = sql.rows(
                "SELECT batch_id, custom_id, key_hash, phase, subject, run_index, status, "
                "answer, error FROM batch_requests WHERE batch_id = :b ORDER BY custom_id",
                {"b": batch_id},
            )
            return [BatchRequestRecord(*r[:7], loads(r[7]) if r[7] else None, r[8]) for r in rows]

    def open_requests(self) -> list[tuple[BatchRecord, BatchRequestRecord]]:
        """Every request of a batch not yet consumed, with its batch."""
        found: list[tuple[BatchRecord, BatchRequestRecord]] = []
        for batch in self.list(limit=10_000):
            found.extend((batch, r) for r in self.requests(batch.id))
        return found
