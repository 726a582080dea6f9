"""One POST helper shared by the HTTP vendors.

It turns every way a request can fail into a ProviderError that says whether a
retry can help, so vendor classes only build bodies and parse answers.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from datetime import timezone
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..redact import redact
from ._base import Usage

if TYPE_CHECKING:
    import httpx

    from ._base import ModelAPI, ModelSpec

__all__ = [
    "malformed",
    "parse_retry_after",
    "post_json",
    "require_client",
    "usage_from",
]

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000" parses as naive; HTTP dates are always UTC
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - time.time())


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _body_retry_delay(response: httpx.Response) -> float | None:
    """Google APIs send no Retry-After header; the delay is in a RetryInfo error detail."""
    try:
        body = response.json()
    except ValueError:
        return None
    err = body.get("error") if isinstance(body, dict) else None
    details = err.get("details") if isinstance(err, dict) else None
    if not isinstance(details, list):
        return None
    for item in details:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(str(item.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def _server_message(response: httpx.Response) -> str:
    """The vendor's own error text when it sent one, else the start of the body."""
    text = response.text
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
        if isinstance(body.get("message"), str):
            return body["message"]
    text = " ".join(text.split())
    return text[:300] + ("..." if len(text) > 300 else "")


def _status_error(spec: ModelSpec, url: str, response: httpx.Response) -> ProviderError:
    status = response.status_code
    detail = redact(_server_message(response))
    who = f"model '{spec.name}' ({spec.vendor}, {spec.model_ref or 'no model_ref'})"
    suffix = f": {detail}" if detail else ""
    if status in (401, 403):
        where = f"the key in ${spec.key_var}" if spec.key_var else "the API key (no key_var is set)"
        msg = (
            f"{who}: HTTP {status} from {url}, the server refused the credentials. "
            f"Check {where} and that it is allowed to use this model{suffix}"
        )
        return ProviderError(msg, model=spec.name, status=status)
    if status == 404:
        msg = (
            f"{who}: HTTP 404 from {url}. Check that model_ref '{spec.model_ref}' exists "
            f"on this server and that api_url points at the right base URL{suffix}"
        )
        return ProviderError(msg, model=spec.name, status=status)
    retryable = status in RETRYABLE_STATUS or status >= 500
    msg = f"{who}: HTTP {status} from {url}{suffix}"
    return ProviderError(
        msg,
        model=spec.name,
        status=status,
        retryable=retryable,
        retry_after=_retry_after(response) if retryable else None,
    )


def _retry_after(response: httpx.Response) -> float | None:
    delay = parse_retry_after(response.headers)
    return delay if delay is not None else _body_retry_delay(response)


def malformed(spec: ModelSpec, url: str, expected: str, body: Any = None) -> ProviderError:
    shown = ""
    if body is not None:
        shown = json.dumps(body)[:200] if not isinstance(body, str) else body[:200]
        shown = f"; got: {redact(shown)}"
    return ProviderError(
        f"model '{spec.name}' ({spec.vendor}): malformed response from {url}: expected {expected}{shown}",
        model=spec.name,
    )


def _timeout_error(spec: ModelSpec, url: str, exc: BaseException) -> ProviderError:
    """Which deadline fired, and the settings that move it (retryable: the next try may be quicker)."""
    import httpx

    who = f"model '{spec.name}' ({spec.vendor})"
    if isinstance(exc, httpx.ConnectTimeout):
        what = f"could not connect to {url} within {spec.timeout:g}s (ConnectTimeout)"
        hint = "Is the server up and api_url right? Or raise `timeout`"
    else:
        what = (
            f"no complete answer from {url} within {spec.timeout:g}s "
            "(the model's `timeout` bounds each whole attempt: connecting, waiting and reading)"
        )
        hint = (
            "Raise `timeout` for this model in config.yml, lower its `concurrency` if the "
            "server queues requests, or set `max_tokens` to shorten answers"
        )
    return ProviderError(f"{who}: {what}. {hint}", model=spec.name, retryable=True)


def require_client(api: ModelAPI) -> httpx.AsyncClient:
    """The shared client; HTTP vendors cannot run without one (ModelPool always passes it)."""
    if api.client is None:
        raise ProviderError(
            f"model '{api.spec.name}' ({api.spec.vendor}): no HTTP client was given to "
            f"{type(api).__name__}; create models through ModelPool",
            model=api.spec.name,
        )
    return api.client


async def post_json(
    client: httpx.AsyncClient,
    spec: ModelSpec,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
) -> dict[str, Any]:
    """POST ``body`` and return the decoded JSON object, or raise a classified ProviderError.

    ``spec.timeout`` bounds the whole attempt (connect, send, headers and body),
    not each read: httpx's own timeouts restart with every byte, so a server that
    drips its answer would otherwise hold the call for as long as it likes.
    """
    import asyncio

    import httpx

    try:
        # wait_for, not asyncio.timeout: the latter is Python 3.11+.
        response = await asyncio.wait_for(
            client.post(url, json=body, headers={**headers, **spec.headers}, timeout=spec.timeout),
            spec.timeout,
        )
    except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
        raise _timeout_error(spec, url, exc) from None
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise ProviderError(
            f"model '{spec.name}' ({spec.vendor}): {url} is not a usable http(s) URL "
            f"({redact(str(exc)) or type(exc).__name__}). Check api_url in config.yml.",
            model=spec.name,
        ) from None
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise ProviderError(
            f"model '{spec.name}' ({spec.vendor}): the connection to {url} dropped before the "
            f"whole response arrived ({redact(str(exc)) or type(exc).__name__})",
            model=spec.name,
            retryable=True,
        ) from None
    except httpx.TransportError as exc:
        raise ProviderError(
            f"model '{spec.name}' ({spec.vendor}): could not reach {url}: "
            f"{redact(str(exc)) or type(exc).__name__}. Is the server running and api_url right?",
            model=spec.name,
            retryable=True,
        ) from None
    except httpx.HTTPError as exc:  # undecodable body, redirect loop: a retry will not help
        raise ProviderError(
            f"model '{spec.name}' ({spec.vendor}): request to {url} failed: "
            f"{redact(str(exc)) or type(exc).__name__}",
            model=spec.name,
        ) from None
    if response.status_code >= 400:
        raise _status_error(spec, url, response)
    try:
        data = response.json()
    except ValueError:
        raise malformed(spec, url, "a JSON body", response.text) from None
    if not isinstance(data, dict):
        raise malformed(spec, url, "a JSON object", data)
    return data


def usage_from(block: Any, input_key: str, output_key: str) -> Usage:
    """Token counts from a vendor's usage object; absent or odd values become None."""
    if not isinstance(block, dict):
        return Usage()

    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return Usage(
        input_tokens=count(block.get(input_key)), output_tokens=count(block.get(output_key))
    )
