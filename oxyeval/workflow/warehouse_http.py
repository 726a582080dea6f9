"""What the warehouses spoken to over HTTP share (ClickHouse, BigQuery, Snowflake): where
their API is, the client, and reading the server's answer.

An ``api_url`` in config.yml (an emulator, a private endpoint) may be plain ``http://``
only on this machine: a token or password sent in clear anywhere else could be read on
the way.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit

from .warehouses import WarehouseError

__all__ = ["api_base", "client", "read_json", "short", "transport"]


def api_base(value: Any, default: str, key: str = "api_url") -> str:
    """The API's base URL, without a trailing slash: ``value`` when set, else ``default``."""
    url = str(value or default).strip().rstrip("/")
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WarehouseError("config", f"{key} {url!r} is not an http(s) URL")
    if parts.scheme == "http" and not _local(parts.hostname):
        raise WarehouseError(
            "config",
            f"{key} {url!r} sends credentials over plain http to another machine; use https "
            "(plain http is allowed for localhost only)",
        )
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _local(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def client(timeout: float, headers: dict[str, str] | None = None) -> Any:
    """An httpx client that never follows redirects (a credential must not be carried to
    another host) and gives up on a silent server after ``timeout`` seconds."""
    import httpx

    return httpx.Client(
        timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
        follow_redirects=False,
        headers=headers or {},
        trust_env=True,
    )


def short(text: str, limit: int = 300) -> str:
    """The first line of a server's message, cut."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first[:limit]


def read_json(response: Any) -> dict[str, Any]:
    """A JSON object from the server, or ``unreachable`` when it sent something else."""
    try:
        data = json.loads(response.content or b"{}")
    except ValueError:
        raise WarehouseError(
            "unreachable",
            f"the server answered HTTP {response.status_code} with no JSON: "
            f"{short(response.text, 200)}",
        ) from None
    if not isinstance(data, dict):
        raise WarehouseError("unreachable", "the server answered with JSON that is not an object")
    return data


def transport(exc: BaseException) -> WarehouseError:
    """An httpx transport failure (no answer, refused connection) as ``unreachable``."""
    return WarehouseError("unreachable", f"{type(exc).__name__}: {short(str(exc)) or 'no answer'}")
