"""``oxy test`` on oxy's ``*.test.yml`` files: judged pass/fail cases, one line each.

``oxy test`` dispatches here when it is given only ``*.test.yml`` files, or nothing at all
(every ``*.test.yml`` of the project); agent and workflow files keep their consistency
tests (:mod:`oxyeval.cli.test`). The gates (``--min-accuracy`` on the overall score, the
mean pass rate; ``--strict``; ``--allow-empty``) and exit codes are the consistency
tests' own, through the one decision.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ._common import check_junit, consoles, print_json, run_reporting
from .artifacts import write_report

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
    min_accuracy: float | None,
    threshold_mode: str,
    strict: bool,
    allow_empty: bool,
) -> int:
    """Run the files, print the report, return the exit code."""
    from ..evaluation import Gates, decide
    from ..report.passfail import render_test_files, test_files_json
    from ..suites import PassFailRun, run_test_files_async

    out, err = consoles()
    check_junit(err, junit, as_json)
    run = PassFailRun()
    started = datetime.now(timezone.utc)
    interrupted, error = run_reporting(
        lambda events: run_test_files_async(
            paths,
            project_dir=project,
            tags=tags,
            cases=cases,
            db=db,
            history=not no_history,
            cache=cache,
            events=events,
            adaptive=adaptive,
            into=run,
        ),
        quiet=quiet,
        err=err,
        as_json=as_json,
        finished=lambda: len(run.subjects),
        noun="case(s)",
    )
    run.interrupted = run.interrupted or interrupted
    gates = Gates(min_accuracy, threshold_mode, strict, allow_empty=allow_empty)
    results = [r.as_result() for r in run.results]
    decision = decide(results, gates, interrupted=run.interrupted, error=error, kind="passfail")
    code = decision.code
    if junit is not None:
        from ..report.junit import passfail_junit

        code = write_report("--junit", junit, passfail_junit(run, timestamp=started), err, code)
    if as_json:
        doc = test_files_json(run)
        doc["summary"]["exitCode"] = code
        doc["threshold"] = min_accuracy
        print_json(doc)
    else:
        render_test_files(run, out)
    for reason in decision.reasons:
        err.print(reason, style="red", markup=False)
    return code
