"""HTTP for every vendor: one client factory and one POST helper.

:func:`new_client` is the only place an ``httpx.AsyncClient`` is made, for chat and
embedding models alike (a run makes one and shares it: a client per call would cost a
TLS handshake and a connection pool each time). Its policy:

* **Timeouts**: each request carries its model's ``timeout``, and :func:`post_json`
  bounds the whole attempt by it (connect, send, wait, read); the client's own
  120 s (10 s to connect) only covers a request sent without one.
* **Limits**: no cap on connections, since the endpoints' adaptive limiters
  (``_limiter.py``) are the one gate and a request queued in httpx for a connection
  would spend its timeout waiting; keep-alive for as many connections as the
  models' ``concurrency`` adds up to.
* **TLS**: https is always verified, against certifi's bundle or, as httpx does,
  ``SSL_CERT_FILE``/``SSL_CERT_DIR``. The bundle is loaded at the first TLS
  handshake, not when the client is made: loading it costs ~30 ms, which a run that
  only talks plain http to local servers (vLLM, Ollama, the benchmarks) never pays.
  A client made for local models can therefore safely reach an https embedding API.
* **Redirects are never followed.** An API does not redirect a POST; following one
  would send the key headers (httpx strips only ``Authorization``, not
  ``x-api-key`` or ``x-goog-api-key``) to whatever host the redirect names, or
  downgrade https to http. A 3xx is an error that names where it pointed, so the
  user can put that in ``api_url``.
* Proxies from the environment (``HTTPS_PROXY``...) are honoured, as httpx does.

:func:`post_json` turns every way a request can fail into a ProviderError that says
whether a retry can help, so vendor classes only build bodies and parse answers.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import itertools
import json
import re
import time
from collections.abc import Awaitable
from datetime import timezone
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ProviderError
from ..inputs import JSONProblem, loads
from ..redact import clip, mask_credentials, redact, split_userinfo
from ._base import AttemptTimeout, Usage

if TYPE_CHECKING:
    import ssl

    import httpx

    from ._base import ModelSpec, VendorAPI

T = TypeVar("T")

__all__ = [
    "MAX_ANSWER_BYTES",
    "TooLarge",
    "count",
    "error_response",
    "float_vector",
    "json_body",
    "malformed",
    "new_client",
    "parse_retry_after",
    "post_json",
    "read_response",
    "request_error",
    "require_client",
    "shown_url",
    "usage_from",
    "within_deadline",
]

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})

#: Seconds for a request sent without its own timeout (post_json always sends one).
DEFAULT_TIMEOUT = 120.0
CONNECT_TIMEOUT = 10.0


def new_client(keepalive: int = 10) -> httpx.AsyncClient:
    """The run's HTTP client, with the policy the module docstring gives.

    Made before the run's calls start, so it also pays now what httpx's first request
    would: importing anyio's asyncio backend (~40 ms). Imported at that first request,
    it blocked the event loop while other calls' clocks ran, and a local model timed
    beside a remote one looked three times slower."""
    import importlib

    with contextlib.suppress(ImportError):  # anyio's layout is its own: a cost, not a need
        importlib.import_module("anyio._backends._asyncio")
    shards = -(-max(1, keepalive) // _CONNECTIONS_PER_POOL)
    if shards > 1:
        return _sharded_class()(shards, -(-keepalive // shards))  # type: ignore[call-arg]
    return _client(max(1, keepalive))


#: Connections one httpx pool is given at most. httpcore looks at every connection of
#: its pool on each request and each response (expired? idle?, a system call each): with
#: 200 kept alive that scan was three quarters of the main thread at concurrency 200
#: (bench_calls_scale). Several smaller pools keep each scan short.
_CONNECTIONS_PER_POOL = 32


def _client(keepalive: int) -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient(
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=keepalive),
        timeout=httpx.Timeout(DEFAULT_TIMEOUT, connect=CONNECT_TIMEOUT),
        follow_redirects=False,
        verify=_tls_context(),
    )


@functools.cache
def _sharded_class() -> type[httpx.AsyncClient]:
    import httpx

    class ShardedClient(httpx.AsyncClient):
        """One client to its users, whose streamed requests (every model call) go to
        its pools in turn; closed, it closes them all."""

        def __init__(self, shards: int, keepalive: int) -> None:
            super().__init__(
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=keepalive),
                timeout=httpx.Timeout(DEFAULT_TIMEOUT, connect=CONNECT_TIMEOUT),
                follow_redirects=False,
                verify=_tls_context(),
            )
            self.shards = [_client(keepalive) for _ in range(shards - 1)]
            self._turn = itertools.cycle([None, *self.shards])

        def stream(self, *args: Any, **kwargs: Any) -> Any:
            shard = next(self._turn)
            if shard is None:
                return super().stream(*args, **kwargs)
            return shard.stream(*args, **kwargs)

        async def aclose(self) -> None:
            try:
                for shard in self.shards:
                    await shard.aclose()
            finally:
                await super().aclose()

    return ShardedClient


def _tls_context() -> ssl.SSLContext:
    """A verifying client context, as ``ssl.create_default_context`` makes one, whose CA
    certificates are loaded at its first handshake."""
    import ssl
    import sys

    context = _deferred_ca_context_class()(ssl.PROTOCOL_TLS_CLIENT)  # verifies cert and host
    if sys.version_info >= (3, 13):  # what create_default_context adds since 3.13
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
    return context


@functools.cache
def _deferred_ca_context_class() -> type[ssl.SSLContext]:
    """Defined on first use: ``ssl`` is not imported before a client is made."""
    import os
    import ssl
    import threading

    class DeferredCAContext(ssl.SSLContext):
        _ca_lock = threading.Lock()
        _ca_loaded = False

        def _load_ca(self) -> None:
            with self._ca_lock:  # anyio calls wrap_bio of a custom context in a thread
                if self._ca_loaded:
                    return
                cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
                if cafile:
                    self.load_verify_locations(cafile=cafile)
                elif capath:
                    self.load_verify_locations(capath=capath)
                else:
                    import certifi

                    self.load_verify_locations(cafile=certifi.where())
                self._ca_loaded = True

        def wrap_bio(self, *args: Any, **kwargs: Any) -> Any:
            self._load_ca()
            return super().wrap_bio(*args, **kwargs)

        def wrap_socket(self, *args: Any, **kwargs: Any) -> Any:
            self._load_ca()
            return super().wrap_socket(*args, **kwargs)

    return DeferredCAContext


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
        body = loads(response.content)
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


#: Characters of a server's error text shown in a message (redacted first, then cut).
_SHOWN_ERROR = 300
#: Characters of a malformed body shown (redacted first, then cut).
_SHOWN_BODY = 200


def shown_url(url: str) -> str:
    """A request URL as messages show it: ``http://***@host/v1`` (``api_url`` may carry a
    user name and a password, which httpx sends as Basic auth: a token is often written
    as the user name alone, so the whole userinfo is masked)."""
    return mask_credentials(url)


def _server_message(response: httpx.Response) -> str:
    """The vendor's own error text when it sent one, else the body, whole: the caller
    redacts, then cuts (:func:`oxyeval.redact.clip`)."""
    text = response.text
    try:
        body = loads(response.content)
    except ValueError:  # not JSON, or JSON nested 100,000 deep: the start of the text
        body = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
        if isinstance(body.get("message"), str):
            return body["message"]
    return " ".join(text.split())


def _without_traceback(text: str) -> str:
    """A Python server's traceback (llama-cpp-python sends its own in the error message)
    as its last line, the exception: the frames say nothing a user can act on, and a
    message repeated in a report, a retry note and a judge error would carry them all."""
    if "Traceback (most recent call last)" not in text:
        return text
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    head = text.split("Traceback (most recent call last)", 1)[0].strip()
    last = lines[-1] if lines else ""
    kept = f"{head} {last}".strip() if head and head not in last else last
    return f"{kept} (the server's traceback is left out)"


def _status_error(spec: ModelSpec, url: str, response: httpx.Response) -> ProviderError:
    status = response.status_code
    detail = clip(_without_traceback(_server_message(response)), _SHOWN_ERROR)
    url = shown_url(url)
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


def _redirect_error(spec: ModelSpec, url: str, response: httpx.Response) -> ProviderError:
    """A 3xx: not followed (see the module docstring), so say where it pointed."""
    target = response.headers.get("location")
    where = f" to {shown_url(redact(str(response.url.join(target))))}" if target else ""
    url = shown_url(url)
    return ProviderError(
        f"model '{spec.name}' ({spec.vendor}): HTTP {response.status_code} from {url} "
        f"redirects{where}. oxyeval does not follow redirects (they would carry the API "
        "key to another address); set api_url in config.yml to the address the server "
        "redirects to",
        model=spec.name,
        status=response.status_code,
    )


def _retry_after(response: httpx.Response) -> float | None:
    delay = parse_retry_after(response.headers)
    return delay if delay is not None else _body_retry_delay(response)


def malformed(spec: ModelSpec, url: str, expected: str, body: Any = None) -> ProviderError:
    shown = ""
    if body is not None:
        text = body if isinstance(body, str) else json.dumps(body, default=str)
        shown = f"; got: {clip(text, _SHOWN_BODY)}"
    return ProviderError(
        f"model '{spec.name}' ({spec.vendor}): malformed response from {shown_url(url)}: "
        f"expected {expected}{shown}",
        model=spec.name,
    )


def _timeout_error(spec: ModelSpec, url: str, exc: BaseException) -> ProviderError:
    """Which deadline fired, and (once) the settings that move it (retryable: the next
    try may be quicker)."""
    import httpx

    who = f"model '{spec.name}' ({spec.vendor})"
    url = shown_url(url)
    if isinstance(exc, httpx.ConnectTimeout):
        what = f"could not connect to {url} within {spec.timeout:g}s (ConnectTimeout)"
        hint = "Is the server up and api_url right? Or raise `timeout`"
    else:
        what = (
            f"no complete answer from {url} within {spec.timeout:g}s (the model's `timeout` "
            "bounds each whole attempt: connecting, waiting in the server's queue and reading)"
        )
        hint = (
            "Raise `timeout` for this model in config.yml, lower its `concurrency` (a local "
            "server often answers one request at a time), or set `max_tokens` to shorten answers"
        )
    return AttemptTimeout(f"{who}: {what}. {hint}", model=spec.name, retryable=True)


def require_client(api: VendorAPI) -> httpx.AsyncClient:
    """The shared client; HTTP vendors cannot run without one (the pools always pass it)."""
    if api.client is None:
        raise ProviderError(
            f"model '{api.spec.name}' ({api.spec.vendor}): no HTTP client was given to "
            f"{type(api).__name__}; create models through ModelPool (embedding models "
            "through EmbeddingPool)",
            model=api.spec.name,
        )
    return api.client


#: Largest response body read from a chat model: far above any real answer (a few KB to
#: a few hundred KB), far below what would exhaust memory once the text is copied into
#: reports and judge prompts. Embedding batches are bigger (numbers as JSON text).
MAX_ANSWER_BYTES = 8_000_000
MAX_EMBEDDING_BYTES = 128_000_000


class TooLarge(Exception):
    """A body over the size limit; :func:`request_error` words it."""


async def _post(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    timeout: float,
    max_bytes: int,
) -> httpx.Response:
    async with client.stream("POST", url, json=body, headers=headers, timeout=timeout) as r:
        return await read_response(r, max_bytes)


async def read_response(response: httpx.Response, max_bytes: int) -> httpx.Response:
    """The response with its body read, refusing more than ``max_bytes`` (decoded, so a
    compressed bomb stops there too) instead of holding whatever a server sends in memory.
    The body is kept decoded: headers that describe its encoding on the wire are dropped."""
    import httpx

    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge
        chunks.append(chunk)
    kept = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _DECODED]
    return httpx.Response(
        response.status_code, headers=kept, content=b"".join(chunks), request=response.request
    )


_DECODED = frozenset({"content-encoding", "content-length", "transfer-encoding"})


async def within_deadline(
    spec: ModelSpec, url: str, attempt: Awaitable[T], max_bytes: int = MAX_ANSWER_BYTES
) -> T:
    """Run one attempt (a request and the reading of its answer, whole or streamed) under
    ``spec.timeout`` for the whole of it, not per read: httpx's own timeouts restart with
    every byte, so a server that drips its answer would otherwise hold the call for as
    long as it likes. What goes wrong becomes a classified ProviderError
    (:func:`request_error`); anything else is re-raised."""
    import asyncio

    try:
        # wait_for, not asyncio.timeout: the latter is Python 3.11+.
        return await asyncio.wait_for(attempt, spec.timeout)
    except Exception as exc:
        error = request_error(spec, url, exc, max_bytes)
        if error is None:
            raise
        raise error from None


def json_body(
    spec: ModelSpec, url: str, content: bytes, expected: str = "a JSON body"
) -> dict[str, Any]:
    """The JSON object an answer's body holds, or a malformed-answer ProviderError."""
    try:
        data = loads(content, f"the answer of model '{spec.name}' ({spec.vendor})")
    except JSONProblem as exc:
        shown = content.decode("utf-8", "replace")
        raise malformed(spec, url, f"{expected} ({exc})", shown) from None
    if not isinstance(data, dict):
        raise malformed(spec, url, "a JSON object", data)
    return data


