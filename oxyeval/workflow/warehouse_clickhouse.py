"""ClickHouse through its HTTP interface (httpx).

Each statement is one HTTP request (the interface runs one statement per request) with
the server's settings for it in the URL: ``readonly=1`` last (unless ``read_only:
false``), which the server enforces and which forbids the statement to change any
setting, ``max_execution_time`` (the server stops it), ``max_result_rows`` with
``result_overflow_mode=break`` (the server stops sending rows), and a ``query_id`` of
ours, so a statement past its deadline is stopped with ``KILL QUERY`` by another
request. Values are bound by the server: ``{p1:String}`` placeholders, their values
sent as ``param_p1``. The user and password go in ClickHouse's headers, never the URL.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
import uuid
from pathlib import Path
from typing import Any

from .warehouse_http import api_base, client, read_json, short, transport
from .warehouses import Rows, Session, Warehouse, WarehouseError, positional, setting

__all__ = ["ClickHouseSession", "ClickHouseWarehouse"]

_SYSTEM = ("system", "INFORMATION_SCHEMA", "information_schema")
_CODE = re.compile(r"Code:\s*(\d+)")
_TIMEOUT = {159, 394}  # TIMEOUT_EXCEEDED, QUERY_WAS_CANCELLED
_READ_ONLY = {164}  # READONLY
_AUTH = {516, 192, 193, 194}  # AUTHENTICATION_FAILED, UNKNOWN_USER, WRONG_PASSWORD, ...


def _type(value: Any) -> str:
    """The ClickHouse type a value is bound as."""
    if value is None:
        return "Nullable(String)"
    if isinstance(value, bool):
        return "Bool"
    if isinstance(value, int):
        return "Int64"
    if isinstance(value, float):
        return "Float64"
    if isinstance(value, decimal.Decimal):
        exponent = value.as_tuple().exponent
        scale = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        return f"Decimal(38, {min(scale, 37)})"
    if isinstance(value, _dt.datetime):
        return "DateTime64(6)"
    if isinstance(value, _dt.date):
        return "Date"
    return "String"


def _text(value: Any) -> str:
    """A value as ClickHouse reads a ``param_`` (its escaped text form)."""
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    text = value.isoformat(sep=" ") if isinstance(value, _dt.datetime) else str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _error(status: int, text: str) -> WarehouseError:
    found = _CODE.search(text)
    code = int(found.group(1)) if found else 0
    message = short(text)
    if code in _TIMEOUT:
        return WarehouseError("timeout", message)
    if code in _READ_ONLY:
        return WarehouseError(
            "refused",
            f"is read-only: the server refused the statement ({message}); set 'read_only: "
            "false' on the database in config.yml to let workflow SQL write",
        )
    if code in _AUTH or status in (401, 403):
        return WarehouseError("auth", message or f"HTTP {status}")
    if status >= 500 and not code:
        return WarehouseError("unreachable", f"HTTP {status}: {message}")
    return WarehouseError("sql", message or f"HTTP {status}")


class ClickHouseSession(Session):
    def __init__(self, warehouse: ClickHouseWarehouse, http: Any) -> None:
        self.warehouse = warehouse
        self.http = http
        self.query_id = ""

    def run(
        self, sql: str, params: list[Any], *, writable: bool, timeout: float, max_rows: int
    ) -> Rows:
        text, values = positional(sql, params, lambda i, v: f"{{p{i}:{_type(v)}}}")
        self.query_id = f"oxyeval-{uuid.uuid4()}"
        query: list[tuple[str, str]] = [
            ("query_id", self.query_id),
            ("default_format", "JSONCompact"),
            ("output_format_json_quote_64bit_integers", "0"),
            ("max_execution_time", str(max(1, math.ceil(timeout)))),
            ("max_result_rows", str(max_rows + 1)),
            ("result_overflow_mode", "break"),
            *((f"param_p{i}", _text(v)) for i, v in enumerate(values, 1)),
        ]
        if self.warehouse.database:
            query.insert(0, ("database", self.warehouse.database))
        if not writable:
            query.append(("readonly", "1"))  # last: no statement may change a setting
        try:
            response = self.http.post(
                self.warehouse.url, params=query, content=text.encode("utf-8")
            )
        except Exception as exc:
            raise transport(exc) from None
        if response.status_code != 200:
            raise _error(response.status_code, response.text)
        if not response.content.strip():
            return [], [], False  # a statement without rows (writable databases)
        data = read_json(response)
        columns = [str(m.get("name")) for m in data.get("meta") or []]
        rows = [tuple(r) for r in data.get("data") or []]
        return columns, rows[:max_rows], len(rows) > max_rows

    def cancel(self) -> None:
        if not self.query_id:
            return
        self.http.post(
            self.warehouse.url,
            params={"param_id": self.query_id},
            content=b"KILL QUERY WHERE query_id = {id:String} ASYNC",
        )

    def close(self) -> None:
        self.http.close()


class ClickHouseWarehouse(Warehouse):
    dialect = "clickhouse"

    def __init__(self, name: str, entry: dict[str, Any], root: Path) -> None:
        super().__init__(name, entry, root)
        host = setting(entry, "host")
        if not host:
            raise WarehouseError("config", "host is not set (http://host:8123)")
        text = str(host)
        if "://" not in text:
            text = f"http://{text}" if ":" in text else f"http://{text}:8123"
        self.url = api_base(text, text, "host") + "/"
        self.database = str(setting(entry, "database", "") or "")

    def open(self, timeout: float) -> ClickHouseSession:
        headers = {"X-ClickHouse-User": str(setting(self.entry, "user", "default"))}
        password = setting(self.entry, "password")
        if password:
            headers["X-ClickHouse-Key"] = str(password)
        return ClickHouseSession(self, client(timeout + 5.0, headers))

    def catalog_query(self) -> str:
        excluded = ", ".join(f"'{s}'" for s in _SYSTEM)
        return (
            "SELECT database, table, name, type FROM system.columns "
            f"WHERE database NOT IN ({excluded}) ORDER BY database, table, position"
        )
