"""Anthropic's Message Batches API.

On the wire: ``POST {base}/messages/batches`` with ``{requests: [{custom_id, params}]}``,
``params`` being the body a live ``/messages`` call would send (custom ids match
``^[a-zA-Z0-9_-]{1,64}$``). ``GET {base}/messages/batches/{id}`` says
``processing_status`` (in_progress, canceling, ended) and ``request_counts {processing,
succeeded, errored, canceled, expired}``; once ended, ``results_url`` serves JSON Lines of
``{custom_id, result: {type: succeeded, message} | {type: errored, error} | {type:
expired} | {type: canceled}}``. ``POST {base}/messages/batches/{id}/cancel`` stops one.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..errors import ProviderError
from ._base import Completion
from ._batch_base import BatchAPI, BatchRequest, BatchStatus, count_of, read_jsonl
from .anthropic import build_anthropic_body

__all__ = ["AnthropicBatchAPI"]


class AnthropicBatchAPI(BatchAPI):
    vendor: ClassVar[str] = "anthropic"
    max_requests: ClassVar[int] = 100_000

    @property
    def _headers(self) -> dict[str, str]:
        return dict(self.api._headers)  # type: ignore[attr-defined]

    async def submit(self, requests: list[BatchRequest]) -> str:
        body = {
            "requests": [
                {
                    "custom_id": r.custom_id,
                    "params": build_anthropic_body(self.spec.model_ref, r.messages, r.params),
                }
                for r in requests
            ]
        }
        url = f"{self.api.base_url}/messages/batches"
        created = await self.http("POST", url, json=body, headers=self._headers, submit=True)
        data = created.json()
        batch_id = data.get("id") if isinstance(data, dict) else None
        if not isinstance(batch_id, str) or not batch_id:
            raise self.failed("create", "creating the batch answered without an 'id'")
        return batch_id

    async def poll(self, batch_id: str) -> BatchStatus:
        data = await self.get_json(
            f"{self.api.base_url}/messages/batches/{batch_id}", self._headers
        )
        counts = data.get("request_counts") if isinstance(data.get("request_counts"), dict) else {}
        numbers = {k: count_of(counts.get(k)) for k in
                   ("processing", "succeeded", "errored", "canceled", "expired")}  # fmt: skip
        total = sum(numbers.values())
        state = "ended" if data.get("processing_status") == "ended" else "running"
        detail = {"results_url": data["results_url"]} if data.get("results_url") else {}
        return BatchStatus(
            state,
            done=total - numbers["processing"],
            total=total,
            failed=numbers["errored"] + numbers["expired"] + numbers["canceled"],
            detail=detail,
        )

    async def results(
        self, batch_id: str, status: BatchStatus, requests: dict[str, BatchRequest]
    ) -> dict[str, Completion | ProviderError]:
        url = status.detail.get("results_url")
        if not url:
            return {}
        response = await self.http("GET", url, headers=self._headers)
        found: dict[str, Completion | ProviderError] = {}
        for line in read_jsonl(response.content):
            custom_id = line.get("custom_id")
            request = requests.get(custom_id) if isinstance(custom_id, str) else None
            result = line.get("result")
            if request is None or not isinstance(result, dict):
                continue
            kind = result.get("type")
            if kind == "succeeded" and isinstance(result.get("message"), dict):
                try:
                    found[request.custom_id] = self.answer(result["message"], url, request.params)
                except ProviderError as exc:
                    found[request.custom_id] = exc
            elif kind == "errored":
                found[request.custom_id] = self.failed(request.custom_id, _error_text(result))
            # expired, canceled: not answered; asked again
        return found

    async def cancel(self, batch_id: str) -> None:
        await self.http(
            "POST", f"{self.api.base_url}/messages/batches/{batch_id}/cancel", headers=self._headers
        )


def _error_text(result: dict[str, Any]) -> str:
    error = result.get("error")
    while isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('message', 'no message')}"
    return "errored"
