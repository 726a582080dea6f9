"""ClickHouse as a warehouse, against RECORDED WIRE FIXTURES: a fake server on 127.0.0.1
speaking ClickHouse's HTTP interface with answers shaped as ClickHouse sends them (no
ClickHouse server installs here from the registries in the tests' time: Debian's is
from 2018). The fake checks the credentials and plays the server's read-only mode
(``readonly=1`` refuses a write, ``Code: 164``) and a statement that never ends until
``KILL QUERY`` names its query id: what is tested is what oxyeval sends and reads."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from oxyeval.project import load_project
from oxyeval.workflow import Databases, SqlError, warehouse_runner

from .fake_http_server import FakeServer, Reply, Request, serve
from .warehouse_checks import ask_agent, oxy_run, write_project

PASSWORD = "ch-pw-" + "R2d9Lq0w"
_ORDERS = [[1, "North", 10.5], [2, "South", 3], [3, "North", 7]]
_WRITES = ("INSERT", "DROP", "CREATE", "ALTER", "TRUNCATE", "DELETE", "SET", "KILL")


def _rows(meta: list[tuple[str, str]], data: list[list[object]]) -> Reply:
    body = {
        "meta": [{"name": n, "type": t} for n, t in meta],
        "data": data,
        "rows": len(data),
        "statistics": {"elapsed": 0.0004, "rows_read": 3, "bytes_read": 60},
    }
    return Reply(200, json.dumps(body).encode(), {"Content-Type": "application/json"})


def _exception(code: int, name: str, text: str, status: int = 500) -> Reply:
    message = (
        f"Code: {code}. DB::Exception: {text}. ({name}) (version 24.8.4.13 (official build))\n"
    )
    return Reply(status, message.encode(), {"X-ClickHouse-Exception-Code": str(code)})


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    fake: list[FakeServer] = []

    def answer(request: Request) -> Reply:
        if request.headers.get("x-clickhouse-key") != PASSWORD:
            return _exception(
                516,
                "AUTHENTICATION_FAILED",
                "oxy: Authentication failed: password is incorrect, or there is no user with "
                "such name",
                status=516,
            )
        sql = request.body.decode()
        params = request.params
        if sql.startswith("KILL QUERY"):
            fake[0].killed = params.get("param_id")  # type: ignore[attr-defined]
            fake[0].cancelled.set()
            return Reply(200, b"")
        if params.get("readonly") == "1" and sql.lstrip().upper().startswith(_WRITES):
            return _exception(164, "READONLY", "oxy: Cannot execute query in readonly mode")
        if "system.columns" in sql:
            return _rows(
                [
                    ("database", "String"),
                    ("table", "String"),
                    ("name", "String"),
                    ("type", "String"),
                ],
                [
                    ["shop", "orders", "id", "UInt32"],
                    ["shop", "orders", "region", "LowCardinality(String)"],
                    ["shop", "orders", "amount", "Decimal(8, 2)"],
                ],
            )
        if sql == "SELECT count(*) AS n FROM orders":
            return _rows([("n", "UInt64")], [[3]])
        if "sleepEachRow" in sql:  # a statement the server does not stop by itself
            fake[0].cancelled.wait(10)
            return _exception(394, "QUERY_WAS_CANCELLED", "Query was cancelled")
        if sql == "SELECT id, amount FROM orders WHERE region = {p1:String} ORDER BY id":
            wanted = [r for r in _ORDERS if r[1] == params.get("param_p1")]
            return _rows(
                [("id", "UInt32"), ("amount", "Decimal(8, 2)")], [[r[0], r[2]] for r in wanted]
            )
        return _exception(62, "SYNTAX_ERROR", f"Syntax error: failed at position 1 ({sql[:20]})")

    for made in serve(answer):
        fake.append(made)
        yield made


def _entry(server: FakeServer, **extra: object) -> str:
    return "\n".join(
        [
            "name: wh",
            "type: clickhouse",
            f"host: {server.url}",
            "user: oxy",
            "password_var: OXY_TEST_CH_PASSWORD",
            "database: shop",
            *(f"{k}: {v}" for k, v in extra.items()),
        ]
    )


@pytest.fixture
def project(server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OXY_TEST_CH_PASSWORD", PASSWORD)
    return write_project(tmp_path, _entry(server), table="orders", dataset="shop")


def test_a_query_task_sends_its_values_as_server_side_parameters(
    project: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "w.workflow.yml").write_text(
        "tasks:\n  - name: q\n    type: execute_sql\n    database: wh\n"
        "    sql_query: SELECT id, amount FROM orders WHERE region = {{ 'North' }} ORDER BY id\n"
    )
    code, output = oxy_run(project, monkeypatch, "w.workflow.yml", "--format", "json")
    assert code == 0, output
    assert '"id": 1' in output and '"id": 3' in output and '"id": 2' not in output
    sent = server.requests[-1]
    assert sent.params["param_p1"] == "North" and sent.params["database"] == "shop"
    assert sent.query[-1] == ("readonly", "1")  # last: nothing after it may change a setting
    assert sent.headers["x-clickhouse-user"] == "oxy"
    assert PASSWORD not in sent.path + str(sent.query) and PASSWORD not in output


def test_an_agent_reads_the_dialect_and_ddl_and_queries_with_its_tool(project: Path) -> None:
    answer, system = ask_agent(project)
    assert answer == "There are 3 orders."
    assert "Dialect: clickhouse" in system
    assert (
        'CREATE TABLE "shop"."orders" ("id" UInt32, "region" LowCardinality(String), '
        '"amount" Decimal(8, 2));' in system
    )


def test_a_write_on_a_read_only_database_is_refused(project: Path) -> None:
    databases = Databases(load_project(project).databases, project)
    try:
        with pytest.raises(SqlError, match="is read-only: the server refused"):
            asyncio.run(databases.query("wh", "DROP TABLE orders"))
    finally:
        databases.close()


def test_a_query_past_its_timeout_is_killed_on_the_server_and_stops_the_run(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OXY_TEST_CH_PASSWORD", PASSWORD)
    monkeypatch.setattr(warehouse_runner, "GRACE_SECONDS", 0.2)
    server.cancelled.clear()
    root = write_project(tmp_path, _entry(server, timeout=0.5), table="orders", dataset="shop")
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - {name: slow, type: execute_sql, database: wh, "
        "sql_query: 'SELECT sleepEachRow(1) FROM numbers(100)'}\n"
    )
    code, output = oxy_run(root, monkeypatch, "w.workflow.yml")
    assert code == 3, output
    assert "timeout of 0.5 s" in output and "Traceback" not in output
    slow = next(r for r in server.requests if b"sleepEachRow" in r.body)
    assert slow.params["max_execution_time"] == "1"  # the server's own limit, asked first
    assert server.cancelled.is_set()
    assert server.killed == slow.params["query_id"]  # type: ignore[attr-defined]


def test_a_refused_password_is_said_without_it(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "wrong-ch-" + "Hk31sQ"
    monkeypatch.setenv("OXY_TEST_CH_PASSWORD", wrong)
    root = write_project(tmp_path, _entry(server), table="orders", dataset="shop")
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - {name: q, type: execute_sql, database: wh, sql_query: SELECT 1}\n"
    )
    code, output = oxy_run(root, monkeypatch, "w.workflow.yml")
    assert code == 3, output
    assert "refused its credentials" in output and "Authentication failed" in output
    assert wrong not in output and "Traceback" not in output
