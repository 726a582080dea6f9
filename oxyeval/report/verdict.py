"""``oxy test``'s decision on a run, as a library call: the exit code and every reason.

The rule is the evaluation core's (:func:`oxyeval.evaluation.decide`), shared by every
kind of test; this names a ConsistencyRun's tests as its reports do. The CLI (``oxy test``,
``oxy report``) prints what :func:`decide` returns; a Python caller gets the same code
and sentences: ``decide(run, Gates(min_accuracy=0.8, strict=True))``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import evaluation
from ..evaluation import Decision, Gates, gate_option_error

if TYPE_CHECKING:
    from ..suites.consistency.results import ConsistencyRun

__all__ = ["Decision", "Gates", "decide", "gate_option_error"]


def decide(run: ConsistencyRun, gates: Gates, *, error: BaseException | None = None) -> Decision:
    """Gate ``run``. ``error`` is what stopped the run after some tests finished: its
    exit code wins (2 bad input, else 3). A history read but not written still decides
    a drop; one that could not be read leaves it unknown."""
    return evaluation.decide_run(run, gates, error=error)
