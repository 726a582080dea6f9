"""OpenAI's Batch API, and servers that copy it.

On the wire: the requests go up as a JSON Lines file (``POST {base}/files``, multipart,
``purpose=batch``), one line each ``{custom_id, method: "POST", url:
"/v1/chat/completions", body}`` where ``body`` is what the live call would send; then
``POST {base}/batches`` with ``{input_file_id, endpoint, completion_window: "24h"}``.
``GET {base}/batches/{id}`` says ``status`` (validating, in_progress, finalizing,
completed, expired, failed, cancelling, cancelled) and ``request_counts {total,
completed, failed}``; when it ends, ``output_file_id`` and ``error_file_id`` name JSON
Lines files (``GET {base}/files/{id}/content``) whose lines are ``{custom_id, response:
{status_code, body}, error}``. An expired or cancelled batch still has the files of what
finished. ``POST {base}/batches/{id}/cancel`` stops one.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..errors import ProviderError
from ._base import Completion
from ._batch_base import BatchAPI, BatchRequest, BatchStatus, count_of, jsonl, read_jsonl
from .openai import bearer_headers, build_openai_body

__all__ = ["OpenAIBatchAPI"]

_STATES = {
    "completed": "ended",
    "expired": "expired",
    "failed": "failed",
    "cancelled": "cancelled",
}
ENDPOINT = "/v1/chat/completions"


class OpenAIBatchAPI(BatchAPI):
    vendor: ClassVar[str] = "openai"

    @property
    def _headers(self) -> dict[str, str]:
        return bearer_headers(self.spec)

    async def submit(self, requests: list[BatchRequest]) -> str:
        base = self.api.base_url
        lines = [
            {
                "custom_id": r.custom_id,
                "method": "POST",
                "url": ENDPOINT,
                "body": build_openai_body(self.spec.model_ref, r.messages, r.params),
            }
            for r in requests
        ]
        upload = await self.http(
            "POST",
            f"{base}/files",
            files={"file": ("oxyeval-batch.jsonl", jsonl(lines), "application/jsonl")},
            data={"purpose": "batch"},
            headers=self._headers,
            submit=True,
        )
        file_id = _field(upload.json(), "id")
        if file_id is None:
            raise self.failed("upload", "the file upload answered without an 'id'")
        created = await self.http(
            "POST",
            f"{base}/batches",
            json={"input_file_id": file_id, "endpoint": ENDPOINT, "completion_window": "24h"},
            headers=self._headers,
            submit=True,
        )
        batch_id = _field(created.json(), "id")
        if batch_id is None:
            raise self.failed("create", "creating the batch answered without an 'id'")
        return batch_id

    async def poll(self, batch_id: str) -> BatchStatus:
        data = await self.get_json(f"{self.api.base_url}/batches/{batch_id}", self._headers)
        raw = data.get("status")
        counts = data.get("request_counts") if isinstance(data.get("request_counts"), dict) else {}
        completed, failed = count_of(counts.get("completed")), count_of(counts.get("failed"))
        detail = {k: data.get(k) for k in ("output_file_id", "error_file_id") if data.get(k)}
        errors = data.get("errors")
        if isinstance(errors, dict) and isinstance(errors.get("data"), list) and errors["data"]:
            first = errors["data"][0]
            detail["error"] = first.get("message") if isinstance(first, dict) else str(first)
        return BatchStatus(
            _STATES.get(str(raw), "running"),
            done=completed + failed,
            total=count_of(counts.get("total")),
            failed=failed,
            detail=detail,
        )

    async def results(
        self, batch_id: str, status: BatchStatus, requests: dict[str, BatchRequest]
    ) -> dict[str, Completion | ProviderError]:
        found: dict[str, Completion | ProviderError] = {}
        for key in ("output_file_id", "error_file_id"):
            file_id = status.detail.get(key)
            if not file_id:
                continue
            url = f"{self.api.base_url}/files/{file_id}/content"
            response = await self.http("GET", url, headers=self._headers)
            for line in read_jsonl(response.content):
                custom_id = line.get("custom_id")
                request = requests.get(custom_id) if isinstance(custom_id, str) else None
                if request is None:
                    continue
                found[request.custom_id] = self._one(line, request, url)
        return found

    def _one(
        self, line: dict[str, Any], request: BatchRequest, url: str
    ) -> Completion | ProviderError:
        response = line.get("response")
        error = line.get("error")
        if isinstance(response, dict):
            code = response.get("status_code")
            body = response.get("body")
            if code == 200 and isinstance(body, dict):
                try:
                    return self.answer(body, url, request.params)
                except ProviderError as exc:
                    return exc
            message = body.get("error") if isinstance(body, dict) else None
            if isinstance(message, dict):
                message = message.get("message")
            return self.failed(
                request.custom_id,
                f"HTTP {code}: {message or 'no message'}",
                code if isinstance(code, int) else None,
            )
        if isinstance(error, dict):
            return self.failed(request.custom_id, f"{error.get('code')}: {error.get('message')}")
        return self.failed(request.custom_id, "a result line without a response")

    async def cancel(self, batch_id: str) -> None:
        await self.http(
            "POST", f"{self.api.base_url}/batches/{batch_id}/cancel", headers=self._headers
        )


def _field(data: Any, name: str) -> str | None:
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None
