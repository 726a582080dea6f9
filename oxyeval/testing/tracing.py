"""Tracing under DeepEval's module path (``deepeval.tracing``): ``@observe`` and the
calls that say what a span or trace is made of (see :mod:`._tracing`)."""

from __future__ import annotations

from ._tracing import Span, Trace, observe, update_current_span, update_current_trace

__all__ = ["Span", "Trace", "observe", "update_current_span", "update_current_trace"]
