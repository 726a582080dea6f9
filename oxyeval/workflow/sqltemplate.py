"""SQL from templates, with values bound instead of spliced into the SQL text.

A workflow's SQL is a Jinja template, and the values it prints come from
``--var``, upstream tasks and model answers: text nobody checked. So in SQL,
only what the template's author wrote is SQL. Every ``{{ expression }}`` prints
a *value*, placed by where it stands in the SQL text:

* outside quotes: a bound parameter (``$1``, ``$2``...) of a DuckDB prepared
  statement, so ``WHERE amount > {{ min }}`` compares with the number;
* inside ``'...'``: string content with ``'`` doubled, so the usual
  ``WHERE region = '{{ region }}'`` keeps working and cannot be closed early;
* inside ``"..."``: identifier content with ``"`` doubled;
* inside a comment: its text, without line breaks or comment ends;
* inside a ``$$...$$`` string: an error (no escaping exists there).

Two filters are the explicit opt-ins: ``{{ col | sql_identifier }}`` prints a
quoted identifier (any value may name a column; it cannot change the syntax),
and ``{{ order_by | raw_sql }}`` prints SQL text, only for a workflow
variable's own value (its default in the file, or ``--var``), never a task
output or a model answer. Blocks whose text becomes a value (``{% macro %}``,
``{% call %}``, ``{% set %}...{% endset %}``, ``{% filter %}``) are not allowed
in SQL, since their SQL and their values could no longer be told apart.

A template that renders to one value and nothing else (``sql_query: "{{ sql }}"``,
SQL a model wrote) is that SQL statement: oxy's pattern for model-written SQL.
It runs as one statement in the same sandbox, and its ``{{ name }}`` placeholders
are filled from the task's own ``variables:``, as values by the same rules: the
text is never rendered as a template.

On a warehouse other than PostgreSQL (MySQL, ClickHouse, BigQuery, Snowflake, Redshift)
only the first way is open: a value is always a parameter the server binds. Their
quoting differs from the DuckDB tokenizer that places values (backslash escapes,
backquoted names, ``#`` comments), so text escaped for one could end a string for the
other; a value inside quotes or a comment, and ``sql_identifier``, are refused there.
PostgreSQL reads SQL as DuckDB does (DuckDB's parser is PostgreSQL's), with
``standard_conforming_strings`` set on for every statement.

Prior art: jinjasql binds every expression and has ``sqlsafe``/``identifier``
filters; dbt renders SQL text unescaped and trusts the project. We bind like
jinjasql and, unlike it, also escape values the author put inside quotes.
"""

from __future__ import annotations

import bisect
import contextvars
import datetime as _dt
import decimal
import functools
import re
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..inputs import valid_text
from ..project.templates import TemplateRef, render
from .sql import SqlError

if TYPE_CHECKING:
    from jinja2 import Template
    from jinja2.sandbox import SandboxedEnvironment

__all__ = ["QUOTING_DIALECTS", "BoundSql", "SqlTemplateRef", "render_sql", "sql_segments"]

#: Database types whose SQL reads as DuckDB's tokenizer reads it: values may stand inside
#: quotes and comments there, escaped; on the others every value is a bound parameter.
QUOTING_DIALECTS = frozenset({"duckdb", "postgres"})

_MARKER = re.compile(r"\x1a(\d+)-(\d+)\x1a")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_BLOCKS = {
    "Macro": "{% macro %}",
    "CallBlock": "{% call %}",
    "AssignBlock": "{% set %}...{% endset %}",
    "FilterBlock": "{% filter %}",
}


@dataclass(frozen=True)
class BoundSql:
    """SQL text with ``$n`` placeholders and the values they stand for."""

    text: str
    params: tuple[Any, ...] = ()
    upstream: bool = False  # the whole statement came from one value (model-written SQL)


