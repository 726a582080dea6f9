"""Ariadne's HTTP handler, answering as the GraphQL-over-HTTP spec says a JSON client
expects: every answer is ``{"errors": [...]}`` JSON with a code (Ariadne answers a body
that is not JSON in plain text), an operation that was executed answers 200 even when its
``data`` is null (a resolver's error is the answer, not a bad request; a request that
never ran, 400), and a mutation sent
as a GET is told to use POST (Ariadne's message speaks of ``operationName``)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from ariadne.asgi.handlers import GraphQLHTTPHandler
from ariadne.exceptions import HttpError
from graphql import GraphQLSyntaxError, OperationDefinitionNode, OperationType, parse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .errors import error_body
from .limits import MAX_TOKENS

__all__ = ["JsonHTTPHandler"]


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
        success, result = await self.execute_graphql_query(request, data)
        return await self.create_json_response(request, result, success)

    async def create_json_response(
        self, request: Request, result: dict[str, Any], success: bool
    ) -> Response:
        # an error with a path was raised while executing: the operation ran and its
        # errors are its answer; one without (syntax, validation, a variable's value)
        # stopped the request before it ran
        executed = success or any("path" in e for e in result.get("errors") or ())
        return JSONResponse(result, HTTPStatus.OK if executed else HTTPStatus.BAD_REQUEST)
