"""The cache of model calls, kept in the project's history database.

Reruns are most of what users do: tweak a judge prompt, re-gate with another
threshold, rerun after a flaky provider error. By default a run keeps judge verdicts:
a rerun that produces the same pair of outputs costs no judge call. It also keeps agent
and prompt answers without replaying them, so that ``--cache``, which replays them, makes
no request on a rerun of an unchanged test even when the runs before it were plain ones;
``--no-cache`` neither keeps nor replays anything. ``config.yml``'s ``cache: {ttl_days: N}`` ignores
(and deletes) entries older than N days. Answers cut off at the token limit are kept too,
with their finish reason, so a replayed one is reported as cut as it was: what a run paid
for (a small local model's answers are often all cut) is reused after an interrupt;
``cache: {truncated: false}`` asks for them again instead.

:class:`RunCache` is one project's cache for one run: it implements the contracts of the
earlier stages (:class:`oxyeval.providers.ResponseCache` for answers,
:class:`oxyeval.judge.VerdictCache` for verdicts) on ``store.cache``. Lookups that arrive
together are answered by one query; new entries are written in batches and when the run
ends, so a cold ``--cache`` run pays a few transactions, not one per call. The store is
the run's :class:`~oxyeval.suites.history_store.History`, opened in a worker thread while the
first model calls go out, and shared with the recorder of the run's results (one store
per database per run; without SQLAlchemy once the project has a history). A history
that cannot be opened or written disables the cache for the run with one warning: a
cache never fails a run.

Every call served from the cache is counted, per run and in every enclosing
:func:`~oxyeval.providers.counting` scope (a test counts its own, a workflow task its own).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import OxyError
from ..evaluation import CacheServed, EventSink
from ..judge.verdicts import key_labels, verdict_data, verdict_from_data
from ..providers import (
    Tally,
    completion_data,
    completion_from_data,
    count_served,
    counting,
    in_collecting_pass,
)
from ..store import content_hash, text_hash, utc_timestamp
from .history_store import Histories, History, open_history
from .readahead import MISSING, ReadAhead

if TYPE_CHECKING:
    from ..judge.judge import JudgeResult
    from ..project.config import Project
    from ..providers import Completion
    from ..store import Location
    from .history_store import RunStore

__all__ = [
    "CachePolicy",
    "RunCache",
    "RunCaches",
    "Tally",
    "cache_cutoff",
    "cache_factory",
    "clear_cache",
    "counting",
]

log = logging.getLogger("oxyeval.cache")

_FLUSH_EVERY = 1_000  # new entries written per background transaction
#: Entries written this run kept in memory to serve a key asked again; older ones are
#: asked of the history, where they have been written by then (many batches ago).
_WRITTEN_KEPT = 4_096


@dataclass(frozen=True)
class CachePolicy:
    """What one run caches. ``answers``: replay agent and prompt answers (``--cache``;
    they are kept whenever the cache is on); ``verdicts``: judge verdicts (default on); ``ttl_days``: entries older are ignored and
    purged (None: they never expire); ``truncated``: keep answers cut off at the token
    limit too (replayed with their finish reason, so still reported as cut)."""

    answers: bool = False
    verdicts: bool = True
    ttl_days: float | None = None
    truncated: bool = True

    @classmethod
    def for_project(cls, project: Project | None, flag: bool | None = None) -> CachePolicy:
        """The policy of a run: ``flag`` is ``--cache`` (True), ``--no-cache`` (False) or
        neither (None: verdicts only); ttl and truncated come from config.yml."""
        data = project.config.data if project is not None else None
        settings = data.get("cache") if isinstance(data, dict) else None
        settings = settings if isinstance(settings, dict) else {}
        ttl = settings.get("ttl_days")
        return cls(
            answers=flag is True,
            verdicts=flag is not False,
            ttl_days=float(ttl) if isinstance(ttl, (int, float)) and ttl > 0 else None,
            truncated=settings.get("truncated") is not False,
        )

    @property
    def enabled(self) -> bool:
        return self.answers or self.verdicts

    def cutoff(self, now: datetime | None = None) -> str | None:
        """Entries written at or before this timestamp have expired (None: none expire)."""
        if self.ttl_days is None:
            return None
        now = now or datetime.now(timezone.utc)
        return utc_timestamp(now - timedelta(days=self.ttl_days))


def _digest(key: Mapping[str, Any]) -> str:
    """The entry's name: the hash of the key's canonical JSON, by the text a model's key
    carries already (:class:`~oxyeval.providers.AnswerKey`), else made here."""
    canonical = getattr(key, "canonical", None)
    return text_hash(canonical) if isinstance(canonical, str) else content_hash(key)


class _Answers:
    """:class:`oxyeval.providers.ResponseCache` on a :class:`RunCache`."""

    def __init__(self, cache: RunCache) -> None:
        self._cache = cache
        self.keep_truncated = cache.policy.truncated
        self.replay = cache.policy.answers

    async def get(self, key: Mapping[str, Any]) -> Completion | None:
        if not self.replay:  # kept for a later --cache run, never served in this one
            return None
        value = await self._cache.lookup("answer", key)
        completion = completion_from_data(value) if isinstance(value, dict) else None
        if completion is not None:
            self._cache.served("answer", 1)
        return completion

    async def put(self, key: Mapping[str, Any], completion: Completion) -> None:
        model = f"{key.get('vendor', '')}/{key.get('model', '')}"
        self._cache.remember("answer", key, completion_data(completion), model)


class _Verdicts:
    """:class:`oxyeval.judge.VerdictCache` on a :class:`RunCache`."""

    def __init__(self, cache: RunCache) -> None:
        self._cache = cache

    async def get(self, key: Mapping[str, Any]) -> JudgeResult | None:
        value = await self._cache.lookup("verdict", key)
        labels = key_labels(key)  # the key's rubric: a PASS/FAIL entry holds PASS or FAIL
        result = verdict_from_data(value, labels) if isinstance(value, dict) else None
        if result is not None:
            self._cache.served("verdict", result.cached_calls)
        return result

    async def put(self, key: Mapping[str, Any], result: JudgeResult) -> None:
        model = f"{key.get('vendor', '')}/{key.get('model', '')}"
        self._cache.remember("verdict", key, verdict_data(result), model)

    async def get_form(self, key: Mapping[str, Any]) -> str | None:
        """The structured form a judge endpoint took in an earlier run (see
        :mod:`oxyeval.judge.structured`), kept among the verdicts: it is what judging
        learnt, and ``oxy cache clear`` forgets it with them."""
        value = await self._cache.lookup("verdict", key)
        form = value.get("form") if isinstance(value, dict) else None
        return form if isinstance(form, str) else None

    async def put_form(self, key: Mapping[str, Any], form: str) -> None:
        model = f"{key.get('vendor', '')}/{key.get('model', '')}"
        self._cache.remember("verdict", key, {"form": form}, model)


class RunCache:
    """One project's cache of answers and verdicts for one run; use inside an event loop,
    :meth:`aclose` at the end (a :class:`~oxyeval.workflow.context.RunContext` does).

    ``history`` opens the store in the background (closed here when ``owns_history``;
    a run's shared history is closed by the run); or ``store`` is one already open (the
    test-case suite's), closed by its owner.
    """

    def __init__(
        self,
        policy: CachePolicy,
        history: History | None = None,
        *,
        store: RunStore | None = None,
        owns_history: bool = True,
    ) -> None:
        self.policy = policy
        self._history = history
        self._store = store
        self._owns_history = owns_history and history is not None
        self._answers = _Answers(self) if policy.enabled else None
        self._verdicts = _Verdicts(self) if policy.verdicts else None
        self._cutoff = policy.cutoff()
        self._broken = False
        # An SQLite history that does not exist yet holds nothing: every lookup is a miss
        # at once, instead of waiting for the store to be created (a cold --cache run
        # sends its first requests without waiting for SQLAlchemy).
        location = history.location if history is not None else None
        self._nothing_stored = (
            location is not None and location.path is not None and not location.path.exists()
        )
        # Written this run (hash -> value), so a key asked twice in one run is served too:
        # the latest _WRITTEN_KEPT (in the order written); older ones are in the history.
        self._written: dict[str, Any] = {}
        self._unflushed: dict[str, tuple[str, Any, str]] = {}  # hash -> (kind, value, model)
        self._in_flight: dict[str, tuple[str, Any, str]] = {}  # the batch being written
        self._hits: dict[str, int] = {}  # hash -> replays of stored entries
        self._queued: list[tuple[str, asyncio.Future[Any]]] = []
        enabled = self._answers is not None or self._verdicts is not None
        self._ahead = ReadAhead(self._cutoff) if enabled else None
        self._batch: asyncio.Task[None] | None = None
        self._writes: set[asyncio.Task[None]] = set()
        #: Calls served from the cache this run, by kind ("answer", "verdict").
        self.served_calls: dict[str, int] = {"answer": 0, "verdict": 0}
        #: Told of every call served (:class:`~oxyeval.evaluation.CacheServed`), as
        #: ``run_kind``'s events: set by the run that made the cache.
        self.events: EventSink | None = None
        self.run_kind = ""

    # -- the contracts the earlier stages see

    @property
    def answers(self) -> _Answers | None:
        return self._answers

    @property
    def verdicts(self) -> _Verdicts | None:
        return self._verdicts

    @property
    def total_served(self) -> int:
        """Model calls this run did not make because the cache had their answer."""
        return sum(self.served_calls.values())

    def start(self) -> None:
        """Begin opening the history now (in a worker thread), not at the first lookup."""
        if self._history is not None:
            self._history.start()

    def served(self, kind: str, calls: int) -> None:
        self.served_calls[kind] = self.served_calls.get(kind, 0) + calls
        count_served(calls)
        # An event only for a sink that listens: a stream nobody subscribed to is falsy.
        if calls and self.events:
            self.events(CacheServed(kind=self.run_kind, cache=kind, calls=calls))

    # -- lookups, batched

    async def _open(self) -> RunStore | None:
        if self._broken:
            return None
        if self._store is not None:
            return self._store
        if self._history is None:
            return None
        try:
            self._store = await self._history.store()
        except OxyError as exc:
            self._disable(exc)
            return None
        return self._store

    def _disable(self, exc: BaseException) -> None:
        if not self._broken:
            self._broken = True
            log.warning("cache: disabled for this run, the history database failed: %s", exc)

    async def lookup(self, kind: str, key: Mapping[str, Any]) -> Any:
        """The value kept for ``key`` (written this run, or stored and not expired), or None."""
        digest = _digest(key)
        if digest in self._written:
            return self._written[digest]
        for waiting in (self._unflushed, self._in_flight):  # written soon, or being written
            if digest in waiting:
                return waiting[digest][1]
        if self._broken or self._nothing_stored or (self._store is None and self._history is None):
            return None
        if self._ahead is not None:  # a replay in the order written: read ahead, held
            value = self._ahead.take(digest)
            if value is not MISSING:
                self._ahead.more(self._store)
                self._hits[digest] = self._hits.get(digest, 0) + 1
                return value
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queued.append((digest, future))
        if self._batch is None or self._batch.done():
            self._batch = asyncio.ensure_future(self._answer_queued())
        value = await asyncio.shield(future)
        if value is not None:
            self._hits[digest] = self._hits.get(digest, 0) + 1
        return value

    async def _answer_queued(self) -> None:
        """Answer every queued lookup with one query; lookups queued meanwhile get the next."""
        while self._queued:
            batch, self._queued = self._queued, []
            found: dict[str, Any] = {}
            try:
                store = await self._open()
                if store is not None:
                    entries = await asyncio.to_thread(
                        store.cache.get_many,
                        [digest for digest, _ in batch],
                        newer_than=self._cutoff,
                    )
                    found = {digest: entry.value for digest, entry in entries.items()}
                    if self._ahead is not None:
                        self._ahead.begin(store, entries.values())
            except OxyError as exc:
                self._disable(exc)
            finally:
                for digest, future in batch:
                    if not future.done():
                        future.set_result(found.get(digest))

    # -- writes, batched

    def remember(self, kind: str, key: Mapping[str, Any], value: Any, model: str) -> None:
        """Keep a new answer or verdict (written in the background, and at the end). A
        collecting pass of ``--batch`` keeps nothing: the run's last pass keeps what it
        used, and its report counts those calls as made, not replayed."""
        if self._broken or in_collecting_pass():
            return
        digest = _digest(key)
        self._written[digest] = value
        if len(self._written) > _WRITTEN_KEPT:  # a run of 100,000 calls holds 4,096
            del self._written[next(iter(self._written))]
        self._unflushed[digest] = (kind, value, model)
        if len(self._unflushed) >= _FLUSH_EVERY and not self._writes:
            task = asyncio.ensure_future(self._flush_while_full())
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)

    async def _flush_while_full(self) -> None:
        """One background writer at a time, writing while a batch has filled: several
        would each hold a worker thread waiting for the one write lock, and the run's
        other work in threads (its results, its reads) would wait behind them."""
        while len(self._unflushed) >= _FLUSH_EVERY:
            await self._flush()

    async def _flush(self) -> None:
        if not self._unflushed:
            return
        pending, self._unflushed = self._unflushed, {}
        store = await self._open()
        if store is None:
            return
        self._in_flight = pending
        from ..store import NewCacheEntry

        entries = [
            NewCacheEntry(digest, kind, value, model)
            for digest, (kind, value, model) in pending.items()
        ]
        try:
            await asyncio.to_thread(store.cache.put_many, entries)
        except OxyError as exc:
            self._disable(exc)
        else:
            self._nothing_stored = False  # what left _written is asked of the history now
        finally:
            self._in_flight = {}

    async def aclose(self) -> None:
        """Write what is left, count the hits, purge expired entries, close the history."""
        try:
            if self._ahead is not None:
                await self._ahead.aclose()
            if self._writes:
                await asyncio.gather(*self._writes, return_exceptions=True)
            if self._batch is not None:
                await asyncio.gather(self._batch, return_exceptions=True)
            await self._flush()
            store = self._store if not self._broken else None
            if store is not None and (self._hits or self._cutoff is not None):
                hits, self._hits = self._hits, {}
                try:
                    await asyncio.to_thread(_finish, store, hits, self._cutoff)
                except OxyError as exc:
                    self._disable(exc)
        finally:
            if self._owns_history and self._history is not None:
                await self._history.aclose()


def _finish(store: RunStore, hits: Mapping[str, int], cutoff: str | None) -> None:
    """Count the hits; purge what this project's ``ttl_days`` expired, but only in a
    project's own SQLite file: a PostgreSQL history is shared by projects whose ``ttl_days``
    differ, so there expired entries are only ignored on read (``oxy cache clear
    --older-than`` purges it on purpose)."""
    store.cache.add_hits(hits)
    if cutoff is not None and store.location.backend == "sqlite":
        store.cache.clear(older_than=cutoff)


class RunCaches:
    """Makes each project's :class:`RunCache` for a run (a
    :data:`~oxyeval.workflow.context.CacheFactory`), and adds up what they served.

    ``histories``: the run's (see :meth:`share`): each cache uses its project's store
    there, shared with the rest of the run, which starts opening it once the run's
    checks have passed (so a run that cannot start creates no database) and closes it;
    a run without history (``--no-history``) caches nothing. Without, each cache opens
    (and closes) its own, starting at once when ``eager`` or replaying answers: make
    those caches only once the run's checks have passed.
    """

    def __init__(
        self,
        flag: bool | None = None,
        *,
        histories: Histories | None = None,
        db: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
        eager: bool = False,
        events: EventSink | None = None,
        kind: str = "",
    ) -> None:
        self.flag, self.db, self.environ, self.eager = flag, db, environ, eager
        self.histories = histories
        self.events, self.kind = events, kind
        self.made: list[RunCache] = []

    def __call__(self, project: Project) -> RunCache | None:
        policy = CachePolicy.for_project(project, self.flag)
        if not policy.enabled:
            return None
        if self.histories is None:
            cache = RunCache(policy, History.for_project(project, self.db, self.environ))
            start = self.eager or policy.answers
        else:
            history = self.histories.for_project(project)
            if history is None:  # the cache lives in the history: none, nothing cached
                return None
            cache = RunCache(policy, history, owns_history=False)
            start = False  # opened when the run starts its histories, or at first use
        cache.events, cache.run_kind = self.events, self.kind
        if start:
            cache.start()
        self.made.append(cache)
        return cache

    @property
    def total_served(self) -> int:
        """Model calls served from the cache in every project of the run."""
        return sum(c.total_served for c in self.made)


def cache_factory(
    flag: bool | None = None,
    *,
    histories: Histories | None = None,
    db: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    eager: bool = False,
    events: EventSink | None = None,
    kind: str = "",
) -> RunCaches:
    """What a RunContext needs to make each project's cache: ``flag`` is ``--cache``
    (True), ``--no-cache`` (False) or neither (None); ``histories`` the run's (else
    ``db``, ``--db``, says where each cache opens its own). Without ``histories``,
    ``eager`` starts opening the history as each cache is made (a run that will judge
    needs it soon; one that replays answers always starts at once); otherwise it opens at
    the first lookup. With them, the run starts them (:meth:`Histories.start`)."""
    return RunCaches(
        flag, histories=histories, db=db, environ=environ, eager=eager, events=events, kind=kind
    )


def cache_cutoff(older_than_days: float | None, now: datetime | None = None) -> str | None:
    """The timestamp before which entries are older than ``older_than_days`` (None: no
    age limit); NaN or a negative age is a ValueError."""
    if older_than_days is None:
        return None
    if older_than_days != older_than_days or older_than_days < 0:
        raise ValueError("an age in days must be a number, 0 or more")
    moment = now or datetime.now(timezone.utc)
    return utc_timestamp(moment - timedelta(days=older_than_days))


def clear_cache(
    project_dir: str | Path | None = None,
    db: str | Path | None = None,
    *,
    kind: str | None = None,
    older_than_days: float | None = None,
) -> tuple[Location, int]:
    """Delete a project's cached answers and verdicts (of one kind; older than some days):
    where the history is, and how many went. A project with no history has nothing to
    clear, and none is created."""
    cutoff = cache_cutoff(older_than_days)
    _project, location, existing = open_history(project_dir, db, write=False)
    if existing is None:
        return location, 0
    existing.close()
    from ..store import open_store

    with open_store(location) as store:  # it exists: open it for writing
        return location, store.cache.clear(kind=kind, older_than=cutoff)
