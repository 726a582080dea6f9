"""Test cases: one interaction (or conversation) of the app under test, as data.

Checked when built, not when measured: a wrong type found while a metric runs would
surface far from the line that made it, so every field is validated in
``__post_init__`` with a one-line error naming it. Sizes are bounded so a runaway
output cannot become a multi-megabyte judge prompt.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_ITEMS",
    "MAX_TEXT",
    "ConversationalTestCase",
    "LLMTestCase",
    "LLMTestCaseParams",
    "ToolCall",
]

#: Characters in one text field (an input, an output, one context chunk).
MAX_TEXT = 1_000_000
#: Items in one list field (context chunks, tool calls, turns).
MAX_ITEMS = 10_000


class LLMTestCaseParams(str, enum.Enum):
    """The fields of an :class:`LLMTestCase` a metric can read; the value is the
    attribute name, so ``getattr(case, param.value)`` reads it."""

    INPUT = "input"
    ACTUAL_OUTPUT = "actual_output"
    EXPECTED_OUTPUT = "expected_output"
    CONTEXT = "context"
    RETRIEVAL_CONTEXT = "retrieval_context"
    TOOLS_CALLED = "tools_called"
    EXPECTED_TOOLS = "expected_tools"


def _text(owner: str, field: str, value: Any, *, optional: bool) -> None:
    if value is None:
        if optional:
            return
        raise TypeError(f"{owner}.{field} is required (a str), got None")
    if not isinstance(value, str):
        raise TypeError(f"{owner}.{field} must be a str, got {type(value).__name__}")
    if len(value) > MAX_TEXT:
        raise ValueError(f"{owner}.{field} is {len(value):,} characters; the limit is {MAX_TEXT:,}")


def _texts(owner: str, field: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{owner}.{field} must be a list of str, got {type(value).__name__}")
    if len(value) > MAX_ITEMS:
        raise ValueError(f"{owner}.{field} has {len(value):,} items; the limit is {MAX_ITEMS:,}")
    for i, item in enumerate(value):
        _text(owner, f"{field}[{i}]", item, optional=False)


def _number(owner: str, field: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{owner}.{field} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{owner}.{field} must be a finite number >= 0, got {value!r}")


def _tools(owner: str, field: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, (str, Mapping)) or not isinstance(value, Sequence):
        raise TypeError(f"{owner}.{field} must be a list of ToolCall, got {type(value).__name__}")
    if len(value) > MAX_ITEMS:
        raise ValueError(f"{owner}.{field} has {len(value):,} items; the limit is {MAX_ITEMS:,}")
    for i, item in enumerate(value):
        if not isinstance(item, ToolCall):
            raise TypeError(f"{owner}.{field}[{i}] must be a ToolCall, got {type(item).__name__}")


@dataclass
class ToolCall:
    """One tool the app called (or should have called): its name, and optionally what it
    was given and what it returned, for metrics that compare those too."""

    name: str
    description: str | None = None
    input_parameters: dict[str, Any] | None = None
    output: Any = None

    def __post_init__(self) -> None:
        _text("ToolCall", "name", self.name, optional=False)
        if not self.name.strip():
            raise ValueError("ToolCall.name must not be empty")
        _text("ToolCall", "description", self.description, optional=True)
        if self.input_parameters is not None:
            if not isinstance(self.input_parameters, Mapping):
                raise TypeError(
                    "ToolCall.input_parameters must be a dict, got "
                    f"{type(self.input_parameters).__name__}"
                )
            if not all(isinstance(k, str) for k in self.input_parameters):
                raise TypeError("ToolCall.input_parameters must have str keys")


@dataclass
class LLMTestCase:
    """One single-turn interaction: what went in, what the app answered, and whatever
    each metric needs besides (an expected answer, retrieved chunks, tool calls).

    Only ``input`` and ``actual_output`` are required here; a metric that needs another
    field says so, naming itself and the field, when it measures a case without it.
    """

    input: str
    actual_output: str
    expected_output: str | None = None
    retrieval_context: list[str] | None = None
    tools_called: list[ToolCall] | None = None
    expected_tools: list[ToolCall] | None = None
    token_cost: float | None = None
    completion_time: float | None = None
    context: list[str] | None = None

    def __post_init__(self) -> None:
        owner = "LLMTestCase"
        _text(owner, "input", self.input, optional=False)
        _text(owner, "actual_output", self.actual_output, optional=False)
        _text(owner, "expected_output", self.expected_output, optional=True)
        _texts(owner, "retrieval_context", self.retrieval_context)
        _texts(owner, "context", self.context)
        _tools(owner, "tools_called", self.tools_called)
        _tools(owner, "expected_tools", self.expected_tools)
        _number(owner, "token_cost", self.token_cost)
        _number(owner, "completion_time", self.completion_time)


@dataclass
class ConversationalTestCase:
    """A multi-turn conversation: its turns in order, each an :class:`LLMTestCase`, and
    the role the chatbot was told to play (for metrics judging adherence to it)."""

    turns: list[LLMTestCase]
    chatbot_role: str | None = None

    def __post_init__(self) -> None:
        owner = "ConversationalTestCase"
        if self.turns is None:
            raise TypeError(f"{owner}.turns is required (a list of LLMTestCase), got None")
        if isinstance(self.turns, (str, Mapping)) or not isinstance(self.turns, Sequence):
            raise TypeError(
                f"{owner}.turns must be a list of LLMTestCase, got {type(self.turns).__name__}"
            )
        if not self.turns:
            raise ValueError(f"{owner}.turns must hold at least one turn")
        if len(self.turns) > MAX_ITEMS:
            raise ValueError(
                f"{owner}.turns has {len(self.turns):,} items; the limit is {MAX_ITEMS:,}"
            )
        for i, turn in enumerate(self.turns):
            if not isinstance(turn, LLMTestCase):
                raise TypeError(
                    f"{owner}.turns[{i}] must be an LLMTestCase, got {type(turn).__name__}"
                )
        _text(owner, "chatbot_role", self.chatbot_role, optional=True)
