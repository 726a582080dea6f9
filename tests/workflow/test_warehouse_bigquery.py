"""BigQuery as a warehouse, against RECORDED WIRE FIXTURES: a fake server on 127.0.0.1
playing Google's token endpoint (the key file's ``token_uri``) and BigQuery's REST API
(``jobs.insert`` dry runs, ``jobs.query``, ``jobs.getQueryResults``, ``jobs.cancel``),
its answers shaped as BigQuery sends them. The fake plays the server's part: its
``statementType`` for a dry run, a job that runs until cancelled, a refused key."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oxyeval.project import load_project
from oxyeval.workflow import Databases, SqlError, warehouse_runner

from .fake_http_server import FakeServer, Reply, Request, json_reply, serve
from .warehouse_checks import ask_agent, oxy_run, write_project

TOKEN = "ya29.fake-" + "Tok3n-8xQ"
API = "/bigquery/v2/projects/proj"
_KINDS = {"SELECT": "SELECT", "DROP": "DROP_TABLE", "DELETE": "DELETE", "INSERT": "INSERT"}


@pytest.fixture(scope="module")
def private_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _result(fields: list[tuple[str, str]], rows: list[list[Any]], job: str = "job_1") -> Reply:
    return json_reply(
        {
            "kind": "bigquery#queryResponse",
            "schema": {"fields": [{"name": n, "type": t, "mode": "NULLABLE"} for n, t in fields]},
            "jobReference": {"projectId": "proj", "jobId": job, "location": "US"},
            "totalRows": str(len(rows)),
            "rows": [{"f": [{"v": None if v is None else str(v)} for v in row]} for row in rows],
            "totalBytesProcessed": "0",
            "jobComplete": True,
            "cacheHit": False,
        }
    )


def _error(status: int, reason: str, message: str) -> Reply:
    return json_reply(
        {
            "error": {
                "code": status,
                "message": message,
                "errors": [{"message": message, "domain": "global", "reason": reason}],
                "status": "INVALID_ARGUMENT",
            }
        },
        status,
    )


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    fake: list[FakeServer] = []

    def answer(request: Request) -> Reply:
        if request.path == "/token":
            form = dict(urllib.parse.parse_qsl(request.body.decode()))
            claims = json.loads(_b64(form["assertion"].split(".")[1]))
            if claims["iss"] != "oxy@proj.iam.gserviceaccount.com":
                return json_reply(
                    {"error": "invalid_grant", "error_description": "Invalid JWT Signature."},
                    400,
                )
            return json_reply({"access_token": TOKEN, "expires_in": 3599, "token_type": "Bearer"})
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return _error(401, "authError", "Request had invalid authentication credentials.")
        if request.path == f"{API}/jobs":
            query = request.json()["configuration"]["query"]["query"]
            kind = "SCRIPT" if ";" in query else _KINDS.get(query.split()[0].upper(), "SELECT")
            return json_reply(
                {
                    "kind": "bigquery#job",
                    "status": {"state": "DONE"},
                    "statistics": {"query": {"statementType": kind, "totalBytesProcessed": "0"}},
                    "configuration": {"dryRun": True},
                }
            )
        if request.path == f"{API}/queries":
            body = request.json()
            query = body["query"]
            if "INFORMATION_SCHEMA.COLUMNS" in query:
                return _result(
                    [(name, "STRING") for name in ("table_schema", "table_name")]
                    + [(name, "STRING") for name in ("column_name", "data_type")],
                    [
                        ["shop", "orders", "id", "INT64"],
                        ["shop", "orders", "region", "STRING"],
                        ["shop", "orders", "amount", "NUMERIC"],
                    ],
                )
            if query == "SELECT count(*) AS n FROM orders":
                return _result([("n", "INTEGER")], [[3]])
            if query == "SELECT id, amount FROM orders WHERE region = ? ORDER BY id":
                [param] = body["queryParameters"]
                wanted = param["parameterValue"]["value"]
                rows = [[1, "10.5"], [3, "7"]] if wanted == "North" else []
                return _result([("id", "INTEGER"), ("amount", "NUMERIC")], rows)
            if "slow" in query:
                return json_reply(
                    {
                        "kind": "bigquery#queryResponse",
                        "jobReference": {
                            "projectId": "proj",
                            "jobId": "job_slow",
                            "location": "US",
                        },
                        "jobComplete": False,
                    }
                )
            return _error(
                400, "invalidQuery", f"Syntax error: Unexpected identifier at [1:1] {query[:10]}"
            )
        if request.path == f"{API}/queries/job_slow":
            fake[0].cancelled.wait(int(request.params["timeoutMs"]) / 1000)
            return json_reply({"jobReference": {"jobId": "job_slow"}, "jobComplete": False})
        if request.path == f"{API}/jobs/job_slow/cancel":
            fake[0].cancelled.set()
            return json_reply({"kind": "bigquery#jobCancelResponse", "job": {"id": "job_slow"}})
        return _error(404, "notFound", f"Not found: {request.path}")

    for made in serve(answer):
        fake.append(made)
        yield made


def _b64(text: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _project(
    root: Path, server: FakeServer, private_key: str, *, email: str = "oxy", **extra: object
) -> Path:
    key = {
        "type": "service_account",
        "project_id": "proj",
        "private_key_id": "k1",
        "private_key": private_key,
        "client_email": f"{email}@proj.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": f"{server.url}/token",
    }
    entry = "\n".join(
        [
            "name: wh",
            "type: bigquery",
            "key_path: secrets/key.json",
            "dataset: shop",
            f"api_url: {server.url}",
            *(f"{k}: {v}" for k, v in extra.items()),
        ]
    )
    return write_project(
        root, entry, table="orders", dataset="shop", files={"secrets/key.json": json.dumps(key)}
    )


def test_a_query_task_sends_its_values_as_query_parameters(
    server: FakeServer, private_key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, server, private_key)
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - name: q\n    type: execute_sql\n    database: wh\n"
        "    sql_query: SELECT id, amount FROM orders WHERE region = {{ 'North' }} ORDER BY id\n"
    )
    code, output = oxy_run(root, monkeypatch, "w.workflow.yml", "--format", "json")
    assert code == 0, output
    assert '"id": 1' in output and '"id": 3' in output and '"amount": 10.5' in output
    sent = next(r for r in reversed(server.requests) if r.path == f"{API}/queries").json()
    assert sent["queryParameters"] == [
        {"parameterType": {"type": "STRING"}, "parameterValue": {"value": "North"}}
    ]
    assert sent["defaultDataset"] == {"projectId": "proj", "datasetId": "shop"}
    assert sent["jobTimeoutMs"] == "60000" and sent["useLegacySql"] is False
    assert TOKEN not in output and "PRIVATE KEY" not in output


def test_an_agent_reads_the_dialect_and_ddl_and_queries_with_its_tool(
    server: FakeServer, private_key: str, tmp_path: Path
) -> None:
    answer, system = ask_agent(_project(tmp_path, server, private_key))
    assert answer == "There are 3 orders."
    assert "Dialect: bigquery" in system
    assert 'CREATE TABLE "shop"."orders" ("id" INT64, "region" STRING, "amount" NUMERIC);' in system


@pytest.mark.parametrize("sql", ["DROP TABLE orders", "SELECT 1; DELETE FROM orders WHERE true"])
def test_a_write_or_a_script_is_refused_by_the_servers_own_reading(
    server: FakeServer, private_key: str, tmp_path: Path, sql: str
) -> None:
    root = _project(tmp_path, server, private_key)
    databases = Databases(load_project(root).databases, root)
    before = len(server.requests)
    try:
        with pytest.raises(SqlError, match=r"is read-only|one SQL statement"):
            asyncio.run(databases.query("wh", sql))
    finally:
        databases.close()
    assert not any(r.path == f"{API}/queries" for r in server.requests[before:])  # never run


def test_a_job_past_its_timeout_is_cancelled_on_the_server_and_stops_the_run(
    server: FakeServer, private_key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warehouse_runner, "GRACE_SECONDS", 0.2)
    server.cancelled.clear()
    root = _project(tmp_path, server, private_key, timeout=0.5)
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - {name: q, type: execute_sql, database: wh, sql_query: SELECT 'slow'}\n"
    )
    code, output = oxy_run(root, monkeypatch, "w.workflow.yml")
    assert code == 3, output
    assert "timeout of 0.5 s" in output and "Traceback" not in output
    assert server.cancelled.is_set()
    assert any(r.path == f"{API}/jobs/job_slow/cancel" for r in server.requests)


def test_a_refused_key_is_said_without_it(
    server: FakeServer, private_key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, server, private_key, email="revoked")
    (root / "w.workflow.yml").write_text(
        "tasks:\n  - {name: q, type: execute_sql, database: wh, sql_query: SELECT 1}\n"
    )
    code, output = oxy_run(root, monkeypatch, "w.workflow.yml")
    assert code == 3, output
    assert "refused its credentials" in output and "invalid_grant" in output
    body = private_key.splitlines()[1]
    assert body not in output and "PRIVATE KEY" not in output and "Traceback" not in output
