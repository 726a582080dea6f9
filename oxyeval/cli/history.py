"""``oxy history``: recent runs of every kind (test cases, consistency tests, workflows, A/B
tests, judged pass/fail tests, SDK suites, any registered kind), each counted from its
results, or one consistency test's accuracy over time (``--test NAME``).

A read: the history is opened read-only and never created (no history yet: nothing to
show), and a run whose process died is shown as interrupted without being marked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import OxyError
from ..store import RUN_KIND_ALIASES, RUN_KINDS
from ._app import DebugOption, Format, ProjectOption, app, setup_logging
from ._common import DbOption, FormatOption, JsonOption, consoles, fail, print_json, read_history

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["history_command"]

_KIND_HELP = (
    f"Only runs of this kind: {', '.join(RUN_KINDS)} "
    f"({', '.join(f'{alias}: {kind}' for alias, kind in RUN_KIND_ALIASES.items())})."
)


@app.command("history")
def history_command(
    limit: Annotated[
        int,
        typer.Option("--limit", metavar="N", min=1, max=10_000, help="Runs (or results) to show."),
    ] = 20,
    kind: Annotated[
        str | None,
        typer.Option("--kind", metavar="|".join((*RUN_KINDS, *RUN_KIND_ALIASES)), help=_KIND_HELP),
    ] = None,
    test: Annotated[
        str | None,
        typer.Option(
            "--test", metavar="NAME", help="One consistency test's accuracy over time, by name."
        ),
    ] = None,
    file: Annotated[
        str | None,
        typer.Option(
            "--file", metavar="FILE", help="With --test: the agent or workflow file that holds it."
        ),
    ] = None,
    run: Annotated[
        str | None,
        typer.Option(
            "--run",
            metavar="ID",
            help="One stored run: its results, and a workflow run's variables, tasks and output.",
        ),
    ] = None,
    compare: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--compare",
            metavar="BASE HEAD",
            help="Two stored runs side by side: per test, the score before and after, "
            "regressions and fixes (ids or unambiguous starts of them).",
        ),
    ] = None,
    as_json: JsonOption = False,
    format: FormatOption = Format.pretty,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Recent runs of every kind, newest first; --test NAME: one consistency test over time;
    --run ID: one stored run; --compare BASE HEAD: what changed between two runs.

    Exit codes: 0 shown; 2 bad input (an unknown test, a bad --db); 3 the history
    cannot be read.
    """
    out, err = consoles()
    setup_logging(err, debug)
    as_json = as_json or format == "json"
    if file is not None and test is None:
        message = "--file goes with --test NAME (the file that holds that test)"
        raise fail(err, OxyError(message), as_json)

    from ..report import (
        history_of_test_json,
        render_history,
        render_stored_run,
        render_test_history,
        run_json,
        stored_run_json,
    )
    from ..suites import history_of_test, recent_runs, stored_run

    # What to read and how to show it: one stored run, one test over time, or the runs.
    read: Callable[[Any, Store | None], Any]
    as_doc: Callable[[Any], dict[str, Any]]
    render: Callable[[Any, Any], None]
    if compare is not None:
        from ..report import comparison_json, render_comparison
        from ..suites import compare_runs

        def read(_proj: Any, store: Store | None) -> Any:
            base, head = (stored_run(store, r).run.id for r in compare)
            assert store is not None  # stored_run raised for an empty history
            return compare_runs(store, base, head)

        name, as_doc, render = "comparison", comparison_json, render_comparison
    elif run is not None:
        read = lambda _proj, store: stored_run(store, run)  # noqa: E731
        name, as_doc, render = "runDetail", stored_run_json, render_stored_run
    elif test is not None:
        read = lambda proj, store: history_of_test(store, proj, test, file, limit)  # noqa: E731
        name, as_doc, render = "testHistory", history_of_test_json, render_test_history
    else:
        read = lambda _proj, store: recent_runs(store, limit, kind)  # noqa: E731
        as_doc = lambda found: {"runs": [run_json(r) for r in found.runs]}  # noqa: E731
        render = lambda found, console: render_history(found.runs, console)  # noqa: E731
        name = "history"
    found = read_history(project, db, err, as_json, read)
    if as_json:
        from ..report import document

        print_json(document(name, as_doc(found)))
    else:
        render(found, out)
