"""What the commands that read (or change) the history share: its options, opening it the
read commands' way, and reporting an error or a JSON document the one way.

Used by ``oxy cases``, ``oxy history`` and ``oxy cache`` (and ``oxy run`` prints its JSON
here too), so a read command never creates a history and every one of them fails with the
same words and exit codes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from ..errors import OxyError
from ._app import DbOption, Format
from .console import json_error, print_error, stderr_console, stdout_console, streams

if TYPE_CHECKING:
    from rich.console import Console

    from ..project.config import Project
    from ..store import Store

__all__ = [
    "CaseOption",
    "DbOption",
    "FormatOption",
    "JsonOption",
    "PathsArgument",
    "PromptVersionOption",
    "batched",
    "check_junit",
    "concurrency_option",
    "consoles",
    "fail",
    "live_progress",
    "print_json",
    "read_history",
]

T = TypeVar("T")

JsonOption = Annotated[
    bool, typer.Option("--json", hidden=True, help="Same as --format json (the old spelling).")
]
FormatOption = Annotated[
    Format, typer.Option("--format", help="pretty or json (one JSON document on stdout).")
]
#: What ``oxy cases`` and ``oxy ab`` run or list: prompt and cases files or folders.
PathsArgument = Annotated[
    list[str] | None,
    typer.Argument(metavar="PATH...", help="Prompt/cases files or folders (default: the project)."),
]
CaseOption = Annotated[
    list[str] | None,
    typer.Option("--case", metavar="NAME", help="Only this case (repeatable)."),
]
PromptVersionOption = Annotated[
    int | None,
    typer.Option("--prompt-version", metavar="N", help="Run an earlier version of the prompt."),
]


def concurrency_option(what: str) -> Any:
    """``--concurrency N``, saying what it counts (cases, calls) for each command."""
    from ..project.limits import MAX_CONCURRENCY

    return typer.Option("--concurrency", metavar="N", min=1, max=MAX_CONCURRENCY, help=what)


def consoles() -> tuple[Console, Console]:
    """stdout and stderr, as the command's output goes."""
    return stdout_console(), stderr_console()


def print_json(doc: dict[str, Any]) -> None:
    """``doc`` as the one JSON document on stdout."""
    from ..report.json import write_json

    write_json(doc, streams().stdout)


def fail(err: Console, exc: BaseException, as_json: bool) -> typer.Exit:
    """Say why on stderr (and in a JSON document with ``--format json``); the exit to raise:
    the error's own code, or 3 for an error that is not oxyeval's."""
    from ..evaluation import error_code

    code = error_code(exc)
    print_error(err, exc)
    if as_json:
        from ..report import error_document

        print_json(error_document(json_error(exc), code))
    return typer.Exit(code)


def read_history(
    project: str | None,
    db: str | None,
    err: Console,
    as_json: bool,
    read: Callable[[Project, Store | None], T],
    *,
    write: bool = False,
) -> T:
    """Open the project's history, call ``read(project, store)``, report errors the one way."""
    from ..suites import open_history

    try:
        proj, _where, store = open_history(project, db, write=write)
        if store is None:
            return read(proj, None)
        with store:
            return read(proj, store)
    except OxyError as exc:
        raise fail(err, exc, as_json) from None


def batched(
    once: Callable[..., Any],
    err: Console,
    kind: str,
    files: Sequence[str],
    project: str | None,
    db: str | None,
    no_history: bool,
) -> Callable[[Any], Any]:
    """What ``drive`` runs for a ``--batch`` command: ``once(events, final)`` in collecting
    passes and batches, then once for real (see :mod:`oxyeval.suites.batched`)."""
    from ..suites import batch_ledger, run_batched

    def say(text: str) -> None:
        err.print(text, markup=False, highlight=False, soft_wrap=True)

    def ledger() -> Any:
        return batch_ledger(files, project_dir=project, db=db)

    return lambda events: run_batched(
        lambda final: once(events, final),
        say=say,
        kind=kind,
        ledger=None if no_history else ledger,
    )


def check_junit(err: Console, junit: str | None, as_json: bool) -> None:
    """A ``--junit`` path that cannot be written fails the command before anything runs."""
    from .artifacts import report_path_problem

    problem = None if junit is None else report_path_problem("--junit", junit)
    if problem is not None:
        raise fail(err, OxyError(problem), as_json)


def live_progress(err: Console, *, quiet: bool, as_json: bool) -> tuple[Any, Any]:
    """A progress bar on a terminal's stderr (not with -q or --format json) and the event
    subscriber that moves it; (None, None) otherwise."""
    import sys

    if quiet or as_json or not sys.stderr.isatty():
        return None, None
    from ..suites import progress_events
    from ._app import RichProgress

    progress = RichProgress(err)
    return progress, progress_events(progress)