class _Trusted:
    """SQL text the author chose to print as SQL (``raw_sql``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


class _Identifier(_Trusted):
    """A name to print as a quoted identifier (``sql_identifier``)."""

    __slots__ = ()


class _Render:
    """One rendering: the values printed so far, behind markers nobody can forge."""

    def __init__(self, trusted: frozenset[str] = frozenset(), *, quoting: bool = True) -> None:
        self.nonce = str(secrets.randbelow(10**12))
        self.values: list[tuple[str, Any]] = []
        self.trusted = trusted
        #: Values may stand inside quotes and comments (the database reads SQL as DuckDB's
        #: tokenizer does); else every value must be a parameter.
        self.quoting = quoting

    def marker(self, kind: str, value: Any) -> str:
        self.values.append((kind, value))
        return f"\x1a{self.nonce}-{len(self.values) - 1}\x1a"

    def lookup(self, match: re.Match[str]) -> tuple[str, Any] | None:
        if match.group(1) != self.nonce:
            return None
        return self.values[int(match.group(2))]


_STATE: contextvars.ContextVar[_Render | None] = contextvars.ContextVar(
    "oxyeval_sql_render", default=None
)


def _state() -> _Render:
    state = _STATE.get()
    if state is None:  # an SQL template rendered outside render_sql: a bug, never silent
        raise RuntimeError("SQL templates are rendered by oxyeval.workflow.sqltemplate.render_sql")
    return state


def _quote_identifier(name: Any) -> str:
    text = str(name)
    if not text:
        from jinja2 import TemplateRuntimeError

        raise TemplateRuntimeError("sql_identifier: an identifier cannot be empty")
    return '"' + text.replace('"', '""') + '"'


@functools.cache
def _sql_env() -> SandboxedEnvironment:
    """The sandboxed environment of every template, printing values as markers."""
    from jinja2 import Undefined, pass_context, pass_eval_context
    from jinja2.sandbox import SecurityError

    from ..project.templates import environment

    @pass_eval_context  # runtime only: Jinja must not fold constants through it
    def finalize(_ctx: Any, value: Any) -> str:
        state = _state()
        if isinstance(value, Undefined):
            str(value)  # StrictUndefined: raises the usual "is undefined" error
        if isinstance(value, _Identifier):
            return state.marker("identifier", value.text)
        if isinstance(value, _Trusted):
            return value.text
        return state.marker("value", value)

    @pass_context  # never folded at compile time: needs the rendering's trusted values
    def sql_identifier(_ctx: Any, value: Any) -> _Identifier:
        if isinstance(value, (list, tuple)):
            return _Identifier(", ".join(_quote_identifier(v) for v in value))
        return _Identifier(_quote_identifier(value))

    @pass_context
    def raw_sql(_ctx: Any, value: Any) -> _Trusted:
        if isinstance(value, str) and value in _state().trusted:
            return _Trusted(value)
        raise SecurityError(
            "raw_sql prints SQL text only from a workflow variable's own value (its default, "
            "--var or --vars), not from a task output, a model answer or a computed value; "
            "print values without it (they are bound), or names with sql_identifier"
        )

    env = environment().overlay(finalize=finalize)
    env.filters = {**env.filters, "sql_identifier": sql_identifier, "raw_sql": raw_sql}
    return env


class SqlTemplateRef(TemplateRef):
    """A template whose output is SQL: compiled with the binding environment."""

    __slots__ = ()

    def compiled(self) -> Template:
        if self._compiled is None:
            from jinja2 import TemplateSyntaxError, nodes

            env = _sql_env()
            try:
                tree = env.parse(self.source)
                for name, tag in _BLOCKS.items():
                    for node in tree.find_all(getattr(nodes, name)):
                        raise self.error(
                            f"{tag} is not allowed in SQL: the text it makes would be bound as "
                            "a value (see 'SQL safety' in docs/guides/workflows.md)",
                            node.lineno,
                        )
                self._compiled = env.from_string(tree)
            except TemplateSyntaxError as exc:
                raise self.syntax_error(exc) from None
        return self._compiled


# -- where values stand: DuckDB's own tokenizer decides ------------------------------------


def _is_word(ch: str) -> bool:
    """A character that continues a name or number to DuckDB (its scanner takes every
    non-ASCII character as a letter)."""
    return bool(ch) and (ch.isalnum() or ch in "_$" or not ch.isascii())


def _token_kind(text: str, kind: str) -> str:
    """What a token is, for placing a value in it."""
    if kind == "comment":
        return "line_comment" if text.startswith("--") else "block_comment"
    if kind == "identifier" and text.startswith('"'):
        return "identifier"
    if kind == "string_const":
        if text.startswith("'"):
            return "string"
        if text[:2] in ("E'", "e'"):
            return "estring"
        if text.startswith("$"):
            return "dollar"
        return "literal"  # X'..', B'..': no escape exists inside them
    return "code"


def sql_segments(text: str) -> Iterator[tuple[str, int, int]]:
    """``(kind, start, end)`` pieces of SQL text, in order, covering all of it, as DuckDB's
    tokenizer reads it (never a lexer of ours, which would disagree somewhere).

    Kinds: ``code``, ``string`` ('...'), ``estring`` (E'...', backslash escapes),
    ``identifier`` ("..."), ``line_comment``, ``block_comment``, ``dollar``
    ($tag$...$tag$), ``literal`` (X'..', B'..'). An unterminated piece runs to the end.
    """
    from ._sqlsyntax import tokens

    start = 0
    for token in tokens(text):
        kind = _token_kind(token.text(text), token.kind)
        if kind == "code":
            continue
        if start < token.start:
            yield "code", start, token.start
        yield kind, token.start, token.end
        start = token.end
    if start < len(text):
        yield "code", start, len(text)


# -- binding --------------------------------------------------------------------------------


def _text(value: Any) -> str:
    """A value as a template would print it (a lone surrogate, which neither DuckDB nor
    any writer can encode, replaced as everywhere text enters)."""
    return valid_text(str(value), "a value in SQL")


def _param(value: Any) -> Any:
    """A value as DuckDB binds it: plain data as is, task outputs as the text they read as."""
    if isinstance(value, str):
        return _text(value)  # Markup and other str subclasses: their plain text
    if value is None or isinstance(
        value, (bool, int, float, bytes, decimal.Decimal, _dt.date, _dt.time, _dt.timedelta)
    ):
        return value
    if isinstance(value, (list, tuple)):
        return [_param(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _param(v) for k, v in value.items()}
    return _text(value)


def _escape(kind: str, text: str) -> str:
    if kind == "string":
        return text.replace("'", "''")
    if kind == "estring":
        return text.replace("\\", "\\\\").replace("'", "''")
    if kind == "identifier":
        return text.replace('"', '""')
    flat = re.sub(r"[\r\n]+", " ", text)
    if kind == "block_comment":
        while "*/" in flat or "/*" in flat:
            flat = flat.replace("*/", "* /").replace("/*", "/ *")
    return flat


class _BindError(Exception):
    pass


def _bind(text: str, state: _Render) -> tuple[str, list[Any]]:
    out: list[str] = []
    params: list[Any] = []
    size = 0  # characters in ``out`` so far
    placed: list[tuple[str, int, int]] = []  # (segment kind, start, end) of each value

    def emit(piece: str) -> None:
        nonlocal size
        out.append(piece)
        size += len(piece)

    for kind, a, b in sql_segments(text):
        segment = text[a:b]
        if "\x1a" not in segment:
            emit(segment)
            continue
        pos = 0
        for match in _MARKER.finditer(segment):
            entry = state.lookup(match)
            if entry is None:
                continue
            what, value = entry
            emit(segment[pos : match.start()])
            pos = match.end()
            if kind == "dollar":
                raise _BindError(
                    "a value inside a $$-quoted string cannot be escaped; put it in '...' quotes "
                    "or outside quotes"
                )
            if kind == "literal":
                raise _BindError(
                    "a value inside an X'...' or B'...' literal cannot be escaped; put it "
                    "outside quotes (it is bound as a parameter)"
                )
            if not state.quoting and (kind != "code" or what == "identifier"):
                raise _BindError(
                    "on this database a value is always a bound parameter: write it outside "
                    "quotes and comments (WHERE region = {{ region }}, not '{{ region }}'); "
                    "sql_identifier is for duckdb and postgres databases only"
                )
            if kind == "code":
                if what == "identifier":
                    placed.append(("identifier_code", size, size + len(value)))
                    emit(value)
                    continue
                previous = next((piece[-1] for piece in reversed(out) if piece), "")
                following = segment[pos : pos + 1]
                if _is_word(previous) or _is_word(following):
                    raise _BindError(
                        "a value is printed glued to a name or number; a value cannot be part "
                        "of one (it is bound as a parameter). To print a name, use "
                        "{{ name | sql_identifier }}"
                    )
                params.append(_param(value))
                placed.append(("param", size, size + 1))
                emit(f"${len(params)}")
                continue
            if what == "identifier" and kind not in ("line_comment", "block_comment"):
                raise _BindError("sql_identifier prints a quoted name: use it outside quotes")
            escaped = _escape(kind, value if what == "identifier" else _text(value))
            placed.append((kind, size, size + len(escaped)))
            emit(escaped)
        emit(segment[pos:])
    sql = "".join(out)
    if placed:
        _verify(sql, placed)
    return sql, params


_TOKEN_FOR = {
    "string": "string_const",
    "estring": "string_const",
    "identifier": "identifier",
    "identifier_code": "identifier",
    "line_comment": "comment",
    "block_comment": "comment",
}


def _verify(sql: str, placed: list[tuple[str, int, int]]) -> None:
    """Check, with DuckDB's tokenizer on the final text, that every value stayed where it
    was put: a parameter starts a token of its own, and escaped text lies inside one
    string, quoted name or comment token. Anything else means the text around a value
    reads differently to DuckDB than it did to us: refused, never run."""
    from ._sqlsyntax import tokens

    found = tokens(sql)
    starts = [t.start for t in found]
    for kind, start, end in placed:
        if start == end:
            continue
        i = bisect.bisect_right(starts, start) - 1
        token = found[i] if i >= 0 else None
        if kind == "param":
            ok = token is not None and token.start == start
        elif kind == "identifier_code":  # quoted names from sql_identifier ("a", "b")
            inside = [t for t in found[max(i, 0) :] if t.start < end]
            ok = bool(inside) and inside[0].start == start and inside[-1].end == end
            ok = ok and all(
                sql[t.start] == '"' if t.kind == "identifier" else t.text(sql) == ","
                for t in inside
            )
        else:
            ok = (
                token is not None
                and token.kind == _TOKEN_FOR[kind]
                and token.start < start
                and end <= token.end
            )
        if not ok:
            raise _BindError(
                "the SQL around a value reads differently to DuckDB than expected (a "
                "value would not stay a value); the statement was not run"
            )


def _bind_upstream(
    sql: str, placeholders: Mapping[str, Any], quoting: bool
) -> tuple[str, list[Any]]:
    """Model-written SQL: ``{{ name }}`` placeholders from the task's variables, as values."""
    state = _Render(quoting=quoting)
    missing: list[str] = []

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in placeholders:
            missing.append(name)
            return match.group(0)
        return state.marker("value", placeholders[name])

    text = _PLACEHOLDER.sub(fill, sql)
    if missing:
        declared = ", ".join(placeholders) or "none"
        raise _BindError(
            f"the SQL statement given by the template's value uses {{{{ {missing[0]} }}}}, which "
            f"is not one of this task's variables (declared: {declared}); placeholders in SQL "
            "written upstream are filled only from the task's own variables:"
        )
    return _bind(text, state)


