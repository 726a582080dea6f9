"""The schema's fields bound to the service: one line per operation, nothing computed here.

Ariadne reads a returned dict's keys as the fields of its type, so the report layer's
camelCase documents are answered as they are; only fields that cost a query of their
own (a case's prompt, its regression count) have a resolver, and those run only when a
client asks for them.
"""

from __future__ import annotations

import datetime as dt
from importlib import resources
from typing import Any

from ariadne import (
    MutationType,
    ObjectType,
    QueryType,
    ScalarType,
    make_executable_schema,
)
from graphql import (
    FloatValueNode,
    GraphQLSchema,
    IntValueNode,
    ListValueNode,
    ObjectValueNode,
    ValueNode,
    value_from_ast_untyped,
)

from ..inputs import MAX_INT_DIGITS, MAX_JSON_DEPTH, finite_json, value_problem
from .errors import BAD_USER_INPUT, ApiError
from .service import TestingService

__all__ = ["build_schema", "schema_text"]


def schema_text() -> str:
    return resources.files("oxyeval.server").joinpath("schema.graphql").read_text("utf-8")


def _service(info: Any) -> TestingService:
    return info.context["service"]


json_scalar = ScalarType("JSON")


@json_scalar.serializer
def _json_out(value: Any) -> Any:
    # A value stored before its input was checked may hold NaN: answered as null, not as
    # a response that is not JSON (every query selecting it would fail).
    return finite_json(value)


@json_scalar.value_parser
def _json_in(value: Any) -> Any:
    """A JSON variable, as the HTTP layer's lenient ``json`` decoded it (``NaN``,
    ``Infinity`` and 4,000-digit integers pass there): held to strict, bounded JSON."""
    problem = value_problem(value, "JSON value")
    if problem is not None:
        raise ApiError(BAD_USER_INPUT, problem)
    return value


@json_scalar.literal_parser
def _json_literal(node: ValueNode, variables: dict[str, Any] | None = None) -> Any:
    """A JSON literal in the query text. graphql-core reads an integer Python refuses
    (past 4,300 digits) as NaN: numbers are checked as written, before it converts them."""
    stack: list[tuple[ValueNode, int]] = [(node, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (ListValueNode, ObjectValueNode)):
            if depth > MAX_JSON_DEPTH:
                raise ApiError(
                    BAD_USER_INPUT, f"JSON value: nested more than {MAX_JSON_DEPTH} levels deep"
                )
            children = (
                item.values if isinstance(item, ListValueNode) else [f.value for f in item.fields]
            )
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, IntValueNode) and len(item.value.lstrip("-")) > MAX_INT_DIGITS:
            raise ApiError(
                BAD_USER_INPUT,
                f"JSON value: an integer of more than {MAX_INT_DIGITS} digits is out of range",
            )
        elif isinstance(item, FloatValueNode):
            _json_in(float(item.value))
    return _json_in(value_from_ast_untyped(node, variables))


datetime_scalar = ScalarType("DateTime")


