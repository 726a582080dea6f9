"""``oxy init [DIR]``: a starter project that runs offline, and the commands to try next."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..evaluation import usage_code
from ._app import DebugOption, app, setup_logging
from .console import echo, stderr_console

__all__ = ["init_command"]


@app.command("init")
def init_command(
    directory: Annotated[
        str, typer.Argument(metavar="DIR", help="Folder for the project (created if missing).")
    ] = ".",
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the starter files if they exist.")
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Create a starter project: config.yml with offline mock models, an agent with a
    consistency test and a prompt with test cases. Never overwrites a file without --force.

    Exit codes: 0 created; 2 a file exists (named; nothing written) or DIR is not a folder.
    """
    from ..project.scaffold import ScaffoldConflict, next_steps, write_scaffold

    err = stderr_console()
    setup_logging(err, debug)
    target = Path(directory)
    if target.exists() and not target.is_dir():
        err.print(f"error: {directory} exists and is not a folder", style="red", markup=False)
        raise typer.Exit(usage_code())
    try:
        written = write_scaffold(target, force=force)
    except ScaffoldConflict as exc:
        names = ", ".join(str(target / rel) for rel in exc.existing)
        folders = all((target / rel).is_dir() for rel in exc.existing)
        one = len(exc.existing) == 1
        hint = (
            ("remove it first" if one else "remove them first")
            if folders
            else ("--force overwrites it" if one else "--force overwrites them")
        )
        verb = "exists" if one else "exist"
        err.print(
            f"error: {names} already {verb}; nothing was written ({hint})",
            style="red",
            markup=False,
        )
        raise typer.Exit(usage_code()) from None
    except OSError as exc:
        err.print(
            f"error: could not write the project into {directory}: {exc.strerror or exc}",
            style="red",
            markup=False,
        )
        raise typer.Exit(usage_code()) from None
    echo(f"Created an oxyeval project in {target.resolve()}:")
    width = max(len(rel) for rel in written)
    about = {
        "config.yml": "models: offline mocks, and a real one to uncomment",
        "agents/support.agent.yml": "an agent with a consistency test",
        "prompts/sentiment.prompt.yml": "a prompt with test cases",
        ".gitignore": "keeps .oxy/ (the history: model answers) out of git",
    }
    for rel in written:
        echo(f"  {rel.ljust(width)}  {about.get(rel, '')}".rstrip())
    echo("\nNext (all offline):")
    for command in next_steps(directory):
        echo(f"  {command}")
