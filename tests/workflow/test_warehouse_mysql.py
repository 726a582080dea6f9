"""MySQL as a warehouse, against a real server: a throwaway MariaDB (Debian's package),
one per session. The account owns its tables (it may do anything), so every write
refused here is refused by the read-only transaction, not by a grant."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from oxyeval.project import load_project
from oxyeval.workflow import Databases, SqlError

from ..mariadbserver import PASSWORD, MariaDB
from .warehouse_checks import ask_agent, oxy_run, write_project


@pytest.fixture(scope="module")
def shop(mariadb_server: MariaDB) -> MariaDB:
    """Database ``shop`` with ``orders`` (3 rows)."""
    mariadb_server.admin_sql(
        "CREATE DATABASE IF NOT EXISTS shop",
        "CREATE TABLE IF NOT EXISTS shop.orders "
        "(id INT PRIMARY KEY, region VARCHAR(20), amount DECIMAL(8,2))",
        "REPLACE INTO shop.orders VALUES (1, 'North', 10.5), (2, 'South', 3), (3, 'North', 7)",
    )
    return mariadb_server


def _entry(server: MariaDB, **extra: object) -> str:
    lines = [
        "name: wh",
        "type: mysql",
        "host: 127.0.0.1",
        f'port: "{server.port}"',
        "user: oxy",
        "password_var: OXY_TEST_MY_PASSWORD",
        "database: shop",
        *(f"{k}: {v}" for k, v in extra.items()),
    ]
    return "\n".join(lines)


def _project(root: Path, server: MariaDB, **extra: object) -> Path:
    return write_project(root, _entry(server, **extra), table="orders", dataset="shop")


@pytest.fixture
def project(shop: MariaDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OXY_TEST_MY_PASSWORD", PASSWORD)
    return _project(tmp_path, shop)


def _count(server: MariaDB) -> int:
    [(count,)] = server.admin_sql("SELECT count(*) FROM shop.orders")
    return int(str(count))


def test_a_query_task_binds_its_values_and_reads_the_rows(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "w.workflow.yml").write_text(
        "variables:\n  region: {type: string, default: North}\n"
        "tasks:\n  - name: q\n    type: execute_sql\n    database: wh\n"
        "    sql_query: SELECT id, amount, '100%' AS pct FROM orders "
        "WHERE region = {{ region }} ORDER BY id\n"
    )
    code, output = oxy_run(project, monkeypatch, "w.workflow.yml", "--format", "json")
    assert code == 0, output
    assert '"id": 1' in output and '"id": 3' in output and '"id": 2' not in output
    assert '"pct": "100%"' in output
    code, output = oxy_run(project, monkeypatch, "w.workflow.yml", "--var", "region=x' OR '1'='1")
    assert code == 0, output
    assert '"id"' not in output and PASSWORD not in output
    # Inside quotes a value could end MySQL's string (a backslash escapes there): refused.
    (project / "q.workflow.yml").write_text(
        "tasks:\n  - {name: q, type: execute_sql, database: wh, "
        "sql_query: \"SELECT id FROM orders WHERE region = '{{ 'North' }}'\"}\n"
    )
    code, output = oxy_run(project, monkeypatch, "q.workflow.yml")
    assert code == 2, output
    assert "a value is always a bound parameter" in output and "Traceback" not in output


def test_an_agent_reads_the_dialect_and_ddl_and_queries_with_its_tool(project: Path) -> None:
    answer, system = ask_agent(project)
    assert answer == "There are 3 orders."
    assert "Dialect: mysql" in system
    assert (
        'CREATE TABLE "shop"."orders" ("id" int(11), "region" varchar(20), '
        '"amount" decimal(8,2));' in system
    )


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM orders",
        "DROP TABLE orders",
        "COMMIT; DROP TABLE orders",
        "CREATE TABLE other (a int)",
    ],
)
def test_a_write_on_a_read_only_database_is_refused(project: Path, shop: MariaDB, sql: str) -> None:
    databases = Databases(load_project(project).databases, project)
    try:
        with pytest.raises(SqlError) as caught:
            asyncio.run(databases.query("wh", sql))
    finally:
        databases.close()
    assert "database 'wh'" in str(caught.value)
    assert _count(shop) == 3
    assert shop.admin_sql("SHOW TABLES FROM shop") == [("orders",)]


def test_a_session_switched_back_to_read_write_still_writes_nothing(
    project: Path, shop: MariaDB
) -> None:
    databases = Databases(load_project(project).databases, project)

    async def go() -> None:
        for switch in (
            "SET SESSION tx_read_only = 0",
            "SET SESSION TRANSACTION READ WRITE",
        ):
            # It may run (a session variable); the next statement sets the session again.
            with contextlib.suppress(SqlError):
                await databases.query("wh", switch)
            with pytest.raises(SqlError, match="is read-only"):
                await databases.query("wh", "DELETE FROM orders")

    try:
        asyncio.run(go())
    finally:
        databases.close()
    assert _count(shop) == 3


def test_read_only_false_lets_workflow_sql_write_and_agent_tools_still_read_only(
    shop: MariaDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OXY_TEST_MY_PASSWORD", PASSWORD)
    root = _project(tmp_path, shop, read_only="false")
    databases = Databases(load_project(root).databases, root)

    async def go() -> None:
        await databases.query("wh", "UPDATE orders SET amount = amount WHERE id = $1", params=(1,))
        with pytest.raises(SqlError, match="is read-only"):
            await databases.query("wh", "DELETE FROM orders", select_only=True)

    try:
        asyncio.run(go())
    finally:
        databases.close()
    assert _count(shop) == 3


def test_a_query_past_its_timeout_stops_the_run_and_no_longer_runs_on_the_server(
    shop: MariaDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OXY_TEST_MY_PASSWORD", PASSWORD)
    root = _project(tmp_path, shop, timeout=0.5)
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - {name: slow, type: execute_sql, database: wh, "
        "sql_query: 'SELECT SLEEP(30) AS marker_oxy_slow'}\n"
    )
    code, output = oxy_run(root, monkeypatch, "w.workflow.yml")
    assert code == 3, output
    assert "timeout of 0.5 s" in output and "Traceback" not in output
    running = shop.admin_sql(
        "SELECT count(*) FROM information_schema.processlist "
        "WHERE info LIKE '%marker_oxy_slow%' AND id <> CONNECTION_ID()"
    )
    assert running == [(0,)]


def test_a_refused_password_is_said_without_it(
    shop: MariaDB, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "wrong-my-" + "Pq27vN3"
    monkeypatch.setenv("OXY_TEST_MY_PASSWORD", wrong)
    root = _project(tmp_path, shop)
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - {name: q, type: execute_sql, database: wh, sql_query: SELECT 1}\n"
    )
    code, output = oxy_run(root, monkeypatch, "w.workflow.yml")
    assert code == 3, output
    assert "refused its credentials" in output and "password_var" in output
    assert wrong not in output and "Traceback" not in output
