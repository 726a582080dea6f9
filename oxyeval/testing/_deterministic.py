"""Metrics that need no model: the same case always gets the same score, offline.

Each docstring states the exact arithmetic, since a CI gate is set against it.
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import jsonschema

from ..inputs import JSONProblem, loads
from ._cases import LLMTestCase, LLMTestCaseParams, ToolCall
from ._metric import BaseMetric

__all__ = [
    "ExactMatchMetric",
    "JsonCorrectnessMetric",
    "PatternMatchMetric",
    "ToolCallParams",
    "ToolCorrectnessMetric",
    "tool_correctness",
]

_P = LLMTestCaseParams


class ExactMatchMetric(BaseMetric):
    """1.0 when ``actual_output`` equals ``expected_output`` once both are stripped of
    leading and trailing whitespace, else 0.0 (case and inner spacing count)."""

    name = "Exact Match"
    required_params = (_P.ACTUAL_OUTPUT, _P.EXPECTED_OUTPUT)

    def __init__(self, threshold: float = 1.0, strict_mode: bool = False, **options: Any) -> None:
        super().__init__(threshold=threshold, strict_mode=strict_mode, **options)

    async def _a_score(self, test_case: LLMTestCase) -> tuple[float, str | None]:
        assert test_case.expected_output is not None
        if test_case.actual_output.strip() == test_case.expected_output.strip():
            return 1.0, "the output equals the expected output"
        return 0.0, "the output differs from the expected output"


class PatternMatchMetric(BaseMetric):
    """1.0 when the whole ``actual_output`` (stripped of leading and trailing
    whitespace) matches the regular expression ``pattern`` (Python syntax, run by RE2 in
    linear time, so a pattern cannot hang a run), else 0.0; ``ignore_case`` as
    ``re.IGNORECASE``."""

    name = "Pattern Match"
    required_params = (_P.ACTUAL_OUTPUT,)

    def __init__(
        self,
        pattern: str,
        ignore_case: bool = False,
        threshold: float = 1.0,
        strict_mode: bool = False,
        **options: Any,
    ) -> None:
        from ..patterns import PatternError, compile_pattern

        if not isinstance(pattern, str):
            raise TypeError(
                f"PatternMatchMetric.pattern must be a str, got {type(pattern).__name__}"
            )
        try:
            body = f"(?i:{pattern})" if ignore_case else f"(?:{pattern})"
            self._pattern = compile_pattern(f"^{body}$")  # the whole output, not a part
        except PatternError as exc:
            raise ValueError(f"PatternMatchMetric.pattern is not a usable pattern: {exc}") from None
        super().__init__(threshold=threshold, strict_mode=strict_mode, **options)
        self.pattern = pattern
        self.ignore_case = bool(ignore_case)

    async def _a_score(self, test_case: LLMTestCase) -> tuple[float, str | None]:
        text = (test_case.actual_output or "").strip()
        if self._pattern.search(text):
            return 1.0, f"the output matches {self.pattern!r}"
        return 0.0, f"the output does not match {self.pattern!r}"


class JsonCorrectnessMetric(BaseMetric):
    """1.0 when ``actual_output`` parses as JSON and the value is valid under
    ``expected_schema``, else 0.0 with the reason naming the parse problem or the first
    violation found. ``expected_schema`` is a JSON Schema (checked when the metric is
    made), or a pydantic model class as DeepEval takes it (its JSON Schema is used, so
    pydantic is needed only by code that passes one)."""

    name = "Json Correctness"
    required_params = (_P.ACTUAL_OUTPUT,)

    def __init__(
        self,
        expected_schema: Any,
        threshold: float = 0.5,
        strict_mode: bool = False,
        model: Any = None,
        include_reason: bool = True,
        **options: Any,
    ) -> None:
        to_schema = getattr(expected_schema, "model_json_schema", None)
        if isinstance(expected_schema, type) and callable(to_schema):
            expected_schema = to_schema()  # a pydantic model class
        if not isinstance(expected_schema, dict):
            raise TypeError(
                "JsonCorrectnessMetric.expected_schema must be a JSON Schema (dict), got "
                f"{type(expected_schema).__name__}"
            )
        cls = jsonschema.validators.validator_for(expected_schema)
        try:
            cls.check_schema(expected_schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(
                f"JsonCorrectnessMetric.expected_schema is not a valid JSON Schema: {exc.message}"
            ) from None
        super().__init__(
            threshold=threshold,
            model=model,
            include_reason=include_reason,
            strict_mode=strict_mode,
            **options,
        )
        self.expected_schema = expected_schema
        self._validator = cls(expected_schema)

    async def _a_score(self, test_case: LLMTestCase) -> tuple[float, str | None]:
        try:
            value = loads(test_case.actual_output.strip(), "the actual output")
        except JSONProblem as exc:
            return 0.0, f"the output is not JSON: {exc}"
        errors = sorted(self._validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if not errors:
            return 1.0, "the output is JSON valid under the expected schema"
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "the top level"
        more = f" ({len(errors) - 1} more)" if len(errors) > 1 else ""
        return 0.0, f"the output violates the schema at {where}: {first.message}{more}"


class ToolCallParams(str, enum.Enum):
    """What besides a tool's name makes two calls the same, for ToolCorrectnessMetric."""

    NAME = "name"
    INPUT_PARAMETERS = "input_parameters"
    OUTPUT = "output"


