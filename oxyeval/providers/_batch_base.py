"""The contract of a vendor's batch API: submit many requests at once, poll, read results.

A batch costs about half of the same calls made one by one, and takes minutes to hours
instead of seconds. Each vendor speaks its own wire format (one small module each:
:mod:`.openai_batch`, :mod:`.anthropic_batch`, :mod:`.google_batch`); what they share
is here: :class:`BatchAPI` (submit, poll, results, cancel), what a poll says
(:class:`BatchStatus`) and one HTTP helper that turns any failure into a classified
:class:`~oxyeval.errors.ProviderError`, as the live classes do.

A batch class reuses its vendor's live class to build each request's body and to read
each answer (``_completion``), so a batched answer is the very answer a live call would
have given for the same body.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ProviderError
from ._base import ChatMessage, Completion, GenerateParams, ModelAPI

if TYPE_CHECKING:
    import httpx

__all__ = [
    "FINAL_STATES",
    "BatchAPI",
    "BatchRequest",
    "BatchStatus",
    "NoBatchAPI",
    "batch_request",
]

#: States after which a batch changes no more (each vendor's spelling mapped to these).
FINAL_STATES = frozenset({"ended", "expired", "failed", "cancelled"})


class NoBatchAPI(ProviderError):
    """The server has no batch endpoint (HTTP 404/405/501 on submit): the calls go live."""


@dataclass(frozen=True)
class BatchRequest:
    """One call in a batch: its id within the batch, and what the live call would send."""

    custom_id: str
    messages: list[ChatMessage]
    params: GenerateParams


@dataclass
class BatchStatus:
    """What a poll says: ``state`` (``running`` or one of :data:`FINAL_STATES`), how many
    requests are done of ``total``, and what the vendor needs to fetch the results."""

    state: str
    done: int = 0
    total: int = 0
    failed: int = 0
    #: Vendor fields the results are read from (OpenAI's file ids, Anthropic's
    #: results_url, Gemini's inlined responses).
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES


class BatchAPI(ABC):
    """A vendor's batch endpoints for one configured model. ``api`` is the model's live
    class (its spec, key headers and base URL), whose body builder and answer reader
    the batch reuses; ``client`` an HTTP client the batch owns for as long as it polls."""

    vendor: ClassVar[str]
    #: Most requests one batch takes (the vendors' documented limits).
    max_requests: ClassVar[int] = 50_000

    def __init__(self, api: ModelAPI, client: httpx.AsyncClient) -> None:
        self.api = api
        self.spec = api.spec
        self.client = client

    @abstractmethod
    async def submit(self, requests: list[BatchRequest]) -> str:
        """Create the batch; return its id as the vendor names it."""

    @abstractmethod
    async def poll(self, batch_id: str) -> BatchStatus:
        """The batch's state and counts now."""

    @abstractmethod
    async def results(
        self, batch_id: str, status: BatchStatus, requests: dict[str, BatchRequest]
    ) -> dict[str, Completion | ProviderError]:
        """Each finished request's answer or error by custom id; a request missing from
        the map did not finish (expired, cancelled) and is asked again."""

    @abstractmethod
    async def cancel(self, batch_id: str) -> None:
        """Ask the vendor to stop the batch (what finished stays readable)."""

    # -- shared HTTP -----------------------------------------------------------------

    async def http(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        files: Any = None,
        data: Any = None,
        headers: dict[str, str] | None = None,
        submit: bool = False,
    ) -> httpx.Response:
        """One request to the batch endpoints, its failure a classified ProviderError
        (``submit``: a 404/405/501 means the server has no batch API: :class:`NoBatchAPI`)."""
        from ._http import error_response, request_error

        sent = {**(headers or {}), **self.spec.headers}
        try:
            response = await self.client.request(
                method,
                url,
                json=json,
                files=files,
                data=data,
                headers=sent,
                timeout=self.spec.timeout,
            )
        except Exception as exc:
            error = request_error(self.spec, url, exc)
            if error is None:
                raise
            raise error from None
        if submit and response.status_code in (404, 405, 501):
            raise NoBatchAPI(
                f"model '{self.spec.name}' ({self.spec.vendor}): the server at "
                f"{_shown(url)} has no batch API (HTTP {response.status_code})",
                model=self.spec.name,
                status=response.status_code,
            )
        failed = error_response(self.spec, url, response)
        if failed is not None:
            raise failed
        return response

    async def get_json(self, url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        from ._http import json_body

        response = await self.http("GET", url, headers=headers)
        return json_body(self.spec, url, response.content)

    def answer(self, body: dict[str, Any], url: str, params: GenerateParams) -> Completion:
        """A live call's answer read from ``body``, as the vendor's live class reads it."""
        return self.api._completion(body, url, params)  # type: ignore[attr-defined]

    def failed(self, custom_id: str, why: str, status: int | None = None) -> ProviderError:
        return ProviderError(
            f"model '{self.spec.name}' ({self.spec.vendor}): request {custom_id} of a batch "
            f"failed: {why}",
            model=self.spec.name,
            status=status,
        )


def _shown(url: str) -> str:
    from ._http import shown_url

    return shown_url(url)


def batch_request(
    custom_id: str, messages: list[ChatMessage], params: GenerateParams
) -> BatchRequest:
    return BatchRequest(custom_id, list(messages), params)


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    """JSON Lines, one object a line, as the vendors' batch files are."""
    import json

    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def read_jsonl(content: bytes) -> list[dict[str, Any]]:
    """The objects of a JSON Lines body; a line that is not an object is skipped (the
    request it answered is then missing, and asked again)."""
    import json

    found: list[dict[str, Any]] = []
    for line in content.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def count_of(value: Any) -> int:
    """A count as the vendors send it (a number, or Gemini's int64 as text)."""
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0
