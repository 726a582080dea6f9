"""Tracing under DeepEval's module path (``deepeval.tracing``): ``@observe`` and the
calls that say what a span or trace is made of (see :mod:`._tracing`), and
:func:`export_to_otlp` to send the traces to an OpenTelemetry collector (the ``otel``
extra, imported only when called)."""

from __future__ import annotations

from typing import Any

from ._tracing import Span, Trace, observe, update_current_span, update_current_trace

__all__ = [
    "Span",
    "Trace",
    "export_to_otlp",
    "observe",
    "update_current_span",
    "update_current_trace",
]


def export_to_otlp(*args: Any, **kwargs: Any) -> Any:
    """See :func:`oxyeval.testing._otel.export_to_otlp`."""
    from ._otel import export_to_otlp as export

    return export(*args, **kwargs)
