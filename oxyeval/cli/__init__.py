"""Stage 11, the ``oxy`` command: parse flags, call the library, print a report.

One module per command group; nothing here decides a result, an exit code's cause
or what gets stored: the suites and reports do, so a Python caller gets the same.
"""

from __future__ import annotations

from ._app import app, main

__all__ = ["app", "main"]
