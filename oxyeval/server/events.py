"""The runs this server starts, told as they happen: the evaluation core's event stream,
relayed to every listener of ``GET /events`` (server-sent events).

Each API call that runs a suite gets a stream id (``op-3``); its events are turned into
small JSON objects (the dashboard draws progress bars from them) and put on every
listener's queue. A slow listener loses its oldest events rather than holding memory
or the run: a queue is bounded, and putting never waits.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from ..evaluation import (
    Event,
    ResultRecorded,
    RunFinished,
    RunStarted,
    SampleFinished,
    ScoreRecorded,
    StepsPlanned,
    SubjectStarted,
    Warned,
)
from ..redact import redact

__all__ = ["MAX_CLIENT_LISTENERS", "MAX_LISTENERS", "EventHub", "event_json"]

_QUEUE = 1000
#: Streams open at once, all clients together, and one client address (a dashboard tab
#: holds one; a browser opens at most 6 connections to one host).
MAX_LISTENERS = 64
MAX_CLIENT_LISTENERS = 8
_HEARTBEAT_S = 15.0
_END = "\x00end"  # put on a listener's queue: its stream ends


def event_json(event: Event) -> dict[str, Any] | None:
    """The listener's view of one event (None: not told)."""
    doc: dict[str, Any] = {"kind": event.kind}
    if isinstance(event, RunStarted):
        doc.update(type="run_started", subjects=event.subjects)
    elif isinstance(event, SubjectStarted):
        doc.update(type="subject_started", subject=event.subject, steps=event.steps)
    elif isinstance(event, StepsPlanned):
        doc.update(type="steps_planned", subject=event.subject, steps=event.steps)
    elif isinstance(event, SampleFinished):
        doc.update(
            type="sample_finished",
            subject=event.subject,
            latencyMs=event.latency_ms,
            error=None if event.error is None else redact(event.error)[:500],
            cached=event.cached,
        )
    elif isinstance(event, ScoreRecorded):
        doc.update(
            type="score_recorded", subject=event.subject, metric=event.metric, value=event.value
        )
    elif isinstance(event, ResultRecorded):
        r = event.result
        doc.update(
            type="result_recorded",
            subject=r.subject,
            result={"subject": r.subject, "status": r.status, "passed": r.passed, "score": r.score},
        )
    elif isinstance(event, Warned):
        doc.update(type="warned", message=redact(event.message)[:500])
    elif isinstance(event, RunFinished):
        doc.update(type="run_finished", status=event.status, results=event.results)
    else:
        return None
    return doc


@dataclass
class _Listener:
    queue: asyncio.Queue[str]
    client: str = ""
    dropped: int = 0


class EventHub:
    def __init__(self) -> None:
        self._listeners: list[_Listener] = []
        self._ids = itertools.count(1)
        self._closed = False

    @property
    def listeners(self) -> int:
        return len(self._listeners)

    def refusal(self, client: str) -> str | None:
        """Why ``client`` may not open another stream (None: it may): each holds a queue
        and a connection, and one client must not take them all from every dashboard."""
        if sum(1 for one in self._listeners if one.client == client) >= MAX_CLIENT_LISTENERS:
            return (
                f"this client has {MAX_CLIENT_LISTENERS} event streams open, the most one "
                "client may; close a dashboard tab"
            )
        if len(self._listeners) >= MAX_LISTENERS:
            return "too many event listeners; try again later"
        return None

    def sink(self, operation: str) -> tuple[str, Any]:
        """A new stream id and the event sink a run of ``operation`` reports to."""
        stream = f"op-{next(self._ids)}"

        def sink(event: Event) -> None:
            doc = event_json(event)
            if doc is not None:
                self.publish({"stream": stream, "operation": operation, **doc})

        return stream, sink

    def publish(self, doc: dict[str, Any]) -> None:
        if not self._listeners:
            return
        line = json.dumps(doc, default=str)
        for listener in self._listeners:
            if listener.queue.full():  # drop the oldest: the run never waits for a reader
                listener.queue.get_nowait()
                listener.dropped += 1
            listener.queue.put_nowait(line)

    def close(self) -> None:
        """End every listener's stream (the server is stopping: an open dashboard must
        not hold its shutdown for the graceful timeout)."""
        self._closed = True
        for listener in self._listeners:
            if listener.queue.full():
                listener.queue.get_nowait()
            listener.queue.put_nowait(_END)

    async def stream(self, client: str = "") -> AsyncIterator[str]:
        """One listener's server-sent events, with a comment line as a heartbeat (the app
        refuses a listener beyond the caps first: :meth:`refusal`)."""
        if self._closed:
            return
        listener = _Listener(asyncio.Queue(_QUEUE), client)
        self._listeners.append(listener)
        try:
            yield ": connected\n\n"
            while True:
                try:
                    line = await asyncio.wait_for(listener.queue.get(), _HEARTBEAT_S)
                except asyncio.TimeoutError:
                    yield ": heartbeat\n\n"
                    continue
                if line is _END:
                    return
                yield f"data: {line}\n\n"
        finally:
            self._listeners.remove(listener)
