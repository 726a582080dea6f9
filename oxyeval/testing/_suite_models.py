"""The smaller shapes a suite's code names besides test cases and evaluations: how often a
test case runs, an assertions evaluator's assertions, an LLM judge's choices, events an
evaluator may also score, and the Autoblocks platform's records that code written for it
passes along.

They keep Autoblocks' field names, so code written against its SDK runs unchanged; what
only its platform does with them (human review jobs and fields, evaluation overrides from
its reviewers) is accepted here and has nothing to reach, which the user guide says.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from ._evaluators import BaseTestEvaluator, Evaluation, Threshold

__all__ = [
    "Assertion",
    "BaseEvaluator",
    "BaseEventEvaluator",
    "CreateHumanReviewJob",
    "EvaluationOverride",
    "EvaluationOverrideComment",
    "EvaluationOverrideField",
    "EvaluationWithId",
    "HumanReviewField",
    "HumanReviewFieldContentType",
    "ScoreChoice",
    "TestCaseConfig",
    "TracerEvent",
    "config_of",
]

#: The attribute of a test case that holds its :class:`TestCaseConfig`.
CONFIG_ATTRIBUTE = "test_case_config"


@dataclass
class TestCaseConfig:
    """Per test case settings, set as its ``test_case_config`` attribute:
    ``repeat_num_times`` runs it that many times, each a test case of its own whose hash
    is ``<hash>-<index>`` (index from 0), so a flaky output shows up as a share."""

    __test__ = False  # not a pytest test class despite its name

    repeat_num_times: int | None = None

    def __post_init__(self) -> None:
        n = self.repeat_num_times
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValueError(
                f"TestCaseConfig.repeat_num_times must be a whole number of at least 1, not {n!r}"
            )


def config_of(test_case: Any) -> TestCaseConfig | None:
    """The test case's :class:`TestCaseConfig`, or None (an attribute of another type
    is the test case's own business, as Autoblocks reads it)."""
    config = getattr(test_case, CONFIG_ATTRIBUTE, None)
    return config if isinstance(config, TestCaseConfig) else None


@dataclass
class Assertion:
    """One criterion an assertions evaluator checked: whether it passed, and whether it
    is required (only required ones decide the evaluation)."""

    criterion: str
    passed: bool
    required: bool
    metadata: dict[str, Any] | None = None

    def serialize(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "passed": self.passed,
            "required": self.required,
            "metadata": self.metadata,
        }


@dataclass
class EvaluationWithId:
    """An evaluation named by its evaluator's id."""

    id: str
    score: float
    threshold: Threshold | None = None
    metadata: dict[str, Any] | None = None
    assertions: list[Assertion] | None = None


@dataclass
class ScoreChoice:
    """One answer an LLM judge may pick, and the score it stands for."""

    value: float
    name: str


@dataclass
class EvaluationOverrideField:
    id: str
    name: str
    value: str


@dataclass
class EvaluationOverrideComment:
    field_id: str
    quoted_text: str
    comment_text: str


@dataclass
class EvaluationOverride:
    """A reviewer's correction of a judge's score, given to the judge as an example.
    Reviews live on Autoblocks' platform; an LLM judge here gets none (its
    ``num_overrides`` has nothing to fetch)."""

    original_score: ScoreChoice
    override_score: ScoreChoice
    input_fields: list[EvaluationOverrideField]
    output_fields: list[EvaluationOverrideField]
    comments: list[EvaluationOverrideComment]


class HumanReviewFieldContentType(str, enum.Enum):
    TEXT = "text"
    LINK = "link"
    MARKDOWN = "markdown"
    HTML = "html"


@dataclass
class HumanReviewField:
    name: str
    value: str
    content_type: HumanReviewFieldContentType | None = HumanReviewFieldContentType.TEXT

    def serialize(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "contentType": self.content_type}


@dataclass
class CreateHumanReviewJob:
    """A human review job Autoblocks' platform would open for a run; accepted by
    ``run_test_suite`` and not sent anywhere."""

    assignee_email_address: str | list[str]
    name: str
    rubric_id: str | None = None

    def get_assignee_email_addresses(self) -> list[str]:
        if isinstance(self.assignee_email_address, str):
            return [self.assignee_email_address]
        return list(self.assignee_email_address)


@dataclass
class TracerEvent:
    """An event an application sent to its tracer, as an event evaluator receives it."""

    message: str
    timestamp: str
    properties: dict[str, Any] = field(default_factory=dict)
    trace_id: str | None = None


class BaseEventEvaluator(ABC):
    """An evaluator of production events (``evaluate_event``); one that also subclasses
    :class:`BaseTestEvaluator` (:class:`BaseEvaluator`) scores a suite's test cases
    too, which is all a suite asks of it."""

    id: str
    max_concurrency: int | None = None

    @abstractmethod
    def evaluate_event(
        self, event: TracerEvent
    ) -> Evaluation | Awaitable[Evaluation | None] | None: ...


class BaseEvaluator(BaseTestEvaluator, BaseEventEvaluator, ABC):
    """An evaluator of both test cases and production events."""
