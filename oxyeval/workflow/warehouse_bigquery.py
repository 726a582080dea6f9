"""BigQuery through its REST API (httpx), signed in with a service-account key file
(``key_path``, or the file ``key_path_var`` names) through google-auth.

BigQuery has no read-only session, so the server is asked what a statement is before
it runs: a dry run (``jobs.insert`` with ``dryRun``) returns BigQuery's own
``statementType``, and on a read-only database anything but a ``SELECT`` is refused
(a ``SCRIPT``, several statements, everywhere). The real guarantee stays the key's
roles: give it BigQuery Data Viewer and Job User only. The statement then runs through
``jobs.query`` with ``jobTimeoutMs`` (the server stops the job) and is cancelled
(``jobs.cancel``) when it is past its deadline here. Values are bound by the server
(positional ``?`` parameters with their types).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
import time
import uuid
from pathlib import Path
from typing import Any

from .warehouse_http import api_base, client, read_json, short, transport
from .warehouses import Column, Rows, Session, Warehouse, WarehouseError, positional, setting

__all__ = ["BigQuerySession", "BigQueryWarehouse"]

_SCOPE = "https://www.googleapis.com/auth/bigquery"
_READS = {"SELECT"}
_POLL_SECONDS = 10.0  # one jobs.query / getQueryResults wait at most, then asked again


def _parameter(value: Any) -> dict[str, Any]:
    kind = "STRING"
    if isinstance(value, bool):
        kind = "BOOL"
    elif isinstance(value, int):
        kind = "INT64"
    elif isinstance(value, float):
        kind = "FLOAT64"
    elif isinstance(value, decimal.Decimal):
        kind = "BIGNUMERIC"
    elif isinstance(value, _dt.datetime):
        kind = "TIMESTAMP" if value.tzinfo else "DATETIME"
    elif isinstance(value, _dt.date):
        kind = "DATE"
    if value is None:
        return {"parameterType": {"type": kind}, "parameterValue": {}}
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and not math.isfinite(value):
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    elif isinstance(value, (_dt.date, _dt.datetime)):
        text = value.isoformat()
    else:
        text = str(value)
    return {"parameterType": {"type": kind}, "parameterValue": {"value": text}}


def _value(field: dict[str, Any], cell: Any) -> Any:
    value = cell.get("v") if isinstance(cell, dict) else cell
    if value is None or field.get("mode") == "REPEATED" or isinstance(value, (list, dict)):
        return value
    kind = str(field.get("type", "")).upper()
    try:
        if kind in ("INTEGER", "INT64"):
            return int(value)
        if kind in ("FLOAT", "FLOAT64"):
            return float(value)
        if kind in ("BOOLEAN", "BOOL"):
            return str(value).lower() == "true"
        if kind in ("NUMERIC", "BIGNUMERIC"):
            return decimal.Decimal(str(value))
    except (ValueError, decimal.InvalidOperation):
        return value
    return value


def _error(response: Any) -> WarehouseError:
    try:
        error = read_json(response).get("error") or {}
    except WarehouseError:
        error = {}
    message = short(str(error.get("message") or response.text or f"HTTP {response.status_code}"))
    reasons = {str(e.get("reason")) for e in error.get("errors") or [] if isinstance(e, dict)}
    if response.status_code == 401:
        return WarehouseError("auth", message)
    if reasons & {"jobTimeout", "timeout", "stopped"}:
        return WarehouseError("timeout", message)
    if response.status_code >= 500:
        return WarehouseError("unreachable", f"HTTP {response.status_code}: {message}")
    return WarehouseError("sql", message)


class _Response:
    """google-auth's view of an HTTP response."""

    def __init__(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.status = status
        self.headers = headers
        self.data = data


class _Request:
    """google-auth's transport interface over httpx (the token exchange)."""

    def __init__(self, http: Any) -> None:
        self.http = http

    def __call__(
        self,
        url: str,
        method: str = "GET",
        body: Any = None,
        headers: Any = None,
        timeout: Any = None,
        **_kwargs: Any,
    ) -> Any:
        from google.auth import exceptions

        try:
            response = self.http.request(method, url, content=body, headers=headers or {})
        except Exception as exc:
            raise exceptions.TransportError(short(str(exc)) or type(exc).__name__) from None

        return _Response(response.status_code, dict(response.headers), response.content)


class BigQuerySession(Session):
    def __init__(self, warehouse: BigQueryWarehouse, http: Any) -> None:
        self.warehouse = warehouse
        self.http = http
        self.job: dict[str, Any] | None = None

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = self.http.post(f"{self.warehouse.projects}{path}", json=body)
        except Exception as exc:
            raise transport(exc) from None
        if response.status_code != 200:
            raise _error(response)
        return read_json(response)

    def _get(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            response = self.http.get(f"{self.warehouse.projects}{path}", params=params)
        except Exception as exc:
            raise transport(exc) from None
        if response.status_code != 200:
            raise _error(response)
        return read_json(response)

    def _query(self, text: str, values: list[Any]) -> dict[str, Any]:
        query: dict[str, Any] = {"query": text, "useLegacySql": False}
        if values:
            query["parameterMode"] = "POSITIONAL"
            query["queryParameters"] = [_parameter(v) for v in values]
        if self.warehouse.dataset:
            query["defaultDataset"] = {
                "projectId": self.warehouse.project,
                "datasetId": self.warehouse.dataset,
            }
        return query

    def run(
        self, sql: str, params: list[Any], *, writable: bool, timeout: float, max_rows: int
    ) -> Rows:
        text, values = positional(sql, params, lambda _i, _v: "?")
        query = self._query(text, values)
        dry = self._post("/jobs", {"configuration": {"query": query, "dryRun": True}})
        kind = str(((dry.get("statistics") or {}).get("query") or {}).get("statementType", ""))
        if kind == "SCRIPT":
            raise WarehouseError("refused", "one SQL statement per query (BigQuery read a script)")
        if not writable and kind not in _READS:
            raise WarehouseError(
                "refused",
                f"is read-only: BigQuery reads this as a {kind or 'non-SELECT'} statement; set "
                "'read_only: false' on the database in config.yml to let workflow SQL write",
            )
        deadline = time.monotonic() + timeout
        wait = int(min(timeout, _POLL_SECONDS) * 1000)
        body = {
            **query,
            "maxResults": max_rows + 1,
            "timeoutMs": wait,
            "jobTimeoutMs": str(max(1, int(timeout * 1000))),
            "requestId": str(uuid.uuid4()),
        }
        answer = self._post("/queries", body)
        self.job = answer.get("jobReference")
        while not answer.get("jobComplete"):
            left = deadline - time.monotonic()
            if left <= 0 or not self.job:
                self.cancel()
                raise WarehouseError("timeout", "the job was still running; it was cancelled")
            params_: dict[str, Any] = {"timeoutMs": int(min(left, _POLL_SECONDS) * 1000)}
            params_["maxResults"] = max_rows + 1
            if self.job.get("location"):
                params_["location"] = self.job["location"]
            answer = self._get(f"/queries/{self.job['jobId']}", params_)
        fields = (answer.get("schema") or {}).get("fields") or []
        rows = [
            tuple(_value(f, c) for f, c in zip(fields, r.get("f") or [], strict=False))
            for r in answer.get("rows") or []
        ]
        total = int(answer.get("totalRows") or len(rows))
        columns = [str(f.get("name")) for f in fields]
        return columns, rows[:max_rows], len(rows) > max_rows or total > max_rows

    def cancel(self) -> None:
        job = self.job
        if not job:
            return
        query = {"location": job["location"]} if job.get("location") else None
        self.http.post(f"{self.warehouse.projects}/jobs/{job['jobId']}/cancel", params=query)

    def close(self) -> None:
        self.http.close()


class BigQueryWarehouse(Warehouse):
    dialect = "bigquery"

    def __init__(self, name: str, entry: dict[str, Any], root: Path) -> None:
        super().__init__(name, entry, root)
        self.info = self._key(entry, root)
        self.project = str(self.info.get("project_id") or "")
        if not self.project:
            raise WarehouseError("config", "the key file names no project_id")
        base = api_base(entry.get("api_url"), "https://bigquery.googleapis.com")
        self.projects = f"{base}/bigquery/v2/projects/{self.project}"
        self.dataset = str(entry.get("dataset") or "")

    @staticmethod
    def _key(entry: dict[str, Any], root: Path) -> dict[str, Any]:
        value = setting(entry, "key_path")
        if not value:
            raise WarehouseError("config", "key_path (or key_path_var) is not set")
        path = Path(str(value)).expanduser()
        path = path if path.is_absolute() else root / path
        try:
            info = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            raise WarehouseError("config", f"key_path: no file {value}") from None
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise WarehouseError(
                "config", f"key_path {value}: not a service-account key file ({type(exc).__name__})"
            ) from None
        if not isinstance(info, dict) or info.get("type") != "service_account":
            raise WarehouseError("config", f"key_path {value}: not a service-account key file")
        return info

    def open(self, timeout: float) -> BigQuerySession:
        from google.auth import exceptions
        from google.oauth2 import service_account

        http = client(timeout + 5.0)
        try:
            credentials = service_account.Credentials.from_service_account_info(
                self.info, scopes=[_SCOPE]
            )
            credentials.refresh(_Request(http))
        except exceptions.RefreshError as exc:
            http.close()
            raise WarehouseError("auth", short(str(exc.args[0] if exc.args else exc))) from None
        except (exceptions.TransportError, exceptions.GoogleAuthError, ValueError) as exc:
            http.close()
            raise WarehouseError("unreachable", f"signing in: {short(str(exc))}") from None
        http.headers["Authorization"] = f"Bearer {credentials.token}"
        from ..redact import register_secret

        register_secret(str(credentials.token))
        return BigQuerySession(self, http)

    def catalog_query(self) -> str:  # one per dataset: see columns()
        raise NotImplementedError

    def _datasets(self, session: BigQuerySession) -> list[str]:
        listed = self.entry.get("datasets")
        if isinstance(listed, dict) and listed:
            return [str(k) for k in listed]
        if self.dataset:
            return [self.dataset]
        found = session._get("/datasets", {"all": "false"})
        return [
            str((d.get("datasetReference") or {}).get("datasetId"))
            for d in found.get("datasets") or []
        ]

    def columns(self, session: Session, timeout: float, limit: int) -> list[Column]:
        assert isinstance(session, BigQuerySession)
        out: list[Column] = []
        for dataset in self._datasets(session):
            name = f"`{self.project}.{dataset}`".replace("\\", "")
            _names, rows, _ = session.run(
                "SELECT table_schema, table_name, column_name, data_type FROM "
                f"{name}.INFORMATION_SCHEMA.COLUMNS ORDER BY table_name, ordinal_position",
                [],
                writable=False,
                timeout=timeout,
                max_rows=limit - len(out),
            )
            out.extend(Column(*(str(v) for v in row[:4])) for row in rows)
            if len(out) >= limit:
                break
        return out
