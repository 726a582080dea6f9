"""SQL as DuckDB itself reads it: what kind a statement is, and where its strings are.

Every decision that depends on SQL syntax asks DuckDB's own parser
(``extract_statements``) and tokenizer (``tokenize``), never a scanner of ours: a
second lexer disagrees with the engine somewhere (a ``$é$`` dollar-quote tag, string
literals DuckDB joins across a line break), and each disagreement is a way around the
checks. Only parsing happens here; nothing is executed.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_SQL_CHARS",
    "READ_KINDS",
    "WRITE_KINDS",
    "Refused",
    "Token",
    "file_references",
    "first_line",
    "statement_kind",
    "tokens",
    "too_long",
]

# DuckDB's StatementType names, by what they may do. Anything else (PREPARE, EXECUTE,
# TRANSACTION, SET, LOAD/INSTALL, MULTI...) is refused everywhere.
READ_KINDS = frozenset({"SELECT", "PRAGMA", "CALL"})
WRITE_KINDS = frozenset(
    {
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE_INTO",
        "CREATE",
        "CREATE_FUNC",
        "DROP",
        "ALTER",
        "COPY",
        "EXPORT",
        "ATTACH",
        "DETACH",
        "COPY_DATABASE",
        "VACUUM",
        "ANALYZE",
        "CHECKPOINT",  # ours: CALL checkpoint() / CHECKPOINT, which DuckDB calls CALL
    }
)

# PRAGMAs that only read the catalogue or report a setting. Every other one is refused:
# import_database runs the statements of a folder's schema.sql and load.sql, others
# write files (profiling output) or change settings.
_READ_PRAGMAS = frozenset(
    {
        "table_info",
        "show",
        "show_tables",
        "show_tables_expanded",
        "show_databases",
        "database_list",
        "database_size",
        "storage_info",
        "metadata_info",
        "functions",
        "collations",
        "version",
        "platform",
        "user_agent",
        "disabled_optimizers",
    }
)
_WRITE_CALLS = frozenset({"checkpoint", "force_checkpoint"})
#: Characters of one SQL statement. DuckDB's parser takes about 1 KB of memory per
#: character (1 MB of SQL: over 800 MB, in the unsandboxed process too, for validate).
MAX_SQL_CHARS = 200_000
_MAX_EXPLAIN = 8  # EXPLAIN EXPLAIN ... nested deeper is refused, not unwrapped forever


class Refused(Exception):
    """A statement that may not run; the message says why, for ``database 'x': ...``.
    ``kinds`` are the statements' kinds when there were several (or none)."""

    def __init__(self, message: str, kinds: list[str] | None = None) -> None:
        super().__init__(message)
        self.kinds = kinds

    def worded(self, select_only: bool) -> str:
        """The message, in the words of an agent tool when that is where the SQL ran."""
        if select_only and self.kinds is not None:
            return (
                "only one read-only SELECT statement is allowed here "
                f"(got {', '.join(self.kinds) or 'nothing'})"
            )
        return str(self)


@dataclass(frozen=True)
class Token:
    """One token of DuckDB's tokenizer: ``kind`` is its token type (``keyword``,
    ``identifier``, ``string_const``, ``comment``, ``numeric_const``, ``operator``),
    ``start``/``end`` character offsets (whitespace after it excluded)."""

    kind: str
    start: int
    end: int

    def text(self, sql: str) -> str:
        return sql[self.start : self.end]


def tokens(sql: str) -> list[Token]:
    """DuckDB's tokens of ``sql``, with character offsets (DuckDB counts UTF-8 bytes).

    A token runs to the next one's start, less the whitespace between: DuckDB skips
    nothing else, so every other character belongs to some token. Unterminated strings
    and comments are one token to the end, as DuckDB reads them."""
    import duckdb

    raw = duckdb.tokenize(sql)
    if not raw:
        return []
    starts = _char_offsets(sql, [position for position, _ in raw])
    out: list[Token] = []
    for i, (_, kind) in enumerate(raw):
        start = starts[i]
        end = starts[i + 1] if i + 1 < len(raw) else len(sql)
        while end > start and sql[end - 1].isspace():
            end -= 1
        out.append(Token(str(kind).rsplit(".", 1)[-1], start, end))
    return out


