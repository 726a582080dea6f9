"""Datasets under DeepEval's module path (``deepeval.dataset``)."""

from __future__ import annotations

from ._dataset import ConversationalGolden, EvaluationDataset, Golden

__all__ = ["ConversationalGolden", "EvaluationDataset", "Golden"]