def render_sql(
    ref: TemplateRef,
    context: Mapping[str, Any],
    *,
    trusted: frozenset[str] = frozenset(),
    placeholders: Mapping[str, Any] | None = None,
    dialect: str = "duckdb",
) -> BoundSql:
    """Render an SQL template into text with ``$n`` placeholders and their values.

    ``trusted`` are the strings ``raw_sql`` may print (workflow variables' own
    values); ``placeholders`` fill ``{{ name }}`` in a statement that came whole
    from one value (the task's ``variables:``). ``dialect``: the database's type; values
    stand only outside quotes except on duckdb and postgres (see the module's docstring).
    """
    if not isinstance(ref, SqlTemplateRef):  # never a plain template: it would splice values
        ref = SqlTemplateRef(ref.source, ref.doc, ref.key)
    quoting = dialect in QUOTING_DIALECTS
    state = _Render(trusted, quoting=quoting)
    token = _STATE.set(state)
    try:
        text = valid_text(render(ref, context), ref.name)  # "{{ '\\ud800' }}" is text too
    finally:
        _STATE.reset(token)
    from ._sqlsyntax import too_long

    if too_long(text):
        raise ref.error(f"SQL: {too_long(text)}")
    whole = _MARKER.fullmatch(text.strip())
    entry = state.lookup(whole) if whole is not None else None
    if entry is not None and entry[0] == "value":
        upstream = _text(entry[1])
        if too_long(upstream):  # SQL a model wrote: a failed task, not bad input
            raise SqlError(f"{ref.name}: SQL: {too_long(upstream)}")
        try:
            sql, params = _bind_upstream(upstream, placeholders or {}, quoting)
        except _BindError as exc:  # the statement came from a run (a model): not bad input
            raise SqlError(f"{ref.name}: SQL: {exc}") from None
        return BoundSql(sql, tuple(params), upstream=True)
    try:
        sql, params = _bind(text, state)
    except _BindError as exc:
        raise ref.error(f"SQL: {exc}") from None
    return BoundSql(sql, tuple(params))
