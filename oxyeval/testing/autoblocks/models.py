"""``autoblocks.testing.models``: test cases, evaluators and what they give."""

from __future__ import annotations

from .._evaluators import BaseTestCase, BaseTestEvaluator, Evaluation, Threshold
from .._suite_models import (
    Assertion,
    BaseEvaluator,
    BaseEventEvaluator,
    CreateHumanReviewJob,
    EvaluationOverride,
    EvaluationOverrideComment,
    EvaluationOverrideField,
    EvaluationWithId,
    HumanReviewField,
    HumanReviewFieldContentType,
    ScoreChoice,
    TestCaseConfig,
    TracerEvent,
)

__all__ = [
    "Assertion",
    "BaseEvaluator",
    "BaseEventEvaluator",
    "BaseTestCase",
    "BaseTestEvaluator",
    "CreateHumanReviewJob",
    "Evaluation",
    "EvaluationOverride",
    "EvaluationOverrideComment",
    "EvaluationOverrideField",
    "EvaluationWithId",
    "HumanReviewField",
    "HumanReviewFieldContentType",
    "ScoreChoice",
    "TestCaseConfig",
    "Threshold",
    "TracerEvent",
]