async def post_json(
    client: httpx.AsyncClient,
    spec: ModelSpec,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    *,
    max_bytes: int = MAX_ANSWER_BYTES,
) -> dict[str, Any]:
    """POST ``body`` and return the decoded JSON object, or raise a classified ProviderError.
    ``spec.timeout`` bounds the whole attempt (:func:`within_deadline`); a body over
    ``max_bytes`` is an error, not a MemoryError."""
    sent = _post(client, url, body, {**headers, **spec.headers}, spec.timeout, max_bytes)
    response = await within_deadline(spec, url, sent, max_bytes)
    failed = error_response(spec, url, response)
    if failed is not None:
        raise failed
    return json_body(spec, url, response.content)


def request_error(
    spec: ModelSpec, url: str, exc: BaseException, max_bytes: int = MAX_ANSWER_BYTES
) -> ProviderError | None:
    """The ProviderError for ``exc``, raised while sending a request or reading its answer
    (whole or streamed), saying whether a retry can help; None when ``exc`` is not about
    the request (the caller re-raises it)."""
    import asyncio

    import httpx

    where = shown_url(url)
    if isinstance(exc, TooLarge):
        return ProviderError(
            f"model '{spec.name}' ({spec.vendor}): the response from {where} is larger than "
            f"{max_bytes // 1_000_000} MB, the most oxyeval reads; check the server (or the "
            "model's max_tokens)",
            model=spec.name,
        )
    if isinstance(exc, (asyncio.TimeoutError, httpx.TimeoutException)):
        return _timeout_error(spec, url, exc)
    if isinstance(exc, UnicodeEncodeError):  # httpx sends header values as ASCII
        return ProviderError(
            f"model '{spec.name}' ({spec.vendor}): a header value is not ASCII text, which "
            "an HTTP header cannot carry; check `headers:` of this model in config.yml",
            model=spec.name,
        )
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        # httpx's words quote the part it could not read ("Invalid port: 'pa'"), which
        # in a URL with credentials may be a piece of the password: not shown then.
        why = type(exc).__name__ if split_userinfo(url) else redact(str(exc))
        return ProviderError(
            f"model '{spec.name}' ({spec.vendor}): {where} is not a usable http(s) URL "
            f"({why or type(exc).__name__}). Check api_url in config.yml.",
            model=spec.name,
        )
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return ProviderError(
            f"model '{spec.name}' ({spec.vendor}): the connection to {where} dropped before the "
            f"whole response arrived ({redact(str(exc)) or type(exc).__name__})",
            model=spec.name,
            retryable=True,
        )
    if isinstance(exc, httpx.TransportError):
        return ProviderError(
            f"model '{spec.name}' ({spec.vendor}): could not reach {where}: "
            f"{redact(str(exc)) or type(exc).__name__}. Is the server running and api_url right?",
            model=spec.name,
            retryable=True,
        )
    if isinstance(exc, httpx.HTTPError):  # undecodable body, redirect loop: a retry won't help
        return ProviderError(
            f"model '{spec.name}' ({spec.vendor}): request to {where} failed: "
            f"{redact(str(exc)) or type(exc).__name__}",
            model=spec.name,
        )
    return None


def error_response(spec: ModelSpec, url: str, response: httpx.Response) -> ProviderError | None:
    """The error a 3xx, 4xx or 5xx answer means; None for a success."""
    if response.status_code >= 400:
        return _status_error(spec, url, response)
    if response.status_code >= 300:
        return _redirect_error(spec, url, response)
    return None


def count(value: Any) -> int | None:
    """A count a server sent (an int, not a bool, 0 to 2**53), or None for anything else:
    a negative or 30-digit token count is no count, and would not fit the history's
    INTEGER column."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**53:
        return value
    return None


def usage_from(block: Any, input_key: str, output_key: str) -> Usage:
    """Token counts from a vendor's usage object; absent or odd values become None."""
    if not isinstance(block, dict):
        return Usage()
    return Usage(
        input_tokens=count(block.get(input_key)), output_tokens=count(block.get(output_key))
    )


def float_vector(value: Any) -> list[float] | None:
    """A non-empty list of numbers as floats (an embedding), or None for anything else."""
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        return None
    return [float(x) for x in value]
