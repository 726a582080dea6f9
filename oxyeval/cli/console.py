"""The two consoles every command writes to, and the one way errors are printed.

stdout carries results (a report, a table, or one JSON document); stderr carries
progress, warnings and errors. Both are plain: no emoji codes (a ``:100:`` in a
``file:100:3`` location must stay text) and no guessing of highlights. Both
redact registered secrets from everything written through them (see
:mod:`oxyeval.redact`).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["error_text", "print_error", "stderr_console", "stdout_console"]


def _current(stream: TextIO) -> TextIO:
    """The stream now in ``sys``, past the proxy a rich progress display puts there
    (which writes back into the console: following it would loop)."""
    return getattr(stream, "rich_proxied_file", stream)


def stdout_console() -> Console:
    from rich.console import Console

    from ..redact import RedactingStream

    # Piped output has no terminal width; rich's 80 columns would wrap every table row.
    width = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "160"))
    return Console(
        file=RedactingStream(lambda: _current(sys.stdout)),
        highlight=False,
        soft_wrap=True,
        emoji=False,
        width=width,
    )


def stderr_console() -> Console:
    from rich.console import Console

    from ..redact import RedactingStream

    return Console(
        file=RedactingStream(lambda: _current(sys.stderr)),
        stderr=True,
        highlight=False,
        soft_wrap=True,
        emoji=False,
    )


def error_text(exc: BaseException) -> str:
    text = str(exc)
    return text if text.startswith(("error:", "warning:")) else f"error: {text}"


def print_error(console: Console, exc: BaseException, debug: bool = False) -> None:
    """One paragraph on stderr; the traceback only with --debug (secrets scrubbed)."""
    if debug:
        import traceback

        from ..redact import redact

        console.print(redact("".join(traceback.format_exception(exc))), style="dim", markup=False)
    console.print(error_text(exc), style="red", markup=False)