def _char_offsets(sql: str, byte_offsets: list[int]) -> list[int]:
    """Character offsets of UTF-8 byte offsets into ``sql`` (ascending, as tokens come)."""
    if sql.isascii():
        return byte_offsets
    out: list[int] = []
    byte = char = 0
    for wanted in byte_offsets:
        while byte < wanted and char < len(sql):
            byte += len(sql[char].encode("utf-8", "surrogatepass"))
            char += 1
        out.append(char)
    return out


def _words(sql: str) -> Iterator[tuple[Token, str]]:
    """Tokens other than comments, with their text lower-cased."""
    for token in tokens(sql):
        if token.kind != "comment":
            yield token, token.text(sql).lower()


def _kind_name(statement: Any) -> str:
    return str(statement.type).rsplit(".", 1)[-1]


@functools.lru_cache(maxsize=256)
def statement_kind(sql: str) -> str:
    """The kind of the one statement in ``sql``, as it would run, or :class:`Refused`.

    ``EXPLAIN ANALYZE X`` runs X, so it is X's kind; ``IMPORT DATABASE`` (a PRAGMA to
    DuckDB) runs every statement of a folder and is refused, as are PRAGMAs that are not
    plain reads. More than one statement is refused (one statement per task)."""
    return _kind(sql, 0)


def too_long(sql: str) -> str:
    """Why ``sql`` is too long to parse ('' when it is not)."""
    if len(sql) <= MAX_SQL_CHARS:
        return ""
    return (
        f"an SQL statement of {len(sql):,} characters; statements are limited to {MAX_SQL_CHARS:,}"
    )


def _kind(sql: str, depth: int) -> str:
    import duckdb

    if too_long(sql):
        raise Refused(too_long(sql))

    try:
        statements = duckdb.extract_statements(sql)
        kinds = [_kind_name(st) for st in statements]
    except duckdb.Error as exc:
        raise Refused(f"{type(exc).__name__}: {first_line(exc)}") from None
    except ValueError:  # a kind DuckDB parses but its Python client cannot name
        words = " ".join(w for _, w in itertools.islice(_words(sql), 2)).upper()
        raise Refused(f"{words or 'this'} statements are not allowed here") from None
    if len(kinds) != 1:
        raise Refused(
            f"one SQL statement per task, got {len(kinds)}"
            + (f" ({', '.join(kinds)})" if kinds else "")
            + "; split them into separate execute_sql tasks",
            kinds,
        )
    kind = kinds[0]
    if kind == "EXPLAIN":
        return _explained(sql, depth)
    if kind == "PRAGMA":
        return _pragma(sql)
    if kind == "CALL":
        return "CHECKPOINT" if _called(sql) in _WRITE_CALLS else "CALL"
    return kind


def _called(sql: str) -> str:
    """The function a CALL names, without its schema (``CALL main.checkpoint()``), or
    ``checkpoint`` for the CHECKPOINT statement, which DuckDB runs as a CALL."""
    words = [w for _, w in _words(sql)]
    if "checkpoint" in words[:2] and words[0] != "call":
        return "checkpoint"  # CHECKPOINT, FORCE CHECKPOINT
    name = words[1 : words.index("(")] if "(" in words else words[1:]
    return "".join(name).rsplit(".", 1)[-1].strip('"')


def _explained(sql: str, depth: int) -> str:
    """The kind of the statement an EXPLAIN wraps (EXPLAIN ANALYZE runs it)."""
    if depth >= _MAX_EXPLAIN:
        raise Refused("EXPLAIN nested too deeply")
    words = list(_words(sql))
    i = 1  # past EXPLAIN
    if i < len(words) and words[i][1] in ("analyze", "analyse"):
        i += 1
    elif i < len(words) and words[i][1] == "(":  # EXPLAIN (ANALYZE, FORMAT json) X
        level = 0
        while i < len(words):
            level += {"(": 1, ")": -1}.get(words[i][1], 0)
            i += 1
            if level == 0:
                break
    if i >= len(words):
        raise Refused("EXPLAIN of nothing")
    return _kind(sql[words[i][0].start :], depth + 1)


