"""Tracing an app under test (DeepEval's ``@observe``): its calls become spans, and
the spans that carry metrics become test cases of the run.

``@observe`` wraps a function (sync or async): each call is a :class:`Span` (its
name, type, input, output, error, time) inside the call that made it; the outermost
call is a :class:`Trace`. Inside a call, :func:`update_current_span` and
:func:`update_current_trace` set what a test case is made of (``input``, ``output``,
``expected_output``, ``retrieval_context``, ``tools_called``... or a whole
``test_case``). A span observed with ``metrics=[...]`` is scored as the test case its
fields make; a trace is scored by the metrics ``evals_iterator(metrics=...)`` or
``assert_test(golden=..., metrics=...)`` name. Nothing is sent anywhere: spans are
kept in this process for the run that scores them, and exported over OTLP only when
:func:`~oxyeval.testing.tracing.export_to_otlp` was called.

Span attributes follow OpenTelemetry's GenAI semantic conventions where one applies
(``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.usage.*``), so an
exported trace reads in the tracing tools teams already run.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ._cases import LLMTestCase, ToolCall

__all__ = [
    "Span",
    "Trace",
    "TraceCollector",
    "collecting",
    "current_span",
    "current_trace",
    "last_trace",
    "observe",
    "trace_subjects",
    "update_current_span",
    "update_current_trace",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Span types DeepEval names; any other string is kept as given.
SPAN_TYPES = ("agent", "llm", "retriever", "tool", "custom")
#: The GenAI operation an exported span of each type is.
_OPERATIONS = {"llm": "chat", "agent": "invoke_agent", "tool": "execute_tool"}
#: Fields of a test case a span or trace can be given.
_CASE_FIELDS = (
    "input",
    "output",
    "expected_output",
    "retrieval_context",
    "context",
    "tools_called",
    "expected_tools",
)


@dataclass(eq=False)
class Span:
    """One observed call: what went in and out, and what a test case of it holds."""

    name: str
    type: str = "custom"
    span_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    parent: Span | None = None
    children: list[Span] = field(default_factory=list)
    input: Any = None
    output: Any = None
    error: str | None = None
    start: float = field(default_factory=time.time)
    end: float | None = None
    metrics: list[Any] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    attributes: dict[str, Any] = field(default_factory=dict)
    test_case: LLMTestCase | None = None

    def walk(self) -> Iterator[Span]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(eq=False)
class Trace:
    """One outermost observed call and everything it called."""

    trace_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    root: Span | None = None
    name: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    test_case: LLMTestCase | None = None
    thread_id: str | None = None
    user_id: str | None = None

    def spans(self) -> list[Span]:
        return list(self.root.walk()) if self.root is not None else []


_SPAN: ContextVar[Span | None] = ContextVar("oxyeval_span", default=None)
_TRACE: ContextVar[Trace | None] = ContextVar("oxyeval_trace", default=None)
_LOCK = threading.Lock()
_LAST: list[Trace] = []  # the most recently finished trace (any thread)


class TraceCollector:
    """The traces finished while a loop over goldens runs, by the golden current then."""

    def __init__(self) -> None:
        self.current: Any = None
        self.by_golden: list[tuple[Any, list[Trace]]] = []

    def begin(self, golden: Any) -> None:
        self.current = golden
        self.by_golden.append((golden, []))

    def add(self, trace: Trace) -> None:
        if self.by_golden:
            self.by_golden[-1][1].append(trace)


_COLLECTORS: list[TraceCollector] = []
_EXPORTERS: list[Callable[[Trace], None]] = []


@contextmanager
def collecting() -> Iterator[TraceCollector]:
    """Collect the traces finished in this block (``evals_iterator``'s loop)."""
    collector = TraceCollector()
    with _LOCK:
        _COLLECTORS.append(collector)
    try:
        yield collector
    finally:
        with _LOCK:
            _COLLECTORS.remove(collector)


def current_span() -> Span | None:
    return _SPAN.get()


def current_trace() -> Trace | None:
    return _TRACE.get()


def last_trace() -> Trace | None:
    """The trace that finished last in this process (what ``assert_test(golden=)``
    scores)."""
    with _LOCK:
        return _LAST[-1] if _LAST else None


def _finished(trace: Trace) -> None:
    with _LOCK:
        _LAST[:] = [trace]
        collectors = list(_COLLECTORS)
        exporters = list(_EXPORTERS)
    for collector in collectors:
        collector.add(trace)
    for export in exporters:
        try:
            export(trace)
        except Exception as exc:  # exporting must never break the app under test
            from ..redact import redact

            logging.getLogger("oxyeval").warning(
                "warning: a trace was not exported: %s", redact(f"{type(exc).__name__}: {exc}")
            )


def _shown(value: Any) -> Any:
    """A call's arguments or result as a span keeps it: JSON-able values as they are,
    anything else by its ``repr``."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def _arguments(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return _shown({"args": list(args), "kwargs": kwargs})
    values = dict(bound.arguments)
    values.pop("self", None)
    values.pop("cls", None)
    if len(values) == 1:  # app(question): the input is the question itself
        return _shown(next(iter(values.values())))
    return _shown(values)


@contextmanager
def _span(
    name: str, kind: str, metrics: Sequence[Any], attributes: dict[str, Any]
) -> Iterator[Span]:
    parent = _SPAN.get()
    trace = _TRACE.get()
    span = Span(name=name, type=kind, parent=parent, metrics=list(metrics), attributes=attributes)
    trace_token = None
    if parent is None or trace is None:
        trace = Trace(root=span, name=name)
        trace_token = _TRACE.set(trace)
    else:
        parent.children.append(span)
    token = _SPAN.set(span)
    try:
        yield span
    except BaseException as exc:
        span.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        span.end = time.time()
        _SPAN.reset(token)
        if trace_token is not None:
            _TRACE.reset(trace_token)
            _finished(trace)


def observe(
    func: F | None = None,
    *,
    type: str | None = None,
    name: str | None = None,
    metrics: Sequence[Any] | None = None,
    metric_collection: str | None = None,
    **attributes: Any,
) -> Any:
    """Trace each call of the decorated function as a span (``@observe`` or
    ``@observe(type="llm", metrics=[...])``): its arguments are the span's input and
    its result its output, unless :func:`update_current_span` says otherwise. Keyword
    arguments DeepEval's span types take (``model=``, ``embedder=``, ``description=``)
    are kept as the span's attributes."""
    if metric_collection is not None:
        raise ValueError("metric_collection names metrics kept on Confident AI; pass metrics=[...]")
    kind = type or "custom"

    def decorate(target: F) -> F:
        label = name or getattr(target, "__name__", "span")
        if inspect.iscoroutinefunction(target):

            @functools.wraps(target)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with _span(label, kind, metrics or (), dict(attributes)) as span:
                    span.input = _arguments(target, args, kwargs)
                    result = await target(*args, **kwargs)
                    span.output = _shown(result)
                    return result

            return run_async  # type: ignore[return-value]

        @functools.wraps(target)
        def run(*args: Any, **kwargs: Any) -> Any:
            with _span(label, kind, metrics or (), dict(attributes)) as span:
                span.input = _arguments(target, args, kwargs)
                result = target(*args, **kwargs)
                span.output = _shown(result)
                return result

        return run  # type: ignore[return-value]

    return decorate(func) if func is not None else decorate


def _fields(owner: str, values: dict[str, Any]) -> dict[str, Any]:
    for key in ("tools_called", "expected_tools"):
        calls = values.get(key)
        if calls is not None and not all(isinstance(c, ToolCall) for c in calls):
            raise TypeError(f"{owner}({key}=...) must be a list of ToolCall")
    return {k: v for k, v in values.items() if v is not None}


def _update(owner: str, target: Any, given: dict[str, Any]) -> None:
    """What update_current_span and update_current_trace share: the case's fields, the
    metadata, the name and a whole test case, from the caller's keyword arguments."""
    target.fields.update(_fields(owner, {k: given[k] for k in _CASE_FIELDS}))
    if given["metadata"]:
        target.metadata.update(given["metadata"])
    if given["name"]:
        target.name = given["name"]
    if given["test_case"] is not None:
        target.test_case = given["test_case"]


def update_current_span(
    *,
    input: Any = None,
    output: Any = None,
    expected_output: str | None = None,
    retrieval_context: list[str] | None = None,
    context: list[str] | None = None,
    tools_called: list[ToolCall] | None = None,
    expected_tools: list[ToolCall] | None = None,
    metadata: dict[str, Any] | None = None,
    name: str | None = None,
    test_case: LLMTestCase | None = None,
    metric_collection: str | None = None,
    **attributes: Any,
) -> None:
    """Set what the span of the running ``@observe`` call is made of; outside any
    observed call this is an error (a test case would be lost silently)."""
    span = _SPAN.get()
    if span is None:
        raise RuntimeError("update_current_span() was called outside any @observe call")
    _update("update_current_span", span, locals())
    span.attributes.update(attributes)


def update_current_trace(
    *,
    input: Any = None,
    output: Any = None,
    expected_output: str | None = None,
    retrieval_context: list[str] | None = None,
    context: list[str] | None = None,
    tools_called: list[ToolCall] | None = None,
    expected_tools: list[ToolCall] | None = None,
    metadata: dict[str, Any] | None = None,
    tags: list[str] | None = None,
    name: str | None = None,
    thread_id: str | None = None,
    user_id: str | None = None,
    test_case: LLMTestCase | None = None,
    metric_collection: str | None = None,
) -> None:
    """Set what the running trace (the outermost ``@observe`` call) is made of."""
    trace = _TRACE.get()
    if trace is None:
        raise RuntimeError("update_current_trace() was called outside any @observe call")
    _update("update_current_trace", trace, locals())
    if tags:
        trace.tags.extend(tags)
    trace.thread_id = thread_id or trace.thread_id
    trace.user_id = user_id or trace.user_id


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=repr)


