"""The Testing API over one project and its history: every operation of the schema as one
method, calling the same store, suites and report functions the CLI calls.

Nothing here runs, scores or detects regressions itself: ``runTestCase`` is
:func:`oxyeval.suites.run_cases_async` on one case, ``runABTest`` is
:func:`oxyeval.suites.run_ab_test_async`, the answers are the report layer's seed-shaped
dicts. What this layer adds is what a network API needs: inputs checked with a code a
client can branch on, reads off the event loop (the store is synchronous), runs that
finish and stay stored when the client goes away, and one concurrency limit per model
endpoint shared by every request (:func:`oxyeval.providers.shared_limiters`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ConfigError, OxyError
from ..project.config import Project, load_project
from ..project.prompts import collect_case_files, load_prompts
from ..report import (
    ab_case_json,
    branch_execution_json,
    branch_json,
    case_json,
    case_result_json,
    comparison_json,
    daily_json,
    run_json,
    stats_json,
    stored_run_json,
)
from ..store import (
    MAX_BRANCHES,
    RUN_KINDS,
    Store,
)
from ..suites import (
    compare_runs,
    latest_ab_run,
    open_history,
    run_ab_test_async,
    run_cases_async,
    stored_ab_result,
    stored_run,
    sync_declared,
)
from .edits import Edits
from .errors import BAD_USER_INPUT, NOT_FOUND, PROVIDER_ERROR, ApiError
from .events import EventHub
from .inputs import (
    check_ab_input,
    check_limit,
    check_run_kind,
    check_version,
)
from .limits import (
    DEFAULT_MAX_COST,
    DEFAULT_MAX_VALUES,
    DEFAULT_QUERY_TIMEOUT,
    POOL_FACTOR,
    Pool,
)
from .runs import DEFAULT_MAX_RUNS, Runner
from .shapes import consistency_interval, prompt_doc

__all__ = ["TestingService"]

log = logging.getLogger("oxyeval.server")

T = TypeVar("T")

#: How often a request may look for edited project files (a walk of the project).
SYNC_EVERY_S = 2.0


def _mark(path: Any) -> tuple[int, int] | None:
    """When a file last changed, and its size (None: it is not there)."""
    try:
        st = path.stat()
    except (OSError, AttributeError):
        return None
    return st.st_mtime_ns, st.st_size


class TestingService(Edits):
    """One project and its history, shared by every request of a server."""

    __test__ = False  # not a pytest class

    def __init__(
        self,
        project_dir: str | Path | None = None,
        *,
        db: str | None = None,
        environ: Mapping[str, str] | None = None,
        max_runs: int = DEFAULT_MAX_RUNS,
        max_depth: int = 10,
        max_body: int = 1_000_000,
    ) -> None:
        self._project: tuple[Project, Any] | None = None
        project, location, store = open_history(project_dir, db, write=True)
        assert store is not None
        self.project_root = project.root
        self.db = db
        self.db_display = location.display
        self.environ = environ
        self.store: Store = store
        self.hub = EventHub()
        self.runner = Runner(self.hub, max_runs)
        self.max_depth = max_depth
        self.max_body = max_body
        self.max_cost = DEFAULT_MAX_COST
        self.max_values = DEFAULT_MAX_VALUES
        self.query_timeout = DEFAULT_QUERY_TIMEOUT
        #: The answers its requests are building (create_app makes it for its limits).
        self.answers = Pool(POOL_FACTOR * DEFAULT_MAX_VALUES)
        self._sync_lock = threading.Lock()
        self._synced_mark: tuple[Any, ...] | None = None
        self._checked_at = float("-inf")
        #: Why the project's files could not be synced (None: they were).
        self.sync_error: str | None = None
        self.sync()

    def close(self) -> None:
        self.store.close()

    # -- plumbing

    def project(self) -> Project:
        """Loaded again when config.yml changed (an edit is seen by the next request),
        else the one already loaded: a query asking it in many places reads it once."""
        if self._project is not None:
            loaded, mark = self._project
            if _mark(loaded.config.path) == mark:
                return loaded
        project = load_project(project_dir=str(self.project_root))
        self._project = (project, _mark(project.config.path))
        return project

    def sync(self, *, force: bool = True) -> None:
        """Put the prompts, cases and branches the project's files declare into the store
        (a run does it first; a server must before it lists them), again whenever a file
        changed. A file that does not load is reported (``sync_error``, the log), and the
        store's last good state is served meanwhile. A read (``force=False``) never waits
        for a sync another request has under way (a large file takes seconds to load): it
        answers from the store as it is, which that sync brings up to date."""
        now = time.monotonic()
        if not force and now - self._checked_at < SYNC_EVERY_S:
            return
        if not self._sync_lock.acquire(blocking=force):
            return
        try:
            self._checked_at = now
            try:
                project = self.project()
                files = collect_case_files(project, [])
                mark = tuple((str(f), _mark(f)) for f in [project.config.path, *files])
                if mark == self._synced_mark:
                    return
                sync_declared(self.store, project, load_prompts(project, files))
            except (OxyError, OSError) as exc:
                message = str(exc)
                if message != self.sync_error:
                    log.warning("the project's files were not synced: %s", message)
                self.sync_error = message
                return
            self._synced_mark, self.sync_error = mark, None
        finally:
            self._sync_lock.release()

    async def _read(self, fn: Callable[[], T]) -> T:
        def call() -> T:
            self.sync(force=False)
            return fn()

        return await asyncio.to_thread(call)

    async def _run(self, operation: str, make: Callable[[Any], Awaitable[T]]) -> T:
        return await self.runner.run(operation, make)

    async def drain(self) -> None:
        await self.runner.drain()

    def _case(self, case_id: str, *, deleted: bool = False) -> Any:
        case = self.store.cases.get(case_id, include_deleted=deleted)
        if case is None:
            raise ApiError(NOT_FOUND, f"no test case {case_id!r}")
        return case

    def _with_vendor(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``provider`` is required in the Testing API's branch types: a branch naming a
        config.yml model (``provider`` None) reports that model's vendor."""
        if doc.get("provider") is None:
            spec = self.project().models.get(doc["model"])
            doc["provider"] = spec.vendor if spec is not None else "project"
        return doc

    def _branch_doc(self, branch: Any) -> dict[str, Any]:
        return self._with_vendor(branch_json(branch))

    # -- queries

    async def test_cases(self, prompt_id: str | None) -> list[dict[str, Any]]:
        cases = await self._read(lambda: self.store.cases.list(prompt_id))
        return [case_json(c) for c in cases]

    async def test_case(self, case_id: str) -> dict[str, Any] | None:
        case = await self._read(lambda: self.store.cases.get(case_id))
        return None if case is None else case_json(case)

    async def test_case_executions(
        self, case_id: str, limit: int | None, offset: int | None
    ) -> list[dict[str, Any]]:
        from ..report.cases import execution_json

        lim, off = check_limit(limit, offset)

        def read() -> list[Any]:
            self._case(case_id)
            return self.store.executions.list(case_id, lim, off)

        return [execution_json(e) for e in await self._read(read)]

    async def test_case_stats(self, case_id: str) -> dict[str, Any]:
        def read() -> Any:
            stats = self.store.stats.case_stats(case_id)
            if stats is None:
                raise ApiError(NOT_FOUND, f"no test case {case_id!r}")
            return stats

        return stats_json(await self._read(read))

    async def regression_counts(self, case_ids: list[str]) -> dict[str, int]:
        return await self._read(lambda: self.store.stats.regression_counts(case_ids))

    async def test_branches(self, case_id: str) -> list[dict[str, Any]]:
        def read() -> list[Any]:
            self._case(case_id)
            return self.store.branches.list(case_id)

        return [self._branch_doc(b) for b in await self._read(read)]

    async def test_branch_executions(
        self, branch_id: str, limit: int | None, offset: int | None
    ) -> list[dict[str, Any]]:
        lim, off = check_limit(limit, offset)

        def read() -> list[Any]:
            if self.store.branches.get(branch_id, include_deleted=True) is None:
                raise ApiError(NOT_FOUND, f"no branch {branch_id!r}")
            return self.store.branches.executions(branch_id, limit=lim, offset=off)

        return [branch_execution_json(e) for e in await self._read(read)]

    async def prompts(self) -> list[dict[str, Any]]:
        def read() -> list[dict[str, Any]]:
            return [prompt_doc(self.store, p) for p in self.store.prompts.list()]

        return await self._read(read)

    async def prompt(self, prompt_id: str) -> dict[str, Any] | None:
        def read() -> dict[str, Any] | None:
            p = self.store.prompts.get(prompt_id)
            return None if p is None else prompt_doc(self.store, p)

        return await self._read(read)

    async def runs(
        self,
        kind: str | None,
        subject: str | None,
        status: str | None,
        limit: int | None,
        offset: int | None,
    ) -> list[dict[str, Any]]:
        kind = check_run_kind(kind)
        lim, off = check_limit(limit, offset, default=20)

        def read() -> list[dict[str, Any]]:
            stale = set(self.store.runs.find_stale())
            found = self.store.runs.list(lim, kind=kind, subject=subject, status=status, offset=off)
            return [run_json(r, status="interrupted" if r.id in stale else None) for r in found]

        return await self._read(read)

    async def run(self, run_id: str) -> dict[str, Any] | None:
        def read() -> dict[str, Any] | None:
            if self.store.runs.get(run_id) is None:
                return None
            return stored_run_json(stored_run(self.store, run_id))

        return await self._read(read)

    async def results(self, kind: str, subject: str, limit: int | None) -> list[dict[str, Any]]:
        kind = check_run_kind(kind) or kind
        lim, _ = check_limit(limit, 0, default=50)
        rows = await self._read(lambda: self.store.results.history(kind, subject, lim))
        docs = [r.to_dict() for r in rows]
        if kind == "consistency":
            for doc in docs:
                consistency_interval(doc)
        return docs

    async def subjects(self, kind: str) -> list[str]:
        kind = check_run_kind(kind) or kind
        return await self._read(lambda: self.store.results.subjects(kind))

    async def result_trend(
        self, kind: str, subject: str | None, since: str | None
    ) -> list[dict[str, Any]]:
        kind = check_run_kind(kind) or kind
        rows = await self._read(lambda: self.store.results.daily(kind, subject, since=since))
        return daily_json(rows)

    async def ab_result(
        self, case_id: str, run_id: str | None, criteria: str | None
    ) -> dict[str, Any] | None:
        def read() -> Any:
            self._case(case_id, deleted=True)  # a deleted case's runs still answer
            chosen = run_id or latest_ab_run(self.store, case_id)
            if chosen is None:
                return None
            result = stored_ab_result(self.store, chosen, criteria)
            if result.test_case_id != case_id:
                raise ApiError(NOT_FOUND, f"run {chosen!r} is not an A/B run of {case_id!r}")
            return result

        result = await self._read(read)
        return None if result is None else self._ab_doc(result)

    def _ab_doc(self, result: Any) -> dict[str, Any]:
        doc = ab_case_json(result, api=True)
        for branch in doc["branches"]:
            self._with_vendor(branch)
        return doc

    async def compare(self, base: str, head: str) -> dict[str, Any]:
        def read() -> Any:
            # an unambiguous start of an id, as `oxy history` and the dashboard show them
            ids = []
            for given in (base, head):
                try:
                    ids.append(stored_run(self.store, given).run.id)
                except ConfigError as exc:
                    raise ApiError(NOT_FOUND, str(exc)) from None
            return compare_runs(self.store, *ids)

        return comparison_json(await self._read(read))

    def server_info(self) -> dict[str, Any]:
        from .. import __version__

        try:
            models = sorted(self.project().models)
        except ConfigError:
            models = []
        return {
            "version": __version__,
            "project": str(self.project_root),
            "db": self.db_display,
            "maxBranches": MAX_BRANCHES,
            "maxDepth": self.max_depth,
            "maxBodyBytes": self.max_body,
            "maxCost": self.max_cost,
            "maxValues": self.max_values,
            "queryTimeoutMs": round(self.query_timeout * 1000),
            "models": models,
            "runKinds": list(RUN_KINDS),
            "syncError": self.sync_error,
        }

    # -- mutations that call models

    async def run_test_case(self, data: Mapping[str, Any]) -> dict[str, Any]:
        case_id = str(data["testCaseId"])
        version = check_version(data.get("promptVersion"))
        await self._read(lambda: self._case(case_id))
        run = await self._run(
            "runTestCase",
            lambda sink: run_cases_async(
                project_dir=str(self.project_root),
                cases=[case_id],
                version=version,
                db=self.db,
                environ=self.environ,
                events=sink,
                concurrency=1,
            ),
        )
        if not run.results:
            raise ApiError(NOT_FOUND, f"test case {case_id!r} did not run")
        result = run.results[0]
        if result.error and result.actual_output is None:
            code = BAD_USER_INPUT if result.error_kind == "input" else PROVIDER_ERROR
            raise ApiError(code, result.error)
        return case_result_json(result, run_id=run.runs.get(result.prompt_id))

    async def batch_run_tests(self, data: Mapping[str, Any]) -> list[dict[str, Any]]:
        prompt_id = str(data["promptId"])
        version = check_version(data.get("promptVersion"))
        ids = data.get("testCaseIds")

        def select() -> list[str]:
            if self.store.prompts.get(prompt_id) is None:
                raise ApiError(NOT_FOUND, f"no prompt {prompt_id!r}")
            mine = {c.id for c in self.store.cases.list(prompt_id)}
            if ids is None:
                return sorted(mine)
            wanted = list(dict.fromkeys(str(i) for i in ids))
            other = [i for i in wanted if i not in mine]
            if other:
                raise ApiError(
                    NOT_FOUND,
                    f"prompt {prompt_id!r} has no test case {', '.join(map(repr, other[:10]))}",
                )
            return wanted

        chosen = await self._read(select)
        if not chosen:
            return []
        run = await self._run(
            "batchRunTests",
            lambda sink: run_cases_async(
                project_dir=str(self.project_root),
                cases=chosen,
                version=version,
                db=self.db,
                environ=self.environ,
                events=sink,
            ),
        )
        order = {case_id: i for i, case_id in enumerate(chosen)}  # as the client listed them
        results = sorted(run.results, key=lambda r: order.get(r.case_id, len(order)))
        return [case_result_json(r, run_id=run.runs.get(r.prompt_id)) for r in results]

    async def run_ab_test(self, data: Mapping[str, Any]) -> dict[str, Any]:
        case_id, branch_ids, version, criteria, iterations = check_ab_input(data)
        await self._read(lambda: self._case(case_id))
        result = await self._run(
            "runABTest",
            lambda sink: run_ab_test_async(
                case_id,
                branch_ids,
                prompt_version=version,
                winner_criteria=criteria,
                iterations=iterations,
                project_dir=str(self.project_root),
                db=self.db,
                environ=self.environ,
                events=sink,
            ),
        )
        return self._ab_doc(result)
