"""``oxy cache stats|clear``: the cache of model answers and judge verdicts in the history."""

from __future__ import annotations

from contextlib import nullcontext
from enum import Enum
from typing import Annotated

import typer

from ..errors import OxyError
from ..project.limits import MAX_DAYS
from ._app import DebugOption, Format, ProjectOption, app, setup_logging
from ._common import DbOption, FormatOption, JsonOption, consoles, fail, print_json
from .helptext import CommandGroup

__all__ = ["cache_app"]

cache_app = typer.Typer(
    name="cache",
    help="The cache of model answers and judge verdicts kept in the history: stats, clear.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    cls=CommandGroup,
)


class Kind(str, Enum):
    answer = "answer"
    verdict = "verdict"


@cache_app.command("stats")
def cache_stats(
    as_json: JsonOption = False,
    format: FormatOption = Format.pretty,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Entries by kind (answers, verdicts), their size, oldest and newest, and replays.

    Reads never create a history: with none yet, the cache is empty.
    """
    out, err = consoles()
    setup_logging(err, debug)
    as_json = as_json or format is Format.json

    try:
        from ..suites import open_history

        _proj, location, store = open_history(project, db, write=False)
        with store if store is not None else nullcontext():
            stats = None if store is None else store.cache.stats()
    except OxyError as exc:
        raise fail(err, exc, as_json) from None
    where = location.display
    if as_json:
        from ..report.cache import cache_stats_json

        print_json(cache_stats_json(stats, where))
    else:
        from ..report.cache import render_cache_stats

        render_cache_stats(stats, where, out)


@cache_app.command("clear")
def cache_clear(
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than",
            metavar="DAYS",
            min=0,
            max=MAX_DAYS,
            help="Only entries written more than this many days ago.",
        ),
    ] = None,
    kind: Annotated[
        Kind | None,
        typer.Option("--kind", help="Only answers (agent and prompt calls) or verdicts (judges)."),
    ] = None,
    as_json: JsonOption = False,
    format: FormatOption = Format.pretty,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Delete cached answers and verdicts (all of them, by default): the next run asks
    the models again. A project with no history yet has nothing to clear (none is made)."""
    out, err = consoles()
    setup_logging(err, debug)
    as_json = as_json or format is Format.json
    if older_than is not None and older_than != older_than:  # NaN passes min/max checks
        raise typer.BadParameter("must be a number of days", param_hint="--older-than")
    try:
        from ..suites.run_cache import clear_cache

        kind_name = kind.value if kind is not None else None
        location, cleared = clear_cache(project, db, kind=kind_name, older_than_days=older_than)
    except OxyError as exc:
        raise fail(err, exc, as_json) from None
    where = location.display
    if as_json:
        from ..report import document

        print_json(
            document(
                "cacheCleared",
                {
                    "db": where,
                    "cleared": cleared,
                    "kind": kind.value if kind is not None else None,
                    "olderThanDays": older_than,
                },
            )
        )
    else:
        what = f"{kind.value} " if kind is not None else ""
        age = f" older than {older_than:g} day(s)" if older_than is not None else ""
        out.print(
            f"cleared {cleared} cached {what}entr{'y' if cleared == 1 else 'ies'}{age} in {where}",
            markup=False,
            highlight=False,
        )


app.add_typer(cache_app, name="cache")