def _case(
    fields: dict[str, Any],
    input_: Any,
    output: Any,
    golden: Any,
    name: str,
    metadata: dict[str, Any],
) -> LLMTestCase:
    """A test case from what a span or trace was given, its call's own input and
    output where nothing was given, and the golden's expectations."""
    get = fields.get
    text = _text(get("input", input_)) or ""

    def from_golden(key: str) -> Any:
        return getattr(golden, key, None) if golden is not None else None

    return LLMTestCase(
        input=text,
        actual_output=_text(get("output", output)),
        expected_output=get("expected_output") or from_golden("expected_output"),
        retrieval_context=get("retrieval_context"),
        context=get("context") or from_golden("context"),
        tools_called=get("tools_called"),
        expected_tools=get("expected_tools") or from_golden("expected_tools"),
        name=f"{name}: {' '.join(text.split())[:80]}" if name else None,
        metadata=metadata or None,
    )


def trace_cases(
    trace: Trace, metrics: Sequence[Any], golden: Any = None
) -> list[tuple[LLMTestCase, list[Any]]]:
    """The test cases a finished trace gives, each with the metrics that score it: the
    trace's own (``metrics``, when any) first, then each span observed with metrics."""
    out: list[tuple[LLMTestCase, list[Any]]] = []
    root = trace.root
    if metrics:
        case = trace.test_case or _case(
            trace.fields,
            root.fields.get("input", root.input) if root else None,
            root.fields.get("output", root.output) if root else None,
            golden,
            "",
            trace.metadata,
        )
        out.append((case, list(metrics)))
    for span in trace.spans():
        if not span.metrics:
            continue
        case = span.test_case or _case(
            span.fields, span.input, span.output, golden, f"{span.name} span", span.metadata
        )
        out.append((case, list(span.metrics)))
    return out


def subjects_for(pairs: Sequence[tuple[LLMTestCase, list[Any]]]) -> tuple[list[Any], list[Any]]:
    """The SDK run's subjects for test cases each scored by its own metrics."""
    from ._evaluate import _case_key, _checks
    from ._run import Subject

    cases = [case for case, _ in pairs]
    subjects = [
        Subject(_case_key(case), case, _checks(metrics), label=f"test_case_{i}")
        for i, (case, metrics) in enumerate(pairs)
    ]
    return cases, subjects


def trace_subjects(golden: Any, metrics: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """``assert_test(golden=...)``: the test cases of the trace the test just ran."""
    trace = last_trace()
    if trace is None:
        raise ValueError(
            "assert_test(golden=...) scores the trace of an @observe call, but nothing was "
            "traced: call the app (decorated with @observe) before assert_test"
        )
    pairs = trace_cases(trace, metrics, golden)
    if not pairs:
        raise ValueError(
            "assert_test(golden=...) found no metrics: pass metrics=[...] or observe a "
            "span with metrics=[...]"
        )
    with _LOCK:
        if _LAST and _LAST[-1] is trace:
            _LAST.clear()  # scored once: a later assert_test needs a trace of its own
    return subjects_for(pairs)