def _pragma(sql: str) -> str:
    words = [w for _, w in _words(sql)]
    if words[:3] == ["copy", "from", "database"]:
        return "COPY_DATABASE"  # DuckDB runs it as its copy_database pragma: a write
    if words[:2] == ["import", "database"] or (len(words) > 1 and words[1] == "import_database"):
        raise Refused(
            "IMPORT DATABASE is not allowed: it runs every statement of a folder's "
            "schema.sql and load.sql, unchecked"
        )
    name = words[1] if len(words) > 1 else ""
    if name not in _READ_PRAGMAS:
        raise Refused(
            f"PRAGMA {name or '(none)'} is not allowed here (only PRAGMAs that read the "
            f"catalogue: {', '.join(sorted(_READ_PRAGMAS))})"
        )
    return "PRAGMA"


def first_line(exc: BaseException) -> str:
    """DuckDB's message, first line only (later lines quote the query or a file), without
    advice to change a setting, which the locked sandbox would refuse."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first.split(' Use "SET ', 1)[0]


# -- files a SELECT names ----------------------------------------------------------------

_FILE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".json", ".jsonl", ".ndjson", ".gz", ".zst")
_READERS = frozenset({"parquet_scan", "read_blob", "read_text"})
_parser_lock = threading.Lock()


@functools.cache
def _parser() -> Any:
    """An in-memory DuckDB that only parses (no file access, nothing loaded)."""
    import duckdb

    conn = duckdb.connect(
        ":memory:",
        config={"autoload_known_extensions": False, "autoinstall_known_extensions": False},
    )
    conn.execute("SET enable_external_access = false")
    conn.execute("SET lock_configuration = true")
    return conn


def file_references(sql: str) -> list[str]:
    """The file names a SELECT reads, as written (``FROM orders.csv``, ``'~/x/*.csv'``,
    ``read_csv('a.csv')``): for saying which file is missing before the query runs.
    Other statements (DuckDB serialises only SELECTs) and unparseable SQL name none."""
    import json

    import duckdb

    if len(sql) > MAX_SQL_CHARS // 4:  # serialised, its tree takes several times the parse
        return []
    try:
        with _parser_lock:
            row = _parser().execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
        tree = json.loads(row[0]) if row else {}
    except (duckdb.Error, ValueError, RecursionError):
        return []
    if not isinstance(tree, dict) or tree.get("error"):
        return []
    found: list[str] = []
    _walk(tree, found, 0)
    return list(dict.fromkeys(found))


def _walk(node: Any, found: list[str], depth: int) -> None:
    if depth > 500:
        return
    if isinstance(node, list):
        for item in node:
            _walk(item, found, depth + 1)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind == "BASE_TABLE":
        path = (node.get("qualified_name") or {}).get("path") or [node.get("table_name", "")]
        name = ".".join(str(p) for p in path if p)
        if "/" in name or name.lower().endswith(_FILE_SUFFIXES):
            found.append(name)
    elif kind == "TABLE_FUNCTION":
        function = node.get("function") or {}
        name = str(function.get("function_name", "")).lower()
        if name.startswith("read_") or name in _READERS:
            arguments = function.get("arguments") or function.get("children") or []
            if arguments:
                first = arguments[0]
                _constants(first.get("expression", first), found)
    for value in node.values():
        if isinstance(value, (dict, list)):
            _walk(value, found, depth + 1)


def _constants(expression: Any, found: list[str]) -> None:
    """String constants of an argument: one file name, or a list_value of them."""
    if not isinstance(expression, dict):
        return
    literal = expression.get("literal")
    if expression.get("class") == "CONSTANT" and isinstance(literal, dict):
        if literal.get("kind") == "STRING":
            found.append(str(literal.get("text", "")))
        return
    if expression.get("function_name") == "list_value":
        for child in expression.get("arguments") or expression.get("children") or []:
            _constants(child.get("expression", child), found)
