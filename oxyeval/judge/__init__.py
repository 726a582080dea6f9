"""Stage 3, the judge: an LLM compares two outputs; its verdicts add up to a consistency score.

One default prompt, one verdict parser (text, or a structured answer where the vendor
supports one), one pairing and scoring rule, used by every consistency measurement:
``oxy test`` and a workflow task's ``consistency_run`` alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "DEFAULT_CONSISTENCY_PROMPT": "judge",
    "Judge": "judge",
    "JudgeResult": "judge",
    "Verdict": "judge",
    "parse_verdict": "judge",
    "VerdictCache": "verdicts",
    "verdict_data": "verdicts",
    "verdict_from_data": "verdicts",
    "verdict_key": "verdicts",
    "Comparison": "consistency",
    "ConsistencyScore": "consistency",
    "evaluate": "consistency",
    "plan_comparisons": "consistency",
    "score_comparisons": "consistency",
    "Assessment": "consistency",
    "assess": "consistency",
    "normalize": "consistency",
    "pair_count": "consistency",
}
__all__ = [
    "DEFAULT_CONSISTENCY_PROMPT",
    "Assessment",
    "Comparison",
    "ConsistencyScore",
    "Judge",
    "JudgeResult",
    "Verdict",
    "VerdictCache",
    "assess",
    "evaluate",
    "normalize",
    "pair_count",
    "parse_verdict",
    "plan_comparisons",
    "score_comparisons",
    "verdict_data",
    "verdict_from_data",
    "verdict_key",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .consistency import (
        Assessment,
        Comparison,
        ConsistencyScore,
        assess,
        evaluate,
        normalize,
        pair_count,
        plan_comparisons,
        score_comparisons,
    )
    from .judge import DEFAULT_CONSISTENCY_PROMPT, Judge, JudgeResult, Verdict, parse_verdict
    from .verdicts import VerdictCache, verdict_data, verdict_from_data, verdict_key
