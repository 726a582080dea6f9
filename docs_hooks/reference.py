"""MkDocs hook: the reference pages, generated from the code at every build.

The CLI reference walks the typer app's command tree; the project-file and JSON-output
references walk the JSON Schemas shipped in ``oxyeval/schemas/``. Nothing is copied by
hand, so a new command, option or key is in the docs the next time they are built, and
``tests/test_docs.py`` checks that it is.

Typer 0.2x vendors its own Click, so a plugin that expects ``click.Command`` objects
(mkdocs-click) cannot read the app: the walk below goes by the attributes every Click
command has (``params``, ``commands``, ``make_context``), whichever Click it came from.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "PAGES",
    "cli_commands",
    "cli_reference",
    "on_files",
    "outputs_reference",
    "project_files_reference",
]

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "oxyeval" / "schemas"

# The order the project-file reference lists the schemas in: the files a project has
# most, first.
PROJECT_FILES = (
    "config",
    "agent",
    "workflow",
    "prompt",
    "cases",
    "agent-test",
    "chattest-prompt",
    "chattest-model",
    "common",
)


# ----------------------------------------------------------------------------- the CLI


def _root_command() -> Any:
    from typer.main import get_command

    from oxyeval.cli import app

    return get_command(app)


def cli_commands() -> Iterator[tuple[str, Any]]:
    """Every command of ``oxy`` as (its full name, the command), groups before their
    subcommands, in the order the app registers them."""

    def walk(name: str, command: Any) -> Iterator[tuple[str, Any]]:
        yield name, command
        for sub_name, sub in (getattr(command, "commands", None) or {}).items():
            if not getattr(sub, "hidden", False):
                yield from walk(f"{name} {sub_name}", sub)

    yield from walk("oxy", _root_command())


def _context(name: str) -> Any:
    """A context for rendering help, parented like the real one so usage lines read
    ``oxy cases run ...``; parsing nothing, so required arguments do not complain."""
    parts = name.split()
    node = _root_command()
    ctx = node.make_context(parts[0], [], resilient_parsing=True)
    for part in parts[1:]:
        node = node.commands[part]
        ctx = node.make_context(part, [], parent=ctx, resilient_parsing=True)
    return ctx


def _prose(text: str) -> str:
    """Help text as Markdown shows it: ``*`` and ``<`` outside code spans are literal
    (``*.test.yml``, ``<path>``), not emphasis or HTML."""
    pieces = text.split("`")
    for index in range(0, len(pieces), 2):
        pieces[index] = pieces[index].replace("*", "\\*").replace("<", "&lt;")
    return "`".join(pieces)


def _code_cell(text: str) -> str:
    """Literal text as code in a table cell: HTML, since a Markdown code span would show
    the escapes a table cell needs (``\\|``, ``&lt;``) instead of the characters."""
    escaped = html.escape(" ".join(text.split())).replace("|", "&#124;")
    return f"<code>{escaped}</code>"


def _escape_cell(text: str) -> str:
    return _prose(text).replace("|", "\\|").replace("\n", " ").strip()


def cli_reference() -> str:
    lines = [
        "# CLI reference",
        "",
        "Generated from the `oxy` command itself when these docs are built: every command,",
        "argument and option, with the help `oxy COMMAND --help` prints. The guides explain",
        "when to use which; exit codes are the same everywhere (0 passed, 1 failed or below",
        "a gate, 2 bad input, 3 a provider or infrastructure failure, or interrupted).",
        "",
    ]
    for name, command in cli_commands():
        ctx = _context(name)
        level = "#" * min(2 + name.count(" ") - 1, 4) if name != "oxy" else "##"
        lines += [f"{level} `{name}`", ""]
        usage = command.collect_usage_pieces(ctx)
        lines += ["```text", f"Usage: {ctx.command_path} {' '.join(usage)}".rstrip(), "```", ""]
        help_text = (command.help or "").strip()
        if help_text:
            lines += [_prose(help_text.replace("\b\n", "")), ""]
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        options = [
            p
            for p in command.params
            if p.param_type_name == "option" and not getattr(p, "hidden", False)
        ]
        if arguments:
            lines += ["| argument | required | help |", "| --- | --- | --- |"]
            for param in arguments:
                meta = param.make_metavar(ctx) if _takes_ctx(param) else param.make_metavar()
                help_ = getattr(param, "help", None) or ""
                lines.append(
                    f"| {_code_cell(meta)} | {'yes' if param.required else 'no'} "
                    f"| {_escape_cell(help_)} |"
                )
            lines.append("")
        if options:
            lines += ["| option | help |", "| --- | --- |"]
            for param in options:
                record = param.get_help_record(ctx)
                if record is None:
                    continue
                names, help_ = record
                lines.append(f"| {_code_cell(names)} | {_escape_cell(help_)} |")
            lines.append("")
        subcommands = getattr(command, "commands", None) or {}
        if subcommands:
            lines += ["| command | summary |", "| --- | --- |"]
            for sub_name, sub in subcommands.items():
                if getattr(sub, "hidden", False):
                    continue
                anchor = f"{name} {sub_name}".replace(" ", "-")
                summary = _escape_cell(sub.get_short_help_str(limit=200))
                lines.append(f"| [`{name} {sub_name}`](#{anchor}) | {summary} |")
            lines.append("")
    return "\n".join(lines)


def _takes_ctx(param: Any) -> bool:
    import inspect

    return "ctx" in inspect.signature(param.make_metavar).parameters


# ------------------------------------------------------------------------- the schemas


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text("utf-8"))


def _type_of(node: dict[str, Any]) -> str:
    """A short, readable type for a table cell."""
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " | ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "$ref" in node:
        return f"{node['$ref'].rsplit('/', 1)[-1]}"
    for key in ("oneOf", "anyOf"):
        if key in node:
            return " or ".join(_type_of(option) for option in node[key])
    kind = node.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        items = node.get("items")
        return f"list of {_type_of(items)}" if isinstance(items, dict) else "list"
    if kind == "object" and "properties" not in node:
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            return f"map of {_type_of(extra)}"
    return kind or "any"


def _bounds(node: dict[str, Any]) -> str:
    parts = []
    for key, label in (
        ("minimum", ">="),
        ("exclusiveMinimum", ">"),
        ("maximum", "<="),
        ("exclusiveMaximum", "<"),
        ("minItems", "items >="),
        ("maxItems", "items <="),
        ("minLength", "length >="),
        ("maxLength", "length <="),
    ):
        if key in node and not isinstance(node[key], bool):
            parts.append(f"{label} {node[key]}")
    if "default" in node:
        parts.append(f"default `{json.dumps(node['default'])}`")
    if "pattern" in node:
        parts.append(f"pattern `{node['pattern']}`")
    return ", ".join(parts)


def _describe(node: dict[str, Any]) -> str:
    text = node.get("description", "")
    unsupported = node.get("x-oxy-unsupported")
    if unsupported:
        note = unsupported if isinstance(unsupported, str) else "accepted, not implemented"
        text = f"{text} (oxy's key; {note})" if text else f"oxy's key; {note}"
    bounds = _bounds(node)
    if bounds:
        text = f"{text} ({bounds})" if text else bounds
    return _escape_cell(text)


def _rows(
    node: dict[str, Any], prefix: str, depth: int = 0
) -> Iterator[tuple[str, str, bool, str]]:
    """(key path, type, required, description) for every property under ``node``,
    nested objects and lists of objects flattened into dotted paths. A ``$ref`` is not
    followed: its definition has a section of its own, which the type names."""
    if depth > 6:
        return
    required = set(node.get("required", ()))
    for key, child in (node.get("properties") or {}).items():
        if not isinstance(child, dict):
            continue
        path = f"{prefix}{key}"
        yield path, _type_of(child), key in required, _describe(child)
        inner = child
        suffix = "."
        if child.get("type") == "array" and isinstance(child.get("items"), dict):
            inner = child["items"]
            suffix = "[]."
        if isinstance(inner, dict) and "properties" in inner and "$ref" not in inner:
            yield from _rows(inner, f"{path}{suffix}", depth + 1)


def _table(node: dict[str, Any], prefix: str = "") -> list[str]:
    rows = list(_rows(node, prefix))
    if not rows:
        return []
    lines = ["| key | type | required | meaning |", "| --- | --- | --- | --- |"]
    for path, kind, required, text in rows:
        lines.append(
            f"| `{_escape_cell(path)}` | {_escape_cell(kind)} | {'yes' if required else ''} | {text} |"
        )
    return [*lines, ""]


def _conditional_tables(node: dict[str, Any]) -> list[str]:
    """The keys an ``allOf`` of ``if``/``then`` adds, one table per condition (a task's
    keys per task type, a run document's keys per kind)."""
    lines: list[str] = []
    for index, branch in enumerate(node.get("allOf", ())):
        then = branch.get("then", {})
        if not then.get("properties"):
            continue
        condition = branch.get("if", {}).get("properties", {})
        when = ", ".join(
            f"`{key}` is `{json.dumps(value.get('const'))}`"
            for key, value in condition.items()
            if isinstance(value, dict) and "const" in value
        )
        lines += [f"When {when or f'condition {index + 1} holds'}:", ""]
        lines += _table(then)
    return lines


def _title(schema: dict[str, Any], name: str) -> str:
    """A schema's title as a heading: a command stays as typed (``oxy ab list``), prose
    starts with a capital; an output document leads with its ``document`` name."""
    title = str(schema.get("title", name)).removeprefix("oxyeval ").rstrip(".")
    if title.startswith("oxy "):
        head, _, rest = title.partition(":")
        title = f"`{head}`" + (f":{rest}" if rest else "")
    else:
        title = title[:1].upper() + title[1:]
    document = schema.get("properties", {}).get("document", {}).get("const")
    return f"`{document}`: {title}" if isinstance(document, str) else title


def _schema_section(name: str, schema: dict[str, Any], level: str) -> list[str]:
    lines = [f"{level} {_title(schema, name)}", "", f"Schema: `{name}.schema.json`", ""]
    if schema.get("description"):
        lines += [_prose(schema["description"]), ""]
    lines += _table(schema)
    lines += _conditional_tables(schema)
    for def_name, definition in (schema.get("$defs") or {}).items():
        if not isinstance(definition, dict):
            continue
        lines += [f"{level}# `{def_name}`", ""]
        if definition.get("description"):
            lines += [_escape_cell(definition["description"]), ""]
        table = _table(definition)
        if not table and definition.get("type") == "array":
            items = definition.get("items")
            if isinstance(items, dict):
                table = _table(items, "[].")
        table += _conditional_tables(definition)
        lines += table or [f"Type: {_escape_cell(_type_of(definition))}", ""]
    return lines


def project_files_reference() -> str:
    lines = [
        "# Project files reference",
        "",
        "Generated from the JSON Schemas in `oxyeval/schemas/` when these docs are built: the",
        "same schemas `oxy validate` and editors check files against (`oxy schema NAME`",
        "prints one). Keys marked *oxy's key* are accepted for compatibility with oxy and",
        "load with a warning. A type naming a definition (`model`, `task`...) is described",
        "in that definition's section.",
        "",
    ]
    names = [n for n in PROJECT_FILES if (SCHEMAS / f"{n}.schema.json").exists()]
    names += sorted(
        p.name.removesuffix(".schema.json")
        for p in SCHEMAS.glob("*.schema.json")
        if p.name.removesuffix(".schema.json") not in names
    )
    for name in names:
        lines += _schema_section(name, _load(SCHEMAS / f"{name}.schema.json"), "##")
    return "\n".join(lines)


def outputs_reference() -> str:
    lines = [
        "# JSON output reference",
        "",
        "Generated from the JSON Schemas in `oxyeval/schemas/output/` when these docs are",
        "built. Every `--format json` prints exactly one of these documents on stdout, with",
        "`schemaVersion` and `document` first; `oxy schema output/NAME` prints a schema and",
        "`oxy schema --list` names them all.",
        "",
    ]
    paths = sorted((SCHEMAS / "output").glob("*.schema.json"))
    paths.sort(key=lambda p: (p.name != "run.schema.json", p.name == "common.schema.json"))
    for path in paths:
        lines += _schema_section(
            f"output/{path.name.removesuffix('.schema.json')}", _load(path), "##"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the hook

PAGES = {
    "reference/cli.md": cli_reference,
    "reference/project-files.md": project_files_reference,
    "reference/outputs.md": outputs_reference,
}


def on_files(files: Any, config: Any) -> Any:
    """Adds the generated pages to the site, as if they were files under docs/."""
    from mkdocs.structure.files import File

    for uri, render in PAGES.items():
        existing = files.get_file_from_path(uri)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, uri, content=render()))
    return files
