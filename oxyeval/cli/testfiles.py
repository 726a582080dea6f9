"""``oxy test`` on oxy's ``*.test.yml`` files: judged pass/fail cases, one line each.

``oxy test`` dispatches here when it is given only ``*.test.yml`` files, or nothing at all
(every ``*.test.yml`` of the project); agent and workflow files keep their consistency
tests (:mod:`oxyeval.cli.test`). The gates (``--min-accuracy`` on the overall score, the
mean pass rate; ``--strict``; ``--allow-empty``) and exit codes are the consistency
tests' own, through the one decision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._app import no_history_conflict
from ._common import batched, consoles

if TYPE_CHECKING:
    from ..evaluation import Gates
    from ..suites import Sharding

__all__ = ["is_test_file", "run_test_files_command"]


def is_test_file(path: str) -> bool:
    """A ``*.test.yml`` file (oxy's pass/fail tests), by name, as the project reads it."""
    from pathlib import Path

    from ..project import file_kind

    return file_kind(Path(path)) == "test"


def run_test_files_command(
    paths: list[str],
    *,
    as_json: bool,
    quiet: bool,
    project: str | None,
    db: str | None,
    junit: str | None,
    cache: bool | None,
    no_history: bool,
    tags: list[str],
    cases: list[str],
    adaptive: bool,
    gates: Gates,
    debug: bool = False,
    batch: bool = False,
    sharding: Sharding | None = None,
) -> int:
    """Run the files, print the report, return the exit code."""
    from ..report import reporter
    from ..suites import PassFailRun, run_test_files_async
    from .driver import drive

    out, err = consoles()
    run = PassFailRun()

    def once(events: Any, final: bool = True) -> Any:
        return run_test_files_async(
            paths,
            project_dir=project,
            tags=tags,
            cases=cases,
            db=db,
            history=not no_history,
            cache=cache,
            events=events if final else None,
            adaptive=adaptive,
            into=run if final else PassFailRun(),
            sharding=sharding,
        )

    return drive(
        reporter("test-files"),
        run,
        batched(once, err, "passfail", paths, project, db, no_history) if batch else once,
        gates,
        err=err,
        out=out,
        as_json=as_json,
        quiet=quiet,
        junit=junit,
        debug=debug,
        problem=no_history_conflict(
            no_history, cache, gates.fail_on_drop, gates.fail_on_regression
        ),
        sharding=sharding,
    )
