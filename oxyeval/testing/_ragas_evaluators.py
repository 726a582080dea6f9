"""Autoblocks' Ragas evaluators: a Ragas metric scores one test case, through the mappers
each evaluator names, with the LLM (and embeddings) object the subclass gives.

As in Autoblocks' SDK these need ``ragas`` 0.2.x installed (it is no dependency of
oxyeval); without it the evaluator fails on each test case with the install line, an
error of that evaluator that the suite reports. The score is Ragas', rounded to two
places and capped at 1 as Autoblocks does.
"""

from __future__ import annotations

from abc import ABC
from typing import Any, ClassVar, Generic

from ._base_evaluators import OutputType, TestCaseType
from ._evaluators import BaseTestEvaluator, Evaluation, Threshold

__all__ = [
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
]


def _ragas(evaluator_id: str) -> Any:
    try:
        import ragas  # type: ignore[import-not-found]

        if not str(ragas.__version__).startswith("0.2."):
            raise ImportError
    except ImportError:
        raise ImportError(
            f"The {evaluator_id} evaluator requires ragas version 0.2.x. "
            "You can install it with `pip install ragas==0.2.*`"
        ) from None
    return ragas


def _clamp(score: float) -> float:
    return min(round(float(score), 2), 1)


#: A sample field and how its value is read: the mapper's name and what it is given.
_READERS = {
    "user_input": ("user_input_mapper", ("test_case", "output")),
    "response": ("response_mapper", ("output",)),
    "reference": ("reference_mapper", ("test_case",)),
    "retrieved_contexts": ("retrieved_contexts_mapper", ("test_case", "output")),
    "reference_contexts": ("reference_contexts_mapper", ("test_case",)),
}


class _Ragas(BaseTestEvaluator, ABC, Generic[TestCaseType, OutputType]):
    """One Ragas metric: ``_fields`` of the sample, ``_metric`` its class in
    ``ragas.metrics`` and ``_options`` the evaluator's properties it is built with."""

    _fields: ClassVar[tuple[str, ...]] = ()
    _metric: ClassVar[str] = ""
    _options: ClassVar[tuple[str, ...]] = ()

    @property
    def threshold(self) -> Threshold | None:
        return None

    def _scorer(self, ragas: Any) -> Any:
        metric = ragas.metrics
        for part in self._metric.split("."):
            metric = getattr(metric, part)
        options = {name: getattr(self, name) for name in self._options}
        options = {k: v for k, v in options.items() if k not in ("focus",) or v is not None}
        return metric(**options)

    async def evaluate_test_case(self, test_case: TestCaseType, output: OutputType) -> Evaluation:
        ragas = _ragas(self.id)
        given = {"test_case": test_case, "output": output}
        fields = {}
        for name in self._fields:
            mapper, args = _READERS[name]
            fields[name] = getattr(self, mapper)(**{a: given[a] for a in args})
        sample = ragas.SingleTurnSample(**fields)
        result = await self._scorer(ragas).single_turn_ascore(sample=sample)
        return Evaluation(_clamp(result), self.threshold)


class BaseRagasContextEntitiesRecall(_Ragas[TestCaseType, OutputType], ABC):
    _fields = ("reference", "retrieved_contexts")
    _metric = "ContextEntityRecall"
    _options = ("llm",)


class BaseRagasFactualCorrectness(_Ragas[TestCaseType, OutputType], ABC):
    _fields = ("response", "reference")
    _metric = "FactualCorrectness"
    _options = ("llm", "mode", "atomicity")
    mode: str | None = None
    atomicity: str | None = None


class BaseRagasFaithfulness(_Ragas[TestCaseType, OutputType], ABC):
    _fields = ("user_input", "response", "retrieved_contexts")
    _metric = "Faithfulness"
    _options = ("llm",)


class BaseRagasLLMContextPrecisionWithReference(_Ragas[TestCaseType, OutputType], ABC):
    _fields = ("user_input", "reference", "retrieved_contexts")
    _metric = "_context_precision.LLMContextPrecisionWithReference"
    _options = ("llm",)


class BaseRagasLLMContextRecall(_Ragas[TestCaseType, OutputType], ABC):
    _fields = ("user_input", "response", "reference", "retrieved_contexts")
    _metric = "LLMContextRecall"
    _options = ("llm",)


class BaseRagasNoiseSensitivity(_Ragas[TestCaseType, OutputType], ABC):
    _fields = ("user_input", "response", "reference", "retrieved_contexts")
    _metric = "NoiseSensitivity"
    _options = ("llm", "focus")
    focus: str | None = None


class BaseRagasNonLLMContextPrecisionWithReference(_Ragas[TestCaseType, OutputType], ABC):
    _fields = ("retrieved_contexts", "reference_contexts")
    _metric = "NonLLMContextPrecisionWithReference"


class BaseRagasNonLLMContextRecall(_Ragas[TestCaseType, OutputType], ABC):
    _fields = ("retrieved_contexts", "reference_contexts")
    _metric = "NonLLMContextRecall"


class BaseRagasResponseRelevancy(_Ragas[TestCaseType, OutputType], ABC):
    _fields = ("user_input", "response", "retrieved_contexts")
    _metric = "ResponseRelevancy"
    _options = ("llm", "embeddings")


class BaseRagasSemanticSimilarity(_Ragas[TestCaseType, OutputType], ABC):
    _fields = ("response", "reference")
    _metric = "SemanticSimilarity"
    _options = ("embeddings",)
