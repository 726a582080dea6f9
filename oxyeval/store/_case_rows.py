"""A stored test case's row read into a :class:`~._rows.TestCase`, and a sync's cases
known as stored without reading them back (what :meth:`~._cases.Cases.synced` gives):
apart from the cases' writes so that the one mapping from a row to a case sits with the
rules of when a synced case equals it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._core import _SaSql
from ._rows import TestCase
from ._tables import test_cases
from ._util import loads

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

__all__ = ["Listing", "Unlisted", "case_row", "texts_once"]


def _same(text: str) -> str:
    return text


def texts_once() -> Callable[[str], str]:
    """A ``one`` for :func:`case_row`: equal texts given as one object, so the file, prompt
    and sync time that thousands of listed cases repeat are held once."""
    shared: dict[str, str] = {}
    return lambda text: shared.setdefault(text, text)


_AT = {c.name: n for n, c in enumerate(test_cases.c)}  # a column's place in a full row


def case_row(
    r: Sequence[Any], one: Callable[[str], str] = _same, *, stored_input: Any = None
) -> TestCase:
    """A stored case from a row of every column in table order, read by place (reading
    by name cost more than the rest of a listing of 10,000 cases); ``one``: gives the
    texts many cases of one listing repeat (their file, their prompt, the moment they
    were synced) as one object each; ``stored_input``: its input already read (None:
    read from the row)."""
    a = _AT
    source, last_passed = r[a["source_file"]], r[a["last_passed"]]
    return TestCase(
        id=r[a["id"]],
        prompt_id=one(r[a["prompt_id"]]),
        name=r[a["name"]],
        description=r[a["description"]],
        input=(loads(r[a["input"]]) or {}) if stored_input is None else stored_input,
        expected_output=r[a["expected_output"]],
        threshold=r[a["threshold"]],
        source_file=None if source is None else one(source),
        created_at=one(r[a["created_at"]]),
        updated_at=one(r[a["updated_at"]]),
        deleted_at=r[a["deleted_at"]],
        total_runs=r[a["total_runs"]],
        pass_count=r[a["pass_count"]],
        score_sum=r[a["score_sum"]],
        scored_runs=r[a["scored_runs"]],
        length_sum=r[a["length_sum"]],
        last_run=r[a["last_run"]],
        last_passed=None if last_passed is None else bool(last_passed),
    )


class Listing:
    """One prompt's live cases as a sync leaves them, known without reading them back:
    the rows it inserted and the unchanged rows it read. ``complete`` turns False when
    that is not all of them (a row changed, a row not inserted, a case it was not given),
    and :meth:`Cases.synced` lists them instead."""

    def __init__(self, prompt_id: str) -> None:
        self.prompt_id = prompt_id
        self.complete = True
        self._known: list[tuple[str, int, TestCase]] = []  # (created_at, seq, case)
        self._one = texts_once()

    def inserted(
        self,
        rows: Sequence[Mapping[str, Any]],
        done: int,
        declared: Mapping[str, Mapping[str, Any]],
    ) -> None:
        if done != len(rows):  # another writer's row was there (ON CONFLICT DO NOTHING)
            self.complete = False
        if not self.complete:
            return
        last = _NEW_SEQ + len(self._known)  # above every stored seq, in insertion order
        for n, row in enumerate(rows):
            case = TestCase(
                id=row["id"],
                prompt_id=row["prompt_id"],
                name=row["name"],
                description=row["description"],
                input=_as_read(declared[row["id"]].get("input"), row["input"]),
                expected_output=row["expected_output"],
                threshold=None if row["threshold"] is None else float(row["threshold"]),
                source_file=row["source_file"],
                created_at=row["created_at"],
                updated_at=row["updated_at"],
            )
            self._known.append((case.created_at, last + n, case))

    def kept(self, row: Any, changed: bool, fields: Mapping[str, Any]) -> None:
        if changed:
            self.complete = False
        elif self.complete:
            case = case_row(row, self._one, stored_input=_as_read(fields.get("input"), None))
            self._known.append((row.created_at, row.seq, case))

    def check(self, conn: Connection, prompts: Iterable[str]) -> None:
        """Complete only if the sync was of this prompt alone and it has no other live
        case than those known."""
        if not self.complete:
            return
        if set(prompts) != {self.prompt_id}:
            self.complete = False
            return
        query = "SELECT count(*) FROM test_cases WHERE prompt_id = :p AND deleted_at IS NULL"
        ((live,),) = _SaSql(conn).rows(query, {"p": self.prompt_id})
        self.complete = live == len(self._known)

    def cases(self) -> list[TestCase]:
        """In :meth:`Cases.list`'s order: by creation, then seq."""
        self._known.sort(key=lambda known: (known[0], known[1]))
        return [case for _at, _seq, case in self._known]


class Unlisted(Listing):
    """A sync whose caller lists nothing: nothing is kept or counted."""

    def __init__(self) -> None:
        super().__init__("")
        self.complete = False

    def inserted(self, *_args: Any) -> None:
        """Nothing kept."""

    def kept(self, *_args: Any) -> None:
        """Nothing kept."""

    def check(self, *_args: Any) -> None:
        """Nothing counted."""


#: The order a sync's new cases take after every stored one (their seqs are not read).
_NEW_SEQ = 1 << 62


def _as_read(given: Any, stored: str | None) -> Any:
    """A synced case's input as a listing reads it back from its ``stored`` JSON: the
    ``given`` mapping itself when reading back would give the same one, keys in the same
    order (text keys, already sorted, JSON values only), so a run of 100,000 cases does
    not hold every input twice while it syncs; else the stored text read (None: read
    from the row). The order matters: a template that prints a mapping prints it in
    that order, and a case must render the same whether or not its prompt changed."""
    if isinstance(given, dict) and _plain(given, 0):
        return given
    return None if stored is None else (loads(stored) or {})


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any, depth: int) -> bool:
    """Whether ``value`` reads back from its JSON as itself (checked inputs are finite)."""
    if type(value) in _SCALARS:
        return True
    if depth > 20:  # deeper inputs are read back, as they always were
        return False
    if type(value) is dict:
        keys = list(value)
        return (
            all(type(k) is str for k in keys)
            and keys == sorted(keys)
            and all(_plain(v, depth + 1) for v in value.values())
        )
    if type(value) is list:
        return all(_plain(v, depth + 1) for v in value)
    return False
