"""Test cases under DeepEval's module path (``deepeval.test_case``)."""

from __future__ import annotations

from ._cases import (
    ConversationalTestCase,
    LLMTestCase,
    LLMTestCaseParams,
    MLLMImage,
    MultiTurnParams,
    SingleTurnParams,
    ToolCall,
    ToolCallType,
    Turn,
)
from ._deterministic import ToolCallParams

#: DeepEval's older name for :class:`MultiTurnParams`.
TurnParams = MultiTurnParams

__all__ = [
    "ConversationalTestCase",
    "LLMTestCase",
    "LLMTestCaseParams",
    "MLLMImage",
    "MultiTurnParams",
    "SingleTurnParams",
    "ToolCall",
    "ToolCallParams",
    "ToolCallType",
    "Turn",
    "TurnParams",
]
