"""Snowflake as a warehouse, against RECORDED WIRE FIXTURES: a fake server on 127.0.0.1
playing Snowflake's SQL API (``POST /api/v2/statements``, its status URL and ``/cancel``),
its answers shaped as the API sends them. The fake checks the token, and plays a
statement that runs until cancelled. Snowflake has no read-only session: the refusals
tested here are oxyeval's own, made before anything is sent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oxyeval.project import load_project
from oxyeval.workflow import Databases, SqlError, warehouse_runner

from .fake_http_server import FakeServer, Reply, Request, json_reply, serve
from .warehouse_checks import ask_agent, oxy_run, write_project

TOKEN = "pat-" + "Sn0wT0k3n-4Fz"
STATEMENTS = "/api/v2/statements"


def _result(columns: list[tuple[str, str, int]], rows: list[list[Any]]) -> Reply:
    return json_reply(
        {
            "resultSetMetaData": {
                "numRows": len(rows),
                "format": "jsonv2",
                "partitionInfo": [{"rowCount": len(rows), "uncompressedSize": 64}],
                "rowType": [
                    {"name": n, "type": t, "scale": s, "nullable": True, "database": "SHOPDB"}
                    for n, t, s in columns
                ],
            },
            "data": [[None if v is None else str(v) for v in row] for row in rows],
            "code": "090001",
            "statementStatusUrl": f"{STATEMENTS}/01b2-0000?requestId=1",
            "sqlState": "00000",
            "statementHandle": "01b2-0000",
            "message": "Statement executed successfully.",
            "createdOn": 1735689600000,
        }
    )


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    fake: list[FakeServer] = []

    def answer(request: Request) -> Reply:
        kind = request.headers.get("x-snowflake-authorization-token-type")
        token = request.headers.get("authorization", "")
        if kind == "KEYPAIR_JWT":
            fake[0].jwt = token.removeprefix("Bearer ")  # type: ignore[attr-defined]
        elif token != f"Bearer {TOKEN}" or kind != "PROGRAMMATIC_ACCESS_TOKEN":
            return json_reply(
                {"code": "390303", "message": "Invalid OAuth access token. [4b2c]"}, 401
            )
        if request.path == f"{STATEMENTS}/h-slow/cancel":
            fake[0].cancelled.set()
            return json_reply(
                {"code": "000604", "message": "SQL execution was cancelled by the client."}
            )
        if request.path == f"{STATEMENTS}/h-slow":
            return json_reply(
                {"code": "333334", "message": "Asynchronous execution in progress.",
                 "statementHandle": "h-slow", "statementStatusUrl": f"{STATEMENTS}/h-slow"},
                202,
            )  # fmt: skip
        body = request.json()
        sql = body["statement"]
        if "information_schema.columns" in sql:
            return _result(
                [
                    (c, "text", 0)
                    for c in ("TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME", "DATA_TYPE")
                ],
                [
                    ["SHOP", "ORDERS", "ID", "NUMBER"],
                    ["SHOP", "ORDERS", "REGION", "TEXT"],
                    ["SHOP", "ORDERS", "AMOUNT", "NUMBER"],
                ],
            )
        if sql == "SELECT count(*) AS n FROM orders":
            return _result([("N", "fixed", 0)], [[3]])
        if sql == "SELECT id, amount FROM orders WHERE region = ? ORDER BY id":
            wanted = body["bindings"]["1"]["value"]
            rows = [[1, "10.50"], [3, "7.00"]] if wanted == "North" else []
            return _result([("ID", "fixed", 0), ("AMOUNT", "fixed", 2)], rows)
        if "slow" in sql:
            return json_reply(
                {"code": "333334", "message": "Asynchronous execution in progress.",
                 "statementHandle": "h-slow", "statementStatusUrl": f"{STATEMENTS}/h-slow"},
                202,
            )  # fmt: skip
        return json_reply(
            {"code": "001003", "sqlState": "42000", "statementHandle": "01b2-0001",
             "message": "SQL compilation error:\nsyntax error line 1 at position 0."},
            422,
        )  # fmt: skip

    for made in serve(answer):
        fake.append(made)
        yield made


def _project(root: Path, server: FakeServer, **extra: object) -> Path:
    entry = "\n".join(
        [
            "name: wh",
            "type: snowflake",
            "account: xy12345",
            "username: oxy",
            "warehouse: compute_wh",
            "database: SHOPDB",
            "schema: SHOP",
            "role: analyst",
            "password_var: OXY_TEST_SF_TOKEN",
            f"api_url: {server.url}",
            *(f"{k}: {v}" for k, v in extra.items()),
        ]
    )
    return write_project(root, entry, table="orders", dataset="SHOP")


@pytest.fixture
def project(server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OXY_TEST_SF_TOKEN", TOKEN)
    return _project(tmp_path, server)


def test_a_query_task_sends_its_values_as_bindings_and_one_statement(
    project: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "w.workflow.yml").write_text(
        "tasks:\n  - name: q\n    type: execute_sql\n    database: wh\n"
        "    sql_query: SELECT id, amount FROM orders WHERE region = {{ 'North' }} ORDER BY id\n"
    )
    code, output = oxy_run(project, monkeypatch, "w.workflow.yml", "--format", "json")
    assert code == 0, output
    assert '"ID": 1' in output and '"AMOUNT": 10.5' in output
    sent = server.requests[-1].json()
    assert sent["bindings"] == {"1": {"type": "TEXT", "value": "North"}}
    assert sent["parameters"] == {"MULTI_STATEMENT_COUNT": "1"}
    assert (sent["warehouse"], sent["role"], sent["timeout"]) == ("compute_wh", "analyst", 60)
    assert TOKEN not in output


def test_an_agent_reads_the_dialect_and_ddl_and_queries_with_its_tool(project: Path) -> None:
    answer, system = ask_agent(project)
    assert answer == "There are 3 orders."
    assert "Dialect: snowflake" in system
    assert 'CREATE TABLE "SHOP"."ORDERS" ("ID" NUMBER, "REGION" TEXT, "AMOUNT" NUMBER);' in system


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE orders",
        "COMMIT; DROP TABLE orders",
        "WITH gone AS (SELECT 1) DELETE FROM orders",
        "SELECT SYSTEM$CANCEL_ALL_QUERIES(1)",
        "ALTER SESSION SET AUTOCOMMIT = FALSE",
    ],
)
def test_a_write_on_a_read_only_database_is_refused_before_it_is_sent(
    project: Path, server: FakeServer, sql: str
) -> None:
    databases = Databases(load_project(project).databases, project)
    before = len(server.requests)
    try:
        with pytest.raises(SqlError, match="is read-only"):
            asyncio.run(databases.query("wh", sql))
    finally:
        databases.close()
    assert len(server.requests) == before


def test_a_statement_past_its_timeout_is_cancelled_on_the_server_and_stops_the_run(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OXY_TEST_SF_TOKEN", TOKEN)
    monkeypatch.setattr(warehouse_runner, "GRACE_SECONDS", 0.2)
    server.cancelled.clear()
    root = _project(tmp_path, server, timeout=0.5)
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - {name: q, type: execute_sql, database: wh, sql_query: SELECT 'slow'}\n"
    )
    code, output = oxy_run(root, monkeypatch, "w.workflow.yml")
    assert code == 3, output
    assert "timeout of 0.5 s" in output and "Traceback" not in output
    assert server.cancelled.is_set()
    first = next(r for r in server.requests if b"slow" in r.body)
    assert first.json()["timeout"] == 1  # the server's own limit, asked first


def test_a_refused_token_is_said_without_it(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "pat-wrong-" + "Qm82Kd"
    monkeypatch.setenv("OXY_TEST_SF_TOKEN", wrong)
    root = _project(tmp_path, server)
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - {name: q, type: execute_sql, database: wh, sql_query: SELECT 1}\n"
    )
    code, output = oxy_run(root, monkeypatch, "w.workflow.yml")
    assert code == 3, output
    assert "refused its credentials" in output and "Invalid OAuth access token" in output
    assert wrong not in output and "Traceback" not in output


def test_a_private_key_signs_in_with_a_key_pair_jwt(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import base64

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    root = _project(tmp_path, server, private_key_path="keys/rsa.p8")
    (root / "keys").mkdir()
    (root / "keys" / "rsa.p8").write_text(pem)
    monkeypatch.delenv("OXY_TEST_SF_TOKEN", raising=False)
    text = (root / "config.yml").read_text().replace("    password_var: OXY_TEST_SF_TOKEN\n", "")
    (root / "config.yml").write_text(text)
    answer, _ = ask_agent(root)
    assert answer == "There are 3 orders."
    payload = server.jwt.split(".")[1]  # type: ignore[attr-defined]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["sub"] == "XY12345.OXY" and claims["iss"].startswith("XY12345.OXY.SHA256:")
