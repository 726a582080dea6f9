"""DeepEval's ``Scorer`` (``deepeval.scorer``): plain-text scores for code that builds its
own metrics. The ones that need no model are here; those that run a local neural model
(BERTScore, the toxicity and bias classifiers) or a package oxyeval does not depend on
(ROUGE, BLEU) raise, naming the metric to use instead."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = ["Scorer"]


def _normalize(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces (SQuAD's normalisation)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _unavailable(name: str, instead: str) -> NoReturn:
    raise NotImplementedError(
        f"Scorer.{name} needs a local model oxyeval does not ship; use {instead}"
    )


class Scorer:
    """Static scores of one prediction against its target(s)."""

    @classmethod
    def exact_match_score(cls, target: str, prediction: str) -> int:
        """1 when ``prediction`` equals ``target`` once both are stripped, else 0."""
        if not prediction:
            return 0
        return 1 if prediction.strip() == target.strip() else 0

    @classmethod
    def quasi_exact_match_score(cls, target: str, prediction: str) -> int:
        """1 when both are equal once normalised (case, punctuation, articles), else 0."""
        if not prediction:
            return 0
        return 1 if _normalize(target) == _normalize(prediction) else 0

    @classmethod
    def quasi_contains_score(cls, targets: Sequence[str], prediction: str) -> int:
        """1 when the normalised prediction is one of the normalised targets, else 0."""
        if not prediction:
            return 0
        return 1 if _normalize(prediction) in {_normalize(t) for t in targets} else 0

    @classmethod
    def truth_identification_score(cls, target: str, prediction: str) -> int:
        """Percentage (0..100) of the comma-separated true answers in ``target`` that
        ``prediction`` (also comma-separated) names."""
        wanted = {t.strip() for t in target.split(",") if t.strip()}
        if not wanted:
            return 0
        named = {p.strip() for p in prediction.split(",") if p.strip()}
        return round(100 * len(wanted & named) / len(wanted))

    def pass_at_k(self, n: int, c: int, k: int) -> float:
        """Unbiased pass@k of ``n`` samples of which ``c`` are correct."""
        if n - c < k:
            return 1.0
        return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))

    @classmethod
    def rouge_score(cls, *args: Any, **kwargs: Any) -> float:
        _unavailable("rouge_score", "a GEval or your own metric")

    @classmethod
    def sentence_bleu_score(cls, *args: Any, **kwargs: Any) -> float:
        _unavailable("sentence_bleu_score", "a GEval or your own metric")

    @classmethod
    def bert_score(cls, *args: Any, **kwargs: Any) -> Any:
        _unavailable("bert_score", "AnswerRelevancyMetric or a GEval")

    @classmethod
    def neural_toxic_score(cls, *args: Any, **kwargs: Any) -> Any:
        _unavailable("neural_toxic_score", "ToxicityMetric")

    @classmethod
    def neural_bias_score(cls, *args: Any, **kwargs: Any) -> Any:
        _unavailable("neural_bias_score", "BiasMetric")

    @classmethod
    def faithfulness_score(cls, *args: Any, **kwargs: Any) -> Any:
        _unavailable("faithfulness_score", "FaithfulnessMetric")

    @classmethod
    def hallucination_score(cls, *args: Any, **kwargs: Any) -> Any:
        _unavailable("hallucination_score", "FaithfulnessMetric")
