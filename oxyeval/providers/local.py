"""Model servers on the user's own machine or network, and what oxyeval assumes of them.

A local server (llama.cpp, Ollama, vLLM, LM Studio, TGI) is not a hosted API: it
often answers one request at a time and queues the rest, each queued request's
``timeout`` running while it waits, and it goes on generating for a request whose
client left unless the request was streamed. So a model whose endpoint is local starts
at :data:`LOCAL_CONCURRENCY` requests in flight unless its definition says otherwise,
and the calls to an OpenAI-compatible one are streamed (:func:`streamed_by_default`), so
that a timed-out or cancelled call stops the generation on servers that notice a closed
stream.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "LOCAL_CONCURRENCY",
    "REMOTE_CONCURRENCY",
    "default_concurrency",
    "endpoint_defaults",
    "local_endpoint",
    "streamed_by_default",
]

#: Requests in flight for a local endpoint whose model definition sets no
#: ``concurrency``: llama-cpp-python and a laptop's Ollama serve one at a time.
LOCAL_CONCURRENCY = 1
#: The same for a hosted API.
REMOTE_CONCURRENCY = 16
#: Vendors whose default endpoint is on this machine.
_LOCAL_VENDORS = frozenset({"ollama"})
#: The wire formats local servers speak (llama.cpp, Ollama, vLLM, LM Studio, TGI): a
#: local endpoint of another vendor is a proxy or a test double, left as configured.
_LOCAL_SERVER_VENDORS = frozenset({"openai", "ollama"})


def local_endpoint(vendor: str, api_url: str | None) -> bool:
    """Whether a model's requests go to this machine or a private network: a loopback,
    private or link-local address, ``localhost``, a ``.local``/``.internal``/``.lan``
    name, or a vendor whose default endpoint is local (Ollama) when no URL is given."""
    if not api_url:
        return vendor in _LOCAL_VENDORS
    try:
        host = (urlsplit(api_url).hostname or "").strip("[]").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal", ".lan")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def default_concurrency(vendor: str, api_url: str | None) -> int:
    """The ``concurrency`` of a model definition that sets none."""
    return LOCAL_CONCURRENCY if local_endpoint(vendor, api_url) else REMOTE_CONCURRENCY


def streamed_by_default(vendor: str, api_url: str | None) -> bool:
    """Whether a model definition that says nothing about it streams its calls: a local
    endpoint of an OpenAI-compatible server."""
    return vendor in _LOCAL_SERVER_VENDORS and local_endpoint(vendor, api_url)


def endpoint_defaults(vendor: str, api_url: str | None) -> dict[str, Any]:
    """The :class:`~oxyeval.providers.ModelSpec` fields a model definition that sets none
    of them gets from where its endpoint is: ``concurrency``, ``stream`` and ``local``
    (a local server's smaller default answer cap, ``LOCAL_OUTPUT_TOKENS``)."""
    local = streamed_by_default(vendor, api_url)
    return {
        "concurrency": default_concurrency(vendor, api_url),
        "stream": local,
        "local": local,
    }
