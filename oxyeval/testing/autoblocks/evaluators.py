"""``autoblocks.testing.evaluators``: the ready-made evaluators to subclass with mappers.

``HasAllSubstrings``, ``AutomaticBattle`` and ``ManualBattle`` are the older names
Autoblocks keeps for ``BaseHasAllSubstrings`` and the battles (here too: the same
classes). ``BaseIsEqual`` and ``BaseIsValidJson`` are oxyeval's spellings of
``BaseIsEquals`` and ``BaseIsValidJSON``.
"""

from __future__ import annotations

from .._base_evaluators import (
    BaseAssertions,
    BaseHasAllSubstrings,
    BaseIsEqual,
    BaseIsEquals,
    BaseIsValidJSON,
    BaseIsValidJson,
)
from .._judge_evaluators import (
    BaseAccuracy,
    BaseAutomaticBattle,
    BaseLLMJudge,
    BaseManualBattle,
    BaseNSFW,
    BaseToxicity,
)
from .._ragas_evaluators import (
    BaseRagasContextEntitiesRecall,
    BaseRagasFactualCorrectness,
    BaseRagasFaithfulness,
    BaseRagasLLMContextPrecisionWithReference,
    BaseRagasLLMContextRecall,
    BaseRagasNoiseSensitivity,
    BaseRagasNonLLMContextPrecisionWithReference,
    BaseRagasNonLLMContextRecall,
    BaseRagasResponseRelevancy,
    BaseRagasSemanticSimilarity,
)

HasAllSubstrings = BaseHasAllSubstrings
AutomaticBattle = BaseAutomaticBattle
ManualBattle = BaseManualBattle

__all__ = [
    "AutomaticBattle",
    "BaseAccuracy",
    "BaseAssertions",
    "BaseAutomaticBattle",
    "BaseHasAllSubstrings",
    "BaseIsEqual",
    "BaseIsEquals",
    "BaseIsValidJSON",
    "BaseIsValidJson",
    "BaseLLMJudge",
    "BaseManualBattle",
    "BaseNSFW",
    "BaseRagasContextEntitiesRecall",
    "BaseRagasFactualCorrectness",
    "BaseRagasFaithfulness",
    "BaseRagasLLMContextPrecisionWithReference",
    "BaseRagasLLMContextRecall",
    "BaseRagasNoiseSensitivity",
    "BaseRagasNonLLMContextPrecisionWithReference",
    "BaseRagasNonLLMContextRecall",
    "BaseRagasResponseRelevancy",
    "BaseRagasSemanticSimilarity",
    "BaseToxicity",
    "HasAllSubstrings",
    "ManualBattle",
]
