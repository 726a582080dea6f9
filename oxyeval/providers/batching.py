"""``--batch``: a run's model calls sent through the vendors' batch APIs, at about half
the price, collected in phases.

Why phases: a judge can only be asked once the answer it judges exists, an agent's second
turn once its first is back. So a batched run goes over its work more than once. In a
*collecting pass* (:func:`collecting`), every call to a model whose vendor has a batch
API is noted and fails at once with :class:`BatchDeferred`; what those calls' answers
would have started never runs. Then :meth:`Batcher.settle` sends what was noted, one
batch per model, polls until each batch ends and keeps the answers. The next pass gets
those answers at once and notes the calls they lead to (the judges'), and so on until a
pass notes nothing; a last pass, the real run, is then served every answer from memory.
A call that cannot be batched (the vendor has none, the server answers 404) is made live
once and its answer remembered, so no pass pays for it again.

Why the history: a batch may take hours, and the process may be stopped meanwhile. With a
ledger (the history's ``batches`` tables, :class:`Ledger`), each batch and what each of
its requests is (the hash of the call's cache key, its phase, its run index) is kept the
moment it is created, and its answers once it ends; a later run of the same command finds
the open batch for the same requests and collects it instead of paying twice. The run
that used a batch marks it consumed, so the next run asks afresh.

Requests a batch did not answer (expired, cancelled) or answered with an error are asked
again live, and the summary says how many.

Polling backs off from :data:`FIRST_POLL` seconds (``OXYEVAL_BATCH_POLL``) by half again
each time up to :data:`MAX_POLL` (``OXYEVAL_BATCH_POLL_MAX``), saying on stderr what it
waits for; Ctrl-C or SIGTERM stops it with the batches kept for the next run.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .._tasks import finish_shielded
from ..errors import ProviderError
from ._base import ChatMessage, Completion, GenerateParams, ModelAPI, json_object
from ._batch_context import (
    batch_phase,
    batch_scope,
    batch_subject,
    collecting,
    current_batcher,
    current_phase,
    current_subject,
    in_collecting_pass,
)
from ._response_cache import completion_data, completion_from_data

if TYPE_CHECKING:
    import httpx

    from ._batch_base import BatchAPI, BatchRequest, BatchStatus

__all__ = [
    "FIRST_POLL",
    "MAX_POLL",
    "MAX_POLL_FAILURES",
    "BatchDeferred",
    "Batcher",
    "Ledger",
    "batch_class",
    "batch_phase",
    "batch_scope",
    "batch_subject",
    "collecting",
    "current_batcher",
    "in_collecting_pass",
    "key_hash",
]

log = logging.getLogger("oxyeval.batch")

#: Seconds before the first poll of a batch, and the most between two polls.
FIRST_POLL = 1.0
MAX_POLL = 180.0
#: Failed polls in a row (HTTP 5xx, 429, a dropped connection) waited out before giving up.
MAX_POLL_FAILURES = 5

_CLASSES = {
    "openai": ("openai_batch", "OpenAIBatchAPI"),
    "anthropic": ("anthropic_batch", "AnthropicBatchAPI"),
    "google": ("google_batch", "GoogleBatchAPI"),
}


class BatchDeferred(ProviderError):
    """A call noted for the next batch in a collecting pass: what it would start waits."""


class Ledger(Protocol):
    """Where batches outlive the process (the history's ``store.batches``); blocking
    methods, called in a worker thread."""

    def add(self, **fields: Any) -> str: ...
    def update(self, batch_id: str, *, state: str, done: int, total: int, failed: int) -> None: ...
    def save_results(
        self, batch_id: str, results: Sequence[tuple[str, str, Any, str | None]]
    ) -> None: ...
    def consume(self, batch_ids: Sequence[str]) -> None: ...
    def open_requests(self) -> list[tuple[Any, Any]]: ...


def batch_class(vendor: str) -> type[BatchAPI] | None:
    """The batch class of a vendor (None: it has no batch API; its calls go live)."""
    import importlib

    found = _CLASSES.get(vendor)
    if found is None:
        return None
    module = importlib.import_module(f".{found[0]}", __package__)
    return getattr(module, found[1])  # type: ignore[no-any-return]


def key_hash(key: Mapping[str, Any]) -> str:
    """The hash a call is known by in a batch: of its cache key (no secret in it)."""
    text = json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def endpoint(api: ModelAPI) -> tuple[str, str, str, str]:
    """What one batch may hold: the calls to one model at one endpoint with one key.
    Variants of a model (A/B branches, other sampling settings) share a batch: each
    request carries its own settings."""
    spec = api.spec
    return (spec.vendor, api.base_url, spec.model_ref, spec.key_var or "")


def model_name(api: ModelAPI) -> str:
    """The config.yml name of the model a call is to, without a variant's suffix."""
    return re.split(r" \[|\[", api.spec.name, maxsplit=1)[0]


def _env_seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


@dataclass
class _Noted:
    """A call a collecting pass noted for the next batch."""

    hash: str
    api: ModelAPI
    messages: list[ChatMessage]
    params: GenerateParams
    phase: str
    run_index: int
    subject: str = ""


@dataclass
class _Open:
    """A batch at the vendor whose answers this run waits for."""

    ledger_id: str | None
    remote_id: str
    api: ModelAPI
    phase: str
    requests: dict[str, BatchRequest]  # by custom id
    hashes: dict[str, str]  # custom id -> key hash
    resumed: bool = False


@dataclass
class BatchSummary:
    """What the run's batches did, for the closing lines on stderr."""

    batches: int = 0
    resumed: int = 0
    batched: int = 0  # answers that came from a batch
    kept: int = 0  # answers of batches an earlier run (or oxy batch resume) collected
    retried_live: int = 0  # batch requests that failed or expired, asked again live
    live: int = 0  # calls made live because their model cannot batch
    cost: float = 0.0  # USD at batch prices, of the answers the run used
    live_cost: float = 0.0  # the same answers at live prices
    priced: bool = False
    notes: list[str] = field(default_factory=list)


class Batcher:
    """The batches of one run (see the module docstring)."""

    def __init__(
        self,
        *,
        ledger: Ledger | None = None,
        say: Callable[[str], object] | None = None,
        kind: str = "",
        first_poll: float | None = None,
        max_poll: float | None = None,
        client: Callable[[], httpx.AsyncClient] | None = None,
    ) -> None:
        self.ledger = ledger
        self.say = say or (lambda text: log.warning("%s", text))
        self.kind = kind
        self.first_poll = first_poll or _env_seconds("OXYEVAL_BATCH_POLL", FIRST_POLL)
        self.max_poll = max(
            self.first_poll, max_poll or _env_seconds("OXYEVAL_BATCH_POLL_MAX", MAX_POLL)
        )
        self._make_client = client
        self.final = False
        self.summary = BatchSummary()
        self._answers: dict[str, Completion] = {}
        self._from_batch: set[str] = set()
        self._failed: dict[str, str] = {}  # key hash -> why the batch did not answer it
        self._noted: dict[str, _Noted] = {}
        self._stored: dict[str, tuple[Any, Any]] = {}  # key hash -> (batch, request) rows
        self._used: set[str] = set()  # ledger ids of the batches this run used
        self._live_models: set[tuple[str, ...]] = set()  # endpoints with no batch API
        self._said_live: set[str] = set()  # models of a vendor with no batch API, said

    # -- the run's calls ---------------------------------------------------------------

    async def load(self) -> None:
        """Read the batches earlier runs left open (their answers, or their ids)."""
        if self.ledger is None:
            return
        rows = await asyncio.to_thread(self.ledger.open_requests)
        for batch, request in rows:
            self._stored.setdefault(request.key_hash, (batch, request))

    @property
    def noted(self) -> int:
        return len(self._noted)

    async def generate(
        self,
        api: ModelAPI,
        messages: Sequence[ChatMessage],
        params: GenerateParams,
        key: Mapping[str, Any],
        live: Callable[[], Awaitable[tuple[Completion, int, float]]],
    ) -> tuple[Completion, int, float]:
        """The answer of one call: from a batch, noted for one (:class:`BatchDeferred`), or
        made live (a model that cannot batch, a request a batch failed, the last pass)."""
        digest = key_hash(key)
        found = self._answers.get(digest)
        if found is None and digest in self._stored:
            found = self._stored_answer(digest)
        if found is not None:
            copy = completion_from_data(completion_data(found)) or found
            copy.batched = digest in self._from_batch
            if params.response_schema is not None and copy.structured is None:
                copy.structured = json_object(copy.text)
            return (
                copy,
                1 if copy.batched else found.attempts,
                0.0 if copy.batched else found.latency,
            )
        if not self.final and digest not in self._failed and self._can_batch(api):
            run_index = int((key.get("run") or [1])[-1])
            self._noted[digest] = _Noted(
                digest, api, list(messages), params, current_phase(), run_index, current_subject()
            )
            raise BatchDeferred(
                f"model '{model_name(api)}': waiting for a batch", model=api.spec.name
            )
        completion, attempts, latency = await live()
        if digest in self._failed:
            self.summary.retried_live += 1
            del self._failed[digest]
        elif not self.final or digest not in self._answers:
            self.summary.live += 1
        # A copy: the caller may change what it was handed (an agent loop gathers its
        # calls into the answer), and the next pass must see the answer as it came.
        kept = completion_from_data(completion_data(completion)) or completion
        kept.latency, kept.attempts = completion.latency, completion.attempts
        self._answers[digest] = kept
        return completion, attempts, latency

    def delivered(self, completion: Completion, live_cost: float | None) -> None:
        """Tally what an answer of the last pass cost, at batch and at live prices."""
        if not self.final or completion.cost is None or live_cost is None:
            return
        self.summary.priced = True
        self.summary.cost += completion.cost
        self.summary.live_cost += live_cost

    def _can_batch(self, api: ModelAPI) -> bool:
        name = model_name(api)
        if endpoint(api) in self._live_models:
            return False
        if batch_class(api.spec.vendor) is None:
            # Said once per model, by its name: two models of such a vendor may share
            # one endpoint (two mock models), and each is said.
            if name not in self._said_live:
                self._said_live.add(name)
                self._note(
                    f"model '{name}' ({api.spec.vendor}): this vendor has no batch API; its "
                    "calls run live"
                )
            return False
        return True

    def _note(self, text: str) -> None:
        self.summary.notes.append(text)
        self.say(f"batch: {text}")

    def _stored_answer(self, digest: str) -> Completion | None:
        batch, request = self._stored[digest]
        if request.status != "succeeded" or not isinstance(request.answer, dict):
            return None
        completion = completion_from_data(request.answer)
        if completion is None:
            return None
        self._answers[digest] = completion
        self._from_batch.add(digest)
        self._used.add(batch.id)
        self.summary.kept += 1
        return completion

    # -- between passes ----------------------------------------------------------------

    async def settle(self) -> None:
        """Send what the pass noted (one batch per model; a request an open batch already
        holds waits for that one), poll every batch until it ends, keep the answers."""
        noted, self._noted = self._noted, {}
        waiting: dict[str, _Open] = {}
        fresh: dict[tuple[str, ...], list[_Noted]] = {}
        for item in noted.values():
            stored = self._stored.get(item.hash)
            if stored is not None and stored[1].status == "pending":
                batch, request = stored
                found = waiting.get(batch.id)
                if found is None:
                    found = waiting[batch.id] = _Open(
                        batch.id, batch.remote_id, item.api, batch.phase, {}, {}, resumed=True
                    )
                from ._batch_base import BatchRequest

                found.requests[request.custom_id] = BatchRequest(
                    request.custom_id, item.messages, item.params
                )
                found.hashes[request.custom_id] = item.hash
                continue
            fresh.setdefault((*endpoint(item.api), item.phase), []).append(item)
        async with self._client() as client:
            opened = list(waiting.values())
            self.summary.resumed += len(opened)
            for batch in opened:
                self.say(
                    f"batch: collecting batch {batch.remote_id} of model "
                    f"'{model_name(batch.api)}' that an earlier run submitted"
                )
            for group, items in fresh.items():
                opened.extend(await self._submit(client, items, group[-1]))
            await asyncio.gather(*(self._collect(client, batch) for batch in opened))

    @contextlib.asynccontextmanager
    async def _client(self) -> Any:
        if self._make_client is not None:
            yield self._make_client()
            return
        from ._http import new_client

        client = new_client()
        try:
            yield client
        finally:
            await client.aclose()

    async def _submit(
        self, client: httpx.AsyncClient, items: list[_Noted], phase: str
    ) -> list[_Open]:
        from ._batch_base import BatchRequest, NoBatchAPI

        api = items[0].api
        cls = batch_class(api.spec.vendor)
        assert cls is not None
        vendor = cls(api, client)
        opened: list[_Open] = []
        for start in range(0, len(items), cls.max_requests):
            chunk = items[start : start + cls.max_requests]
            requests = {
                f"r{n}": BatchRequest(f"r{n}", i.messages, i.params) for n, i in enumerate(chunk)
            }
            hashes = {f"r{n}": i.hash for n, i in enumerate(chunk)}
            try:
                # Submitted means paid for: once the vendor has the batch, its id is kept
                # before a Ctrl-C or SIGTERM may stop the run, or the next run pays again.
                (remote_id, ledger_id), stopped = await finish_shielded(
                    self._submit_one(vendor, api, requests, hashes, chunk, phase)
                )
            except NoBatchAPI as exc:
                self._live_models.add(endpoint(api))
                self._note(f"{exc}; its calls run live")
                return opened
            if stopped:
                raise asyncio.CancelledError
            opened.append(_Open(ledger_id, remote_id, api, phase, requests, hashes))
        return opened

    async def _submit_one(
        self,
        vendor: BatchAPI,
        api: ModelAPI,
        requests: dict[str, BatchRequest],
        hashes: dict[str, str],
        chunk: list[_Noted],
        phase: str,
    ) -> tuple[str, str | None]:
        """Create one batch and keep its id and requests in the ledger."""
        remote_id = await vendor.submit(list(requests.values()))
        ledger_id = None
        if self.ledger is not None:
            from ..redact import mask_credentials

            ledger_id = await asyncio.to_thread(
                self.ledger.add,
                vendor=api.spec.vendor,
                model=model_name(api),
                model_ref=api.spec.model_ref,
                api_url=mask_credentials(api.base_url),
                remote_id=remote_id,
                phase=phase,
                kind=self.kind,
                requests=[
                    (c, hashes[c], phase, i.subject, i.run_index)
                    for c, i in zip(requests, chunk, strict=True)
                ],
            )
        self.summary.batches += 1
        self.say(
            f"batch: submitted {remote_id} to model '{model_name(api)}' ({phase}, "
            f"{len(chunk)} request{'s' if len(chunk) != 1 else ''})"
        )
        return remote_id, ledger_id

    async def _collect(self, client: httpx.AsyncClient, batch: _Open) -> None:
        cls = batch_class(batch.api.spec.vendor)
        assert cls is not None
        vendor = cls(batch.api, client)
        status = await self._wait(vendor, batch)
        found = await vendor.results(batch.remote_id, status, batch.requests)
        rows: list[tuple[str, str, Any, str | None]] = []
        for custom_id, digest in batch.hashes.items():
            answer = found.get(custom_id)
            if isinstance(answer, Completion):
                self._answers[digest] = answer
                self._from_batch.add(digest)
                self.summary.batched += 1
                rows.append((custom_id, "succeeded", completion_data(answer), None))
            else:
                why = str(answer) if answer is not None else f"the batch {status.state} first"
                self._failed[digest] = why
                rows.append((custom_id, "errored" if answer else "missing", None, why))
        errored = [r[3] for r in rows if r[1] == "errored"]
        missing = sum(1 for r in rows if r[1] == "missing")
        if errored or missing:
            # What the vendor refused (and why) apart from what it never reached.
            parts = []
            if errored:
                from ..redact import clip

                first = clip(" ".join(str(errored[0]).split()), 200)
                parts.append(f"{len(errored)} errored (the first: {first})")
            if missing:
                parts.append(f"{missing} {'were' if missing != 1 else 'was'} not answered")
            self._note(
                f"{len(errored) + missing} of {len(rows)} request{'s' if len(rows) != 1 else ''} "
                f"of batch {batch.remote_id} (model '{model_name(batch.api)}', "
                f"{status.state}): {' and '.join(parts)}; asked again live"
            )
        if self.ledger is not None and batch.ledger_id is not None:
            await asyncio.to_thread(self.ledger.save_results, batch.ledger_id, rows)
            self._used.add(batch.ledger_id)

    async def _wait(self, vendor: BatchAPI, batch: _Open) -> BatchStatus:
        """Poll until the batch ends, backing off, saying what it waits for."""
        delay = self.first_poll
        last_said = 0.0
        failures = 0
        while True:
            try:
                status = await vendor.poll(batch.remote_id)
            except ProviderError as exc:
                # A batch runs on at the vendor whatever one poll got: an outage while
                # waiting is waited out, up to a few polls in a row.
                failures += 1
                if not exc.retryable or failures > MAX_POLL_FAILURES:
                    raise
                self.say(f"batch: polling {batch.remote_id} failed ({exc}); trying again")
                await asyncio.sleep(delay)
                delay = min(self.max_poll, delay * 1.5)
                continue
            failures = 0
            if self.ledger is not None and batch.ledger_id is not None:
                await asyncio.to_thread(
                    self.ledger.update,
                    batch.ledger_id,
                    state=status.state,
                    done=status.done,
                    total=status.total,
                    failed=status.failed,
                )
            if status.final:
                return status
            now = time.monotonic()
            if now - last_said >= min(30.0, max(delay, 1.0)) or last_said == 0.0:
                last_said = now
                self.say(
                    f"batch: waiting for {batch.remote_id} (model '{model_name(batch.api)}', "
                    f"{batch.phase}): {status.done}/{status.total or len(batch.requests)} done; "
                    f"next check in {_seconds(delay)}"
                )
            await asyncio.sleep(delay)
            delay = min(self.max_poll, delay * 1.5)

    # -- oxy batch resume|cancel ------------------------------------------------------

    async def resume(self, api: ModelAPI, batch: Any, requests: Sequence[Any]) -> None:
        """Wait for a stored open batch to end and keep its answers (``oxy batch resume``);
        the run that needs them reads them from the history."""
        from ._batch_base import BatchRequest

        waiting = [r for r in requests if r.status == "pending"]
        if not waiting:
            return
        found = _Open(
            batch.id,
            batch.remote_id,
            api,
            batch.phase,
            {r.custom_id: BatchRequest(r.custom_id, [], GenerateParams()) for r in waiting},
            {r.custom_id: r.key_hash for r in waiting},
            resumed=True,
        )
        async with self._client() as client:
            await self._collect(client, found)

    async def cancel(self, api: ModelAPI, batch: Any) -> None:
        """Ask the vendor to stop a stored batch (``oxy batch cancel``)."""
        cls = batch_class(api.spec.vendor)
        if cls is None:
            return
        async with self._client() as client:
            await cls(api, client).cancel(batch.remote_id)
        self.say(f"batch: cancelled {batch.remote_id} (model '{model_name(api)}')")

    async def finish(self) -> None:
        """The run used its batches: mark them consumed, so the next run asks afresh."""
        if self.ledger is not None and self._used:
            await asyncio.to_thread(self.ledger.consume, sorted(self._used))

    def closing_lines(self) -> list[str]:
        s = self.summary
        lines = [
            f"batch: {s.batched} answer{'s' if s.batched != 1 else ''} from "
            f"{s.batches} new batch{'es' if s.batches != 1 else ''}"
            + (f" and {s.resumed} resumed" if s.resumed else "")
            + (f"; {s.kept} kept from batches collected earlier" if s.kept else "")
            + (f"; {s.retried_live} retried live" if s.retried_live else "")
            + (f"; {s.live} call{'s' if s.live != 1 else ''} made live" if s.live else "")
        ]
        if s.priced and s.live_cost - s.cost > 0:
            lines.append(
                f"batch: cost {_usd(s.cost)} at batch prices ({_usd(s.live_cost)} live, "
                f"{_usd(s.live_cost - s.cost)} saved)"
            )
        elif s.priced:  # every priced call ran live: no batch price to speak of
            lines.append(f"batch: cost {_usd(s.cost)}, every priced call made live")
        return lines


def _usd(value: float) -> str:
    if not value:
        return "$0"
    return f"${value:.2f}" if value >= 1 else f"${value:.6f}".rstrip("0").rstrip(".")


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 60 else f"{value / 60:.1f} min"
