"""Report files a command writes beside its output (``--junit FILE``).

A report file is for CI: it must not change what the run's exit code means. A path
that cannot be a file is bad input caught before any model is called; a write that
fails after the run is said on stderr and turns a passing exit into 3 (a CI job must
not go green without the report it asked for), never hiding a failure's own code.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..evaluation import with_artifact_failure
from ..inputs import valid_text

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["JunitOption", "report_path_problem", "write_report"]

JunitOption = Annotated[
    str | None,
    typer.Option(
        "--junit",
        metavar="FILE",
        help="Also write a JUnit XML report (Jenkins/Ant format) to FILE, for CI.",
    ),
]


def report_path_problem(option: str, path: str) -> str | None:
    """Why ``path`` cannot take a report, checked before the run (None when it can)."""
    target = Path(path)
    if target.is_dir():
        return f"{option} {path}: is a folder; give a file name, e.g. {Path(path) / 'junit.xml'}"
    for parent in target.parents:
        if parent.exists() and not parent.is_dir():
            return f"{option} {path}: {parent} is a file, not a folder"
    return None


def write_report(option: str, path: str, text: str, err: Console, code: int) -> int:
    """Write ``text`` to ``path`` (folders created); the exit code the command ends with."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(valid_text(text), encoding="utf-8")  # never a UnicodeEncodeError
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        err.print(
            f"error: {option} {path}: could not write the report: {reason}",
            style="red",
            markup=False,
        )
        return with_artifact_failure(code)
    return code
