"""Stage 3, the judge: an LLM gives a verdict under a rubric; consistency verdicts add up
to a consistency score.

A rubric (:mod:`.rubrics`: A/B consistency, PASS/FAIL, a 1-5 scale) names the labels,
their values, the prompt and its variables; one verdict parser (text, or a structured
answer where the vendor supports one) reads every rubric. One pairing and scoring rule
serves every consistency measurement: ``oxy test`` and a workflow task's
``consistency_run`` alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "CONSISTENCY": "rubrics",
    "DEFAULT_CONSISTENCY_PROMPT": "rubrics",
    "PASS_FAIL": "rubrics",
    "SCALE_1_5": "rubrics",
    "Label": "rubrics",
    "Rubric": "rubrics",
    "Judge": "judge",
    "JudgeResult": "judge",
    "JudgeSession": "structured",
    "JsonJudge": "answers",
    "parse_json_object": "answers",
    "vendor_schema": "answers",
    "Verdict": "reading",
    "parse_verdict": "judge",
    "VerdictCache": "verdicts",
    "JSON_ANSWER": "verdicts",
    "answer_key": "verdicts",
    "key_labels": "verdicts",
    "verdict_data": "verdicts",
    "verdict_from_data": "verdicts",
    "verdict_key": "verdicts",
    "Compare": "consistency",
    "Comparison": "consistency",
    "ConsistencyScore": "consistency",
    "ClusterPairing": "cluster_pairing",
    "evaluate": "consistency",
    "plan_comparisons": "consistency",
    "score_comparisons": "consistency",
    "Assessment": "consistency",
    "assess": "consistency",
    "normalize": "consistency",
    "pair_count": "consistency",
    "pair_order": "consistency",
}
__all__ = [
    "CONSISTENCY",
    "DEFAULT_CONSISTENCY_PROMPT",
    "JSON_ANSWER",
    "PASS_FAIL",
    "SCALE_1_5",
    "Assessment",
    "ClusterPairing",
    "Compare",
    "Comparison",
    "ConsistencyScore",
    "JsonJudge",
    "Judge",
    "JudgeResult",
    "JudgeSession",
    "Label",
    "Rubric",
    "Verdict",
    "VerdictCache",
    "answer_key",
    "assess",
    "evaluate",
    "key_labels",
    "normalize",
    "pair_count",
    "pair_order",
    "parse_json_object",
    "parse_verdict",
    "plan_comparisons",
    "score_comparisons",
    "vendor_schema",
    "verdict_data",
    "verdict_from_data",
    "verdict_key",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .answers import JsonJudge, parse_json_object, vendor_schema
    from .cluster_pairing import ClusterPairing
    from .consistency import (
        Assessment,
        Compare,
        Comparison,
        ConsistencyScore,
        assess,
        evaluate,
        normalize,
        pair_count,
        pair_order,
        plan_comparisons,
        score_comparisons,
    )
    from .judge import Judge, JudgeResult, parse_verdict
    from .reading import Verdict
    from .rubrics import (
        CONSISTENCY,
        DEFAULT_CONSISTENCY_PROMPT,
        PASS_FAIL,
        SCALE_1_5,
        Label,
        Rubric,
    )
    from .structured import JudgeSession
    from .verdicts import (
        JSON_ANSWER,
        VerdictCache,
        answer_key,
        key_labels,
        verdict_data,
        verdict_from_data,
        verdict_key,
    )
