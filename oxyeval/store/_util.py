"""Small value helpers shared by the repositories: timestamps, canonical JSON, ids, redaction,
and the slices a long list of keys is read in."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from ..inputs import lenient_loads, valid_text
from ..redact import redact

T = TypeVar("T")

__all__ = [
    "IN_LIST_SIZE",
    "LATEST_CHUNK",
    "baseline_key",
    "branch_id",
    "canonical_json",
    "case_id",
    "chunks",
    "content_hash",
    "insert_sql",
    "loads",
    "new_id",
    "newest_of_each",
    "redact_json",
    "redact_text",
    "utc_timestamp",
    "valid_params",
]


#: Values per ``IN (...)`` list or per batch of OR-ed terms: well under SQLite's
#: bound-parameter limit, and few statements for a large run.
IN_LIST_SIZE = 400
#: Subjects whose newest rows one statement reads (a UNION ALL of one indexed
#: subquery each: SQLite allows 500 terms in one compound SELECT).
LATEST_CHUNK = 200


def chunks(items: Sequence[T], size: int = IN_LIST_SIZE) -> Iterator[Sequence[T]]:
    """``items`` in slices of ``size``: one statement each."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def in_list(values: Sequence[Any], prefix: str = "v") -> tuple[dict[str, Any], str]:
    """Named parameters for an ``IN (...)`` of ``values`` (a chunk of them), and the
    marks to put between the parentheses."""
    params = {f"{prefix}{n}": value for n, value in enumerate(values)}
    return params, ", ".join(f":{name}" for name in params)


def rows_in(
    sql: Any,
    query: str,
    values: Sequence[Any],
    params: Mapping[str, Any] | None = None,
    *,
    lock: bool = False,
) -> Iterator[Any]:
    """The rows of ``query`` for ``values``, a statement per chunk of them: its
    ``{marks}`` is the chunk's ``IN`` list, ``params`` its other parameters; ``sql`` is a
    store's plain-SQL reader (``lock``: the rows stay locked, see ``_SaSql.rows``)."""
    for chunk in chunks(values):
        names, marks = in_list(chunk)
        if params:
            names.update(params)
        text = query.format(marks=marks)
        yield from (sql.rows(text, names, lock=True) if lock else sql.rows(text, names))


_CANONICAL_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", re.ASCII)


def utc_timestamp(value: str | datetime | date | None = None) -> str:
    """ISO-8601 UTC with milliseconds and ``Z``: one format so string order is time order
    on every backend (timestamps are stored as text; SQLite has no timestamp type)."""
    if value is None:
        dt = datetime.now(timezone.utc)
    elif isinstance(value, str) and _CANONICAL_TIME.fullmatch(value):
        return value  # already this form (what every stored row holds): as it would be made
    elif isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not an ISO-8601 timestamp: {value!r}") from None
    else:
        raise TypeError(f"timestamp must be str, datetime or None, not {type(value).__name__}")
    dt = dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _json_default(obj: Any) -> Any:
    # YAML loads unquoted dates as date objects; keep them hashable and round-trippable.
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    raise TypeError(f"cannot store {type(obj).__name__} as JSON")


#: One encoder for every call (``json.dumps`` with options builds one per call); it
#: keeps no state between calls, so threads share it.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_default
).encode


def canonical_json(obj: Any) -> str:
    """Sorted keys, no whitespace: equal content must give equal text (and equal hashes)."""
    return _CANONICAL(obj)


def content_hash(content: Any) -> str:
    """sha256 of the canonical JSON; what makes 'same content -> same version' hold."""
    return text_hash(canonical_json(content))


def text_hash(canonical: str) -> str:
    """:func:`content_hash` of what ``canonical`` is the canonical JSON of (a value that
    carries its own, such as a model's cache key)."""
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def baseline_key(expected_output: str | None, similarity_method: str) -> str:
    """What makes two judged executions comparable: the same expected output, scored the
    same way (a short hash, so an index over it stays small)."""
    return content_hash([expected_output, similarity_method])[:32]


def loads(text: str | None) -> Any:
    """A JSON column read back. Leniently: a row an older version stored with ``NaN`` or an
    integer Python cannot read answers ``null`` there rather than fail every query that
    selects it."""
    return None if text is None else lenient_loads(text)


def new_id() -> str:
    return uuid.uuid4().hex


