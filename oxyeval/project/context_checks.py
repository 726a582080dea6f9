"""What an agent's ``system_instructions`` reads of oxy's built-in context, checked when
the file loads (:mod:`.agent_context` holds the context itself).

A name that is not there (a database config.yml does not have, a tool the agent does
not declare, a globals file that does not exist, a key those values never have) is an
error with "did you mean": every run would fail on it. What oxy gives but oxyeval cannot
render yet (a warehouse's DDL, the semantic layer, oxy's older list form of a database)
is a warning: the file is valid, and the run that reads it stops there, saying why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import Diagnostic
from .agent_context import (
    BUILTIN_NAMES,
    DATABASE_KEYS,
    DATASET_KEYS,
    SEMANTIC_NAMES,
    TOOLS_KEYS,
    BuiltinContext,
    dataset_names,
    semantic_layer_note,
)
from .document import Document
from .schema import did_you_mean
from .templates import TemplateRef, attribute_chains, referenced_names, template_tree

__all__ = ["check_builtin_reads"]

#: Database types whose DDL the workflow stage reads from the database (its catalogs).
_INTROSPECTED = frozenset(
    {"duckdb", "postgres", "redshift", "mysql", "clickhouse", "bigquery", "snowflake"}
)


def check_builtin_reads(
    doc: Document,
    ref: TemplateRef,
    builtins: BuiltinContext,
    declared: list[str],
    problems: list[Diagnostic],
) -> None:
    """Every read of ``databases``, ``tools``, ``globals``, ``models`` and ``dimensions``
    in ``ref`` (an agent's system_instructions) checked against what the project gives."""
    found: dict[str, Diagnostic] = {}  # one problem per subject, at its first line

    def report(subject: str, line: int, message: str, severity: str = "error") -> None:
        if subject not in found:
            where = doc.text_line(ref.key, line)
            found[subject] = doc.diagnostic(ref.key, message, line=where, severity=severity)

    for name in sorted(BUILTIN_NAMES.intersection(declared)):
        found[f"variable {name}"] = doc.diagnostic(
            ("variables", name),
            f"variable '{name}': oxy gives system_instructions a '{name}' of its own (its "
            "built-in context), which takes this variable's place there",
            severity="warning",
        )
    _check_databases(ref, builtins.databases, report)
    _check_tools(ref, builtins.tools, report)
    _check_globals(ref, builtins.globals, report)
    used = referenced_names(ref)
    for name in sorted(SEMANTIC_NAMES & used):
        line = _first_line(ref, name)
        report(
            name,
            line,
            f"system_instructions uses {name}: {semantic_layer_note(name)}, so the run stops "
            "where it is read: this agent validates but cannot run in oxyeval",
            "warning",
        )
    problems.extend(found.values())


def _first_line(ref: TemplateRef, name: str) -> int:
    """The template line where ``name`` is first read (not a comment that mentions it)."""
    from jinja2 import nodes

    tree = template_tree(ref)
    lines = [
        n.lineno
        for n in (tree.find_all(nodes.Name) if tree is not None else ())
        if n.name == name and n.ctx == "load"
    ]
    return min(lines, default=1)


def _path(name: str, chain: tuple[str | int, ...]) -> str:
    return name + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in chain)


