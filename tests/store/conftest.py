"""Fixtures: every store test runs on SQLite and on a real PostgreSQL server.

The PostgreSQL cluster is started once per session (``tests/pgcluster.py``, the
``pg_cluster`` fixture of ``tests/conftest.py``, shared with the warehouse tests). Tests that
need a store get one migrated database, emptied between tests (TRUNCATE is much cheaper
than a new database); tests that need a database of their own (migrations, processes)
ask ``backend.fresh()``. Where no server can be started the PostgreSQL half skips, with a
reason that says how to enable it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from oxyeval.store import Location, Store, open_store, resolve_location

from ..conftest import pg_skip_reason as _skip_reason
from ..pgcluster import PgCluster

_TABLES = (
    "run_totals, branch_outputs, test_branches, result_daily, scores, results, cache_entries, workflow_tasks, workflow_runs, test_results, case_baselines, case_daily, executions, runs, "
    "test_cases, "
    "prompt_versions, prompts"
)


@dataclass
class Backend:
    """One backend under test: how to get a location for a database of its own."""

    name: str
    fresh: Callable[[], Location]  # an empty, never-migrated database

    def location(self, text: str) -> Location:
        return resolve_location(text, environ={})


@pytest.fixture(scope="session")
def _pg_shared(pg_cluster: PgCluster | None) -> Iterator[str | None]:
    """One migrated database reused (truncated) by every PostgreSQL store test."""
    if pg_cluster is None:
        yield None
        return
    name = pg_cluster.create_database()
    open_store(resolve_location(pg_cluster.url(name), environ={})).close()
    yield name


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(
    request: pytest.FixtureRequest, tmp_path: Path, pg_cluster: PgCluster | None
) -> Iterator[Backend]:
    if request.param == "sqlite":
        counter = iter(range(1000))
        yield Backend(
            "sqlite", lambda: resolve_location(str(tmp_path / f"h{next(counter)}.db"), environ={})
        )
        return
    if pg_cluster is None:
        if os.environ.get("OXY_REQUIRE_POSTGRES") == "1":  # CI: a skip would hide a broken setup
            pytest.fail(_skip_reason())
        pytest.skip(_skip_reason())
    made: list[str] = []

    def fresh() -> Location:
        made.append(pg_cluster.create_database())
        return resolve_location(pg_cluster.url(made[-1]), environ={})

    yield Backend("postgresql", fresh)
    for name in made:
        pg_cluster.drop_database(name)


@pytest.fixture
def location(
    backend: Backend, _pg_shared: str | None, pg_cluster: PgCluster | None, tmp_path: Path
) -> Location:
    """A migrated, empty history on this backend."""
    if backend.name == "sqlite":
        return resolve_location(str(tmp_path / "hist" / "oxyeval.db"), environ={})
    assert pg_cluster is not None and _pg_shared is not None
    pg_cluster.admin_sql(f"TRUNCATE {_TABLES} RESTART IDENTITY CASCADE", database=_pg_shared)
    return resolve_location(pg_cluster.url(_pg_shared), environ={})


@pytest.fixture
def store(location: Location) -> Iterator[Store]:
    with open_store(location) as s:
        yield s
