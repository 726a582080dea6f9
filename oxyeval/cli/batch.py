"""``oxy batch status|resume|cancel``: the provider batches of ``--batch`` runs kept in the
project's history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from ..errors import OxyError
from ._app import DebugOption, ProjectOption, app, setup_logging
from ._common import DbOption, consoles, fail

__all__ = ["batch_app"]

batch_app = typer.Typer(
    name="batch",
    help="Provider batches of --batch runs kept in the history: status, resume, cancel.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


AllOption = Annotated[
    bool, typer.Option("--all", help="Also the batches whose answers a run already used.")
]
BatchIdArgument = Annotated[
    list[str] | None,
    typer.Argument(metavar="[BATCH_ID]...", help="Batch ids (default: every open batch)."),
]


@batch_app.command("status")
def batch_status(
    include_all: AllOption = False,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """The batches kept in the history (default: those no run has used yet), as last
    polled: state, requests done of total, failed."""
    out, err = consoles()
    setup_logging(err, debug)
    try:
        from ..suites import open_history

        _proj, location, store = open_history(project, db, write=False)
        batches = [] if store is None else store.batches.list(include_consumed=include_all)
        if store is not None:
            store.close()
    except OxyError as exc:
        raise fail(err, exc, False) from None
    if not batches:
        out.print(f"No open batches in {location.display}.", markup=False, highlight=False)
        return
    for b in batches:
        used = " (used)" if b.consumed else ""
        out.print(
            f"{b.remote_id}  {b.vendor}/{b.model}  {b.phase}  {b.state}{used}  "
            f"{b.done}/{b.total} done, {b.failed} failed  {b.created_at}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


async def _act(
    project: str | None, db: str | None, ids: list[str], action: str, say: Callable[[str], object]
) -> int:
    """Resume (wait for and keep the answers of) or cancel the open batches named (all)."""
    import asyncio

    from ..providers import Batcher, ModelPool
    from ..store import open_store
    from ..suites import history_location, open_history

    project_, _where, reader = await asyncio.to_thread(open_history, project, db)
    if reader is None:  # no history yet: no batch, and none is made
        if ids:
            raise OxyError(f"no open batch {', '.join(sorted(ids))}: the project has no history")
        return 0
    reader.close()
    store = await asyncio.to_thread(open_store, history_location(project_, db))
    try:
        batches = store.batches.list()
        if ids:
            batches = [b for b in batches if b.id in ids or b.remote_id in ids]
            missing = set(ids) - {b.id for b in batches} - {b.remote_id for b in batches}
            if missing:
                raise OxyError(f"no open batch {', '.join(sorted(missing))} in {store.path}")
        done = 0
        skipped: list[str] = []
        async with ModelPool(project_.models, locate=project_.model_error) as pool:
            batcher = Batcher(ledger=store.batches, say=say)
            for b in batches:
                if action == "cancel" and b.state in _CANCELLED:
                    say(f"batch: {b.remote_id} was cancelled already")
                    continue
                name = b.model.split("[", 1)[0]
                try:
                    model = pool.get(name)
                except OxyError as exc:  # its model left config.yml: the others go on
                    skipped.append(f"{b.remote_id} (model '{name}'): {exc}")
                    continue
                if action == "cancel":
                    await batcher.cancel(model.api, b)
                    await asyncio.to_thread(
                        store.batches.update,
                        b.id,
                        state="cancelling",
                        done=b.done,
                        total=b.total,
                        failed=b.failed,
                    )
                else:
                    await batcher.resume(model.api, b, store.batches.requests(b.id))
                done += 1
        if skipped:
            raise OxyError(
                f"{done} batch{'es' if done != 1 else ''} {_VERBS[action]}; "
                f"{len(skipped)} could not be: {'; '.join(skipped)}"
            )
        return done
    finally:
        await asyncio.to_thread(store.close)


#: Batch states a cancel has reached already (ours while the vendor stops it, theirs).
_CANCELLED = ("cancelling", "cancelled", "canceled", "canceling")
_VERBS = {"cancel": "cancelled", "resume": "collected"}


def _run_action(
    action: str, ids: list[str] | None, db: str | None, project: str | None, debug: bool
) -> None:
    from .interrupt import interrupt_reason, run_interruptible

    out, err = consoles()
    setup_logging(err, debug)

    def say(text: str) -> None:
        err.print(text, markup=False, highlight=False, soft_wrap=True)

    try:
        # The waiting loop is this command's own: a signal stops it as it stops a run,
        # not by the start-up's handler (which says that nothing ran).
        count = run_interruptible(_act(project, db, ids or [], action, say))
    except OxyError as exc:
        raise fail(err, exc, False) from None
    except KeyboardInterrupt as exc:
        err.print(
            f"{interrupt_reason(exc)}: the batches stay open; `oxy batch resume` or the "
            "run's own command with --batch collects them; exit 3",
            markup=False,
        )
        raise typer.Exit(3) from None
    verb = _VERBS[action]
    out.print(f"{count} batch{'es' if count != 1 else ''} {verb}.", markup=False, highlight=False)


@batch_app.command("resume")
def batch_resume(
    ids: BatchIdArgument = None,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Wait for the open batches to end and keep their answers in the history; the next
    --batch run of the command that submitted them uses them without paying again."""
    _run_action("resume", ids, db, project, debug)


@batch_app.command("cancel")
def batch_cancel(
    ids: BatchIdArgument = None,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Ask the vendor to stop the open batches; what they finished stays usable."""
    _run_action("cancel", ids, db, project, debug)


app.add_typer(batch_app)
