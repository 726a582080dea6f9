"""Test cases: one interaction (or conversation) of the app under test, as data.

Checked when built, not when measured: a wrong type found while a metric runs would
surface far from the line that made it, so every field is validated in
``__post_init__`` with a one-line error naming it. Sizes are bounded so a runaway
output cannot become a multi-megabyte judge prompt.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import math
import mimetypes
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlparse

__all__ = [
    "MAX_ITEMS",
    "MAX_TEXT",
    "ConversationalTestCase",
    "LLMTestCase",
    "LLMTestCaseParams",
    "MLLMImage",
    "MultiTurnParams",
    "SingleTurnParams",
    "ToolCall",
    "ToolCallType",
    "Turn",
    "split_images",
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
    METADATA = "metadata"
    TAGS = "tags"


#: DeepEval's current name for the fields of a single-turn test case.
SingleTurnParams = LLMTestCaseParams


class MultiTurnParams(str, enum.Enum):
    """The fields of a :class:`ConversationalTestCase` (and of its turns) a
    conversational metric can read (DeepEval's names)."""

    ROLE = "role"
    CONTENT = "content"
    METADATA = "metadata"
    TAGS = "tags"
    SCENARIO = "scenario"
    EXPECTED_OUTCOME = "expected_outcome"
    CONTEXT = "context"
    USER_DESCRIPTION = "user_description"
    RETRIEVAL_CONTEXT = "retrieval_context"
    CHATBOT_ROLE = "chatbot_role"
    TOOLS_CALLED = "tools_called"


class ToolCallType(str, enum.Enum):
    """What kind of tool was called (DeepEval's ``ToolCallType``)."""

    FUNCTION = "FUNCTION"
    MCP = "MCP"


#: The images made in this process, by id: a test case's text names an image by a
#: placeholder (``[OXYEVAL:IMAGE:<id>]``), which is how DeepEval puts images in text.
_IMAGES: dict[str, MLLMImage] = {}
_PLACEHOLDER = re.compile(r"\[(?:OXYEVAL|DEEPEVAL):(?:IMAGE|PDF):([^\]]+)\]")


@dataclass(eq=False)
class MLLMImage:
    """An image in a test case (an input that shows one, an output that is one): a
    local path or ``file://`` URL (read and sent inline), an ``http(s)`` URL (sent as
    a link), or base64 data with its MIME type. Put it in a text field with an
    f-string (``f"What is in {MLLMImage(url=...)}?"``): the text holds a placeholder,
    and a vision-capable judge is sent the image itself in its place."""

    url: str | None = None
    local: bool | None = None
    dataBase64: str | None = None
    mimeType: str | None = None
    filename: str | None = None
    _id: str = ""  # from the image itself: the same image, the same id and cache keys

    def __post_init__(self) -> None:
        if not self.url and not self.dataBase64:
            raise ValueError("MLLMImage needs a url (or local path), or dataBase64 and mimeType")
        if self.dataBase64 is not None:
            if not self.mimeType:
                raise ValueError("MLLMImage.mimeType is required with dataBase64")
        else:
            assert self.url is not None
            path = _local_path(self.url)
            is_local = path is not None
            if self.local is not None and self.local != is_local:
                raise ValueError(
                    f"MLLMImage.local is {self.local} but {self.url!r} is "
                    + ("a local file" if is_local else "not a local file")
                )
            self.local = is_local
            if path is not None:
                self.filename = os.path.basename(path)
                self.mimeType = mimetypes.guess_type(path)[0] or "image/jpeg"
                with open(path, "rb") as handle:
                    self.dataBase64 = base64.b64encode(handle.read()).decode("ascii")
            elif not self.url.startswith(("http://", "https://")):
                raise ValueError(
                    f"MLLMImage.url {self.url!r} is neither a local file nor an http(s) URL"
                )
            else:
                self.filename = os.path.basename(urlparse(self.url).path)
                self.mimeType = mimetypes.guess_type(self.filename)[0]
        if not self._id:
            seen = self.dataBase64 if self.dataBase64 is not None else self.url or ""
            self._id = hashlib.sha256(seen.encode()).hexdigest()[:16]
        _IMAGES[self._id] = self

    def _placeholder(self) -> str:
        return f"[OXYEVAL:IMAGE:{self._id}]"

    __str__ = __repr__ = _placeholder

    def __format__(self, spec: str) -> str:
        return self._placeholder()

    def as_data_uri(self) -> str | None:
        """The image inline (``data:<mime>;base64,...``), None for a remote one."""
        if not self.dataBase64 or not self.mimeType:
            return None
        return f"data:{self.mimeType};base64,{self.dataBase64}"

    @property
    def address(self) -> str:
        """What a vision model is sent: the inline data, else the URL."""
        return self.as_data_uri() or self.url or ""


def _local_path(url: str) -> str | None:
    if os.path.exists(url):
        return url
    parsed = urlparse(url)
    if parsed.scheme == "file":
        path = unquote(f"//{parsed.netloc}{parsed.path}" if parsed.netloc else parsed.path)
        return path if os.path.exists(path) else None
    return None


def split_images(text: str) -> list[str | MLLMImage]:
    """``text`` cut at its image placeholders: its pieces of text and its images, in
    order (an unknown placeholder stays text)."""
    parts: list[str | MLLMImage] = []
    last = 0
    for match in _PLACEHOLDER.finditer(text):
        image = _IMAGES.get(match.group(1))
        if image is None:
            continue
        if match.start() > last:
            parts.append(text[last : match.start()])
        parts.append(image)
        last = match.end()
    if last < len(text):
        parts.append(text[last:])
    return parts


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
    reasoning: str | None = None
    type: ToolCallType = ToolCallType.FUNCTION

    def __post_init__(self) -> None:
        self.type = ToolCallType(self.type)
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


def _metadata(owner: str, field: str, value: Any) -> None:
    if value is not None and not isinstance(value, Mapping):
        raise TypeError(f"{owner}.{field} must be a dict, got {type(value).__name__}")


@dataclass
class LLMTestCase:
    """One single-turn interaction: what went in, what the app answered, and whatever
    each metric needs besides (an expected answer, retrieved chunks, tool calls).

    Only ``input`` is required here (a golden becomes a test case once the app's
    ``actual_output`` is added); a metric that needs another field says so, naming
    itself and the field, when it measures a case without it. ``name``, ``tags`` and
    ``metadata`` (DeepEval's ``additional_metadata`` too) label the case in results;
    ``flaky``: ``assert_test`` warns instead of failing when this case fails.
    """

    input: str
    actual_output: str | None = None
    expected_output: str | None = None
    retrieval_context: list[str] | None = None
    tools_called: list[ToolCall] | None = None
    expected_tools: list[ToolCall] | None = None
    token_cost: float | None = None
    completion_time: float | None = None
    context: list[str] | None = None
    name: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    comments: str | None = None
    additional_metadata: dict[str, Any] | None = None
    flaky: bool = False
    input_token_count: int | None = None
    output_token_count: int | None = None
    multimodal: bool = False

    def __post_init__(self) -> None:
        owner = "LLMTestCase"
        _text(owner, "input", self.input, optional=False)
        _text(owner, "actual_output", self.actual_output, optional=True)
        _text(owner, "expected_output", self.expected_output, optional=True)
        _texts(owner, "retrieval_context", self.retrieval_context)
        _texts(owner, "context", self.context)
        _tools(owner, "tools_called", self.tools_called)
        _tools(owner, "expected_tools", self.expected_tools)
        _number(owner, "token_cost", self.token_cost)
        _number(owner, "completion_time", self.completion_time)
        _text(owner, "name", self.name, optional=True)
        _texts(owner, "tags", self.tags)
        _text(owner, "comments", self.comments, optional=True)
        _metadata(owner, "metadata", self.metadata)
        _metadata(owner, "additional_metadata", self.additional_metadata)
        if self.metadata is None and self.additional_metadata is not None:
            self.metadata = dict(self.additional_metadata)
        self.additional_metadata = self.metadata
        texts = [self.input, self.actual_output, self.expected_output]
        texts += [*(self.retrieval_context or []), *(self.context or [])]
        self.multimodal = bool(self.multimodal) or any(
            t is not None and _PLACEHOLDER.search(t) for t in texts
        )


@dataclass
class Turn:
    """One message of a conversation (DeepEval's ``Turn``): who spoke (``user`` or
    ``assistant``), what they said, and for an assistant turn what it retrieved and
    which tools it called."""

    role: Literal["user", "assistant"]
    content: str
    user_id: str | None = None
    retrieval_context: list[str] | None = None
    tools_called: list[ToolCall] | None = None
    metadata: dict[str, Any] | None = None
    additional_metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.role not in ("user", "assistant"):
            raise ValueError(f"Turn.role must be 'user' or 'assistant', got {self.role!r}")
        _text("Turn", "content", self.content, optional=False)
        _texts("Turn", "retrieval_context", self.retrieval_context)
        _tools("Turn", "tools_called", self.tools_called)
        _metadata("Turn", "metadata", self.metadata)
        if self.metadata is None and self.additional_metadata is not None:
            self.metadata = dict(self.additional_metadata)


@dataclass
class ConversationalTestCase:
    """A multi-turn conversation: its turns in order, as DeepEval writes them
    (``Turn(role=, content=)``) or as one :class:`LLMTestCase` per exchange, and what
    conversational metrics judge it against (the ``chatbot_role`` it was told to play,
    the ``scenario`` and ``expected_outcome``...)."""

    turns: list[Turn] | list[LLMTestCase]
    chatbot_role: str | None = None
    scenario: str | None = None
    expected_outcome: str | None = None
    user_description: str | None = None
    context: list[str] | None = None
    name: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    comments: str | None = None
    additional_metadata: dict[str, Any] | None = None
    flaky: bool = False

    def __post_init__(self) -> None:
        owner = "ConversationalTestCase"
        if self.turns is None:
            raise TypeError(f"{owner}.turns is required (a list of Turn), got None")
        if isinstance(self.turns, (str, Mapping)) or not isinstance(self.turns, Sequence):
            raise TypeError(
                f"{owner}.turns must be a list of Turn, got {type(self.turns).__name__}"
            )
        if not self.turns:
            raise ValueError(f"{owner}.turns must hold at least one turn")
        if len(self.turns) > MAX_ITEMS:
            raise ValueError(
                f"{owner}.turns has {len(self.turns):,} items; the limit is {MAX_ITEMS:,}"
            )
        kind = Turn if isinstance(self.turns[0], Turn) else LLMTestCase
        for i, turn in enumerate(self.turns):
            if not isinstance(turn, kind):
                article = "a Turn" if kind is Turn else "an LLMTestCase"
                raise TypeError(
                    f"{owner}.turns[{i}] must be {article} like turns[0], got {type(turn).__name__}"
                )
        if kind is Turn and not any(t.role == "assistant" for t in self.turns):  # type: ignore[union-attr]
            raise ValueError(f"{owner}.turns has no assistant turn to judge")
        _text(owner, "chatbot_role", self.chatbot_role, optional=True)
        _text(owner, "scenario", self.scenario, optional=True)
        _text(owner, "expected_outcome", self.expected_outcome, optional=True)
        _text(owner, "user_description", self.user_description, optional=True)
        _texts(owner, "context", self.context)
        _text(owner, "name", self.name, optional=True)
        _texts(owner, "tags", self.tags)
        _metadata(owner, "metadata", self.metadata)
        if self.metadata is None and self.additional_metadata is not None:
            self.metadata = dict(self.additional_metadata)
        self.additional_metadata = self.metadata

    def exchanges(self) -> list[LLMTestCase]:
        """The conversation as what each assistant turn answered: its ``input`` the user
        turns since the previous assistant turn (empty when the assistant spoke first),
        its ``actual_output`` the assistant's, with what that turn retrieved and called.
        Turns given as LLMTestCase are those exchanges already."""
        turns = list(self.turns)
        if not turns or isinstance(turns[0], LLMTestCase):
            return turns  # type: ignore[return-value]
        out: list[LLMTestCase] = []
        said: list[str] = []
        for turn in turns:
            assert isinstance(turn, Turn)
            if turn.role == "user":
                said.append(turn.content)
                continue
            out.append(
                LLMTestCase(
                    input="\n".join(said),
                    actual_output=turn.content,
                    retrieval_context=turn.retrieval_context,
                    tools_called=turn.tools_called,
                )
            )
            said = []
        return out
