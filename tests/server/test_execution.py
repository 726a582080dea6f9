"""The fast path through graphql-core answers exactly what graphql-core answers: the same
data and the same errors, for aliases, fragments, nulls, lists and resolvers."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest
from graphql import ExecutionResult, execute, parse
from graphql.execution.executor import Executor

from oxyeval.server.execution import FastExecutor
from oxyeval.server.resolvers import build_schema

CASE = {
    "id": "p::a",
    "promptId": "p",
    "name": "a",
    "description": None,
    "input": {"text": "hi", "nested": [1, {"x": None}]},
    "expectedOutput": "yes",
    "totalRuns": 3,
    "passRate": 66.66,
    "avgScore": 0.5,
    "lastRun": "2026-11-27T00:00:00.000Z",
    "lastPassed": True,
    "createdAt": "2026-11-26T00:00:00.000Z",
    "updatedAt": None,
    "regressionCount": 2,
}
BROKEN = {**CASE, "id": None, "name": "broken"}  # a required field null: the spec's error

QUERIES = [
    "{ testCases { id name input passRate lastRun regressionCount } }",
    "{ testCases { key: id n: name i: input __typename } }",
    "fragment F on TestCase { id totalRuns } { testCases { ...F avgScore ... on TestCase { lastPassed } } }",
    "{ testCases { id name @include(if: false) description @skip(if: true) expectedOutput } }",
]


class _Service:
    async def test_cases(self, prompt_id: str | None) -> list[dict[str, Any]]:
        return [dict(CASE), dict(BROKEN), {**CASE, "id": "p::b", "passRate": None}]

    async def regression_counts(self, ids: list[str]) -> dict[str, int]:
        return {}


class _Counting(FastExecutor):
    plans: ClassVar[list[Any]] = []

    def _field(self, parent_type: Any, node: Any) -> Any:
        plan = super()._field(parent_type, node)
        _Counting.plans.append(plan)
        return plan


def _run(query: str, executor: type[Executor]) -> ExecutionResult:
    async def go() -> ExecutionResult:
        result = execute(
            build_schema(),
            parse(query),
            context_value={"service": _Service()},
            executor_class=executor,
        )
        return await result if asyncio.iscoroutine(result) else result  # type: ignore[misc]

    return asyncio.run(go())


@pytest.mark.parametrize("query", QUERIES)
def test_the_fast_path_answers_as_graphql_core_does(query: str) -> None:
    _Counting.plans.clear()
    fast, plain = _run(query, _Counting), _run(query, Executor)
    assert fast.data == plain.data
    assert [(e.message, e.path) for e in fast.errors or []] == [
        (e.message, e.path) for e in plain.errors or []
    ]
    if "__typename" not in query:  # a meta field has a resolver: graphql-core's own path
        assert any(p is not None for p in _Counting.plans)  # the fast path was taken
    if " id " in query or "{ id" in query or "key: id" in query:
        assert fast.errors  # the broken row's null id is reported, not passed off
