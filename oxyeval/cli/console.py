"""The streams and consoles every command writes to, and the one way errors are printed.

stdout carries results (a report, a table, or one JSON document); stderr carries
progress, warnings and errors. Commands never write to ``sys.stdout`` directly: they
write through :func:`streams`, redacting wrappers of the real streams (see
:mod:`oxyeval.redact`), and nothing replaces ``sys.stdout`` or ``sys.stderr``.

The consoles are plain: no emoji codes (a ``:100:`` in a ``file:100:3`` location must
stay text) and no guessing of highlights.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, TextIO

from ..inputs import valid_text
from ..redact import RedactingStream

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "Streams",
    "echo",
    "error_text",
    "json_error",
    "piped_width",
    "print_error",
    "set_color",
    "stderr_console",
    "stdout_console",
    "streams",
    "using_streams",
]


def _current(stream: TextIO) -> TextIO:
    """The stream now in ``sys``, past the proxy a rich progress display puts there
    (which writes back into the console: following it would loop)."""
    return getattr(stream, "rich_proxied_file", stream)


class _ValidStream(RedactingStream):
    """A redacting stream that writes only valid text.

    Text is made valid where it enters (:mod:`oxyeval.inputs`); this is the defence
    behind that: a lone surrogate that got through anyway (a path given in bytes that
    are not UTF-8, a library caller's string) is written as U+FFFD instead of raising
    UnicodeEncodeError halfway through a report, losing the rest of it.
    """

    def write(self, data: str) -> int:
        return super().write(valid_text(data))


class _TrackedStream(_ValidStream):
    """A valid, redacting stream that remembers whether anything was written to it."""

    written = False

    def write(self, data: str) -> int:
        if data:
            self.written = True
        return super().write(data)


class Streams:
    """The stdout and stderr of one ``oxy`` invocation.

    Both redact every write and follow ``sys.stdout``/``sys.stderr`` at each write (pytest
    and Click's test runner capture output by swapping them). ``main()`` makes one per
    invocation; it remembers whether a result reached stdout, so a failure after a
    document was printed never adds a second one.
    """

    def __init__(self) -> None:
        self.stdout = _TrackedStream(lambda: _current(sys.stdout))
        self.stderr = _ValidStream(lambda: _current(sys.stderr))

    @property
    def wrote_stdout(self) -> bool:
        return self.stdout.written


_active: ContextVar[Streams | None] = ContextVar("oxy_streams", default=None)


def streams() -> Streams:
    """The running invocation's streams (see :func:`using_streams`); fresh ones when none
    is running (a test invoking the app directly, a library caller)."""
    return _active.get() or Streams()


@contextmanager
def using_streams(value: Streams) -> Iterator[Streams]:
    """Make ``value`` what :func:`streams` returns for the duration of one invocation."""
    token = _active.set(value)
    try:
        yield value
    finally:
        _active.reset(token)


def echo(text: str) -> None:
    """``text`` and a newline on stdout (a plan, a schema, the version), as ``typer.echo``
    writes it but through the redacting stream."""
    streams().stdout.write(text + "\n")


_color: ContextVar[bool] = ContextVar("oxy_color", default=True)


def set_color(enabled: bool) -> None:
    """``oxy --no-color``: the consoles of this invocation print no colour or style
    (NO_COLOR in the environment does the same, through rich)."""
    _color.set(enabled)


def piped_width() -> int:
    """The width to wrap stdout at when it is not a terminal (see :func:`stdout_console`)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if sys.stderr.isatty():
            return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        pass
    return 80


def stdout_console() -> Console:
    from rich.console import Console

    # Prose is wrapped between words at the terminal's width (a terminal breaks a long
    # line mid-word). Piped output has no width of its own: $COLUMNS, else the width of
    # the terminal stderr shows (`oxy test | tee log` on a terminal), else 80 (a CI log).
    return Console(
        file=streams().stdout,
        highlight=False,
        soft_wrap=False,
        emoji=False,
        width=None if sys.stdout.isatty() else piped_width(),
        no_color=not _color.get() or None,
    )


def stderr_console() -> Console:
    from rich.console import Console

    return Console(
        file=streams().stderr,
        stderr=True,
        highlight=False,
        soft_wrap=True,
        emoji=False,
        no_color=not _color.get() or None,
    )


def error_text(exc: BaseException) -> str:
    text = str(exc)
    return text if text.startswith(("error:", "warning:")) else f"error: {text}"


def json_error(exc: BaseException) -> str:
    """The ``"error"`` value of a JSON document: the message alone, one line per problem
    of a load error (``file:line:column: key: message``; past LISTED_DIAGNOSTICS, one
    line counting the rest), without what the terminal gets around it (the ``error:``
    prefix, the source excerpt, the "N error(s) in" count)."""
    from ..errors import LISTED_DIAGNOSTICS, LoadError, listed
    from ..redact import redact

    if isinstance(exc, LoadError):
        errors = [d for d in exc.diagnostics if d.severity == "error"]
        lines = [
            f"{d.location()}: {d.key + ': ' if d.key else ''}{d.message}"
            for d in listed(errors, LISTED_DIAGNOSTICS)
        ]
        if lines:
            return redact("\n".join(lines))
    return str(exc).removeprefix("error: ")


def print_error(console: Console, exc: BaseException, debug: bool = False) -> None:
    """One paragraph on stderr; the traceback only with --debug (secrets scrubbed)."""
    if debug:
        import traceback

        from ..redact import redact

        console.print(redact("".join(traceback.format_exception(exc))), style="dim", markup=False)
    from ..report.text import shown

    # An error may quote a model's or a server's text: control characters shown, not run.
    console.print(shown(error_text(exc)), style="red", markup=False)
