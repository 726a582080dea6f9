"""PostgreSQL as a warehouse, against a real server: the throwaway cluster the history's
tests share (one per session). The role queries as the owner of its tables, so every
write refused here is refused by the read-only transaction, not by a grant."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from oxyeval.project import load_project
from oxyeval.workflow import Databases, SqlError

from ..conftest import pg_skip_reason
from ..pgcluster import PASSWORD, PgCluster
from .warehouse_checks import ask_agent, oxy_run, write_project


@pytest.fixture(scope="module")
def shop(pg_cluster: PgCluster | None) -> Iterator[tuple[PgCluster, str]]:
    """A database of the ``oxy`` role with ``sales.orders`` (3 rows)."""
    if pg_cluster is None:
        if os.environ.get("OXY_REQUIRE_POSTGRES") == "1":
            pytest.fail(pg_skip_reason())
        pytest.skip(pg_skip_reason())
    name = pg_cluster.create_database()
    pg_cluster.admin_sql(
        "SET ROLE oxy",
        "CREATE SCHEMA sales",
        "CREATE TABLE sales.orders (id integer PRIMARY KEY, region text, amount numeric(8, 2))",
        "INSERT INTO sales.orders VALUES (1, 'North', 10.5), (2, 'South', 3), (3, 'North', 7)",
        database=name,
    )
    yield pg_cluster, name
    pg_cluster.drop_database(name)


def _entry(cluster: PgCluster, database: str, **extra: object) -> str:
    lines = [
        "name: wh",
        "type: postgres",
        "host: 127.0.0.1",
        f'port: "{cluster.port}"',
        "user: oxy",
        "password_var: OXY_TEST_PG_PASSWORD",
        f"database: {database}",
        *(f"{k}: {v}" for k, v in extra.items()),
    ]
    return "\n".join(lines)


@pytest.fixture
def project(shop: tuple[PgCluster, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OXY_TEST_PG_PASSWORD", PASSWORD)
    cluster, database = shop
    return write_project(tmp_path, _entry(cluster, database), table="sales.orders", dataset="sales")


def _count(shop: tuple[PgCluster, str]) -> int:
    import psycopg

    cluster, database = shop
    with psycopg.connect(cluster.admin_url(database)) as conn:
        row = conn.execute("SELECT count(*) FROM sales.orders").fetchone()
    assert row is not None
    return int(row[0])


def test_a_query_task_binds_its_values_and_reads_the_rows(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "w.workflow.yml").write_text(
        "variables:\n  region: {type: string, default: North}\n"
        "tasks:\n  - name: q\n    type: execute_sql\n    database: wh\n"
        "    sql_query: SELECT id, amount FROM sales.orders WHERE region = {{ region }} "
        "ORDER BY id\n"
    )
    code, output = oxy_run(project, monkeypatch, "w.workflow.yml", "--format", "json")
    assert code == 0, output
    assert '"id": 1' in output and '"id": 3' in output and '"id": 2' not in output
    # A value is a value: it matches nothing, and runs nothing.
    code, output = oxy_run(
        project, monkeypatch, "w.workflow.yml", "--var", "region=x'; DROP TABLE sales.orders; --"
    )
    assert code == 0, output
    assert PASSWORD not in output


def test_an_agent_reads_the_dialect_and_ddl_and_queries_with_its_tool(project: Path) -> None:
    answer, system = ask_agent(project)
    assert answer == "There are 3 orders."
    assert "Dialect: postgres" in system
    assert (
        'CREATE TABLE "sales"."orders" ("id" integer, "region" text, "amount" numeric);' in system
    )


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM sales.orders",
        "COMMIT; DROP TABLE sales.orders",
        "WITH gone AS (DELETE FROM sales.orders RETURNING id) SELECT count(*) FROM gone",
        "SET TRANSACTION READ WRITE",
    ],
)
def test_a_write_on_a_read_only_database_is_refused_by_the_server(
    project: Path, shop: tuple[PgCluster, str], sql: str
) -> None:
    databases = Databases(load_project(project).databases, project)
    try:
        with pytest.raises(SqlError) as caught:
            asyncio.run(databases.query("wh", sql))
    finally:
        databases.close()
    assert "database 'wh'" in str(caught.value)
    assert _count(shop) == 3


def test_a_session_switched_back_to_read_write_still_writes_nothing(
    project: Path, shop: tuple[PgCluster, str]
) -> None:
    databases = Databases(load_project(project).databases, project)

    async def go() -> None:
        for switch in (
            "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
            "SELECT set_config('default_transaction_read_only', 'off', false)",
            "SET default_transaction_read_only = off",
        ):
            await databases.query("wh", switch)  # runs, in a transaction rolled back
            with pytest.raises(SqlError, match="is read-only"):
                await databases.query("wh", "DELETE FROM sales.orders")

    try:
        asyncio.run(go())
    finally:
        databases.close()
    assert _count(shop) == 3


def test_read_only_false_lets_workflow_sql_write_and_agent_tools_still_read_only(
    shop: tuple[PgCluster, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OXY_TEST_PG_PASSWORD", PASSWORD)
    cluster, database = shop
    root = write_project(
        tmp_path,
        _entry(cluster, database, read_only="false"),
        table="sales.orders",
        dataset="sales",
    )
    databases = Databases(load_project(root).databases, root)

    async def go() -> None:
        await databases.query(
            "wh", "UPDATE sales.orders SET amount = amount WHERE id = $1", params=(1,)
        )
        with pytest.raises(SqlError, match="is read-only"):
            await databases.query("wh", "DELETE FROM sales.orders", select_only=True)

    try:
        asyncio.run(go())
    finally:
        databases.close()
    assert _count(shop) == 3


def test_a_query_past_its_timeout_stops_the_run_and_no_longer_runs_on_the_server(
    shop: tuple[PgCluster, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    monkeypatch.setenv("OXY_TEST_PG_PASSWORD", PASSWORD)
    cluster, database = shop
    root = write_project(
        tmp_path, _entry(cluster, database, timeout=0.5), table="sales.orders", dataset="sales"
    )
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - {name: slow, type: execute_sql, database: wh, "
        "sql_query: 'SELECT pg_sleep(30) AS marker_oxy_slow'}\n"
    )
    code, output = oxy_run(root, monkeypatch, "w.workflow.yml")
    assert code == 3, output
    assert "timeout of 0.5 s" in output and "Traceback" not in output
    with psycopg.connect(cluster.admin_url(database)) as conn:
        running = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%marker_oxy_slow%' "
            "AND state = 'active' AND pid <> pg_backend_pid()"
        ).fetchone()
    assert running == (0,)


def test_a_refused_password_is_said_without_it(
    shop: tuple[PgCluster, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "wrong-pw-" + "Zq81xK4"
    monkeypatch.setenv("OXY_TEST_PG_PASSWORD", wrong)
    cluster, database = shop
    root = write_project(tmp_path, _entry(cluster, database), table="sales.orders", dataset="sales")
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - {name: q, type: execute_sql, database: wh, sql_query: SELECT 1}\n"
    )
    code, output = oxy_run(root, monkeypatch, "w.workflow.yml")
    assert code == 3, output
    assert "refused its credentials" in output and "password_var" in output
    assert wrong not in output and "Traceback" not in output


def test_an_unset_password_var_or_a_missing_driver_stops_the_run_with_exit_2(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.workflow import warehouses

    (project / "w.workflow.yml").write_text(
        "tasks:\n  - {name: q, type: execute_sql, database: wh, sql_query: SELECT 1}\n"
    )
    monkeypatch.delenv("OXY_TEST_PG_PASSWORD")
    code, output = oxy_run(project, monkeypatch, "w.workflow.yml")
    assert code == 2, output
    assert "w.workflow.yml:2:" in output and "OXY_TEST_PG_PASSWORD, which is not set" in output
    monkeypatch.setenv("OXY_TEST_PG_PASSWORD", PASSWORD)
    engine = warehouses.ENGINE_CLASSES["postgres"]
    monkeypatch.setitem(warehouses.ENGINE_CLASSES, "postgres", (*engine[:3], "no_such_driver_x"))
    code, output = oxy_run(project, monkeypatch, "w.workflow.yml")
    assert code == 2, output
    assert "pip install 'oxyeval[postgres]'" in output and "Traceback" not in output
