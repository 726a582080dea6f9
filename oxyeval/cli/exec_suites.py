"""``oxy exec -- CMD ...``: run a command that runs test suites, and exit as they decided.

The command (``python run.py``, ``poetry run start``, ``pytest``...) runs with its own
stdin, stdout and stderr; every ``run_test_suite`` in it, and in the processes it
starts, appends what it decided to a file this command names in their environment
(:mod:`oxyeval.testing._exec_channel`). When the command ends, this one prints a line
per suite run and exits with oxyeval's codes: 0 every suite passed; 1 a suite failed a
threshold (or no suite ran, unless ``--allow-empty``); 2 a suite's arguments were bad
(no test cases, two test cases with one hash...) or the command cannot be started; 3 a
suite had errors (the function under test or an evaluator raised), the command failed
for a reason no suite explains, or it was interrupted. It is Autoblocks' ``autoblocks
testing exec``, offline: nothing is sent anywhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._app import DebugOption, app, setup_logging
from .console import stderr_console, stdout_console

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["exec_command", "exit_code"]

_OK, _FAILED, _INPUT, _INFRA = 0, 1, 2, 3


def _read(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The suites' records in the order they were written, and how many lines were not
    records (a process killed mid-write)."""
    records, bad = [], 0
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(record, dict) and isinstance(record.get("code"), int):
            records.append(record)
        else:
            bad += 1
    return records, bad


def exit_code(
    records: list[dict[str, Any]],
    returncode: int | None,
    *,
    interrupted: bool = False,
    allow_empty: bool = False,
) -> tuple[int, list[str]]:
    """The exit code of a command whose suites reported ``records`` and which ended with
    ``returncode`` (None: it could not be started), and why it is not 0.

    An unknown outcome wins (3: interrupted, a suite with errors, a command that failed
    for a reason no suite explains), then bad input (2), then a failure (1)."""
    reasons: list[str] = []
    codes = [r["code"] for r in records]
    if interrupted or (returncode is not None and returncode < 0):
        reasons.append("the command was interrupted; its suites' outcome is unknown")
        return _INFRA, reasons
    if returncode is None:
        return _INPUT, reasons
    if _INFRA in codes:
        code = _INFRA
    elif _INPUT in codes:
        code = _INPUT
    elif _FAILED in codes:
        code = _FAILED
    else:
        code = _OK
    if returncode != 0 and (code == _OK or (code == _FAILED and returncode != 1)):
        reasons.append(
            f"the command exited {returncode}, which no suite's result explains; "
            "its outcome is unknown"
        )
        code = _INFRA
    if not records and code == _OK:
        if allow_empty:
            return _OK, reasons
        reasons.append(
            "no test suite ran (none called run_test_suite, or --test-suites selected none); "
            "pass --allow-empty to let that pass"
        )
        return _FAILED, reasons
    return code, reasons


def _suite_line(record: dict[str, Any]) -> tuple[str, str, str]:
    """A suite run as the summary shows it: its verdict, name and counts."""
    name = str(record.get("id", "?"))
    params = record.get("params")
    if isinstance(params, dict) and params:
        name += " [" + ", ".join(f"{k}={v!r}" for k, v in params.items()) + "]"
    verdict = {_OK: "PASS", _FAILED: "FAIL", _INPUT: "BAD INPUT", _INFRA: "ERROR"}.get(
        record["code"], "ERROR"
    )
    if record.get("error"):
        return verdict, name, str(record["error"])
    counts = record.get("evaluations") or {}
    cases = record.get("test_cases", 0)
    failed_cases = record.get("failed_test_cases", 0)
    parts = [f"{cases} test case(s)" + (f", {failed_cases} not passed" if failed_cases else "")]
    parts.append(
        ", ".join(
            f"{counts.get(k, 0)} {label}"
            for k, label in (
                ("passed", "passed"),
                ("failed", "failed"),
                ("undefined", "undefined"),
                ("errors", "error(s)"),
            )
        )
    )
    return verdict, name, "; ".join(parts)


def _summary(
    records: list[dict[str, Any]], code: int, reasons: list[str], out: Console, err: Console
) -> None:
    from ..redact import redact
    from ..report.text import shown

    styles = {"PASS": "green", "FAIL": "red", "BAD INPUT": "red", "ERROR": "red"}
    out.print(f"oxy exec: {len(records)} test suite run(s)", markup=False, highlight=False)
    for record in records:
        verdict, name, detail = _suite_line(record)
        out.print(f"  {verdict:<9}", style=styles[verdict], end="", markup=False)
        out.print(f" {shown(redact(name))}: {shown(redact(detail))}", markup=False, highlight=False)
    for record in records:
        name = _suite_line(record)[1]
        for line in record.get("reasons") or []:
            err.print(shown(redact(f"{name}: {line}")), style="red", markup=False, highlight=False)
    for line in reasons:
        err.print(line, style="yellow", markup=False, highlight=False)
    if code:
        err.print(f"exit {code}", style="red", markup=False)


