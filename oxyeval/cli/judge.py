"""``oxy judge calibrate``: a judge against a human-labelled set, and the history of it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import ConfigError, OxyError
from ._app import DebugOption, Format, ProjectOption, app, setup_logging
from ._common import DbOption, FormatOption, consoles, fail, print_json

if TYPE_CHECKING:
    from ..project.config import Project
    from ..suites import Calibration, LabelledPair

__all__ = ["judge_app"]

judge_app = typer.Typer(
    name="judge",
    help="The judges: how far they agree with people (calibrate).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


async def _run(project: Project, model: str, pairs: list[LabelledPair], file: str) -> Calibration:
    from ..judge import Judge
    from ..providers import ModelPool
    from ..suites import calibrate

    async with ModelPool(project.models, locate=project.model_error) as pool:
        judge = Judge(pool.get(model), settings=project.judge)
        return await calibrate(judge, pairs, file=file, model=model)


def _display(project: Project, path: Path) -> str:
    try:
        return path.resolve().relative_to(project.root.resolve()).as_posix()
    except ValueError:
        return str(path)


@judge_app.command("calibrate")
def judge_calibrate(
    file: Annotated[
        str | None,
        typer.Argument(
            metavar="[FILE]",
            help="The labelled set: a CSV or YAML list of question, output_1, output_2, "
            "label (A consistent, B not).",
        ),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option("--judge", metavar="MODEL", help="Judge model (default: the project's)."),
    ] = None,
    history: Annotated[
        bool,
        typer.Option("--history", help="List the calibrations kept, per judge and prompt."),
    ] = False,
    no_history: Annotated[
        bool, typer.Option("--no-history", help="Do not keep this calibration.")
    ] = False,
    format: FormatOption = Format.pretty,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Run a judge over a human-labelled set and report its agreement with the labels:
    Cohen's kappa with its 95% interval and the confusion table; kept in the history per
    judge model and prompt version (--history lists them, --judge filters).

    Exit codes: 0 reported; 2 bad input (the file, an unknown model); 3 the judge gave no
    verdict at all, or the history failed.
    """
    import asyncio

    from ..report import (
        calibration_history_json,
        calibration_json,
        render_calibration,
        render_calibration_history,
    )
    from ..suites import load_labelled, open_history

    out, err = consoles()
    setup_logging(err, debug)
    as_json = format is Format.json
    try:
        if history:
            if file is not None:
                raise ConfigError("--history lists the calibrations kept; give no FILE with it")
            _proj, location, store = open_history(project, db)
            rows: list[Any] = []
            if store is not None:
                with store:
                    rows = store.calibrations.history(judge)
            if as_json:
                print_json(calibration_history_json(rows, location.display))
            else:
                render_calibration_history(rows, location.display, out)
            return
        if file is None:
            raise ConfigError("oxy judge calibrate takes the labelled set (FILE) or --history")
        from ..project.config import load_project

        proj = load_project(project_dir=project) if project else load_project()
        model = judge or proj.default_judge
        if model not in proj.models:
            known = ", ".join(sorted(proj.models)) or "none"
            raise ConfigError(
                f"--judge {model}: no model of that name in config.yml (models: {known})"
            )
        path = Path(file)
        display = _display(proj, path)
        pairs = load_labelled(path, display)
        cal = asyncio.run(_run(proj, model, pairs, display))
        if not no_history:
            _proj, _location, store = open_history(project, db, write=True)
            with store:
                store.calibrations.record(
                    judge_model=cal.judge_model,
                    prompt_version=cal.prompt_version,
                    file=cal.file,
                    items=cal.items,
                    judged=cal.judged,
                    agreement=None if cal.kappa is None else cal.kappa.to_dict(),
                )
    except OxyError as exc:
        raise fail(err, exc, as_json) from None
    if as_json:
        print_json(calibration_json(cal))
    else:
        render_calibration(cal, out)
    if cal.judged == 0:
        err.print("no verdict from the judge on any item: no agreement to report", markup=False)
        raise typer.Exit(3)


app.add_typer(judge_app)
