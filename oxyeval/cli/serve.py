"""``oxy serve``: the GraphQL Testing API and the dashboard, over one project's history.

Thin: options are checked, the server is :func:`oxyeval.server.serve`. Stopping it
(Ctrl-C, SIGTERM) is its normal end: runs it has going are finished and stored first
(up to 30 s), and it exits 0.
"""

from __future__ import annotations

import signal
import socket
from typing import Annotated

import typer

from ..errors import EXIT_INFRA, ConfigError, OxyError
from ..server import (
    DEFAULT_MAX_CLIENT_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_COST,
    DEFAULT_MAX_VALUES,
    DEFAULT_QUERY_TIMEOUT,
)
from ._app import DebugOption, ProjectOption, app, setup_logging
from ._common import DbOption, consoles, fail

__all__ = ["serve_command"]


class _Infra(OxyError):
    """This machine cannot serve as asked (a port taken, a package missing): exit 3."""

    exit_code = EXIT_INFRA


def _install_hint(extra: str) -> str:
    """The command that installs ``extra`` here: from the package index, or the working
    copy's own ``pip install -e '.[extra]'`` when oxyeval runs from a clone."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "oxyeval").is_dir():
        return f"pip install -e '.[{extra}]' in {root}"
    return f"pip install 'oxyeval[{extra}]'"


def _port_free(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound (None: it can), found before anything starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


@app.command("serve")
def serve_command(
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="ADDR",
            help="Interface to listen on; anything but loopback needs a token.",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", metavar="N", min=0, max=65535, help="TCP port.")
    ] = 4000,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="TOKEN",
            help="Require 'Authorization: Bearer TOKEN' (default: $OXY_SERVE_TOKEN).",
            envvar="OXY_SERVE_TOKEN",
            show_envvar=False,
        ),
    ] = None,
    cors_origin: Annotated[
        str | None,
        typer.Option(
            "--cors-origin",
            metavar="URL",
            help=(
                "Let pages from this origin (scheme://host[:port]) call the API; '*' or "
                "'null' (any page) only with a token. No CORS by default."
            ),
        ),
    ] = None,
    max_cost: Annotated[
        int,
        typer.Option(
            "--max-cost",
            metavar="N",
            min=1,
            help=(
                "Estimated cost a query may have, each list counted at its limit (or 100 "
                "rows) times what it selects; a costlier one is refused before it runs."
            ),
        ),
    ] = DEFAULT_MAX_COST,
    max_values: Annotated[
        int,
        typer.Option(
            "--max-values",
            metavar="N",
            min=1,
            help="Values (fields, list items) one answer may hold while it is built.",
        ),
    ] = DEFAULT_MAX_VALUES,
    query_timeout: Annotated[
        float,
        typer.Option(
            "--query-timeout",
            metavar="SECONDS",
            min=0.1,
            help="How long a query may run (a mutation waits for the run it starts).",
        ),
    ] = DEFAULT_QUERY_TIMEOUT,
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            metavar="N",
            min=1,
            help="Connections open at once, all clients together.",
        ),
    ] = DEFAULT_MAX_CONNECTIONS,
    max_client_connections: Annotated[
        int,
        typer.Option(
            "--max-client-connections",
            metavar="N",
            min=1,
            help="Connections one client address may hold open.",
        ),
    ] = DEFAULT_MAX_CLIENT_CONNECTIONS,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Serve the Testing API (GraphQL at /graphql) and the dashboard (/) for a project.

    Exit codes: 0 stopped; 2 bad input (a bad project, --db, or a host without a
    token); 3 the port cannot be bound, the history cannot be opened, or the server
    extra is not installed.
    """
    out, err = consoles()
    setup_logging(err, debug)
    try:
        import ariadne  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        message = (
            f"oxy serve needs the server extra ({exc.name} is not installed): "
            f"{_install_hint('serve')}"
        )
        raise fail(err, _Infra(message), False) from None
    from ..server import ServeError, serve

    why = _port_free(host, port)
    if why is not None:
        message = f"cannot listen on {host}:{port}: {why}; pick another --port"
        raise fail(err, _Infra(message), False)

    def ready(service: object, bound: int) -> None:
        where = f"http://{'[' + host + ']' if ':' in host else host}:{bound}"
        out.print(f"oxy serve: dashboard {where}/  ·  GraphQL {where}/graphql", highlight=False)
        out.print(f"history: {getattr(service, 'db_display', '')}", highlight=False)

    stopped: list[str] = []

    def stop(signum: int, _frame: object) -> None:
        # uvicorn handles the signal while it serves, then raises it again once it has
        # shut down: by then it is the server's normal end, not an interruption
        stopped.append(signal.Signals(signum).name)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    try:
        serve(
            project,
            host=host,
            port=port,
            db=db,
            token=token,
            cors_origin=cors_origin,
            max_cost=max_cost,
            max_values=max_values,
            query_timeout=query_timeout,
            max_connections=max_connections,
            max_client_connections=max_client_connections,
            on_ready=ready,
        )
    except ServeError as exc:
        raise fail(err, ConfigError(str(exc)), False) from None
    except OxyError as exc:
        raise fail(err, exc, False) from None
    err.print(f"oxy serve: stopped{f' ({stopped[0]})' if stopped else ''}", highlight=False)