def _key(call: ToolCall, fields: Sequence[str]) -> str:
    values = [getattr(call, f) for f in fields] + [call.type.value]
    return json.dumps(values, sort_keys=True, default=repr, ensure_ascii=False)


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (O(len(a)*len(b)) time, O(len(b)) space)."""
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b, start=1):
            prev, row[j] = row[j], prev + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def tool_correctness(called: Sequence[str], expected: Sequence[str], mode: str = "exact") -> float:
    """The ToolCorrectnessMetric score of two lists of call keys (see that class)."""
    if not expected:
        return 1.0 if not called else 0.0
    if mode == "exact":
        return 1.0 if list(called) == list(expected) else 0.0
    if mode == "ordered":
        return _lcs(called, expected) / len(expected)
    if mode == "unordered":
        matched = Counter(called) & Counter(expected)
        return sum(matched.values()) / len(expected)
    raise ValueError(f"unknown mode {mode!r}; use exact, ordered or unordered")


class ToolCorrectnessMetric(BaseMetric):
    """Did the app call the tools it should have? Compares ``tools_called`` with
    ``expected_tools``; two calls match when their names and types (and the fields
    listed in ``evaluation_params``: ``input_parameters``, ``output``) are equal.

    The mode is DeepEval's: ``unordered`` by default, ``exact`` with
    ``should_exact_match=True``, ``ordered`` with ``should_consider_ordering=True`` (or
    name it with ``mode=``). ``available_tools`` (DeepEval asks its judge whether the
    right tools were chosen among them) is accepted and not judged here.

    With E = ``expected_tools`` and C = ``tools_called``:

    * ``exact``: 1.0 iff C equals E call for call, in order and length; else 0.0.
    * ``ordered``: (longest common subsequence of C and E) / len(E): the expected calls
      made in the expected order; extra calls in between cost nothing.
    * ``unordered``: |C ∩ E as multisets| / len(E): each expected call counted once per
      time it was made, in any order; extra calls cost nothing.
    * E empty: 1.0 when nothing was called, else 0.0, in every mode.
    """

    name = "Tool Correctness"
    required_params = (_P.TOOLS_CALLED, _P.EXPECTED_TOOLS)
    MODES = ("exact", "ordered", "unordered")

    def __init__(
        self,
        available_tools: Sequence[ToolCall] | None = None,
        threshold: float = 0.5,
        evaluation_params: Iterable[str | ToolCallParams] = (ToolCallParams.NAME,),
        model: Any = None,
        include_reason: bool = True,
        strict_mode: bool = False,
        should_exact_match: bool = False,
        should_consider_ordering: bool = False,
        *,
        mode: str | None = None,
        **options: Any,
    ) -> None:
        if isinstance(available_tools, str):  # the older first argument: the mode
            mode, available_tools = available_tools, None
        if mode is None:
            mode = (
                "exact"
                if should_exact_match
                else "ordered"
                if should_consider_ordering
                else "unordered"
            )
        if mode not in self.MODES:
            raise ValueError(
                f"ToolCorrectnessMetric.mode must be one of {self.MODES}, got {mode!r}"
            )
        fields = ["name"]
        for param in evaluation_params:
            try:
                value = ToolCallParams(param).value
            except ValueError:
                raise ValueError(
                    f"ToolCorrectnessMetric.evaluation_params: unknown {param!r}; use "
                    "name, input_parameters or output"
                ) from None
            if value not in fields:
                fields.append(value)
        super().__init__(
            threshold=threshold,
            model=model,
            include_reason=include_reason,
            strict_mode=strict_mode,
            **options,
        )
        self.mode = mode
        self.available_tools = list(available_tools) if available_tools else None
        self.should_exact_match = mode == "exact"
        self.should_consider_ordering = mode == "ordered"
        self.evaluation_params = tuple(fields)

    async def _a_score(self, test_case: LLMTestCase) -> tuple[float, str | None]:
        assert test_case.tools_called is not None and test_case.expected_tools is not None
        called = [_key(c, self.evaluation_params) for c in test_case.tools_called]
        expected = [_key(c, self.evaluation_params) for c in test_case.expected_tools]
        score = tool_correctness(called, expected, self.mode)
        names = [c.name for c in test_case.tools_called]
        wanted = [c.name for c in test_case.expected_tools]
        return score, f"{self.mode}: called {names}, expected {wanted}"
