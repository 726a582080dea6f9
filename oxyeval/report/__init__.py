"""Stage 7, reports: a suite's results as a CI verdict (threshold, exit code), as text
for people (pretty) and as JSON for machines.

JSON keys are snake_case for ``oxy test`` and ``oxy run`` (our own format, as
oxy's) and camelCase for ``oxy cases`` and ``oxy history``, whose documents are the
seed Testing API's types (``passRate``, ``lastRun``), served unchanged by the
GraphQL API later: one casing per surface.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "check_threshold": "consistency",
    "exit_code": "consistency",
    "render_pretty": "consistency",
    "to_json": "consistency",
    "write_json": "consistency",
}
__all__ = [
    "check_threshold",
    "exit_code",
    "render_pretty",
    "to_json",
    "write_json",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .consistency import check_threshold, exit_code, render_pretty, to_json, write_json
