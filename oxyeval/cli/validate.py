"""``oxy validate`` (check project files without calling a model) and ``oxy schema``."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import LISTED_DIAGNOSTICS, SHOWN_DIAGNOSTICS, LoadError, OxyError, listed
from ..evaluation import error_code, usage_code
from ._app import DebugOption, Format, ProjectOption, app, setup_logging
from ._common import FormatOption
from .console import echo, json_error, print_error, stderr_console, streams

__all__ = ["schema_command", "validate_command"]


@app.command("validate")
def validate_command(
    paths: Annotated[
        list[str] | None,
        typer.Argument(metavar="PATH...", help="Files or folders (default: the current project)."),
    ] = None,
    project: ProjectOption = None,
    format: FormatOption = Format.pretty,
    debug: DebugOption = False,
) -> None:
    """Check config, agent and workflow files against the schemas; exit 2 on any error."""
    from ..report.json import validation_json, write_json
    from ..suites.validate import validate_paths

    err = stderr_console()
    setup_logging(err, debug)
    as_json = format is Format.json
    try:
        report = validate_paths(paths or [], project_dir=project)
    except OxyError as exc:
        print_error(err, exc, debug)
        if as_json:
            from ..report import error_document

            write_json(error_document(json_error(exc), error_code(exc)), streams().stdout)
        raise typer.Exit(error_code(exc)) from None
    # Errors in the files are bad input, the one verdict validation gives.
    code = error_code(LoadError.of(report.errors)) if report.errors else 0
    # On stderr in both formats (a non-zero exit says why), the first screenful of them.
    shown = listed(report.diagnostics, SHOWN_DIAGNOSTICS)
    for d in shown[:SHOWN_DIAGNOSTICS]:
        err.print(d.format(), style="red" if d.severity == "error" else "yellow", markup=False)
    if len(shown) > SHOWN_DIAGNOSTICS:  # the last one counts the rest
        more = shown[-1].message.removesuffix(" not listed")
        note = f"... {more} not shown (the first {SHOWN_DIAGNOSTICS} are above"
        note += ")" if as_json else f"; --format json lists up to {LISTED_DIAGNOSTICS})"
        err.print(note, style="red" if shown[-1].severity == "error" else "yellow", markup=False)
    if as_json:
        write_json(validation_json(report, code), streams().stdout)
    else:
        summary = (
            f"{len(report.files)} file(s) checked: {len(report.errors)} error(s), "
            f"{len(report.warnings)} warning(s)"
        )
        echo(("✗ " if report.errors else "✓ ") + summary)
    raise typer.Exit(code)


# The file kinds, and common: the definitions agent, workflow and prompt $ref, so a
# schema saved from here can be resolved next to it.
_SCHEMA_KINDS = (
    "config", "agent", "workflow", "prompt", "cases", "test", "chattest-prompt",
    "chattest-model", "common",
)  # fmt: skip


@app.command("schema")
def schema_command(
    kind: Annotated[
        str | None,
        typer.Argument(
            metavar="NAME",
            help="A project file: config, agent, workflow, prompt, cases, test (*.test.yml), "
            "chattest-prompt or chattest-model (or common: the definitions they $ref; save it "
            "beside them). Or a JSON document a command prints, output/NAME: run, error, "
            "validation, history, run-detail, comparison, test-history, cache-stats, cache-cleared, "
            "case-list, case-detail, branch-list, branch-detail, judge-calibration, "
            "judge-calibrations (or output/common).",
        ),
    ] = None,
    path: Annotated[
        bool, typer.Option("--path", help="Print the file path instead of the JSON.")
    ] = False,
    list_all: Annotated[
        bool, typer.Option("--list", help="List every schema's name, one a line.")
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Print a JSON Schema: of a project file (for editors: # yaml-language-server:
    $schema=<path>), or of a JSON document a command prints (output/run...)."""
    setup_logging(stderr_console(), debug)
    from ..project.schema import SCHEMA_FILES, schema_path
    from ..report import OUTPUT_SCHEMAS, output_schema_name, output_schema_path

    if list_all:
        echo("\n".join([*_SCHEMA_KINDS, *(f"output/{n}" for n in OUTPUT_SCHEMAS)]))
        return
    output = None
    if kind is not None and (kind.startswith("output/") or kind not in SCHEMA_FILES):
        output = output_schema_name(kind)
    if kind is None or (output is None and (kind not in SCHEMA_FILES or kind not in _SCHEMA_KINDS)):
        choices = ", ".join([*_SCHEMA_KINDS, *(f"output/{n}" for n in OUTPUT_SCHEMAS)])
        what = "a schema's name" if kind is None else f"unknown schema '{kind}'"
        stderr_console().print(
            f"error: {what}; choose {choices}",
            style="red",
            markup=False,
        )
        raise typer.Exit(usage_code())
    file = output_schema_path(output) if output is not None else schema_path(kind)
    if path:
        echo(file)
    else:
        from pathlib import Path

        echo(Path(file).read_text("utf-8"))
