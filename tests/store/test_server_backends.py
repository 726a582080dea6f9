"""The Testing API over each history backend: the same operations answer the same on
SQLite and on a real PostgreSQL server (``oxy serve --db postgresql://...``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ariadne", reason="oxy serve needs the serve extra: pip install -e '.[dev]'")

import httpx

from oxyeval.server import TestingService, create_app

from .conftest import Backend

CONFIG = """\
models:
  - name: m
    vendor: mock
    rules:
      - {match: "love", output: "positive"}
      - {match: ".", output: "neutral"}
  - name: other
    vendor: mock
    latency_ms: 5
    outputs: ["positive!"]
"""


async def _flow(service: TestingService) -> dict[str, Any]:
    app = create_app(service)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
    ) as client:

        async def gql(query: str, **variables: Any) -> Any:
            reply = (
                await client.post("/graphql", json={"query": query, "variables": variables})
            ).json()
            assert "errors" not in reply, reply["errors"]
            return reply["data"]

        await gql(
            "mutation($i: PromptInput!) { createPrompt(input: $i) { id latestVersion } }",
            i={"name": "p", "model": "m", "template": "Feedback: {{ text }}"},
        )
        case = (
            await gql(
                "mutation($i: TestCaseInput!) { createTestCase(input: $i) { id } }",
                i={
                    "promptId": "p",
                    "name": "happy",
                    "input": {"text": "I love it"},
                    "expectedOutput": "positive",
                },
            )
        )["createTestCase"]["id"]
        first = await gql(
            "mutation($i: RunTestCaseInput!) { runTestCase(input: $i) { passed score isRegression } }",
            i={"testCaseId": case},
        )
        await gql(
            "mutation($id: ID!, $o: String!) { updateExpectedOutput(testCaseId: $id, output: $o) { id } }",
            id=case,
            o="glad",
        )
        second = await gql(
            "mutation($i: BatchRunTestsInput!) { batchRunTests(input: $i) { passed score } }",
            i={"promptId": "p"},
        )
        for name, model, control in (("base", "m", True), ("alt", "other", False)):
            await gql(
                "mutation($i: TestBranchInput!) { createTestBranch(input: $i) { id } }",
                i={
                    "testCaseId": case,
                    "name": name,
                    "provider": "project",
                    "model": model,
                    "isControl": control,
                },
            )
        branches = (
            await gql("query($c: ID!) { testBranches(testCaseId: $c) { id name } }", c=case)
        )["testBranches"]
        ab = await gql(
            "mutation($i: RunABTestInput!) { runABTest(input: $i) { winner { branchName } criteria } }",
            i={
                "testCaseId": case,
                "branchIds": [b["id"] for b in branches],
                "winnerCriteria": "fastest",
            },
        )
        read = await gql(
            """query($c: ID!) {
              testCases(promptId: "p") { id totalRuns passRate regressionCount }
              testCaseStats(testCaseId: $c) { totalRuns trendData { date totalRuns } }
              runs(kind: "cases") { id }
              abResult(testCaseId: $c, winnerCriteria: "fastest") { winner { branchName } }
            }""",
            c=case,
        )
        runs = [r["id"] for r in read["runs"]]
        compared = await gql(
            "query($a: ID!, $b: ID!) { compareRuns(baseRunId: $a, headRunId: $b) { regressed fixed unchanged } }",
            a=runs[-1],
            b=runs[0],
        )
    return {"first": first, "second": second, "ab": ab, "read": read, "compared": compared}


def test_the_api_answers_the_same_on_each_backend(backend: Backend, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "config.yml").write_text(CONFIG, encoding="utf-8")
    location = backend.fresh()
    db = str(location.path) if location.backend == "sqlite" else location.url
    service = TestingService(project, db=db)
    try:
        seen = asyncio.run(_flow(service))
    finally:
        service.close()
    assert seen["first"]["runTestCase"] == {"passed": True, "score": 1.0, "isRegression": False}
    assert seen["second"]["batchRunTests"][0]["passed"] is False
    assert seen["ab"]["runABTest"]["winner"]["branchName"] == "base"  # no latency: fastest
    assert seen["read"]["abResult"]["winner"]["branchName"] == "base"
    case = seen["read"]["testCases"][0]
    assert case["totalRuns"] == 2 and case["passRate"] == 50.0
    stats = seen["read"]["testCaseStats"]
    assert stats["totalRuns"] == 2 and sum(d["totalRuns"] for d in stats["trendData"]) == 2
    assert seen["compared"]["compareRuns"] == {"regressed": 1, "fixed": 0, "unchanged": 0}
