"""The ``oxy`` command: a thin shell over the library.

It parses flags, wires progress and logging to stderr, and maps outcomes to
exit codes; everything else is a call into :mod:`oxyeval`. Heavy imports stay
inside the commands so ``oxy --help`` and start-up stay fast.
"""

from __future__ import annotations

import itertools
import json
import logging
import sys
import time
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import __version__
from ..errors import EXIT_INFRA, EXIT_INPUT, OxyError
from ..project.limits import MAX_CONCURRENCY
from .console import print_error, stderr_console, stdout_console

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["app", "main"]

app = typer.Typer(
    name="oxy",
    help="Test LLM agents and workflows: consistency tests, CI thresholds, offline mocks.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class Format(str, Enum):
    pretty = "pretty"
    json = "json"


class ThresholdMode(str, Enum):
    average = "average"
    all = "all"


class _ConsoleHandler(logging.Handler):
    """Log lines (retries, warnings) on stderr through rich, above any progress bar."""

    def __init__(self, console: Console) -> None:
        super().__init__(logging.DEBUG)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        from rich.markup import escape

        from ..redact import redact

        style = "yellow" if record.levelno >= logging.WARNING else "dim"
        self.console.print(f"[{style}]{escape(redact(record.getMessage()))}[/]")


def _setup_logging(console: Console, debug: bool) -> None:
    logger = logging.getLogger("oxyeval")
    logger.handlers[:] = [_ConsoleHandler(console)]
    logger.setLevel(logging.DEBUG if debug else logging.INFO)
    logger.propagate = False


class _RichProgress:
    """Adapter from the runner's ProgressSink to a rich progress bar on stderr."""

    def __init__(self, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.tasks: dict[str, Any] = {}

    def start(self, key: str, label: str, total: int) -> None:
        self.tasks[key] = self.progress.add_task(label, total=total)

    def add_total(self, key: str, amount: int) -> None:
        task = self.progress.tasks[self.tasks[key]]
        self.progress.update(self.tasks[key], total=(task.total or 0) + amount)

    def advance(self, key: str, amount: int = 1) -> None:
        self.progress.advance(self.tasks[key], amount)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Show the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"oxyeval {__version__}")
        raise typer.Exit(0)


@app.command("test")
def test_command(
    files: Annotated[
        list[str], typer.Argument(help="Agent or workflow files (or folders) whose tests to run.")
    ],
    format: Annotated[
        Format, typer.Option("--format", help="pretty, or json: one JSON document on stdout.")
    ] = Format.pretty,
    min_accuracy: Annotated[
        float | None,
        typer.Option("--min-accuracy", help="Exit 1 if accuracy is below this (0..1)."),
    ] = None,
    threshold_mode: Annotated[
        ThresholdMode,
        typer.Option("--threshold-mode", help="average: mean of the tests; all: every test."),
    ] = ThresholdMode.average,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar and no details.")
    ] = False,
    project: Annotated[
        str | None,
        typer.Option(
            "--project", help="Project folder (default: nearest config.yml above the file)."
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Exit 3 if any run or judge call failed, even when scored."),
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
) -> None:
    """Run the consistency tests declared in agent files and gate CI on their accuracy.

    Exit codes: 0 pass; 1 below --min-accuracy; 2 bad input or config;
    3 provider failure, interrupted run, or a test that could not be scored.
    """
    from ..redact import redact
    from ..report.consistency import check_threshold, exit_code, render_pretty, to_json, write_json
    from ..suites.consistency import run_tests_async
    from ..suites.results import TestRun
    from .interrupt import interrupt_reason, run_interruptible

    err = stderr_console()
    _setup_logging(err, debug)
    as_json = format is Format.json
    show_progress = not quiet and sys.stderr.isatty()
    progress = _RichProgress(err) if show_progress else None
    run = TestRun()
    error: BaseException | None = None
    if min_accuracy is not None and not 0.0 <= min_accuracy <= 1.0:
        message = f"--min-accuracy must be between 0 and 1 (a share, e.g. 0.8 for 80%), got {min_accuracy:g}"
        err.print(f"error: {message}", style="red", markup=False)
        if as_json:
            write_json(to_json(run, code=EXIT_INPUT, error=message), sys.stdout)
        raise typer.Exit(EXIT_INPUT)
    try:
        if progress is not None:
            with progress.progress:
                run_interruptible(
                    run_tests_async(files, project_dir=project, progress=progress, into=run)
                )
        else:
            run_interruptible(run_tests_async(files, project_dir=project, into=run))
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM (see oxyeval.cli.interrupt)
        run.interrupted = True
        cut = sum(1 for t in run.tests if t.interrupted)
        err.print(
            f"{interrupt_reason(exc)}: reporting {len(run.tests) - cut} test(s) that finished "
            f"and {cut} cut short (their finished runs are kept, marked interrupted); exit 3",
            style="yellow",
            markup=False,
        )
    except OxyError as exc:
        error = exc
    except Exception as exc:  # a bug: still say it in one paragraph and keep what finished
        error = exc
        if not debug:
            err.print(
                f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
                style="red",
            )

    if error is not None and not run.tests:
        code = error.exit_code if isinstance(error, OxyError) else EXIT_INFRA
        if isinstance(error, OxyError) or debug:
            print_error(err, error, debug)
        if as_json:
            write_json(to_json(run, code=code, error=str(error)), sys.stdout)
        raise typer.Exit(code)

    if not quiet:
        for warning in run.warnings + run.skipped:
            err.print(warning, style="yellow", markup=False, highlight=False)
    threshold = None
    if min_accuracy is not None:
        threshold = check_threshold(run, min_accuracy, threshold_mode.value)
        if threshold is None:
            err.print(
                "warning: --min-accuracy given but no accuracy metrics were produced; not gating",
                style="yellow",
            )
    code = exit_code(run, threshold, strict=strict)
    if strict and code == EXIT_INFRA and all(t.ok for t in run.tests) and not run.interrupted:
        runs = sum(len(t.run_errors) for t in run.tests)
        judges = sum(len(t.judge_errors) for t in run.tests)
        err.print(
            f"strict: {runs} run error(s) and {judges} judge error(s) -> exit 3 "
            "(without --strict they are reported and the scores stand)",
            style="red",
            markup=False,
        )
    for test in run.tests:
        if not test.ok and test.error:  # every non-zero exit says why on stderr, in any format
            err.print(
                f"not scored: {run.label(test)}: {redact(test.error)}", style="red", markup=False
            )
    if error is not None:
        code = error.exit_code if isinstance(error, OxyError) else EXIT_INFRA
        print_error(err, error, debug)
    if code != 0:  # the reason is on stderr whatever the format (stdout may go to a file)
        for test in run.tests:
            if not test.ok:
                what = "" if test.interrupted else "not scored: "  # its error says interrupted
                reason = redact(test.error or "no accuracy")
                err.print(f"{what}{run.label(test)}: {reason}", style="red", markup=False)
    if as_json:
        write_json(
            to_json(run, threshold, code=code, error=None if error is None else str(error)),
            sys.stdout,
        )
    else:
        render_pretty(run, threshold, stdout_console(), quiet=quiet, code=code)
    if threshold is not None and not threshold.passed:
        err.print(threshold.message, style="red", markup=False)
    raise typer.Exit(code)


def _parse_vars(pairs: list[str] | None, files: list[str] | None) -> dict[str, Any]:
    """--vars files first (in order), then --var pairs, later ones winning."""
    from ..errors import ConfigError
    from ..project.document import load_yaml

    values: dict[str, Any] = {}
    for file in files or []:
        # The project's loader: positions in errors, and the same size, depth and alias limits.
        data = load_yaml(file).data
        if not isinstance(data, dict):
            raise ConfigError(f"--vars {file}: expected a mapping of variable names to values")
        values.update(data)
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--var {pair!r}: expected NAME=VALUE")
        values[name.strip()] = value
    return values


class _TaskLines:
    """One stderr line per finished task, so a long run never looks stuck."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, record: Any) -> None:
        if record.status in ("succeeded", "cached"):
            took = f"{record.duration:.2f}s" if record.duration is not None else ""
            extra = " (cached)" if record.status == "cached" else ""
            score = record.details.get("consistency", {}).get("score")
            if score is not None:
                extra += f" consistency {score * 100:.0f}%"
            self.console.print(f"[green]✓[/] {record.path} [dim]{record.type} {took}{extra}[/]")
        elif record.status == "failed":
            from rich.markup import escape

            self.console.print(f"[red]✗ {record.path}: {escape(record.error or '')}[/]")
        elif record.status == "skipped":
            self.console.print(f"[yellow]- {record.path} skipped ({record.error})[/]")


@app.command("run")
def run_command(
    file: Annotated[str, typer.Argument(help="A workflow file, or an agent file with --question.")],
    question: Annotated[
        str | None, typer.Option("--question", help="Ask an agent this question.")
    ] = None,
    var: Annotated[
        list[str] | None,
        typer.Option("--var", help="Workflow variable NAME=VALUE (repeatable)."),
    ] = None,
    vars_file: Annotated[
        list[str] | None, typer.Option("--vars", help="YAML file of variables (repeatable).")
    ] = None,
    format: Annotated[
        Format, typer.Option("--format", help="pretty: the final output; json: every task.")
    ] = Format.pretty,
    concurrency: Annotated[
        int,
        typer.Option("--concurrency", min=1, max=MAX_CONCURRENCY, help="Units of work in flight."),
    ] = 8,
    project: Annotated[str | None, typer.Option("--project", help="Project folder.")] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No task progress on stderr.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug")] = False,
) -> None:
    """Run a workflow (or ask an agent a question) and print its output.

    Exit codes: 0 success; 2 bad input or config; 3 a task or provider failed.
    """
    from pathlib import Path

    from ..project.config import file_kind
    from .interrupt import interrupt_reason, run_interruptible

    err = stderr_console()
    _setup_logging(err, debug)
    as_json = format is Format.json
    kind = file_kind(Path(file))
    try:
        if kind == "agent":
            if question is None:
                raise OxyError('oxy run on an agent needs --question "..."')
            doc = _agent_doc(file)
            started = time.perf_counter()
            try:
                run_interruptible(_ask_agent(file, question, project, doc))
            except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the same document, marked
                duration = round(time.perf_counter() - started, 4)
                doc.update(status="interrupted", duration_s=duration, exit_code=EXIT_INFRA)
                _interrupted(
                    err, as_json, doc, f"{interrupt_reason(exc)} before the agent answered"
                )
        elif kind == "workflow":
            from ..workflow.engine import WorkflowFailed, WorkflowRun, run_workflow

            if question is not None:
                raise OxyError("--question is for agent files; a workflow takes --var NAME=VALUE")

            variables = _parse_vars(var, vars_file)
            wf_run = WorkflowRun()
            try:
                run_interruptible(
                    run_workflow(
                        file,
                        variables,
                        project_dir=project,
                        concurrency=concurrency,
                        on_event=None if quiet else _TaskLines(err),
                        into=wf_run,
                    )
                )
            except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the same document, marked
                wf_run.interrupted = True
                doc = {**wf_run.to_dict(), "exit_code": EXIT_INFRA}
                doc["workflow"] = doc["workflow"] or file
                done = sum(1 for r in wf_run.records if r.status in ("succeeded", "cached"))
                why = (
                    f"{interrupt_reason(exc)}: {done} task(s) had finished, "
                    f"{len(wf_run.unfinished)} interrupted"
                )
                _interrupted(err, as_json, doc, why)
            except WorkflowFailed as failed:  # exit 2 when a task failed on bad input
                print_error(err, failed, debug)
                if as_json:
                    from ..report.consistency import write_json

                    write_json({**failed.run.to_dict(), "exit_code": failed.exit_code}, sys.stdout)
                raise typer.Exit(failed.exit_code) from None
            doc = {**wf_run.to_dict(), "exit_code": 0}
            doc["_text"] = str(wf_run.output) if wf_run.output is not None else ""
        else:
            raise OxyError(
                f"{file}: oxy run takes a *.workflow.yml file, or an *.agent.yml file with --question"
            )
    except OxyError as exc:
        print_error(err, exc, debug)
        if as_json:
            from ..report.consistency import write_json

            write_json(
                {"status": "error", "error": str(exc), "exit_code": exc.exit_code}, sys.stdout
            )
        raise typer.Exit(exc.exit_code) from None
    from ..redact import redact

    text = redact(doc.pop("_text", ""))
    if as_json:
        from ..report.consistency import write_json

        write_json(doc, sys.stdout)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    raise typer.Exit(0)


def _interrupted(err: Console, as_json: bool, doc: dict[str, Any], why: str) -> None:
    """Say why on stderr, print the partial document (JSON only), exit 3."""
    err.print(f"{why}; exit {EXIT_INFRA}", style="yellow", markup=False)
    doc.pop("_text", None)
    if as_json:
        from ..report.consistency import write_json

        write_json(doc, sys.stdout)
    raise typer.Exit(EXIT_INFRA)


def _agent_doc(file: str) -> dict[str, Any]:
    """What ``oxy run --question`` prints, before the answer: an interrupted ask prints
    this same shape."""
    return {
        "agent": file,
        "status": "running",
        "output": None,
        "tool_calls": [],
        "usage": {"input_tokens": None, "output_tokens": None},
        "duration_s": None,
        "exit_code": None,
        "_text": "",
    }


async def _ask_agent(
    file: str, question: str, project_dir: str | None, doc: dict[str, Any]
) -> None:
    """Ask the agent and fill ``doc`` (see :func:`_agent_doc`)."""
    from ..project.config import load_agent, load_project
    from ..workflow.agent import describe_calls
    from ..workflow.context import RunContext

    proj = load_project(file, project_dir=project_dir)
    agent = load_agent(proj, file)
    doc["agent"] = agent.display
    async with RunContext(proj) as context:
        context.models.check([agent.model])
        completion = await context.agent(agent).ask(question)
    doc.update(
        status="succeeded",
        output=completion.text,
        tool_calls=describe_calls(completion.tool_calls),
        usage={
            "input_tokens": completion.usage.input_tokens,
            "output_tokens": completion.usage.output_tokens,
        },
        duration_s=round(completion.latency, 4),
        exit_code=0,
        _text=completion.text,
    )


@app.command("compile")
def compile_command(
    file: Annotated[str, typer.Argument(help="A workflow file.")],
    mermaid: Annotated[
        bool, typer.Option("--mermaid", help="Print a Mermaid flowchart instead.")
    ] = False,
    project: Annotated[str | None, typer.Option("--project", help="Project folder.")] = None,
    debug: Annotated[bool, typer.Option("--debug")] = False,
) -> None:
    """Show a workflow's execution plan: order, and levels that run in parallel."""
    from ..project.config import load_project
    from ..workflow.compile import compile_workflow, render_mermaid, render_plan
    from ..workflow.spec import load_workflow

    err = stderr_console()
    try:
        from pathlib import Path

        from ..project.config import file_kind

        if file_kind(Path(file)) != "workflow":
            raise OxyError(f"{file}: oxy compile takes a *.workflow.yml file")
        proj = load_project(file, project_dir=project)
        plan = compile_workflow(load_workflow(proj, file))
    except OxyError as exc:
        print_error(err, exc, debug)
        raise typer.Exit(exc.exit_code) from None
    for warning in plan.all_warnings():  # its sub-workflows' too
        err.print(warning.format(), style="yellow", markup=False)
    typer.echo(render_mermaid(plan) if mermaid else render_plan(plan))


@app.command("validate")
def validate_command(
    paths: Annotated[
        list[str] | None, typer.Argument(help="Files or folders (default: the current project).")
    ] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project folder.")] = None,
    format: Annotated[Format, typer.Option("--format", help="pretty or json.")] = Format.pretty,
    debug: Annotated[bool, typer.Option("--debug")] = False,
) -> None:
    """Check config, agent and workflow files against the schemas; exit 2 on any error."""
    from ..project.validate import validate_paths

    err = stderr_console()
    try:
        report = validate_paths(paths or [], project_dir=project)
    except OxyError as exc:
        print_error(err, exc, debug)
        raise typer.Exit(EXIT_INPUT) from None
    code = EXIT_INPUT if report.errors else 0
    for d in report.diagnostics:  # on stderr in both formats: a non-zero exit says why
        err.print(d.format(), style="red" if d.severity == "error" else "yellow", markup=False)
    if format is Format.json:
        from ..report.consistency import write_json

        write_json(
            {
                "valid": not report.errors,
                "files": report.files,
                "errors": [d.__dict__ for d in report.errors],
                "warnings": [d.__dict__ for d in report.warnings],
            },
            sys.stdout,
        )
    else:
        summary = (
            f"{len(report.files)} file(s) checked: {len(report.errors)} error(s), "
            f"{len(report.warnings)} warning(s)"
        )
        typer.echo(("✗ " if report.errors else "✓ ") + summary)
    raise typer.Exit(code)


_SCHEMA_KINDS = ("config", "agent", "workflow", "prompt", "cases")  # validate.SCHEMA_FILES


@app.command("schema")
def schema_command(
    kind: Annotated[str, typer.Argument(help="config, agent, workflow, prompt or cases.")],
    path: Annotated[
        bool, typer.Option("--path", help="Print the file path instead of the JSON.")
    ] = False,
) -> None:
    """Print a JSON Schema (for editors: # yaml-language-server: $schema=<path>)."""
    from ..project.schema import SCHEMA_FILES, schema_path

    if kind not in SCHEMA_FILES or kind not in _SCHEMA_KINDS:
        stderr_console().print(
            f"error: unknown schema '{kind}'; choose {', '.join(_SCHEMA_KINDS)}",
            style="red",
            markup=False,
        )
        raise typer.Exit(EXIT_INPUT)
    if path:
        typer.echo(schema_path(kind))
    else:
        from importlib import resources

        typer.echo(
            (resources.files("oxyeval") / "schemas" / f"{kind}.schema.json").read_text("utf-8")
        )


from .cases import cases_app, history_command  # noqa: E402  (registers sub-commands)

app.add_typer(cases_app, name="cases")
app.command("history")(history_command)


class _Recorder:
    """Passes writes through and remembers them, to know what a command already printed."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.text: list[str] = []

    def write(self, data: str | bytes) -> int:
        self.text.append(data.decode("utf-8", "replace") if isinstance(data, bytes) else data)
        return self._stream.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _wants_json(argv: list[str]) -> bool:
    return (
        "--json" in argv
        or "--format=json" in argv
        or any(a == "--format" and b == "json" for a, b in itertools.pairwise(argv))
    )


def _run_app() -> None:
    """``app()``, where a bug the command did not catch still ends in one paragraph on
    stderr and exit 3, not a traceback (``--debug`` shows it)."""
    try:
        app()
    except Exception as exc:
        if "--debug" in sys.argv[1:]:
            raise
        from ..redact import redact

        stderr_console().print(
            f"internal error: {type(exc).__name__}: {redact(str(exc))} "
            "(run with --debug for the traceback)",
            style="red",
            markup=False,
        )
        raise SystemExit(EXIT_INFRA) from None


def main() -> None:
    """Entry point; with --format json, even a command-line error yields one JSON document.

    Everything the process prints goes through a redacting stream: the last line of
    defence should any path print a secret without scrubbing it first.
    """
    from ..redact import RedactingStream
    from .interrupt import exit_on_signal

    exit_on_signal()
    sys.stdout = RedactingStream(sys.stdout)  # type: ignore[assignment]
    sys.stderr = RedactingStream(sys.stderr)  # type: ignore[assignment]
    if not _wants_json(sys.argv[1:]):
        _run_app()
        return
    out, err = _Recorder(sys.stdout), _Recorder(sys.stderr)
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    try:
        _run_app()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_INPUT)
        if code != 0 and not "".join(out.text).strip():
            message = " ".join("".join(err.text).split()) or "invalid command line"
            out._stream.write(json.dumps({"error": message, "exit_code": code}) + "\n")
        raise
    finally:
        sys.stdout, sys.stderr = out._stream, err._stream
