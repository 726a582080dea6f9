"""Autoblocks' ready-made evaluators that need no model: subclass one, say how to read
your test case and output with its mappers, and it scores as Autoblocks' does (1 or 0,
passing at 1, the same metadata), so a suite moved here keeps its verdicts.

    class HasKeywords(BaseHasAllSubstrings[MyCase, str]):
        id = "has-keywords"

        def test_case_mapper(self, test_case: MyCase) -> list[str]:
            return test_case.keywords

        def output_mapper(self, output: str) -> str:
            return output
"""

from __future__ import annotations

import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Sequence
from typing import Any, Generic, TypeVar

from ._evaluators import BaseTestCase, BaseTestEvaluator, Evaluation, Threshold
from ._suite_models import Assertion

__all__ = [
    "BaseAssertions",
    "BaseHasAllSubstrings",
    "BaseIsEqual",
    "BaseIsEquals",
    "BaseIsValidJSON",
    "BaseIsValidJson",
    "OutputType",
    "TestCaseType",
]

TestCaseType = TypeVar("TestCaseType", bound=BaseTestCase)
OutputType = TypeVar("OutputType")


class BaseHasAllSubstrings(BaseTestEvaluator, ABC, Generic[TestCaseType, OutputType]):
    """1 when the mapped output contains every substring the test case maps to
    (case-sensitive), else 0; passes at 1; ``missing_substrings`` in the metadata."""

    @abstractmethod
    def test_case_mapper(self, test_case: TestCaseType) -> Sequence[str]: ...

    @abstractmethod
    def output_mapper(self, output: OutputType) -> str: ...

    def evaluate_test_case(self, test_case: TestCaseType, output: OutputType) -> Evaluation:
        expected = self.test_case_mapper(test_case)
        mapped = self.output_mapper(output)
        missing = [s for s in expected if s not in mapped]
        return Evaluation(0 if missing else 1, Threshold(gte=1), {"missing_substrings": missing})


class BaseIsEquals(BaseTestEvaluator, ABC, Generic[TestCaseType, OutputType]):
    """1 when the mapped output equals the mapped test case (case-sensitive), else 0 with
    both in the metadata; passes at 1."""

    @abstractmethod
    def test_case_mapper(self, test_case: TestCaseType) -> str: ...

    @abstractmethod
    def output_mapper(self, output: OutputType) -> str: ...

    def evaluate_test_case(self, test_case: TestCaseType, output: OutputType) -> Evaluation:
        actual = self.output_mapper(output)
        expected = self.test_case_mapper(test_case)
        same = actual == expected
        metadata = None if same else {"expected_output": expected, "actual_output": actual}
        return Evaluation(1 if same else 0, Threshold(gte=1), metadata)


#: The name the SDK's own evaluators use (``IsEqual``), for the same class.
BaseIsEqual = BaseIsEquals


class BaseIsValidJSON(BaseTestEvaluator, ABC, Generic[TestCaseType, OutputType]):
    """1 when the mapped output parses as JSON, else 0 with the parser's error in the
    metadata; passes at 1."""

    @abstractmethod
    def output_mapper(self, output: OutputType) -> str: ...

    def evaluate_test_case(self, test_case: TestCaseType, output: OutputType) -> Evaluation:
        try:
            json.loads(self.output_mapper(output))
        except Exception as exc:  # any failure to parse is the evaluation's 0, as theirs
            return Evaluation(0, Threshold(gte=1), {"error": str(exc)})
        return Evaluation(1, Threshold(gte=1))


#: The SDK's own spelling (``IsValidJson``), for the same class.
BaseIsValidJson = BaseIsValidJSON


class BaseAssertions(BaseTestEvaluator, ABC, Generic[TestCaseType, OutputType]):
    """``evaluate_assertions(test_case, output)`` (sync or async) returns the
    :class:`Assertion` s it checked; the evaluation is 1 when every required one passed,
    else 0, passing at 1, with the assertions attached. None or no assertion: the test
    case is skipped by this evaluator."""

    @abstractmethod
    def evaluate_assertions(
        self, *args: Any, **kwargs: Any
    ) -> list[Assertion] | Awaitable[list[Assertion] | None] | None: ...

    async def evaluate_test_case(self, *args: Any, **kwargs: Any) -> Evaluation | None:
        found = self.evaluate_assertions(*args, **kwargs)
        if inspect.isawaitable(found):
            found = await found
        if not found:
            return None
        passed = all(a.passed for a in found if a.required)
        return Evaluation(1 if passed else 0, Threshold(gte=1), assertions=list(found))
