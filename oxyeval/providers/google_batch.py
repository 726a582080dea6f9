"""Gemini's batch mode, with the requests inlined.

On the wire: ``POST {base}/models/{model}:batchGenerateContent`` with ``{batch:
{displayName, inputConfig: {requests: {requests: [{request, metadata: {key}}]}}}}``,
``request`` being the body a live ``generateContent`` call would send; the answer is a
long-running operation whose ``name`` (``batches/{id}``) is polled with ``GET
{base}/{name}``. Its ``metadata`` (the batch) says ``state`` (BATCH_STATE_PENDING,
RUNNING, SUCCEEDED, FAILED, CANCELLED, EXPIRED) and ``batchStats {requestCount,
successfulRequestCount, failedRequestCount, pendingRequestCount}`` (int64s as text);
once ``done``, ``response.inlinedResponses.inlinedResponses`` holds ``[{response |
error, metadata: {key}}]`` in the order of the requests. ``POST {base}/{name}:cancel``
stops one.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..errors import ProviderError
from ._base import Completion
from ._batch_base import BatchAPI, BatchRequest, BatchStatus, count_of
from .google import _model_url, build_gemini_body

__all__ = ["GoogleBatchAPI"]

_STATES = {
    "BATCH_STATE_SUCCEEDED": "ended",
    "BATCH_STATE_FAILED": "failed",
    "BATCH_STATE_CANCELLED": "cancelled",
    "BATCH_STATE_EXPIRED": "expired",
}


class GoogleBatchAPI(BatchAPI):
    vendor: ClassVar[str] = "google"

    @property
    def _headers(self) -> dict[str, str]:
        return dict(self.api._headers)  # type: ignore[attr-defined]

    async def submit(self, requests: list[BatchRequest]) -> str:
        body = {
            "batch": {
                "displayName": "oxyeval",
                "inputConfig": {
                    "requests": {
                        "requests": [
                            {
                                "request": build_gemini_body(r.messages, r.params),
                                "metadata": {"key": r.custom_id},
                            }
                            for r in requests
                        ]
                    }
                },
            }
        }
        url = _model_url(self.api.base_url, self.spec, "batchGenerateContent")
        created = await self.http("POST", url, json=body, headers=self._headers, submit=True)
        data = created.json()
        name = data.get("name") if isinstance(data, dict) else None
        if not isinstance(name, str) or not name:
            raise self.failed("create", "creating the batch answered without a 'name'")
        return name

    async def poll(self, batch_id: str) -> BatchStatus:
        data = await self.get_json(f"{self.api.base_url}/{batch_id}", self._headers)
        meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        stats = meta.get("batchStats") if isinstance(meta.get("batchStats"), dict) else {}
        total = count_of(stats.get("requestCount"))
        ok, failed = (
            count_of(stats.get("successfulRequestCount")),
            count_of(stats.get("failedRequestCount")),
        )
        state = _STATES.get(str(meta.get("state")), "running")
        if data.get("done") is True and state == "running":
            state = "failed" if data.get("error") else "ended"
        output = data.get("response") if isinstance(data.get("response"), dict) else None
        if output is None and isinstance(meta.get("output"), dict):
            output = meta["output"]
        inlined = (output or {}).get("inlinedResponses")
        if isinstance(inlined, dict):
            inlined = inlined.get("inlinedResponses")
        detail: dict[str, Any] = {"responses": inlined} if isinstance(inlined, list) else {}
        return BatchStatus(state, done=ok + failed, total=total, failed=failed, detail=detail)

    async def results(
        self, batch_id: str, status: BatchStatus, requests: dict[str, BatchRequest]
    ) -> dict[str, Completion | ProviderError]:
        url = f"{self.api.base_url}/{batch_id}"
        order = list(requests.values())
        found: dict[str, Completion | ProviderError] = {}
        for index, item in enumerate(status.detail.get("responses") or []):
            if not isinstance(item, dict):
                continue
            meta = item.get("metadata")
            key = meta.get("key") if isinstance(meta, dict) else None
            request = requests.get(key) if isinstance(key, str) else None
            if request is None and key is None and index < len(order):
                request = order[index]  # answers come in the order of the requests
            if request is None:
                continue
            if isinstance(item.get("response"), dict):
                try:
                    found[request.custom_id] = self.answer(item["response"], url, request.params)
                except ProviderError as exc:
                    found[request.custom_id] = exc
            elif isinstance(item.get("error"), dict):
                error = item["error"]
                found[request.custom_id] = self.failed(
                    request.custom_id, str(error.get("message") or error.get("status") or error)
                )
        return found

    async def cancel(self, batch_id: str) -> None:
        await self.http("POST", f"{self.api.base_url}/{batch_id}:cancel", headers=self._headers)
