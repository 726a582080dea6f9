"""Snowflake through its SQL API (``/api/v2/statements``, httpx).

Sign-in: ``password`` / ``password_var`` hold a programmatic access token (the SQL API
takes no password), or ``private_key_path`` a key-pair's private key, signed into a JWT
with PyJWT. Each request carries ``MULTI_STATEMENT_COUNT=1`` (the server refuses
``COMMIT; DROP ...``), the ``timeout`` the server stops the statement at, and the
values as bindings the server binds (``?``). Snowflake has no read-only session: on a
read-only database a statement must be a query (``SELECT``, ``WITH`` without a write,
``SHOW``, ``DESCRIBE``, ``EXPLAIN``) and may call no ``SYSTEM$`` function; the real
guarantee stays the ``role``: give it SELECT grants only. A statement past its deadline
is cancelled through the API.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import decimal
import math
import time
import uuid
from pathlib import Path
from typing import Any

from .warehouse_http import api_base, client, read_json, short, transport
from .warehouses import Rows, Session, Warehouse, WarehouseError, positional, setting

__all__ = ["SnowflakeSession", "SnowflakeWarehouse", "read_only_problem"]

_QUERIES = {"select", "with", "show", "describe", "desc", "explain", "values", "("}
_WRITES = {
    "insert", "update", "delete", "merge", "create", "drop", "alter", "truncate", "copy",
    "put", "remove", "grant", "revoke", "call", "execute", "use", "set", "unset", "begin",
    "commit", "rollback", "undrop", "comment",
}  # fmt: skip
_TIMEOUT_CODES = {"000630", "000604"}  # reached its timeout; cancelled
_POLL_SECONDS = 0.5


def read_only_problem(sql: str) -> str:
    """Why ``sql`` may not run on a read-only Snowflake database ('' when it may): its
    words as DuckDB's tokenizer reads them (strings and comments skipped)."""
    from ._sqlsyntax import tokens

    words = [
        t.text(sql).lower()
        for t in tokens(sql)
        if t.kind in ("keyword", "identifier", "operator") and not t.text(sql).startswith('"')
    ]
    if not words or words[0] not in _QUERIES:
        first = words[0].upper() if words else "an empty"
        return f"is read-only: {first} statements need 'read_only: false' in config.yml"
    writes = sorted(_WRITES.intersection(words))
    if writes:
        return f"is read-only: the statement contains {writes[0].upper()}"
    if any(w.startswith("system$") for w in words):
        return "is read-only: SYSTEM$ functions are not allowed in a read-only query"
    return ""


def _binding(value: Any) -> dict[str, Any]:
    if value is None:
        return {"type": "TEXT", "value": None}
    if isinstance(value, bool):
        return {"type": "BOOLEAN", "value": "true" if value else "false"}
    if isinstance(value, int):
        return {"type": "FIXED", "value": str(value)}
    if isinstance(value, float):
        text = str(value) if math.isfinite(value) else ("NaN" if math.isnan(value) else "inf")
        return {"type": "REAL", "value": text}
    if isinstance(value, decimal.Decimal):
        return {"type": "FIXED", "value": str(value)}
    if isinstance(value, _dt.datetime):
        return {"type": "TEXT", "value": value.isoformat()}
    if isinstance(value, _dt.date):
        return {"type": "TEXT", "value": value.isoformat()}
    return {"type": "TEXT", "value": str(value)}


def _value(kind: dict[str, Any], value: Any) -> Any:
    if value is None:
        return None
    name = str(kind.get("type", "")).lower()
    try:
        if name == "fixed":
            return int(value) if not kind.get("scale") else decimal.Decimal(value)
        if name == "real":
            return float(value)
        if name == "boolean":
            return str(value).lower() in ("true", "1")
        if name == "date":
            return _dt.date(1970, 1, 1) + _dt.timedelta(days=int(value))
    except (ValueError, decimal.InvalidOperation, OverflowError):
        return value
    return value


