"""``oxy run`` (a workflow, or one question to an agent) and ``oxy compile`` (its plan)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import OxyError
from ..evaluation import error_code
from ..project.limits import MAX_CONCURRENCY
from ._app import (
    CacheOption,
    DbOption,
    DebugOption,
    Format,
    ProjectOption,
    app,
    no_history_conflict,
    setup_logging,
)
from ._common import print_json
from .console import echo, json_error, print_error, stderr_console, streams

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["compile_command", "run_command"]


class _TaskLines:
    """One stderr line per finished task, so a long run never looks stuck."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, record: Any) -> None:
        if record.finished:
            took = f"{record.duration:.2f}s" if record.duration is not None else ""
            extra = " (cached)" if record.status == "cached" else ""
            score = record.details.get("consistency", {}).get("score")
            if score is not None:
                extra += f" consistency {score * 100:.0f}%"
            served = record.details.get("cached_calls", 0)
            if served:
                extra += f" · {served} call{'' if served == 1 else 's'} from the cache"
            self.console.print(f"[green]✓[/] {record.path} [dim]{record.type} {took}{extra}[/]")
        elif record.status == "failed":
            from rich.markup import escape

            from ..report.text import shown

            self.console.print(f"[red]✗ {record.path}: {escape(shown(record.error or ''))}[/]")
        elif record.status == "skipped":
            self.console.print(f"[yellow]- {record.path} skipped ({record.error})[/]")


def _say_cached(err: Console, calls: int) -> None:
    """The pretty report's line on calls the cache served (stderr: stdout is the output)."""
    if calls:
        from ..report.pretty import cached_calls_line

        err.print(cached_calls_line(calls), style="dim", markup=False)


def _interrupted(
    err: Console, as_json: bool, doc: dict[str, Any], code: int, why: str
) -> typer.Exit:
    """Say why on stderr, print the partial document (JSON only); the exit to raise."""
    err.print(f"{why}; exit {code}", style="yellow", markup=False)
    if as_json:
        print_json(doc)
    return typer.Exit(code)


def _ask(
    file: str,
    question: str,
    project: str | None,
    err: Console,
    as_json: bool,
    cache: bool | None = None,
) -> str:
    """Ask the agent; its answer document (JSON) or its answer (pretty) is printed by
    the caller, an interrupted ask prints the same document, marked."""
    from ..evaluation import Gates, decide_run
    from ..report import ask_json
    from ..suites import AskOutcome, ask
    from ..workflow import AgentAnswer
    from .interrupt import interrupt_reason, run_interruptible

    answer = AgentAnswer()
    outcome = AskOutcome(answer)
    try:
        run_interruptible(
            ask(file, question, project_dir=project, into=answer, cache=cache, outcome=outcome)
        )
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the same document, marked
        why = f"{interrupt_reason(exc)} before the agent answered"
        outcome.interrupted = True
        decision = decide_run(outcome, Gates())
        raise _interrupted(err, as_json, ask_json(outcome, decision), decision.code, why) from None
    if as_json:
        print_json(ask_json(outcome, decide_run(outcome, Gates())))
    else:
        _say_cached(err, answer.cached_calls)
    return answer.output or ""


def _run_and_warn(err: Console, wf_run: Any, main: Any) -> None:
    """Run ``main``; then, however it ended, the workflow's load warnings (keys accepted but
    not used...), as ``oxy validate`` and ``oxy test`` print them."""
    from .interrupt import run_interruptible

    try:
        run_interruptible(main)
    finally:
        for warning in wf_run.warnings:
            err.print(warning, style="yellow", markup=False)


def _workflow(
    file: str,
    variables: dict[str, Any],
    project: str | None,
    concurrency: int,
    quiet: bool,
    debug: bool,
    err: Console,
    as_json: bool,
    cache: bool | None = None,
    db: str | None = None,
    history: bool = True,
) -> str:
    """Run the workflow (stored in the history unless ``history`` is False); the JSON
    document of every task (or its final output) is printed by the caller. A failed or
    interrupted run prints its document here and exits."""
    from ..evaluation import Gates, decide_run
    from ..report import workflow_json
    from ..suites.workflows import WorkflowOutcome, run_workflow
    from ..workflow.engine import WorkflowFailed, WorkflowRun
    from .interrupt import interrupt_reason

    wf_run = WorkflowRun()
    outcome = WorkflowOutcome(wf_run, file)
    try:
        _run_and_warn(
            err,
            wf_run,
            run_workflow(
                file,
                variables,
                project_dir=project,
                concurrency=concurrency,
                on_event=None if quiet else _TaskLines(err),
                into=wf_run,
                cache=cache,  # kept in the run's history (db; none: no cache)
                db=db,
                history=history,
                outcome=outcome,
            ),
        )
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the same document, marked
        wf_run.interrupted = True
        decision = decide_run(outcome, Gates())
        done = sum(1 for r in wf_run.records if r.finished)
        why = (
            f"{interrupt_reason(exc)}: {done} task(s) had finished, "
            f"{len(wf_run.unfinished)} interrupted"
        )
        doc = workflow_json(outcome, decision)
        raise _interrupted(err, as_json, doc, decision.code, why) from None
    except WorkflowFailed as failed:  # exit 2 when a task failed on bad input
        if quiet or debug:
            print_error(err, failed, debug)
        else:  # each error is on its task's line just above: name the tasks, once
            err.print(f"error: {failed.run.summary(brief=True)}", style="red", markup=False)
        # The one decision on its result: a failed task's error says whether it was bad
        # input, 2, or not, 3.
        decision = decide_run(outcome, Gates(), error=failed)
        if as_json:
            print_json(workflow_json(outcome, decision, error=json_error(failed)))
        else:
            _say_cached(err, failed.run.cached_calls)
        raise typer.Exit(decision.code) from None
    if as_json:
        print_json(workflow_json(outcome, decide_run(outcome, Gates())))
    else:
        _say_cached(err, wf_run.cached_calls)
    return str(wf_run.output) if wf_run.output is not None else ""


