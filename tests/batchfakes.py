"""Fake batch APIs on 127.0.0.1: OpenAI Batch (files, batches, file contents), Anthropic
Message Batches (batches, results_url) and Gemini batch mode (batchGenerateContent,
operations), beside each vendor's live endpoint, all answering from one script.

A batch ends after ``polls`` polls (``running`` until then), so polling is exercised;
``expire`` ends the next batch as expired with only its first half answered; ``error``
(a predicate on a request's last user text) answers that request with an error. Every
request is recorded (method, path) so a test counts what was paid for.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from .fakes import anthropic_message_response, gemini_response, last_user_text, openai_chat_response

__all__ = ["BatchFake", "Submitted"]


@dataclass
class Submitted:
    """One batch the fake holds: its vendor, requests ``(custom_id, body)``, polls so far."""

    id: str
    vendor: str
    requests: list[tuple[str, dict[str, Any]]]
    polls: int = 0
    expire: bool = False
    cancelled: bool = False
    answered: dict[str, Any] = field(default_factory=dict)


class BatchFake:
    """The three vendors' batch and live endpoints on one port (``url``: its base)."""

    def __init__(
        self,
        answer: Callable[[str], str],
        *,
        polls: int = 2,
        error: Callable[[str], bool] | None = None,
        batch_api: bool = True,
    ) -> None:
        self.answer = answer
        self.polls = polls
        self.error = error or (lambda text: False)
        self.batch_api = batch_api
        self.expire_next = False
        self.failing_polls = 0  # the next polls answered HTTP 503
        self.batches: dict[str, Submitted] = {}
        self.calls: list[tuple[str, str]] = []  # (method, path) of every request
        self.live: list[str] = []  # vendor of every live call
        self._files: dict[str, bytes] = {}
        self._lock = threading.Lock()
        #: Set once a batch has been submitted (a test signals a process at that point).
        self.first_submitted = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> BatchFake:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def submitted(self, vendor: str | None = None) -> list[Submitted]:
        return [b for b in self.batches.values() if vendor is None or b.vendor == vendor]

    # -- answering -----------------------------------------------------------------------

    def _text(self, body: dict[str, Any]) -> str:
        return self.answer(last_user_text(body))

    def _new_batch(self, vendor: str, requests: list[tuple[str, dict[str, Any]]]) -> Submitted:
        with self._lock:
            batch_id = f"{vendor[:3]}batch{len(self.batches) + 1}"
            batch = Submitted(batch_id, vendor, requests, expire=self.expire_next)
            self.expire_next = False
            self.batches[batch_id] = batch
        self.first_submitted.set()
        return batch

    def _ended(self, batch: Submitted) -> bool:
        batch.polls += 1
        return batch.cancelled or batch.polls > self.polls

    def _outcomes(self, batch: Submitted) -> list[tuple[str, dict[str, Any], str]]:
        """``(custom_id, body, outcome)`` with outcome ok, error or missing (expired)."""
        cut = len(batch.requests) // 2 if batch.expire else len(batch.requests)
        found = []
        for n, (custom_id, body) in enumerate(batch.requests):
            text = last_user_text(body)
            outcome = "missing" if n >= cut else "error" if self.error(text) else "ok"
            found.append((custom_id, body, outcome))
        return found

    # -- OpenAI --------------------------------------------------------------------------

    def openai_batch(self, batch: Submitted) -> dict[str, Any]:
        ended = self._ended(batch)
        outcomes = self._outcomes(batch)
        state = "cancelled" if batch.cancelled else "expired" if batch.expire else "completed"
        done = sum(1 for o in outcomes if o[2] != "missing")
        body: dict[str, Any] = {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "status": state if ended else "in_progress",
            "request_counts": {
                "total": len(outcomes),
                "completed": sum(1 for o in outcomes if o[2] == "ok") if ended else 0,
                "failed": sum(1 for o in outcomes if o[2] == "error") if ended else 0,
            },
            "output_file_id": None,
            "error_file_id": None,
        }
        if ended and done:
            out = [
                {
                    "id": f"req_{c}",
                    "custom_id": c,
                    "response": {"status_code": 200, "body": openai_chat_response(self._text(b))},
                    "error": None,
                }
                for c, b, o in outcomes
                if o == "ok"
            ]
            errors = [
                {
                    "id": f"req_{c}",
                    "custom_id": c,
                    "response": {
                        "status_code": 400,
                        "body": {"error": {"message": "scripted failure", "type": "bad"}},
                    },
                    "error": None,
                }
                for c, b, o in outcomes
                if o == "error"
            ]
            if out:
                self._files[f"file-out-{batch.id}"] = _jsonl(out)
                body["output_file_id"] = f"file-out-{batch.id}"
            if errors:
                self._files[f"file-err-{batch.id}"] = _jsonl(errors)
                body["error_file_id"] = f"file-err-{batch.id}"
        return body

    # -- Anthropic -----------------------------------------------------------------------

    def anthropic_batch(self, batch: Submitted) -> dict[str, Any]:
        ended = self._ended(batch)
        outcomes = self._outcomes(batch)
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for _c, _b, o in outcomes:
            key = (
                "processing"
                if not ended
                else {"ok": "succeeded", "error": "errored"}.get(o, "expired")
            )
            counts[key] += 1
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    def anthropic_results(self, batch: Submitted) -> bytes:
        lines = []
        for c, b, o in self._outcomes(batch):
            if o == "ok":
                result: dict[str, Any] = {
                    "type": "succeeded",
                    "message": anthropic_message_response(self._text(b)),
                }
            elif o == "error":
                result = {
                    "type": "errored",
                    "error": {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": "scripted failure"},
                    },
                }
            else:
                result = {"type": "expired"}
            lines.append({"custom_id": c, "result": result})
        return _jsonl(lines)

    # -- Gemini --------------------------------------------------------------------------

    def gemini_operation(self, batch: Submitted) -> dict[str, Any]:
        ended = self._ended(batch)
        outcomes = self._outcomes(batch)
        state = (
            "BATCH_STATE_CANCELLED"
            if batch.cancelled
            else "BATCH_STATE_EXPIRED"
            if batch.expire
            else "BATCH_STATE_SUCCEEDED"
        )
        ok = sum(1 for o in outcomes if o[2] == "ok")
        bad = sum(1 for o in outcomes if o[2] == "error")
        meta = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
            "name": f"batches/{batch.id}",
            "state": state if ended else "BATCH_STATE_RUNNING",
            "batchStats": {
                "requestCount": str(len(outcomes)),
                "successfulRequestCount": str(ok if ended else 0),
                "failedRequestCount": str(bad if ended else 0),
                "pendingRequestCount": str(0 if ended else len(outcomes)),
            },
        }
        body: dict[str, Any] = {"name": f"batches/{batch.id}", "metadata": meta, "done": ended}
        if ended:
            items: list[dict[str, Any]] = []
            for c, b, o in outcomes:
                if o == "ok":
                    items.append(
                        {"response": gemini_response(self._text(b)), "metadata": {"key": c}}
                    )
                elif o == "error":
                    items.append(
                        {
                            "error": {"code": 400, "message": "scripted failure"},
                            "metadata": {"key": c},
                        }
                    )
            body["response"] = {
                "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
                "inlinedResponses": {"inlinedResponses": items},
            }
        return body


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _multipart_file(content_type: str, raw: bytes) -> bytes:
    """The ``file`` part of a multipart/form-data body."""
    boundary = content_type.split("boundary=", 1)[1].strip('"').encode()
    for part in raw.split(b"--" + boundary):
        head, _, content = part.partition(b"\r\n\r\n")
        if b'name="file"' in head:
            return content.rsplit(b"\r\n", 1)[0]
    raise ValueError("no file part")


