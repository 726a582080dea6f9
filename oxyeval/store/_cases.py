"""Test cases: created through the API, or synced from YAML files (same id, same history).

Either way a case is identified as ``<prompt>::<case name>`` (:func:`case_id`), so a name
is unique within its prompt and the full id the CLI takes finds every case."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..inputs import value_problem
from ._case_rows import Listing, Unlisted, case_row, texts_once
from ._core import _SaSql, executemany
from ._errors import AlreadyExistsError, NameTakenError, NotFoundError
from ._prompts import _upsert, ensure_prompt_row
from ._rows import TestCase
from ._tables import test_cases
from ._util import (
    canonical_json,
    case_id,
    chunks,
    insert_sql,
    loads,
    redact_text,
    rows_in,
    utc_timestamp,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from ._core import Store

__all__ = ["Cases", "case_row"]

_FIELDS = frozenset(
    {"prompt_id", "name", "description", "input", "expected_output", "threshold", "source_file"}
)
_C = test_cases.c
_COLUMNS = ", ".join(c.name for c in test_cases.c)
#: What a sync writes of a new case (the aggregates start at their defaults).
_SYNCED = (
    "prompt_id",
    "name",
    "description",
    "input",
    "expected_output",
    "threshold",
    "source_file",
)
_INSERT_NEW = (
    insert_sql("test_cases", ("id", "created_at", "updated_at", *_SYNCED))
    + " ON CONFLICT (id) DO NOTHING"
)
_INSERT_CHUNK = 2_000  # new cases inserted per statement by a sync


def check_fields(fields: Mapping[str, Any]) -> None:
    """The spec's types, enforced here so every caller (CLI, API, GraphQL) gets them."""
    if "name" in fields and not fields["name"]:
        raise ValueError("a test case needs a non-empty name")
    if "input" in fields and not isinstance(fields["input"], dict):
        raise TypeError(
            f"input must be a mapping of template variables, not {type(fields['input']).__name__}"
        )
    if "input" in fields:
        # stored as JSON and answered as JSON: only what strict JSON can hold
        problem = value_problem(fields["input"], "input")
        if problem is not None:
            raise ValueError(problem)
    expected = fields.get("expected_output")
    if expected is not None and not isinstance(expected, str):
        raise TypeError(f"expected_output must be a string or None, not {type(expected).__name__}")
    threshold = fields.get("threshold")
    if threshold is not None and not (
        isinstance(threshold, (int, float)) and 0.0 <= threshold <= 1.0
    ):
        raise ValueError(f"threshold must be between 0 and 1, got {threshold!r}")