class SnowflakeSession(Session):
    def __init__(self, warehouse: SnowflakeWarehouse, http: Any) -> None:
        self.warehouse = warehouse
        self.http = http
        self.handle = ""

    def _answer(self, response: Any) -> dict[str, Any]:
        if response.status_code in (200, 202):
            return read_json(response)
        data: dict[str, Any] = {}
        with contextlib.suppress(WarehouseError):
            data = read_json(response)
        message = short(str(data.get("message") or response.text or f"HTTP {response.status_code}"))
        if response.status_code == 401:
            raise WarehouseError("auth", message)
        if str(data.get("code")) in _TIMEOUT_CODES:
            raise WarehouseError("timeout", message)
        if response.status_code >= 500:
            raise WarehouseError("unreachable", f"HTTP {response.status_code}: {message}")
        raise WarehouseError("sql", message)

    def run(
        self, sql: str, params: list[Any], *, writable: bool, timeout: float, max_rows: int
    ) -> Rows:
        if not writable:
            problem = read_only_problem(sql)
            if problem:
                raise WarehouseError("refused", problem)
        text, values = positional(sql, params, lambda _i, _v: "?")
        entry = self.warehouse.entry
        body: dict[str, Any] = {
            "statement": text,
            "timeout": max(1, math.ceil(timeout)),
            "parameters": {"MULTI_STATEMENT_COUNT": "1"},
        }
        for key in ("database", "schema", "warehouse", "role"):
            if entry.get(key):
                body[key] = str(entry[key])
        if values:
            body["bindings"] = {str(i): _binding(v) for i, v in enumerate(values, 1)}
        base = self.warehouse.base
        deadline = time.monotonic() + timeout
        try:
            answer = self._answer(
                self.http.post(
                    f"{base}/api/v2/statements", params={"requestId": str(uuid.uuid4())}, json=body
                )
            )
            self.handle = str(answer.get("statementHandle") or "")
            while "resultSetMetaData" not in answer:
                if time.monotonic() > deadline or not self.handle:
                    self.cancel()
                    raise WarehouseError("timeout", "the statement was still running")
                time.sleep(_POLL_SECONDS)
                answer = self._answer(self.http.get(f"{base}/api/v2/statements/{self.handle}"))
        except WarehouseError:
            raise
        except Exception as exc:
            raise transport(exc) from None
        meta = answer.get("resultSetMetaData") or {}
        kinds = meta.get("rowType") or []
        columns = [str(k.get("name")) for k in kinds]
        rows = [
            tuple(_value(k, v) for k, v in zip(kinds, row, strict=False))
            for row in answer.get("data") or []
        ]
        total = int(meta.get("numRows") or len(rows))
        return columns, rows[:max_rows], len(rows) > max_rows or total > max_rows

    def cancel(self) -> None:
        if self.handle:
            self.http.post(f"{self.warehouse.base}/api/v2/statements/{self.handle}/cancel")

    def close(self) -> None:
        self.http.close()


class SnowflakeWarehouse(Warehouse):
    dialect = "snowflake"

    def __init__(self, name: str, entry: dict[str, Any], root: Path) -> None:
        super().__init__(name, entry, root)
        account = str(entry.get("account") or "")
        self.base = api_base(entry.get("api_url"), f"https://{account}.snowflakecomputing.com")

    def _token(self) -> tuple[str, str]:
        key_path = self.entry.get("private_key_path")
        if key_path:
            return self._jwt(str(key_path)), "KEYPAIR_JWT"
        token = setting(self.entry, "password")
        if not token:
            raise WarehouseError(
                "config",
                "no credential: set password_var (a programmatic access token) or "
                "private_key_path (key-pair); the SQL API signs in with no other",
            )
        return str(token), "PROGRAMMATIC_ACCESS_TOKEN"

    def _jwt(self, key_path: str) -> str:
        try:
            import jwt
            from cryptography.hazmat.primitives import hashes, serialization
        except ImportError:
            raise WarehouseError(
                "config",
                "private_key_path needs PyJWT: pip install 'oxyeval[snowflake]'",
            ) from None
        import base64

        path = Path(key_path).expanduser()
        path = path if path.is_absolute() else self.root / path
        try:
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        except (OSError, ValueError, TypeError) as exc:
            raise WarehouseError(
                "config",
                f"private_key_path {key_path}: not a readable private key ({type(exc).__name__})",
            ) from None
        public = key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        digest = hashes.Hash(hashes.SHA256())
        digest.update(public)
        fingerprint = base64.b64encode(digest.finalize()).decode()
        account = str(self.entry.get("account") or "").split(".")[0].upper()
        user = str(self.entry.get("username") or "").upper()
        now = int(time.time())
        claims = {
            "iss": f"{account}.{user}.SHA256:{fingerprint}",
            "sub": f"{account}.{user}",
            "iat": now,
            "exp": now + 3540,
        }
        return str(jwt.encode(claims, key, algorithm="RS256"))  # type: ignore[arg-type]

    def open(self, timeout: float) -> SnowflakeSession:
        from ..redact import register_secret

        token, kind = self._token()
        register_secret(token)
        headers = {
            "Authorization": f"Bearer {token}",
            "X-Snowflake-Authorization-Token-Type": kind,
            "Accept": "application/json",
            "User-Agent": "oxyeval",
        }
        return SnowflakeSession(self, client(timeout + 5.0, headers))

    def catalog_query(self) -> str:
        return (
            "SELECT table_schema, table_name, column_name, data_type "
            "FROM information_schema.columns WHERE table_schema <> 'INFORMATION_SCHEMA' "
            "ORDER BY table_schema, table_name, ordinal_position"
        )