def new_ids(count: int) -> list[str]:
    """``count`` ids for rows written together: UUID version 7 (RFC 9562), the time in
    milliseconds first, then 74 random bits, in ascending order.

    Why time first: a batch's rows go into each id index next to each other, at its end,
    instead of at as many random places (random ids made a run's inserts a quarter
    slower, more so as the history grows). Why one read of the system's randomness:
    each ``uuid4()`` is a system call that lets go of the interpreter lock, and a worker
    thread making a batch's ids one by one waited for the lock again after each."""
    prefix = (time.time_ns() // 1_000_000 & (1 << 48) - 1) << 80 | 7 << 76 | 2 << 62
    raw = os.urandom(10 * count)
    wanted = (1 << 74) - 1
    randoms = sorted(
        int.from_bytes(raw[i : i + 10], "big") & wanted for i in range(0, 10 * count, 10)
    )
    # 12 random bits after the version, 62 after the variant
    return [f"{prefix | (r >> 62 & 0xFFF) << 64 | r & (1 << 62) - 1:032x}" for r in randoms]


def case_id(prompt_id: str, name: str) -> str:
    """The id of a prompt's test case, ``<prompt>::<case name>``: one rule for cases declared
    in YAML and cases created through the API, so a case is found by the same full id
    (``oxy cases show sentiment::positive``) and keeps its history however it was made."""
    return f"{prompt_id}::{name}"


def branch_id(test_case_id: str, name: str) -> str:
    """The id of a test case's A/B branch, ``<case id>@<branch name>``: stable, so a branch
    declared in YAML keeps its history across edits of its settings (as case ids do)."""
    return f"{test_case_id}@{name}"


def redact_text(text: str | None) -> str | None:
    """The store is the last line of defence: no registered secret reaches a row."""
    return None if text is None else redact(text)


def redact_json(value: Any) -> Any:
    """Redact every string inside a JSON-like value (before it is serialised, so escaping
    cannot hide a secret from the scrubber)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)): redact_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_json(v) for v in value]
    return value


def valid_params(params: Any) -> Any:
    """Statement parameters with every string made valid text (:mod:`oxyeval.inputs`).

    Both stores pass every statement's parameters through here (the lean one in its
    cursor, the SQLAlchemy one in a ``before_cursor_execute`` hook): text is made valid
    where it enters the program, and this is the defence behind that, because a lone
    surrogate in one column made the driver raise UnicodeEncodeError and the whole run's
    results were lost.
    """
    if not _has_invalid_text(params):  # nearly always: nothing rebuilt
        return params
    if isinstance(params, str):
        return valid_text(params)
    if isinstance(params, dict):
        return {k: valid_params(v) for k, v in params.items()}
    if isinstance(params, (list, tuple)):
        return type(params)(valid_params(v) for v in params)
    return params


def _has_invalid_text(params: Any) -> bool:
    """Whether any string in ``params`` holds a surrogate (one walk, nothing copied: a
    batch of 500 executions has 15,000 parameters)."""
    stack = [params]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if not value.isascii() and valid_text(value) is not value:
                return True
            continue
        if isinstance(value, dict):
            items: Any = value.values()
        elif isinstance(value, (list, tuple)):
            items = value
        else:
            continue
        for item in items:  # a row's values looked at here, not each pushed and popped
            kind = type(item)
            if kind is str:
                if not item.isascii() and valid_text(item) is not item:
                    return True
            elif kind not in _NO_TEXT:
                stack.append(item)
    return False


_NO_TEXT = frozenset({int, float, bool, type(None), bytes})


def newest_of_each(select: str, wheres: Sequence[str], order: str) -> str:
    """One statement reading, for each condition in ``wheres``, the newest rows of
    ``select`` (a SELECT ... FROM ... WHERE, to which each condition is added with AND)
    by ``order``, at most ``:limit`` of them: a UNION ALL of one subquery each, so each
    is an index walk that stops at the limit (a window over every row of a key read its
    whole history, so each run read more than the one before). At most LATEST_CHUNK
    conditions per statement."""
    return " UNION ALL ".join(
        f"SELECT * FROM ({select} AND {where} ORDER BY {order} LIMIT :limit) AS t{n}"
        for n, where in enumerate(wheres)
    )


def insert_sql(table: str, columns: Iterable[str]) -> str:
    """An INSERT of ``columns`` (our own names, never a value) as named parameters: what
    the lean store and the results table run as plain SQL text."""
    names = list(columns)
    return f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(':' + c for c in names)})"