@app.command(
    "exec",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
def exec_command(
    command: Annotated[
        list[str] | None,
        typer.Argument(metavar="-- CMD [ARGS]...", help="The command that runs your suites."),
    ] = None,
    test_suites: Annotated[
        list[str] | None,
        typer.Option(
            "--test-suites",
            "-t",
            metavar="TEXT",
            help="Run only the suites whose id contains TEXT (repeatable).",
        ),
    ] = None,
    allow_empty: Annotated[
        bool,
        typer.Option("--allow-empty", help="Exit 0 when the command ran no test suite."),
    ] = False,
    exit_1_on_evaluation_failure: Annotated[
        bool,
        typer.Option(
            "--exit-1-on-evaluation-failure",
            hidden=True,
            help="Accepted for Autoblocks' CLI; a failed evaluation always exits 1 here.",
        ),
    ] = False,
    message: Annotated[
        str | None,
        typer.Option("--message", "-m", metavar="TEXT", help="A note on this run, printed."),
    ] = None,
    debug: DebugOption = False,
) -> None:
    """Run a command that runs test suites (run_test_suite), then exit as they decided.

    Exit codes: 0 every suite passed; 1 one failed its thresholds, or no suite ran
    (--allow-empty: 0); 2 a suite's arguments were bad, or the command cannot start;
    3 a suite had errors, the command failed for a reason no suite explains, or it was
    interrupted. Example: oxy exec -- python run.py
    """
    from ..testing import EXEC_REPORT_ENV, EXEC_SUITES_ENV

    out, err = stdout_console(), stderr_console()
    setup_logging(err, debug)
    if not command:
        err.print(
            "error: oxy exec: no command given; put the command after --, for example: "
            "oxy exec -- python run.py",
            style="red",
            markup=False,
        )
        raise typer.Exit(_INPUT)
    if message:
        out.print(f"oxy exec: {message}", markup=False, highlight=False)
    with tempfile.TemporaryDirectory(prefix="oxy-exec-") as scratch:
        path = Path(scratch) / "suites.jsonl"
        env = dict(os.environ, **{EXEC_REPORT_ENV: str(path)})
        if test_suites:
            env[EXEC_SUITES_ENV] = json.dumps(list(test_suites))
        else:
            env.pop(EXEC_SUITES_ENV, None)
        returncode, interrupted = _run(command, env, err)
        records, bad = _read(path)
    if bad:
        err.print(f"warning: {bad} unreadable suite record(s) ignored", style="yellow")
    code, reasons = exit_code(records, returncode, interrupted=interrupted, allow_empty=allow_empty)
    if returncode is not None:
        _summary(records, code, reasons, out, err)
    raise typer.Exit(code)


def _terminal_sends_to_group() -> bool:
    """Whether this process is in the foreground of a terminal, whose Ctrl-C goes to
    every process of the group, the command included (it shares the group, so that it
    can read the terminal: a debugger's prompt works under ``oxy exec``)."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, AttributeError, ValueError):  # no terminal (CI), or not POSIX
        return False


def _run(command: list[str], env: dict[str, str], err: Console) -> tuple[int | None, bool]:
    """Run ``command``; its exit code (None: it could not start) and whether a signal
    stopped it. SIGINT and SIGTERM reach it once (passed on, unless the terminal sent
    them to it as well) and it is waited for, so its suites report what they finished;
    a second signal kills it."""
    from ..redact import redact

    try:
        child = subprocess.Popen(command, env=env)
    except OSError as exc:
        err.print(
            redact(f"error: oxy exec: cannot run {command[0]!r}: {exc.strerror or exc}"),
            style="red",
            markup=False,
        )
        return None, False
    stopped = threading.Event()
    previous: dict[int, Any] = {}

    def forward(signum: int, _frame: object) -> None:
        if stopped.is_set():
            child.kill()
            return
        stopped.set()
        if signum == signal.SIGINT and _terminal_sends_to_group():
            return  # the terminal's Ctrl-C reached the command too: once is enough
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            child.send_signal(signum)

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, forward)
    try:
        returncode = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return returncode, stopped.is_set()