def _handler(fake: BatchFake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any, content_type: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("content-length") or 0))

        def do_GET(self) -> None:
            path = unquote(self.path.split("?")[0])
            fake.calls.append(("GET", path))
            if fake.failing_polls and "batches/" in path:
                fake.failing_polls -= 1
                return self._send(503, {"error": {"message": "overloaded"}})
            parts = path.strip("/").split("/")
            if path.startswith("/v1/batches/"):
                return self._send(200, fake.openai_batch(fake.batches[parts[2]]))
            if path.startswith("/v1/files/") and path.endswith("/content"):
                return self._send(200, fake._files[parts[2]], "application/jsonl")
            if path.startswith("/v1/messages/batches/") and path.endswith("/results"):
                return self._send(
                    200, fake.anthropic_results(fake.batches[parts[3]]), "application/binary"
                )
            if path.startswith("/v1/messages/batches/"):
                return self._send(200, fake.anthropic_batch(fake.batches[parts[3]]))
            if path.startswith("/v1beta/batches/"):
                return self._send(200, fake.gemini_operation(fake.batches[parts[2]]))
            self._send(404, {"error": {"message": f"no route {path}"}})

        def do_POST(self) -> None:
            path = unquote(self.path.split("?")[0])
            fake.calls.append(("POST", path))
            raw = self._body()
            batch_route = any(
                s in path for s in ("/files", "/batches", "batchGenerateContent", ":cancel")
            )
            if batch_route and not fake.batch_api:
                return self._send(404, {"error": {"message": "Not Found"}})
            if path == "/v1/chat/completions":
                fake.live.append("openai")
                return self._send(200, openai_chat_response(fake._text(json.loads(raw))))
            if path == "/v1/messages":
                fake.live.append("anthropic")
                return self._send(200, anthropic_message_response(fake._text(json.loads(raw))))
            if path.endswith(":generateContent"):
                fake.live.append("google")
                return self._send(200, gemini_response(fake._text(json.loads(raw))))
            if path == "/v1/files":
                content = _multipart_file(self.headers["content-type"], raw)
                file_id = f"file-in-{len(fake._files) + 1}"
                fake._files[file_id] = content
                return self._send(200, {"id": file_id, "object": "file", "purpose": "batch"})
            if path == "/v1/batches":
                data = json.loads(raw)
                lines = [
                    json.loads(x)
                    for x in fake._files[data["input_file_id"]].splitlines()
                    if x.strip()
                ]
                assert all(x["method"] == "POST" and x["url"] == data["endpoint"] for x in lines)
                batch = fake._new_batch("openai", [(x["custom_id"], x["body"]) for x in lines])
                return self._send(200, {"id": batch.id, "object": "batch", "status": "validating"})
            if path.startswith("/v1/batches/") and path.endswith("/cancel"):
                fake.batches[path.split("/")[3]].cancelled = True
                return self._send(200, {"id": path.split("/")[3], "status": "cancelling"})
            if path == "/v1/messages/batches":
                data = json.loads(raw)
                batch = fake._new_batch(
                    "anthropic", [(r["custom_id"], r["params"]) for r in data["requests"]]
                )
                return self._send(
                    200,
                    {"id": batch.id, "type": "message_batch", "processing_status": "in_progress"},
                )
            if path.startswith("/v1/messages/batches/") and path.endswith("/cancel"):
                fake.batches[path.split("/")[4]].cancelled = True
                return self._send(200, {"id": path.split("/")[4], "processing_status": "canceling"})
            if path.endswith(":batchGenerateContent"):
                data = json.loads(raw)["batch"]["inputConfig"]["requests"]["requests"]
                batch = fake._new_batch(
                    "google", [(r["metadata"]["key"], r["request"]) for r in data]
                )
                return self._send(
                    200,
                    {"name": f"batches/{batch.id}", "metadata": {"state": "BATCH_STATE_PENDING"}},
                )
            if path.startswith("/v1beta/batches/") and path.endswith(":cancel"):
                fake.batches[path.split("/")[3].split(":")[0]].cancelled = True
                return self._send(200, {})
            self._send(404, {"error": {"message": f"no route {path}"}})

    return Handler
