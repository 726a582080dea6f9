"""Traces of ``@observe`` exported over OTLP with the OpenTelemetry SDK (the ``otel``
extra: ``pip install 'oxyeval[otel]'``), so they land in the tracing tools a team
already runs (Jaeger, Tempo, Honeycomb, Langfuse, Phoenix...).

Nothing is exported until :func:`export_to_otlp` is called; the SDK is imported then,
never by ``oxyeval.testing`` itself. Each finished trace is replayed as OpenTelemetry
spans on a tracer provider of oxyeval's own (a global one the app set up is left
alone), with its real start and end times and parent links, and attributes of
OpenTelemetry's GenAI semantic conventions where one applies:

- ``gen_ai.operation.name``: ``chat`` for an ``llm`` span, ``invoke_agent`` for an
  ``agent`` span, ``execute_tool`` for a ``tool`` span;
- ``gen_ai.request.model`` from ``@observe(model=...)``, ``gen_ai.agent.name`` and
  ``gen_ai.tool.name`` from the span's name;
- ``oxyeval.span.type``, ``oxyeval.span.input`` and ``oxyeval.span.output`` (JSON, cut
  at :data:`MAX_ATTRIBUTE` characters, secrets redacted), and the span's metadata as
  ``oxyeval.metadata.<key>``; a call that raised has an error status.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ..redact import clip, redact
from ._tracing import _EXPORTERS, _LOCK, Span, Trace

__all__ = ["MAX_ATTRIBUTE", "export_to_otlp", "span_attributes"]

#: Characters of one input or output kept on an exported span.
MAX_ATTRIBUTE = 8_000
_OPERATIONS = {"llm": "chat", "agent": "invoke_agent", "tool": "execute_tool"}


def _text(value: Any) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    return clip(redact(shown), MAX_ATTRIBUTE)


def span_attributes(span: Span) -> dict[str, Any]:
    """The OpenTelemetry attributes of one span (see the module docstring)."""
    attributes: dict[str, Any] = {"oxyeval.span.type": span.type}
    operation = _OPERATIONS.get(span.type)
    if operation is not None:
        attributes["gen_ai.operation.name"] = operation
    if span.type == "agent":
        attributes["gen_ai.agent.name"] = span.name
    if span.type == "tool":
        attributes["gen_ai.tool.name"] = span.name
    model = span.attributes.get("model")
    if isinstance(model, str):
        attributes["gen_ai.request.model"] = model
    given_in = span.fields.get("input", span.input)
    given_out = span.fields.get("output", span.output)
    if given_in is not None:
        attributes["oxyeval.span.input"] = _text(given_in)
    if given_out is not None:
        attributes["oxyeval.span.output"] = _text(given_out)
    for key, value in span.metadata.items():
        attributes[f"oxyeval.metadata.{key}"] = (
            value if isinstance(value, (str, bool, int, float)) else _text(value)
        )
    return attributes


def export_to_otlp(
    endpoint: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    service_name: str = "oxyeval",
    exporter: Any = None,
) -> Callable[[], None]:
    """Export every trace finished from now on over OTLP/HTTP to ``endpoint`` (None:
    the SDK's ``OTEL_EXPORTER_OTLP_ENDPOINT``, else ``http://localhost:4318``), with
    ``headers`` (an API key: kept out of every message); ``exporter``: any span
    exporter of the SDK instead. Returns the function that stops exporting and flushes
    what is queued. Without the SDK installed, an ImportError says how to install it."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        raise ImportError(
            "exporting traces needs the OpenTelemetry SDK: pip install 'oxyeval[otel]'"
        ) from None
    if exporter is None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise ImportError(
                "exporting over OTLP needs its exporter: pip install 'oxyeval[otel]'"
            ) from None
        for value in (headers or {}).values():
            from ..redact import register_secret

            register_secret(value)
        exporter = OTLPSpanExporter(endpoint=endpoint, headers=dict(headers or {}) or None)
        processor: Any = BatchSpanProcessor(exporter)
    else:
        processor = SimpleSpanProcessor(exporter)
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("oxyeval.testing")

    def export(trace: Trace) -> None:
        if trace.root is not None:
            _replay(tracer, trace, trace.root, None)

    with _LOCK:
        _EXPORTERS.append(export)

    def stop() -> None:
        with _LOCK:
            if export in _EXPORTERS:
                _EXPORTERS.remove(export)
        provider.shutdown()  # flushes the queue

    return stop


def _replay(tracer: Any, trace: Trace, span: Span, parent: Any) -> None:
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace import Status, StatusCode

    context = otel_trace.set_span_in_context(parent) if parent is not None else None
    attributes = span_attributes(span)
    if span.parent is None:
        if trace.name:
            attributes["oxyeval.trace.name"] = trace.name
        if trace.tags:
            attributes["oxyeval.trace.tags"] = list(trace.tags)
        for key, value in trace.metadata.items():
            attributes.setdefault(
                f"oxyeval.metadata.{key}",
                value if isinstance(value, (str, bool, int, float)) else _text(value),
            )
    started = int(span.start * 1e9)
    ended = int((span.end or span.start) * 1e9)
    otel_span = tracer.start_span(
        span.name, context=context, start_time=started, attributes=attributes
    )
    if span.error is not None:
        otel_span.set_status(Status(StatusCode.ERROR, redact(span.error)))
    for child in span.children:
        _replay(tracer, trace, child, otel_span)
    otel_span.end(end_time=ended)