def _stored(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Column values: input as canonical JSON, expected output redacted (it may be an
    accepted model output)."""
    out = dict(fields)
    if "input" in out:
        out["input"] = canonical_json(out["input"])
    if "expected_output" in out:
        out["expected_output"] = redact_text(out["expected_output"])
    return out


class _Clash(Exception):
    """The live-name index refused an insert (see :meth:`Cases._insert`)."""


def _name_clash(exc: Exception) -> bool:
    """Whether an IntegrityError is the live-name index's (SQLite names its columns,
    PostgreSQL the index)."""
    text = str(getattr(exc, "orig", exc))
    return "uq_test_cases_live_name" in text or "test_cases.prompt_id, test_cases.name" in text


class Cases:
    def __init__(self, store: Store) -> None:
        self._store = store

    def _name_free(self, conn: Connection, prompt_id: str, name: str, case_id: str) -> None:
        """Refuse ``name`` when another live case of the prompt has it. Checked in the
        write's own transaction (SQLite's writes queue; on PostgreSQL the unique index
        ``uq_test_cases_live_name`` stops the writer that loses a race, see
        :meth:`_insert`)."""
        taken = conn.execute(
            sa.select(_C.id).where(
                _C.prompt_id == prompt_id,
                _C.name == name,
                _C.deleted_at.is_(None),
                _C.id != case_id,
            )
        ).scalar()
        if taken is not None:
            raise self._taken(prompt_id, name, taken)

    def _taken(self, prompt_id: str, name: str, taken: str) -> NameTakenError:
        return NameTakenError(
            f"prompt {prompt_id!r} already has a test case named {name!r} (id {taken!r}) in "
            f"{self._store.path}; a name is used once per prompt: rename or delete that "
            "case, or give this one another name",
            path=self._store.path,
            taken=taken,
        )

    @staticmethod
    def _insert(conn: Connection, values: Mapping[str, Any]) -> bool:
        """Insert a case row unless its id exists (False then). A live case of the same
        name that another writer committed meanwhile raises :class:`_Clash`: the
        transaction is then unusable on PostgreSQL, so the caller names the case after."""
        insert = _upsert(conn)
        try:
            done = conn.execute(
                insert(test_cases)
                .values(**values)
                .on_conflict_do_nothing(index_elements=["id"])
                # PostgreSQL reports no row count for an INSERT unless asked to keep it.
                .execution_options(preserve_rowcount=True)
            )
        except sa.exc.IntegrityError as exc:
            if _name_clash(exc):
                raise _Clash from None
            raise
        return done.rowcount != 0

    def _clash(self, prompt_id: str, name: str) -> NameTakenError:
        """The error for a name another writer took first, naming its case."""
        with self._store.read("reading a test case") as conn:
            taken = conn.execute(
                sa.select(_C.id).where(
                    _C.prompt_id == prompt_id, _C.name == name, _C.deleted_at.is_(None)
                )
            ).scalar()
        return self._taken(prompt_id, name, taken or "?")

    def _row(self, conn: Connection, case_id: str, *, deleted: bool, lock: bool = False) -> Any:
        q = sa.select(test_cases).where(_C.id == case_id)
        if not deleted:
            q = q.where(_C.deleted_at.is_(None))
        if lock:
            q = q.with_for_update()
        return conn.execute(q).first()

    def create(
        self,
        prompt_id: str,
        name: str,
        input: dict[str, Any],
        expected_output: str | None = None,
        description: str | None = None,
        *,
        id: str | None = None,
        threshold: float | None = None,
        source_file: str | None = None,
        created_at: str | None = None,
    ) -> TestCase:
        """Insert a new case, identified as ``<prompt>::<name>`` unless ``id`` says otherwise.

        As in a YAML file, a name is used once per prompt: a live case with the same id is
        an :class:`AlreadyExistsError`, never an overwrite (change it with :meth:`update`).
        A soft-deleted one comes back with the new fields and its history, as a case
        declared again in its file does.
        """
        fields = {
            "prompt_id": prompt_id,
            "name": name,
            "description": description,
            "input": input,
            "expected_output": expected_output,
            "threshold": threshold,
            "source_file": source_file,
        }
        check_fields(fields)
        new = id or case_id(prompt_id, name)
        now = utc_timestamp(created_at)
        try:
            with self._store.write("creating a test case") as conn:
                ensure_prompt_row(conn, prompt_id, now)
                self._name_free(conn, prompt_id, name, new)
                values = {"id": new, "created_at": now, "updated_at": now, **_stored(fields)}
                if not self._insert(conn, values):
                    row = self._row(conn, new, deleted=True, lock=True)
                    if row.deleted_at is None:
                        raise AlreadyExistsError(
                            f"test case {new!r} already exists in {self._store.path} (prompt "
                            f"{row.prompt_id!r}, case {row.name!r}); a case name is used once "
                            f"per prompt: change that case with store.cases.update({new!r}, ...)",
                            path=self._store.path,
                        )
                    self._apply(conn, row, fields, now, undelete=True)
                row = self._row(conn, new, deleted=True)
        except _Clash:
            raise self._clash(prompt_id, name) from None
        return case_row(row)

    def _apply(
        self,
        conn: Connection,
        row: Any,
        changes: Mapping[str, Any],
        now: str,
        *,
        undelete: bool = False,
    ) -> bool:
        """Write only fields that really differ; bump updated_at only if something did."""
        stored = _stored(changes)
        sets = {k: v for k, v in stored.items() if getattr(row, k) != v}
        if "input" in sets and canonical_json(loads(row.input)) == sets["input"]:
            del sets["input"]  # same mapping, other spelling
        if undelete and row.deleted_at is not None:
            sets["deleted_at"] = None
        if not sets:
            return False
        if "prompt_id" in sets:
            ensure_prompt_row(conn, sets["prompt_id"], now)
        try:
            conn.execute(test_cases.update().where(_C.id == row.id).values(updated_at=now, **sets))
        except sa.exc.IntegrityError as exc:
            if _name_clash(exc):
                raise _Clash from None
            raise
        return True

    def update(self, case_id: str, **fields: Any) -> TestCase:
        """Partial update of a live case; unknown (or deleted) id -> NotFoundError."""
        unknown = set(fields) - _FIELDS
        if unknown:
            raise TypeError(f"update() got unknown field(s) {sorted(unknown)}")
        check_fields(fields)
        now = utc_timestamp()
        try:
            with self._store.write("updating a test case") as conn:
                row = self._row(conn, case_id, deleted=False, lock=True)
                if row is None:
                    raise NotFoundError(
                        f"no test case {case_id!r} in {self._store.path}", path=self._store.path
                    )
                where = (fields.get("prompt_id", row.prompt_id), fields.get("name", row.name))
                if where != (row.prompt_id, row.name):
                    self._name_free(conn, *where, case_id)
                self._apply(conn, row, fields, now)
                row = self._row(conn, case_id, deleted=False)
        except _Clash:
            raise self._clash(*where) from None
        return case_row(row)

    def update_expected_output(self, case_id: str, output: str) -> TestCase:
        """Accept new behaviour as the baseline (the Testing API's updateExpectedOutput)."""
        return self.update(case_id, expected_output=output)

    def upsert(
        self,
        id: str,
        prompt_id: str,
        name: str,
        input: dict[str, Any],
        expected_output: str | None = None,
        description: str | None = None,
        *,
        threshold: float | None = None,
        source_file: str | None = None,
    ) -> TestCase:
        """Sync a YAML-declared case: keep id, created_at and history; touch updated_at on
        change. Re-declaring a soft-deleted case brings it back (with its history).

        Safe when two processes sync the same file at once: the insert ignores a conflict
        and the row is then locked before it is compared and changed.
        """
        if not id:
            raise ValueError("a synced test case needs a non-empty id")
        fields = {
            "prompt_id": prompt_id,
            "name": name,
            "description": description,
            "input": input,
            "expected_output": expected_output,
            "threshold": threshold,
            "source_file": source_file,
        }
        check_fields(fields)
        now = utc_timestamp()
        try:
            with self._store.write("saving a test case") as conn:
                ensure_prompt_row(conn, prompt_id, now)
                self._name_free(conn, prompt_id, name, id)
                values = {"id": id, "created_at": now, "updated_at": now, **_stored(fields)}
                if not self._insert(conn, values):
                    row = self._row(conn, id, deleted=True, lock=True)
                    self._apply(conn, row, fields, now, undelete=True)
                row = self._row(conn, id, deleted=True)
        except _Clash:
            raise self._clash(prompt_id, name) from None
        return case_row(row)

    def sync(self, declared: Mapping[str, Mapping[str, Any]]) -> None:
        """:meth:`upsert` of many cases (id -> fields), in one transaction: a few
        statements per few hundred cases, and none for a case that has not changed (what
        a run of a file of thousands of cases does before it starts). A name another live
        case has is a :class:`NameTakenError` naming both (``wanted``, ``taken``)."""
        self._sync_all(declared, Unlisted())

    def synced(self, prompt_id: str, declared: Mapping[str, Mapping[str, Any]]) -> list[TestCase]:
        """:meth:`sync` of one prompt's cases, then the prompt's live cases as :meth:`list`
        gives them, read back only when the sync cannot know them: a case it changed, or
        a live case of the prompt it was not given (made through the API, or no longer
        declared). A run of a file of 10,000 new or unchanged cases reads none back."""
        listing = Listing(prompt_id)
        self._sync_all(declared, listing)
        return listing.cases() if listing.complete else self.list(prompt_id)

    def _sync_all(self, declared: Mapping[str, Mapping[str, Any]], listing: Listing) -> None:
        if not declared:
            listing.complete = False
            return
        for cid, fields in declared.items():
            if not cid:
                raise ValueError("a synced test case needs a non-empty id")
            check_fields(fields)
        now = utc_timestamp()
        try:
            with self._store.write("saving test cases") as conn:
                self._sync(conn, declared, now, listing)
        except _Clash:  # another writer took a name meanwhile: one case at a time says which
            listing.complete = False
            for cid, fields in declared.items():
                try:
                    self.upsert(cid, **fields)
                except NameTakenError as error:
                    error.wanted = error.wanted or cid
                    raise

    def _sync(
        self,
        conn: Connection,
        declared: Mapping[str, Mapping[str, Any]],
        now: str,
        listing: Listing,
    ) -> None:
        sql = _SaSql(conn)
        by_prompt: dict[str, dict[str, str]] = {}  # prompt -> name -> the id declaring it
        for cid, fields in declared.items():
            by_prompt.setdefault(fields["prompt_id"], {})[fields["name"]] = cid
        taken: dict[str, str] = {}  # declared id -> the live case holding its name
        for prompt_id, names in sorted(by_prompt.items()):
            ensure_prompt_row(conn, prompt_id, now)
            live = (
                "SELECT id, name FROM test_cases WHERE prompt_id = :prompt_id "
                "AND deleted_at IS NULL AND name IN ({marks})"
            )
            for r in rows_in(sql, live, sorted(names), {"prompt_id": prompt_id}):
                if r.id != names[r.name]:
                    taken[names[r.name]] = r.id
        for cid, fields in declared.items():  # the first in the files' order is said
            if cid in taken:
                error = self._taken(fields["prompt_id"], fields["name"], taken[cid])
                error.wanted = cid
                raise error
        # The stored cases, locked in id order (two bulk writers never deadlock), each
        # brought up to date as its statement's rows are read: the rows of 100,000 stored
        # cases read at once were a replay's peak memory. Plain SQL: compiling an IN of
        # hundreds of ids cost more than the read.
        stored: set[str] = set()
        query = f"SELECT {_COLUMNS} FROM test_cases WHERE id IN ({{marks}}) ORDER BY id"
        for row in rows_in(sql, query, sorted(declared), lock=True):
            stored.add(row.id)
            changed = self._apply(conn, row, declared[row.id], now, undelete=True)
            listing.kept(row, changed, declared[row.id])
        new = [cid for cid in declared if cid not in stored]
        # A few thousand rows per statement: the rows of 100,000 new cases made at once
        # were most of a large run's memory before its first case ran. Plain SQL run by
        # the driver's executemany: SQLAlchemy's own insert of many rows cost more.
        for chunk in chunks(new, _INSERT_CHUNK):
            rows = []
            for cid in chunk:
                stored_fields = _stored(declared[cid])
                row = {c: stored_fields.get(c) for c in _SYNCED}
                row.update(id=cid, created_at=now, updated_at=now)
                row["input"] = row["input"] or "{}"
                rows.append(row)
            try:
                done = executemany(conn, _INSERT_NEW, rows)
            except sa.exc.IntegrityError as exc:
                if _name_clash(exc):
                    raise _Clash from None
                raise
            listing.inserted(rows, done, declared)
        listing.check(conn, by_prompt)

    def delete(self, case_id: str) -> bool:
        """Soft delete: hidden from lists, executions kept. False if unknown or already deleted."""
        now = utc_timestamp()
        with self._store.write("deleting a test case") as conn:
            done = conn.execute(
                test_cases.update()
                .where(_C.id == case_id, _C.deleted_at.is_(None))
                .values(deleted_at=now, updated_at=now)
            )
            return done.rowcount == 1

    def get(self, case_id: str, *, include_deleted: bool = False) -> TestCase | None:
        with self._store.read("reading a test case") as conn:
            row = self._row(conn, case_id, deleted=include_deleted)
        return None if row is None else case_row(row)

    def list(
        self, prompt_id: str | None = None, *, include_deleted: bool = False
    ) -> list[TestCase]:
        """Reads only the maintained aggregates: cost does not grow with history.
        Ordered by prompt, then creation (seq breaks ties within a millisecond)."""
        # Plain SQL (the driver's rows, no per-column processing): a run of a file of
        # 10,000 cases lists them all before it starts.
        where, params = [], {}
        if prompt_id is not None:
            where.append("prompt_id = :prompt_id")
            params["prompt_id"] = prompt_id
        if not include_deleted:
            where.append("deleted_at IS NULL")
        sql = f"SELECT {_COLUMNS} FROM test_cases"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._store.read("listing test cases") as conn:
            rows = _SaSql(conn).rows(sql + " ORDER BY prompt_id, created_at, seq", params)
        one = texts_once()
        return [case_row(r, one) for r in rows]
