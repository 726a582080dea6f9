"""Stage 4, the evaluation core: what every kind of test shares once it has outputs.

A :class:`Result` per subject with named :class:`Score`s, the registry of result kinds,
and the one :func:`decide` that turns results and gates into an exit code and its
reasons. Consistency tests and test cases are kinds on it; a new kind of test registers
itself (:func:`register_kind`) instead of adding a sixth place that decides pass or fail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "Previous": "results",
    "Result": "results",
    "Score": "results",
    "ResultKind": "kinds",
    "kind_names": "kinds",
    "register_kind": "kinds",
    "result_kind": "kinds",
    "Decision": "decision",
    "DropResult": "decision",
    "Gates": "decision",
    "Outcome": "decision",
    "ThresholdResult": "decision",
    "check_drop": "decision",
    "check_threshold": "decision",
    "decide": "decision",
    "gate_option_error": "decision",
    "gated_code": "decision",
}
__all__ = [
    "Decision",
    "DropResult",
    "Gates",
    "Outcome",
    "Previous",
    "Result",
    "ResultKind",
    "Score",
    "ThresholdResult",
    "check_drop",
    "check_threshold",
    "decide",
    "gate_option_error",
    "gated_code",
    "kind_names",
    "register_kind",
    "result_kind",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .decision import (
        Decision,
        DropResult,
        Gates,
        Outcome,
        ThresholdResult,
        check_drop,
        check_threshold,
        decide,
        gate_option_error,
        gated_code,
    )
    from .kinds import ResultKind, kind_names, register_kind, result_kind
    from .results import Previous, Result, Score
