"""What ``oxy history`` shows: recent runs of every kind, and one consistency test over time.

Reads only: the store is opened read-only by the caller (a read never creates or changes
a history), and a run whose process died is *shown* as interrupted without being marked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..project.config import Project
from ..store import RUN_KIND_ALIASES, RUN_KINDS

if TYPE_CHECKING:
    from ..store import (
        ConsistencyResult,
        Run,
        Store,
        StoredResult,
        WorkflowRunRecord,
    )

__all__ = [
    "RunListing",
    "StoredRunView",
    "TestHistory",
    "history_of_test",
    "recent_runs",
    "stored_run",
]

_HINTS = 10  # stored test names suggested for a name that matches none


@dataclass
class RunListing:
    """Recent runs, newest first, each with its results counted (the same for every kind)."""

    runs: list[Run] = field(default_factory=list)


def recent_runs(store: Store | None, limit: int = 20, kind: str | None = None) -> RunListing:
    """The latest ``limit`` runs (of one ``kind``, or all); no store: none yet. A kind is
    one of the store's :data:`~oxyeval.store.kinds.RUN_KINDS` or an alias of one (``test``
    names ``oxy test``'s runs as the pretty table shows them, stored as consistency)."""
    kind = RUN_KIND_ALIASES.get(kind, kind) if kind is not None else None
    if kind is not None and kind not in RUN_KINDS:
        aliases = ", ".join(RUN_KIND_ALIASES)
        raise ConfigError(
            f"--kind must be one of {', '.join(RUN_KINDS)} (or {aliases}), not {kind!r}"
        )
    if store is None:
        return RunListing()
    stale = set(store.runs.find_stale())  # shown as interrupted; a read writes nothing
    runs = [
        replace(r, status="interrupted") if r.id in stale else r
        for r in store.runs.list(limit, kind=kind)
    ]
    return RunListing(runs)


@dataclass
class TestHistory:
    """One consistency test's stored results, newest first."""

    __test__ = False  # not a pytest class

    file: str
    name: str
    results: list[ConsistencyResult] = field(default_factory=list)


def _test_file(project: Project, file: str) -> str:
    """``--file`` as the history names it: relative to the project (a path typed from
    another folder is resolved first)."""
    path = Path(file)
    return project.relative(path) if path.exists() else Path(file).as_posix()


def history_of_test(
    store: Store | None,
    project: Project,
    name: str,
    file: str | None = None,
    limit: int = 20,
) -> TestHistory:
    """The results of test ``name`` (in ``file``, needed when several files have a test
    of that name), newest first. An unknown test is bad input (exit 2), with a hint."""
    if file is not None:
        file = _test_file(project, file)
    files = [] if store is None else store.tests.files(name)
    if file is None:
        if len(files) > 1:
            raise ConfigError(
                f"several files have a test named {name!r}: {', '.join(files)}; "
                "pick one with --file"
            )
        if files:
            file = files[0]
    if store is None or file is None or file not in files:
        where = f" in {file}" if file is not None else ""
        known = [] if store is None else store.tests.names(_HINTS)
        hint = (
            "; stored tests: " + ", ".join(f"{n!r} ({f})" for f, n in known)
            if known
            else "; no test results are stored yet (oxy test stores them)"
        )
        raise ConfigError(f"no stored results for test {name!r}{where}{hint}")
    return TestHistory(file, name, store.tests.history(file, name, limit))


@dataclass
class StoredRunView:
    """One stored run read back: its row, its results (any kind, from the results
    table), and for a workflow run its variables, output and tasks."""

    run: Run
    results: list[StoredResult] = field(default_factory=list)
    workflow: WorkflowRunRecord | None = None


def stored_run(store: Store | None, run_id: str) -> StoredRunView:
    """``oxy history --run ID``: a run by its id (or an unambiguous start of it, as
    ``oxy history`` lists them); an unknown one is bad input naming the recent ones."""
    exact = None if store is None or not run_id else store.runs.get(run_id)
    runs = [] if store is None or exact is not None else store.runs.list(1000)
    matches = (
        [exact] if exact is not None else [r for r in runs if run_id and r.id.startswith(run_id)]
    )
    if len(matches) != 1:
        shown = ", ".join(r.id for r in runs[:5]) or "none yet"
        what = "no run" if not matches else f"{len(matches)} runs start with"
        raise ConfigError(f"{what} {run_id!r} in the history; recent runs: {shown}")
    assert store is not None
    run = matches[0]
    view = StoredRunView(run, store.results.for_run(run.id))
    if run.kind == "workflow":
        view.workflow = store.workflows.get(run.id)
    return view