@app.command("run")
def run_command(
    file: Annotated[
        str,
        typer.Argument(metavar="FILE", help="A workflow file, or an agent file with --question."),
    ],
    question: Annotated[
        str | None, typer.Option("--question", metavar="TEXT", help="Ask an agent this question.")
    ] = None,
    var: Annotated[
        list[str] | None,
        typer.Option(
            "--var", metavar="NAME=VALUE", help="Workflow variable NAME=VALUE (repeatable)."
        ),
    ] = None,
    vars_file: Annotated[
        list[str] | None,
        typer.Option("--vars", metavar="FILE", help="YAML file of variables (repeatable)."),
    ] = None,
    format: Annotated[
        Format, typer.Option("--format", help="pretty: the final output; json: every task.")
    ] = Format.pretty,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            metavar="N",
            min=1,
            max=MAX_CONCURRENCY,
            help="Units of work in flight.",
        ),
    ] = 8,
    project: ProjectOption = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No task progress on stderr.")
    ] = False,
    no_history: Annotated[
        bool,
        typer.Option("--no-history", help="Do not store the workflow run, nor read the cache."),
    ] = False,
    db: DbOption = None,
    debug: DebugOption = False,
    cache: CacheOption = None,
) -> None:
    """Run a workflow (or ask an agent a question) and print its output.

    A workflow run (its output and every task) is stored in the project's history
    (--no-history: not); a history that cannot be written is a warning.

    Exit codes: 0 success; 2 bad input or config; 3 a task or provider failed.
    """
    from pathlib import Path

    from ..project.files import file_kind

    err = stderr_console()
    setup_logging(err, debug)
    as_json = format is Format.json
    kind = file_kind(Path(file))
    try:
        conflict = no_history_conflict(no_history, cache)
        if conflict is not None:
            raise OxyError(conflict)
        if kind == "agent":
            if question is None:
                raise OxyError('oxy run on an agent needs --question "..."')
            if not question.strip():
                raise OxyError("--question is empty: give the agent something to answer")
            from ..inputs import valid_text

            question = valid_text(question, "--question")
            text = _ask(file, question, project, err, as_json, cache)
        elif kind == "workflow":
            if question is not None:
                raise OxyError("--question is for agent files; a workflow takes --var NAME=VALUE")
            from ..project import parse_variables

            variables = parse_variables(var, vars_file)
            text = _workflow(
                file,
                variables,
                project,
                concurrency,
                quiet,
                debug,
                err,
                as_json,
                cache,
                db=db,
                history=not no_history,
            )
        else:
            raise OxyError(
                f"{file}: oxy run takes a *.workflow.yml file, or an *.agent.yml file with --question"
            )
    except OxyError as exc:
        print_error(err, exc, debug)
        code = error_code(exc)
        if as_json:
            from ..report import error_document

            print_json(error_document(json_error(exc), code))
        raise typer.Exit(code) from None
    if not as_json:
        from ..report.text import shown

        # A model's output: escape sequences written out, never run by the terminal
        # (--format json carries the exact text).
        text = shown(text)
        streams().stdout.write(text if text.endswith("\n") else text + "\n")


@app.command("compile")
def compile_command(
    file: Annotated[str, typer.Argument(metavar="FILE", help="A workflow file.")],
    mermaid: Annotated[
        bool, typer.Option("--mermaid", help="Print a Mermaid flowchart instead.")
    ] = False,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Show a workflow's execution plan: order, and levels that run in parallel."""
    from pathlib import Path

    from ..project.config import load_project
    from ..project.files import file_kind
    from ..workflow.compile import compile_workflow, render_mermaid, render_plan
    from ..workflow.spec import load_workflow

    err = stderr_console()
    try:
        if file_kind(Path(file)) != "workflow":
            raise OxyError(f"{file}: oxy compile takes a *.workflow.yml file")
        proj = load_project(file, project_dir=project)
        plan = compile_workflow(load_workflow(proj, file))
    except OxyError as exc:
        print_error(err, exc, debug)
        raise typer.Exit(error_code(exc)) from None
    for warning in plan.all_warnings():  # its sub-workflows' too
        err.print(warning.format(), style="yellow", markup=False)
    echo(render_mermaid(plan) if mermaid else render_plan(plan))