@datetime_scalar.serializer
def _dt_out(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        value = value.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds")
        return value.replace("+00:00", "Z")
    return str(value)


@datetime_scalar.value_parser
def _dt_in(value: Any) -> str:
    try:
        parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(BAD_USER_INPUT, f"not an ISO 8601 timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    return _dt_out(parsed) or ""


query = QueryType()
mutation = MutationType()


@query.field("testCases")
async def _test_cases(_: Any, info: Any, promptId: str | None = None) -> Any:
    return await _case_list(info, promptId)


async def _case_list(info: Any, prompt_id: str | None) -> list[dict[str, Any]]:
    """A prompt's cases (every case: None); their regression counts, when asked, in one
    grouped query, read by the field as the dict's own value."""
    service = _service(info)
    cases = await service.test_cases(prompt_id)
    if _asks(info, "regressionCount"):
        counts = await service.regression_counts([c["id"] for c in cases])
        for case in cases:
            case["regressionCount"] = counts.get(case["id"], 0)
    return cases


def _asks(info: Any, field: str) -> bool:
    """Whether the selection under this field names ``field`` (directly or in a fragment)."""
    pending = [n.selection_set for n in info.field_nodes if n.selection_set]
    while pending:
        for selection in pending.pop().selections:
            name = getattr(selection, "name", None)
            if selection.kind == "field" and name is not None and name.value == field:
                return True
            if selection.kind == "inline_fragment":
                pending.append(selection.selection_set)
            elif selection.kind == "fragment_spread":
                fragment = info.fragments.get(selection.name.value)
                if fragment is not None:
                    pending.append(fragment.selection_set)
    return False


@query.field("testCase")
async def _test_case(_: Any, info: Any, id: str) -> Any:
    return await _service(info).test_case(id)


@query.field("testCaseExecutions")
async def _executions(
    _: Any, info: Any, testCaseId: str, limit: int | None = None, offset: int | None = None
) -> Any:
    return await _service(info).test_case_executions(testCaseId, limit, offset)


@query.field("testCaseStats")
async def _stats(_: Any, info: Any, testCaseId: str) -> Any:
    return await _service(info).test_case_stats(testCaseId)


@query.field("testBranches")
async def _branches(_: Any, info: Any, testCaseId: str) -> Any:
    return await _service(info).test_branches(testCaseId)


@query.field("testBranchExecutions")
async def _branch_executions(
    _: Any, info: Any, branchId: str, limit: int | None = None, offset: int | None = None
) -> Any:
    return await _service(info).test_branch_executions(branchId, limit, offset)


@query.field("prompts")
async def _prompts(_: Any, info: Any) -> Any:
    return await _service(info).prompts()


@query.field("prompt")
async def _prompt(_: Any, info: Any, id: str) -> Any:
    return await _service(info).prompt(id)


@query.field("runs")
async def _runs(
    _: Any,
    info: Any,
    kind: str | None = None,
    subject: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Any:
    return await _service(info).runs(kind, subject, status, limit, offset)


@query.field("run")
async def _run(_: Any, info: Any, id: str) -> Any:
    return await _service(info).run(id)


@query.field("results")
async def _results(_: Any, info: Any, kind: str, subject: str, limit: int | None = None) -> Any:
    return await _service(info).results(kind, subject, limit)


@query.field("subjects")
async def _subjects(_: Any, info: Any, kind: str) -> Any:
    return await _service(info).subjects(kind)


@query.field("resultTrend")
async def _trend(
    _: Any, info: Any, kind: str, subject: str | None = None, since: str | None = None
) -> Any:
    return await _service(info).result_trend(kind, subject, since)


@query.field("abResult")
async def _ab_result(
    _: Any,
    info: Any,
    testCaseId: str,
    runId: str | None = None,
    winnerCriteria: str | None = None,
) -> Any:
    return await _service(info).ab_result(testCaseId, runId, winnerCriteria)


@query.field("compareRuns")
async def _compare(_: Any, info: Any, baseRunId: str, headRunId: str) -> Any:
    return await _service(info).compare(baseRunId, headRunId)


@query.field("serverInfo")
async def _server_info(_: Any, info: Any) -> Any:
    service = _service(info)
    return await service._read(service.server_info)


test_case = ObjectType("TestCase")


@test_case.field("prompt")
async def _case_prompt(obj: dict[str, Any], info: Any) -> Any:
    found = await _service(info).prompt(obj["promptId"])
    return found or {"id": obj["promptId"], "name": obj["promptId"], "versions": []}


@test_case.field("regressionCount")
async def _case_regressions(obj: dict[str, Any], info: Any) -> int:
    """One case's count (a case of a list has it already: see :func:`_case_list`)."""
    if "regressionCount" in obj:
        return obj["regressionCount"]
    counts = await _service(info).regression_counts([obj["id"]])
    return counts.get(obj["id"], 0)


_case_regressions.dict_first = True  # type: ignore[attr-defined]


prompt_type = ObjectType("Prompt")


@prompt_type.field("testCases")
async def _prompt_cases(obj: dict[str, Any], info: Any) -> Any:
    return await _case_list(info, obj["id"])


version_type = ObjectType("PromptVersion")


@version_type.field("content")
async def _version_content(obj: dict[str, Any], info: Any) -> Any:
    service = _service(info)
    return await service._read(
        lambda: service.store.prompts.get_version(obj["promptId"], obj["version"])
    )


@mutation.field("createTestCase")
async def _create_case(_: Any, info: Any, input: dict[str, Any]) -> Any:
    return await _service(info).create_test_case(input)


@mutation.field("updateTestCase")
async def _update_case(_: Any, info: Any, id: str, input: dict[str, Any]) -> Any:
    return await _service(info).update_test_case(id, input)


@mutation.field("deleteTestCase")
async def _delete_case(_: Any, info: Any, id: str) -> Any:
    return await _service(info).delete_test_case(id)


@mutation.field("runTestCase")
async def _run_case(_: Any, info: Any, input: dict[str, Any]) -> Any:
    return await _service(info).run_test_case(input)


@mutation.field("batchRunTests")
async def _batch(_: Any, info: Any, input: dict[str, Any]) -> Any:
    return await _service(info).batch_run_tests(input)


@mutation.field("updateExpectedOutput")
async def _expected(_: Any, info: Any, testCaseId: str, output: str) -> Any:
    return await _service(info).update_expected_output(testCaseId, output)


@mutation.field("createTestBranch")
async def _create_branch(_: Any, info: Any, input: dict[str, Any]) -> Any:
    return await _service(info).create_test_branch(input)


@mutation.field("updateTestBranch")
async def _update_branch(_: Any, info: Any, id: str, input: dict[str, Any]) -> Any:
    return await _service(info).update_test_branch(id, input)


@mutation.field("deleteTestBranch")
async def _delete_branch(_: Any, info: Any, id: str) -> Any:
    return await _service(info).delete_test_branch(id)


@mutation.field("runABTest")
async def _run_ab(_: Any, info: Any, input: dict[str, Any]) -> Any:
    return await _service(info).run_ab_test(input)


@mutation.field("createPrompt")
async def _create_prompt(_: Any, info: Any, input: dict[str, Any]) -> Any:
    return await _service(info).create_prompt(input)


def build_schema() -> GraphQLSchema:
    return make_executable_schema(
        schema_text(),
        query,
        mutation,
        test_case,
        prompt_type,
        version_type,
        json_scalar,
        datetime_scalar,
    )
