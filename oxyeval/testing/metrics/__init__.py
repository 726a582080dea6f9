"""The metrics under DeepEval's module path (``deepeval.metrics``): ``from
oxyeval.testing.metrics import GEval, AnswerRelevancyMetric`` and the per-metric
modules DeepEval has (``oxyeval.testing.metrics.g_eval``, ``.answer_relevancy``...)."""

from __future__ import annotations

import sys
from types import ModuleType

from .._agentic import TaskCompletionMetric
from .._consistency import ConsistencyMetric
from .._conversation import (
    ConversationalGEval,
    ConversationRelevancyMetric,
    RoleAdherenceMetric,
    TurnRelevancyMetric,
)
from .._deterministic import (
    ExactMatchMetric,
    JsonCorrectnessMetric,
    PatternMatchMetric,
    ToolCorrectnessMetric,
)
from .._geval import GEval, Rubric
from .._metric import BaseConversationalMetric, BaseMetric
from .._rag import (
    AnswerRelevancyMetric,
    ContextualPrecisionMetric,
    ContextualRecallMetric,
    ContextualRelevancyMetric,
    FaithfulnessMetric,
)
from .._safety import BiasMetric, ToxicityMetric

__all__ = [
    "AnswerRelevancyMetric",
    "BaseConversationalMetric",
    "BaseMetric",
    "BiasMetric",
    "ConsistencyMetric",
    "ContextualPrecisionMetric",
    "ContextualRecallMetric",
    "ContextualRelevancyMetric",
    "ConversationRelevancyMetric",
    "ConversationalGEval",
    "ExactMatchMetric",
    "FaithfulnessMetric",
    "GEval",
    "JsonCorrectnessMetric",
    "PatternMatchMetric",
    "RoleAdherenceMetric",
    "Rubric",
    "TaskCompletionMetric",
    "ToolCorrectnessMetric",
    "ToxicityMetric",
    "TurnRelevancyMetric",
]

#: DeepEval's per-metric modules and what each holds.
_SUBMODULES: dict[str, tuple[object, ...]] = {
    "answer_relevancy": (AnswerRelevancyMetric,),
    "bias": (BiasMetric,),
    "contextual_precision": (ContextualPrecisionMetric,),
    "contextual_recall": (ContextualRecallMetric,),
    "contextual_relevancy": (ContextualRelevancyMetric,),
    "conversational_g_eval": (ConversationalGEval,),
    "exact_match": (ExactMatchMetric,),
    "faithfulness": (FaithfulnessMetric,),
    "g_eval": (GEval, Rubric),
    "json_correctness": (JsonCorrectnessMetric,),
    "pattern_match": (PatternMatchMetric,),
    "role_adherence": (RoleAdherenceMetric,),
    "task_completion": (TaskCompletionMetric,),
    "tool_correctness": (ToolCorrectnessMetric,),
    "toxicity": (ToxicityMetric,),
    "turn_relevancy": (TurnRelevancyMetric,),
    "base_metric": (BaseMetric, BaseConversationalMetric),
}


def _alias_modules() -> None:
    """Make ``import oxyeval.testing.metrics.g_eval`` find its module: each is made
    here and registered, so the layout needs no file per metric."""
    for name, members in _SUBMODULES.items():
        full = f"{__name__}.{name}"
        module = ModuleType(full, f"DeepEval's ``deepeval.metrics.{name}``.")
        for member in members:
            setattr(module, member.__name__, member)  # type: ignore[attr-defined]
        module.__all__ = [m.__name__ for m in members]  # type: ignore[attr-defined]
        sys.modules.setdefault(full, module)
        globals().setdefault(name, sys.modules[full])


_alias_modules()
