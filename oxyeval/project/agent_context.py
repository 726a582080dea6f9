"""The context oxy gives every agent's ``system_instructions`` besides its variables and
``context`` files, in oxy's names and shapes, so oxy's agent files render unchanged:

- ``databases.<name>``: ``name``, ``dialect``, ``datasets.<dataset>`` (each ``dataset``,
  ``ddl``, ``semantic_info``) and ``tables`` (every dataset's DDL). DuckDB's one dataset
  is ``duckdb``, its DDL a ``CREATE TABLE`` per data file (oxy's keys); a warehouse's
  datasets are its configured datasets or schemas. The DDL is read at run time (the
  ``describe`` callback: the workflow stage introspects, once per run); until a
  warehouse can be introspected, reading its DDL stops the run saying so.
- ``tools``: ``agent_name``, ``prompt`` (the question) and ``data_app_file_path``, as oxy
  gives them; a declared tool's name renders nothing, as in oxy.
- ``globals.<file>``: the ``globals/`` folder (:mod:`.globals`).
- ``models`` and ``dimensions``: oxy's semantic layer, which oxyeval does not read; using
  them stops the run, saying so.

Every value here is data (text, numbers, mappings): templates read it, never render it
as a template. A read of something absent explains itself through the sandbox's
``_template_missing`` hook, naming what there is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .schema import did_you_mean

__all__ = [
    "BUILTIN_NAMES",
    "DATABASE_KEYS",
    "DATASET_KEYS",
    "SEMANTIC_NAMES",
    "TOOLS_KEYS",
    "BuiltinContext",
    "ContextMap",
    "database_info",
    "dataset_names",
    "dialect",
    "semantic_layer_note",
]

#: Names oxy's renderer gives every agent's system_instructions (besides ``context``).
BUILTIN_NAMES = frozenset({"databases", "tools", "globals", "models", "dimensions"})
#: Of these, oxy's semantic layer, which oxyeval does not read.
SEMANTIC_NAMES = frozenset({"models", "dimensions"})
DATABASE_KEYS = ("name", "dialect", "datasets", "tables")
DATASET_KEYS = ("dataset", "ddl", "semantic_info")
TOOLS_KEYS = ("agent_name", "prompt", "data_app_file_path")

#: oxy's Database::dialect; airhouse speaks the Postgres wire protocol with DuckDB's SQL.
_DIALECTS = {
    "redshift": "postgres",
    "motherduck": "duckdb",
    "airhouse": "duckdb",
    "airhouse_managed": "duckdb",
}
#: Where a warehouse's config.yml entry lists its datasets (or schemas), by type.
_DATASETS_KEY = {"clickhouse": "schemas", "motherduck": "schemas", "snowflake": "datasets"}


def dialect(entry: Mapping[str, Any]) -> str:
    """The SQL dialect oxy names for a database of this entry's type."""
    kind = str(entry.get("type", ""))
    return _DIALECTS.get(kind, kind)


