"""Ariadne's HTTP handler, answering as the GraphQL-over-HTTP spec says a JSON client
expects: every answer is ``{"errors": [...]}`` JSON with a code (Ariadne answers a body
that is not JSON in plain text), an operation that was executed answers 200 even when its
``data`` is null (a resolver's error is the answer, not a bad request; a request that
never ran, 400), and a mutation sent
as a GET is told to use POST (Ariadne's message speaks of ``operationName``)."""

from __future__ import annotations

import asyncio
from asyncio import FIRST_COMPLETED
from collections.abc import Awaitable
from http import HTTPStatus
from typing import Any

from ariadne.asgi.handlers import GraphQLHTTPHandler
from ariadne.exceptions import HttpError
from graphql import GraphQLSyntaxError, OperationDefinitionNode, OperationType, parse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .errors import BAD_USER_INPUT, SERVER_BUSY, error_body
from .limits import (
    BUDGET_KEY,
    DEFAULT_MAX_VALUES,
    DEFAULT_QUERY_TIMEOUT,
    MAX_TOKENS,
    POOL_FACTOR,
    Budget,
    Pool,
)

__all__ = ["JsonHTTPHandler"]

#: Seconds a stopped execution has to end before it is cancelled outright.
_GRACE_S = 0.5


def _error(status: int, message: str, code: str) -> JSONResponse:
    return JSONResponse(error_body(message, code), status)


def _is_mutation(query: str) -> bool:
    try:
        document = parse(query, no_location=True, max_tokens=MAX_TOKENS)
    except GraphQLSyntaxError:
        return False
    return any(
        isinstance(d, OperationDefinitionNode) and d.operation != OperationType.QUERY
        for d in document.definitions
    )


class JsonHTTPHandler(GraphQLHTTPHandler):
    """Also where a request's :class:`~oxyeval.server.limits.Budget` is made (the executor
    counts its values against it, see ``execution``) and its deadline kept: a query still
    running at its deadline is stopped, and an await in it that hangs is cancelled."""

    def __init__(
        self,
        *,
        max_values: int = DEFAULT_MAX_VALUES,
        timeout: float = DEFAULT_QUERY_TIMEOUT,
        pool: Pool | None = None,
    ) -> None:
        super().__init__()
        self.max_values = max_values
        self.timeout = timeout
        self.pool = pool if pool is not None else Pool(POOL_FACTOR * max_values)

    async def graphql_http_server(self, request: Request) -> Response:
        if request.method == "GET" and _is_mutation(request.query_params.get("query", "")):
            return _error(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "a mutation must be sent as POST with a JSON body, not as GET",
                "BAD_USER_INPUT",
            )
        try:
            data = await self.extract_data_from_request(request)
        except HttpError as error:
            return _error(HTTPStatus.BAD_REQUEST, error.message or error.status, "BAD_USER_INPUT")
        budget = Budget(self.max_values, self.timeout, self.pool)
        request.scope[BUDGET_KEY] = budget  # the context of the request hands it on
        try:
            result = await self._within(budget, self.execute_graphql_query(request, data))
        finally:
            budget.release()
        if budget.exceeded in ("time", "busy", "left", "stopping"):
            return _error(HTTPStatus.SERVICE_UNAVAILABLE, budget.message(), SERVER_BUSY)
        if budget.exceeded == "size":
            return _error(HTTPStatus.BAD_REQUEST, budget.message(), BAD_USER_INPUT)
        success, answer = result
        return await self.create_json_response(request, answer, success)

    @staticmethod
    async def _within(budget: Budget, execution: Awaitable[Any]) -> Any:
        """The execution's result, or None when it was stopped: at the deadline (a
        query's: a mutation drops it once it starts), or by the budget for another reason.
        A stopped execution ends by itself at once (see ``Budget``) unless an await in it
        hangs: that one is cancelled after a moment."""
        work = asyncio.ensure_future(execution)
        stopped = asyncio.ensure_future(budget.stopped.wait())
        try:
            while not work.done() and not stopped.done():
                await asyncio.wait(
                    {work, stopped}, timeout=budget.remaining(), return_when=FIRST_COMPLETED
                )
                left = budget.remaining()
                if not work.done() and left is not None and left <= 0:
                    budget.stop("time")
                    break
            if not work.done():
                await asyncio.wait({work}, timeout=_GRACE_S)
                work.cancel()
                await asyncio.wait({work})
        except asyncio.CancelledError:  # the server stops this request: so does its work
            work.cancel()
            raise
        finally:
            stopped.cancel()
        if budget.exceeded is not None:
            if not work.cancelled():
                work.exception()  # retrieved: an error of a stopped execution is no answer
            return None
        return work.result()

    async def extract_data_from_request(self, request: Request) -> Any:
        # a GET's query is in its URL, whatever its Content-Type (the guard asks for JSON's
        # there: a type a page on another site cannot send without a preflight)
        if request.method in ("GET", "HEAD") and request.query_params.get("query"):
            return self.extract_data_from_get_request(request)
        return await super().extract_data_from_request(request)

    async def create_json_response(
        self, request: Request, result: dict[str, Any], success: bool
    ) -> Response:
        # an error with a path was raised while executing: the operation ran and its
        # errors are its answer; one without (syntax, validation, a variable's value)
        # stopped the request before it ran
        executed = success or any("path" in e for e in result.get("errors") or ())
        return JSONResponse(result, HTTPStatus.OK if executed else HTTPStatus.BAD_REQUEST)