def _check_databases(
    ref: TemplateRef, entries: Mapping[str, Mapping[str, Any]], report: Any
) -> None:
    names = list(entries)
    for chain, line in attribute_chains(ref, "databases"):
        db = chain[0]
        shown = _path("databases", chain)
        if not isinstance(db, str) or db not in entries:
            report(
                f"databases {db}",
                line,
                f"system_instructions reads {shown}, but config.yml has no database "
                f"{db!r}{did_you_mean(str(db), names)} (databases: {', '.join(names) or 'none'})",
            )
            continue
        if len(chain) < 2:
            continue
        key, entry = chain[1], entries[db]
        if isinstance(key, int):
            report(
                f"databases {db} list",
                line,
                f"system_instructions reads {shown}: oxy gives databases.{db} as a mapping "
                f"({', '.join(DATABASE_KEYS)}), no longer as a list of datasets, so this read "
                f"fails when the agent runs (in oxy too); write databases.{db}.dialect or "
                f"databases.{db}.datasets.<dataset>.ddl",
                "warning",
            )
            continue
        if key not in DATABASE_KEYS:
            report(
                f"databases {db} {key}",
                line,
                f"system_instructions reads {shown}, but databases.{db} has no {key!r}"
                f"{did_you_mean(key, DATABASE_KEYS)} (it has {', '.join(DATABASE_KEYS)})",
            )
            continue
        if key == "datasets" and len(chain) > 2:
            dataset, listed = chain[2], dataset_names(entry)
            if listed is not None and dataset not in listed:
                report(
                    f"databases {db} dataset {dataset}",
                    line,
                    f"system_instructions reads {shown}, but database {db!r} has no dataset "
                    f"{dataset!r}{did_you_mean(str(dataset), listed)} (datasets: "
                    f"{', '.join(listed)})",
                )
                continue
            if len(chain) > 3 and chain[3] not in DATASET_KEYS:
                report(
                    f"databases {db} dataset key {chain[3]}",
                    line,
                    f"system_instructions reads {shown}, but a dataset has no {chain[3]!r}"
                    f"{did_you_mean(str(chain[3]), DATASET_KEYS)} (it has "
                    f"{', '.join(DATASET_KEYS)})",
                )
                continue
        kind = entry.get("type")
        if (
            kind not in _INTROSPECTED
            and key in ("datasets", "tables")
            and (key == "tables" or len(chain) > 2)
        ):
            report(
                f"databases {db} ddl",
                line,
                f"system_instructions reads {shown}: the DDL of database {db!r} is not "
                f"available for {kind} (oxyeval introspects {', '.join(sorted(_INTROSPECTED))} "
                "databases), "
                "so reading its ddl or tables stops the run that reads it; its name and "
                "dialect render",
                "warning",
            )


def _check_tools(ref: TemplateRef, tools: tuple[str, ...], report: Any) -> None:
    names = [*tools, *TOOLS_KEYS]
    for chain, line in attribute_chains(ref, "tools"):
        name = chain[0]
        if not isinstance(name, str) or name not in names:
            report(
                f"tools {name}",
                line,
                f"system_instructions reads tools.{name}, but this agent has no tool {name!r}"
                f"{did_you_mean(str(name), names)} (tools: {', '.join(tools) or 'none'}; and "
                f"{', '.join(TOOLS_KEYS)})",
            )
        elif name not in TOOLS_KEYS:
            report(
                f"tools {name}",
                line,
                f"system_instructions reads tools.{name}: oxy renders nothing there, and "
                "neither does oxyeval (oxy's older versions ran the tool on the question "
                "there, a retrieval tool giving the documents it found)",
                "warning",
            )


def _check_globals(ref: TemplateRef, values: Mapping[str, Any], report: Any) -> None:
    files = list(values)
    for chain, line in attribute_chains(ref, "globals"):
        name = chain[0]
        if not isinstance(name, str) or name not in values:
            report(
                f"globals {name}",
                line,
                f"system_instructions reads {_path('globals', chain)}, but the project has no "
                f"globals file {name!r}{did_you_mean(str(name), files)} (globals/: "
                f"{', '.join(f'{f}.yml' for f in files) or 'no such folder or no files'})",
            )
            continue
        content = values[name]
        if len(chain) > 1 and isinstance(content, Mapping) and chain[1] not in content:
            keys = [str(k) for k in content]
            report(
                f"globals {name} {chain[1]}",
                line,
                f"system_instructions reads {_path('globals', chain)}, but globals/{name}.yml "
                f"has no {chain[1]!r}{did_you_mean(str(chain[1]), keys)} (it has "
                f"{', '.join(keys) or 'nothing'})",
            )