def dataset_names(entry: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The dataset keys of ``databases.<name>.datasets`` known from config.yml, as oxy
    keys them (DuckDB: ``duckdb``; a BigQuery ``dataset`` or ``datasets``, a Snowflake's
    ``datasets``, a ClickHouse's ``schemas``); None when only introspecting the database
    can tell (a Postgres's schemas, a warehouse that lists none)."""
    kind = entry.get("type")
    if kind in ("duckdb", "domo"):
        return (str(kind),)
    if kind == "bigquery" and entry.get("dataset"):
        return (str(entry["dataset"]),)
    listed = entry.get("datasets" if kind == "bigquery" else _DATASETS_KEY.get(str(kind), ""))
    if isinstance(listed, Mapping) and listed:
        return tuple(str(k) for k in listed)
    return None


def semantic_layer_note(name: str) -> str:
    """Why ``models`` and ``dimensions`` do not render in oxyeval."""
    return f"'{name}' is oxy's semantic-layer context, which oxyeval does not read yet"


class ContextMap(Mapping[Any, Any]):
    """A read-only mapping a template reads like a dict, which says what it holds when a
    template reads a key it does not have (``missing(key)``, through the sandbox's
    ``_template_missing`` hook). ``load`` computes a value the mapping does not hold yet
    (a database's DDL, read when first needed; raising KeyError when there is none);
    ``names`` are the keys it lists when iterated (default: those it holds)."""

    __slots__ = ("_load", "_missing", "_names", "_values")

    def __init__(
        self,
        values: Mapping[Any, Any],
        missing: Callable[[Any], str],
        *,
        load: Callable[[Any], Any] | None = None,
        names: Sequence[Any] | None = None,
    ) -> None:
        self._values = dict(values)
        self._missing = missing
        self._load = load
        self._names = list(names) if names is not None else None

    def __getitem__(self, key: Any) -> Any:
        try:
            return self._values[key]
        except (KeyError, TypeError):
            if self._load is None:
                raise KeyError(key) from None
        return self._load(key)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._names if self._names is not None else self._values)

    def __len__(self) -> int:
        return len(self._names if self._names is not None else self._values)

    def __contains__(self, key: object) -> bool:
        try:
            return key in self._values or (self._names is not None and key in self._names)
        except TypeError:
            return False

    def _template_missing(self, name: object) -> str:
        """What a template reading an absent key is told (see templates.py)."""
        return self._missing(name)

    def _template_json(self) -> dict[str, Any]:
        """What ``tojson`` writes: what the mapping holds now."""
        return {str(k): v for k, v in self._values.items()}

    def __repr__(self) -> str:
        return repr(self._values)

    __str__ = __repr__


def _listing(names: Sequence[object]) -> str:
    return ", ".join(str(n) for n in names) or "none"


def _unknown(what: str, owner: str, names: Sequence[Any]) -> Callable[[Any], str]:
    def explain(key: Any) -> str:
        if isinstance(key, int) and not isinstance(key, bool):
            listed = _listing(names)
            return f"{owner} is a mapping, read by name ({what}s: {listed}), not by position"
        return (
            f"{owner} has no {what} {key!r}{did_you_mean(str(key), [str(n) for n in names])} "
            f"({what}s: {_listing(names)})"
        )

    return explain


_SEMANTIC_INFO = ContextMap(
    {},
    lambda key: (
        f"semantic_info has no {key!r}: oxyeval does not read the semantic models oxy's `oxy "
        "sync` writes under .databases/ yet, so semantic_info is empty"
    ),
)


def database_info(
    name: str,
    entry: Mapping[str, Any],
    ddl: Mapping[str, str] | None = None,
    unavailable: str = "",
    *,
    stand_in: bool = False,
) -> ContextMap:
    """oxy's ``databases.<name>``: its ``name``, ``dialect``, ``datasets`` and ``tables``.

    ``ddl`` maps each dataset the database has to its DDL (introspected). None: the DDL
    cannot be read, and reading it (a dataset's ``ddl``, ``tables``) fails, saying
    ``unavailable``; the datasets are then those config.yml lists, or, when it lists
    none, whichever a template names. ``stand_in``: every DDL is empty text (checks at
    load time, which open no database)."""
    owner = f"databases.{name}"
    listed = dataset_names(entry)
    names = list(ddl) if ddl is not None else list(listed or ())
    open_ended = ddl is None and listed is None

    def dataset(key: str) -> ContextMap:
        values: dict[str, Any] = {"dataset": key, "semantic_info": _SEMANTIC_INFO}
        if stand_in:
            values["ddl"] = ""
        elif ddl is not None:
            values["ddl"] = ddl[key]

        def explain(attr: Any) -> str:
            if attr == "ddl":
                return unavailable
            return _unknown("key", f"{owner}.datasets.{key}", DATASET_KEYS)(attr)

        return ContextMap(values, explain)

    def load(key: Any) -> ContextMap:
        if open_ended and isinstance(key, str):
            return dataset(key)  # a schema the warehouse may have: its DDL says when read
        raise KeyError(key)

    datasets = ContextMap(
        {key: dataset(key) for key in names},
        _unknown("dataset", f"{owner}.datasets", names),
        load=load,
    )
    values: dict[str, Any] = {"name": name, "dialect": dialect(entry), "datasets": datasets}
    if stand_in:
        values["tables"] = []
    elif ddl is not None:
        values["tables"] = [text for text in ddl.values() if text]

    def explain(key: Any) -> str:
        if key == "tables":
            return unavailable
        return _unknown("key", owner, DATABASE_KEYS)(key)

    return ContextMap(values, explain)


@dataclass(frozen=True)
class BuiltinContext:
    """What oxy gives one agent's system_instructions besides its variables and context:
    :meth:`values` builds it for one rendering."""

    agent_name: str
    tools: tuple[str, ...] = ()
    databases: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    globals: Mapping[str, Any] = field(default_factory=dict)

    def values(
        self, question: str = "", describe: Callable[[str], ContextMap] | None = None
    ) -> dict[str, Any]:
        """The names and their values. ``describe(name)`` gives a database's info at run
        time (its DDL introspected); without it (checks at load time) every database has
        empty stand-in DDL, so a check never opens a database."""
        entries = self.databases
        names = list(entries)

        def stand_in(name: str) -> ContextMap:
            return database_info(name, entries[name], stand_in=True)

        lookup = describe or stand_in

        def load(key: Any) -> ContextMap:
            if not isinstance(key, str) or key not in entries:
                raise KeyError(key)
            return lookup(key)

        databases = ContextMap({}, _unknown("database", "databases", names), load=load, names=names)
        # A declared tool's name renders nothing, as in oxy (which once ran the tool on
        # the question here); oxy's own three keys come last, so no tool name hides one.
        fixed = {"agent_name": self.agent_name, "prompt": question, "data_app_file_path": ""}
        tools = ContextMap(
            {**{t: "" for t in self.tools}, **fixed},
            _unknown("tool", "tools", [*self.tools, *TOOLS_KEYS]),
        )
        files = list(self.globals)
        return {
            "databases": databases,
            "tools": tools,
            "globals": ContextMap(self.globals, _unknown("globals file", "globals", files)),
            **{
                name: ContextMap(
                    {},
                    lambda key, name=name: semantic_layer_note(name),
                    # At load, a stand-in: the agent's file says it cannot run (a warning),
                    # so a case of it is not an error of its own.
                    load=None if describe is not None else _any_text,
                )
                for name in sorted(SEMANTIC_NAMES)
            },
        }


def _any_text(key: Any) -> str:
    if not isinstance(key, str):
        raise KeyError(key)
    return ""
