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
from ._common import fail
from .console import echo, print_error, stderr_console, stdout_console

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

    from ..evaluation import Gates
    from ..project.files import file_kind
    from ..report import reporter
    from .driver import drive

    err = stderr_console()
    setup_logging(err, debug)
    as_json = format is Format.json
    kind = file_kind(Path(file))
    try:
        if kind == "agent":
            if question is None:
                raise OxyError('oxy run on an agent needs --question "..."')
            if not question.strip():
                raise OxyError("--question is empty: give the agent something to answer")
            from ..inputs import valid_text

            question = valid_text(question, "--question")
        elif kind == "workflow":
            if question is not None:
                raise OxyError("--question is for agent files; a workflow takes --var NAME=VALUE")
            from ..project import parse_variables

            variables = parse_variables(var, vars_file)
        else:
            raise OxyError(
                f"{file}: oxy run takes a *.workflow.yml or *.procedure.yml file, or an *.agent.yml file with --question"
            )
    except OxyError as exc:
        raise fail(err, exc, as_json) from None
    options: dict[str, Any] = {
        "err": err,
        "out": stdout_console(),
        "as_json": as_json,
        "quiet": quiet,
        "debug": debug,
        "progress": False,  # each task says when it finishes, on its own line
        "problem": no_history_conflict(no_history, cache),
    }
    if kind == "agent":
        from ..suites import AskOutcome, ask
        from ..workflow import AgentAnswer

        answer = AgentAnswer()
        asked = AskOutcome(answer)
        code = drive(
            reporter("ask"),
            asked,
            lambda events: ask(
                file,
                question or "",
                project_dir=project,
                into=answer,
                cache=cache,
                db=db,
                history=not no_history,
                outcome=asked,
                events=events,
            ),
            Gates(),
            **options,
        )
        raise typer.Exit(code)
    from ..suites.workflows import WorkflowOutcome, run_workflow
    from ..workflow.engine import WorkflowRun

    wf_run = WorkflowRun()
    outcome = WorkflowOutcome(wf_run, file)
    code = drive(
        reporter("workflow"),
        outcome,
        lambda events: run_workflow(
            file,
            variables,
            project_dir=project,
            concurrency=concurrency,
            on_event=None if quiet else _TaskLines(err),
            into=wf_run,
            cache=cache,  # kept in the run's history (db; none: no cache)
            db=db,
            history=not no_history,
            outcome=outcome,
            events=events,
        ),
        Gates(),
        **options,
    )
    raise typer.Exit(code)


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
            raise OxyError(f"{file}: oxy compile takes a *.workflow.yml or *.procedure.yml file")
        proj = load_project(file, project_dir=project)
        plan = compile_workflow(load_workflow(proj, file))
    except OxyError as exc:
        print_error(err, exc, debug)
        raise typer.Exit(error_code(exc)) from None
    for warning in plan.all_warnings():  # its sub-workflows' too
        err.print(warning.format(), style="yellow", markup=False)
    echo(render_mermaid(plan) if mermaid else render_plan(plan))
