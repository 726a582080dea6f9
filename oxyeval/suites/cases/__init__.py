"""Test cases: a prompt (or agent) version run against expected outputs, scored, stored.

``run`` executes and records (``results``: what it returns); ``selection`` decides which cases a command means
without writing anything; ``scoring`` holds the per-execution scores and the
regression rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

_EXPORTS = {
    "CaseResult": "results",
    "CaseRun": "results",
    "api_prompt_defs": "stored",
    "create_prompt": "stored",
    "accept_baseline": "baseline",
    "check_accept": "baseline",
    "find_case": "baseline",
    "run_cases": "run",
    "run_cases_async": "run",
}
__all__ = [
    "CaseResult",
    "CaseRun",
    "accept_baseline",
    "api_prompt_defs",
    "check_accept",
    "create_prompt",
    "find_case",
    "run_cases",
    "run_cases_async",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .baseline import accept_baseline, check_accept, find_case
    from .results import CaseResult, CaseRun
    from .run import run_cases, run_cases_async
    from .stored import api_prompt_defs, create_prompt
