"""Errors as the GraphQL spec carries them: ``errors[]`` with ``message``, ``path``,
``locations`` and ``extensions.code``.

A client branches on the code, never on the text: ``NOT_FOUND`` (an id that is not
there), ``BAD_USER_INPUT`` (a value the API refuses, or a query that does not fit the
schema), ``PROVIDER_ERROR`` (a model endpoint failed), ``UNAUTHENTICATED`` (no or a wrong
token), ``INTERNAL_SERVER_ERROR`` (our fault or the database's). Messages are the
library's own one-paragraph errors, scrubbed of secrets; a traceback never leaves the
process (it is logged, with the secrets scrubbed there too).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from graphql import GraphQLError

from ..errors import ConfigError, LoadError, OxyError, ProviderError
from ..redact import redact
from ..store import AlreadyExistsError, BranchRuleError, NotFoundError, StoreError
from .runs import ServerBusy

__all__ = [
    "BAD_USER_INPUT",
    "INTERNAL",
    "NOT_FOUND",
    "PROVIDER_ERROR",
    "SERVER_BUSY",
    "UNAUTHENTICATED",
    "ApiError",
    "classify",
    "error_body",
    "format_error",
]

log = logging.getLogger("oxyeval.server")

NOT_FOUND = "NOT_FOUND"
BAD_USER_INPUT = "BAD_USER_INPUT"
PROVIDER_ERROR = "PROVIDER_ERROR"
UNAUTHENTICATED = "UNAUTHENTICATED"
SERVER_BUSY = "SERVER_BUSY"
INTERNAL = "INTERNAL_SERVER_ERROR"
_MAX_MESSAGE = 4000


def error_body(message: str, code: str) -> dict[str, Any]:
    """The one JSON answer for a request refused before or outside GraphQL's execution
    (the guard's, the HTTP handler's, the app's): the spec's ``errors`` with a code."""
    return {"errors": [{"message": message, "extensions": {"code": code}}]}


class ApiError(Exception):
    """An error the API means to return, with its code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _message(exc: BaseException) -> str:
    if isinstance(exc, LoadError):
        text = "; ".join(
            f"{d.file}:{d.line}: {d.message}" if d.line else f"{d.file}: {d.message}"
            for d in exc.diagnostics
        )
    else:
        text = str(exc)
    text = redact(text)
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def classify(exc: BaseException) -> tuple[str, str]:
    """(code, message) for an exception a resolver raised."""
    if isinstance(exc, ApiError):
        return exc.code, _message(exc)
    if isinstance(exc, NotFoundError):
        return NOT_FOUND, _message(exc)
    if isinstance(exc, ServerBusy):
        return SERVER_BUSY, _message(exc)
    if isinstance(exc, ProviderError):
        return PROVIDER_ERROR, _message(exc)
    if isinstance(exc, (AlreadyExistsError, BranchRuleError, ConfigError, LoadError)):
        return BAD_USER_INPUT, _message(exc)
    if isinstance(exc, (ValueError, TypeError)) and not isinstance(exc, OxyError):
        # the store's own checks of a field (a name, a range) raise these
        return BAD_USER_INPUT, _message(exc)
    if isinstance(exc, StoreError):
        return INTERNAL, f"the history database failed: {_message(exc)}"
    if isinstance(exc, OxyError):
        return BAD_USER_INPUT, _message(exc)
    log.error("internal error: %s: %s", type(exc).__name__, redact(str(exc)))
    return INTERNAL, "internal error; the server log has the details"


def format_error(error: Any, debug: bool = False, *, root: str | None = None) -> dict[str, Any]:
    """Ariadne's error formatter: the spec's fields and a code, never a stack trace; paths
    inside the project ``root`` are shown relative to it (a page need not learn where the
    user keeps their files)."""
    doc = _format(error)
    if root:
        doc["message"] = doc["message"].replace(root.rstrip("/\\") + os.sep, "")
    return doc


def _format(error: Any) -> dict[str, Any]:
    original = getattr(error, "original_error", None)
    if isinstance(original, GraphQLError):
        # graphql-core wraps its own coercion errors (a null for a non-null variable):
        # the client's mistake, classified by its message like the unwrapped ones
        original = None
    if original is not None:
        code, message = classify(original)
    else:
        message = redact(error.message)
        if error.path:  # raised while executing, not by the document: ours to fix
            log.error("execution error at %s: %s", error.path, message)
            code = INTERNAL
        elif message.startswith("Syntax Error"):
            code = "GRAPHQL_PARSE_FAILED"
        elif message.startswith("Cannot return null for non-nullable field"):
            code = INTERNAL  # the server's answer broke the schema, not the client
        elif message.startswith("Variable ") or "got invalid value" in message:
            code = BAD_USER_INPUT
        else:
            code = "GRAPHQL_VALIDATION_FAILED"
    doc: dict[str, Any] = {"message": message}
    if error.locations:
        doc["locations"] = [{"line": loc.line, "column": loc.column} for loc in error.locations]
    if error.path:
        doc["path"] = list(error.path)
    doc["extensions"] = {"code": code}
    return doc
