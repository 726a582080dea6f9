"""The one way a command that runs tests runs and ends, whatever kind it runs.

``oxy test`` (consistency tests and ``*.test.yml`` files), ``oxy cases run``, ``oxy ab
run`` and ``oxy chattest`` hand :func:`drive` their library call and the reporter of
their kind (:mod:`oxyeval.report.kinds`); ``oxy report`` hands it a saved run. Each
ends the same way, in this order: what stopped the run (an interrupt keeps and reports
what finished; an error before anything finished fails the command the one way, 2 or
3, with a JSON document too), the warnings, the one decision
(:func:`oxyeval.evaluation.decide`), the JUnit file, the report on stdout, and every
reason for a non-zero exit on stderr, in any format.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .._collector import relaxed
from ..errors import ConfigError, OxyError
from ..evaluation import (
    Decision,
    Gates,
    decide,
    decide_run,
    gate_option_error,
    with_artifact_failure,
)
from ..report.text import shown
from ._common import live_progress, print_json
from .console import json_error, print_error

if TYPE_CHECKING:
    from rich.console import Console

    from ..report import RunReporter
    from ..suites import Sharding

__all__ = ["drive", "finish"]


def drive(
    reporter: RunReporter,
    run: Any,
    start: Callable[[Any], Any],
    gates: Gates,
    *,
    err: Console,
    out: Console,
    as_json: bool,
    quiet: bool,
    junit: str | None = None,
    debug: bool = False,
    problem: str | None = None,
    progress: bool = True,
    sharding: Sharding | None = None,
) -> int:
    """Run ``start(events)`` (the library call, filling ``run`` as it goes) under the
    gates, report it and return the exit code. ``problem``: why the command's own
    options cannot run (checked after the gates', before anything starts);
    ``sharding``: the run is one shard of a run group, whose outcome is kept for
    ``oxy report --run-group``."""
    from .interrupt import interrupt_reason, report_whole, run_interruptible

    problem = gate_option_error(gates) or problem or _junit_problem(junit)
    if problem is not None:
        return _failed_before_any(
            reporter, run, Gates(), ConfigError(problem), err, as_json, None, debug, None
        )
    started = datetime.now(timezone.utc)  # the JUnit suites' timestamp
    bar, events = live_progress(err, quiet=quiet or not progress, as_json=as_json)
    interrupted: str | None = None
    error: BaseException | None = None
    with relaxed():  # the run and its report: see oxyeval._collector
        try:
            with bar.progress if bar is not None else nullcontext():
                run_interruptible(start(events))
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM (see oxyeval.cli.interrupt)
            interrupted = interrupt_reason(exc)
            run.interrupted = True
        except OxyError as exc:
            error = exc
        except Exception as exc:  # a bug: said in one paragraph, what finished still reported
            error = exc
            if not debug:
                err.print(
                    f"internal error: {type(exc).__name__}: {exc} "
                    "(run with --debug for the traceback)",
                    style="red",
                    markup=False,  # brackets in an exception's text are not rich markup
                )
        with report_whole():
            if error is not None and not reporter.finished(run):
                return _failed_before_any(
                    reporter, run, gates, error, err, as_json, junit, debug, started, sharding
                )
            return finish(
                reporter,
                run,
                gates,
                err=err,
                out=out,
                as_json=as_json,
                quiet=quiet,
                junit=junit,
                debug=debug,
                error=error,
                interrupted=interrupted,
                started=started,
                sharding=sharding,
            )


def finish(
    reporter: RunReporter,
    run: Any,
    gates: Gates,
    *,
    err: Console,
    out: Console,
    as_json: bool,
    quiet: bool,
    junit: str | None = None,
    debug: bool = False,
    error: BaseException | None = None,
    interrupted: str | None = None,
    started: datetime | None = None,
    sharding: Sharding | None = None,
) -> int:
    """Decide ``run`` (one kind's, finished, interrupted or read back from a saved
    document), report it, say why on stderr; the exit code. ``error``: what stopped it
    after something finished; ``interrupted``: the signal's line; ``sharding``: the
    shard whose outcome to keep under its run group."""
    if sharding is not None and sharding.total and not sharding.selected:
        # More shards than tests: this one has none, which is no empty selection.
        gates = replace(gates, allow_empty=True)
    decision = _decided(run, gates, error)
    code = decision.code
    if interrupted is not None:
        line = reporter.interrupted_line(run, interrupted)
        err.print(shown(f"{line}; exit {code}"), style="yellow", markup=False)
    for note in reporter.notes(run, quiet=quiet):
        err.print(shown(note), style="yellow", markup=False, highlight=False)
    for warning in decision.warnings:
        err.print(shown(warning), style="yellow", markup=False)
    if error is not None and (isinstance(error, OxyError) or debug):
        line = None if debug else reporter.error_line(error, quiet=quiet)
        if line is None:
            print_error(err, error, debug)
        else:
            err.print(shown(line), style="red", markup=False)
    stopped = None if error is None else json_error(error)
    if sharding is not None:
        doc = reporter.document(run, decision, error=stopped)
        code = _keep_shard(sharding, doc, code, err)
    if junit is not None:
        from .artifacts import write_report

        text = reporter.junit(run, decision, error=stopped, timestamp=started)
        code = write_report("--junit", junit, text, err, code)
    final = decision if code == decision.code else _with_code(decision, code)
    if as_json:
        print_json(reporter.document(run, final, error=stopped))
    else:
        from .console import stdout_console

        reporter.render(run, final, stdout_console(), quiet=quiet)
    # After the report they explain (on a terminal both streams interleave), whatever
    # the format: CI logs show them. The pretty report of a kind that ends with the
    # gates' own lines already says those on a shared terminal.
    gate_lines = {c.message for c in (decision.threshold, decision.drop) if c is not None}
    skip_gates = reporter.shows_gates and not as_json and same_terminal()
    said = set(decision.unscored) if error is not None and reporter.one_result else set()
    for reason in decision.reasons:
        if (skip_gates and reason in gate_lines) or reason in said:
            continue
        # A reason may quote what a model or a server sent (an error body): its escape
        # sequences are written out, never run by the terminal.
        line = f"error: {reason}" if reason == decision.empty else reason
        err.print(shown(line), style="red", markup=False)
    return code


def _decided(run: Any, gates: Gates, error: BaseException | None) -> Decision:
    """The decision the run ended with when it was made under these gates and nothing
    stopped the run since, else made now: deciding reads every result again (from disk,
    in a large run), a second of a 100,000-case run's end."""
    made = getattr(run, "decision", None)
    if (
        isinstance(made, Decision)
        and error is None
        and made.gates == gates
        and made.interrupted == bool(getattr(run, "interrupted", False))
    ):
        return made
    return decide_run(run, gates, error=error)


def _with_code(decision: Decision, code: int) -> Decision:
    """The decision as shown once a report file could not be written (its code, 3)."""
    return replace(decision, code=code)


def _keep_shard(sharding: Sharding, doc: dict[str, Any], code: int, err: Console) -> int:
    """Say which share this shard ran and keep its document under its run group; the
    exit code once kept (a shard that could not be kept would be missing from the
    merged decision: exit 3 now, never a green job)."""
    group = f" of run group {sharding.group}" if sharding.group is not None else ""
    err.print(
        f"shard {sharding.shard}{group}: {sharding.selected} of {sharding.total} test(s), "
        f"{sharding.runs} run(s)",
        style="dim",
        markup=False,
        highlight=False,
    )
    from ..report import plain

    why = sharding.record(plain(doc), code)
    if why is None:
        return code
    err.print(
        shown(f"error: shard {sharding.shard}{group} could not be kept in the history: {why}"),
        style="red",
        markup=False,
    )
    return with_artifact_failure(code)


def _junit_problem(junit: str | None) -> str | None:
    from .artifacts import report_path_problem

    return None if junit is None else report_path_problem("--junit", junit)


def _failed_before_any(
    reporter: RunReporter,
    run: Any,
    gates: Gates,
    error: BaseException,
    err: Console,
    as_json: bool,
    junit: str | None,
    debug: bool,
    started: datetime | None,
    sharding: Sharding | None = None,
) -> int:
    """An error before anything finished: the error's code; CI still gets its JUnit file
    (one error saying why) and ``--format json`` one document. A shard that had planned
    its share keeps the error under its run group, so the merged decision says why."""
    decision = decide([], gates, error=error, kind=run.kind)  # the error's code
    if isinstance(error, OxyError) or debug:
        print_error(err, error, debug)
    if sharding is not None and sharding.locations:
        doc = reporter.error_document(run, decision, error=json_error(error))
        _keep_shard(sharding, doc, decision.code, err)
    if junit is not None:
        from .artifacts import write_report

        text = reporter.junit(run, decision, error=json_error(error), timestamp=started)
        write_report("--junit", junit, text, err, decision.code)
    if as_json:
        print_json(reporter.error_document(run, decision, error=json_error(error)))
    return decision.code


def same_terminal() -> bool:
    """stdout and stderr are one terminal (an interactive shell, not a log or a pipe)."""
    import os
    import sys

    try:
        if not (sys.stdout.isatty() and sys.stderr.isatty()):
            return False
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)
