"""The agent's tool loop over each vendor's native function calling, against fake servers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oxyeval.errors import ProviderError
from oxyeval.project.agents import load_agent
from oxyeval.project.config import load_project
from oxyeval.providers import ModelPool
from oxyeval.workflow.agent import AgentRunner
from oxyeval.workflow.sql import Databases

from ..conftest import MakeProject
from ..fakes import (
    FakeServer,
    RecordedRequest,
    anthropic_tool_use_response,
    fake_anthropic,
    fake_gemini,
    fake_openai,
    gemini_function_call_response,
    last_tool_results,
    openai_tool_call_response,
)

SQL = "SELECT region, SUM(amount) AS total FROM sales.csv GROUP BY region ORDER BY total DESC"
AGENT = """\
model: m
system_instructions: Use the tool.
tools:
  - name: query
    type: execute_sql
    database: shop
max_tool_calls: 3
"""

VENDORS: dict[str, tuple[Callable[..., FakeServer], Callable[..., dict[str, Any]], str]] = {
    "openai": (fake_openai, openai_tool_call_response, "openai"),
    "anthropic": (fake_anthropic, anthropic_tool_use_response, "anthropic"),
    "google": (fake_gemini, gemini_function_call_response, "google"),
}


def _project(make_project: MakeProject, vendor: str, url: str) -> Path:
    config = (
        f"models:\n  - name: m\n    vendor: {vendor}\n    model_ref: test-model\n"
        f"    api_url: {url}\n    key_var: TOOL_TEST_KEY\n"
        "databases:\n  - {name: shop, type: duckdb, dataset: data}\n"
    )
    return make_project(
        config, {"a.agent.yml": AGENT, "data/sales.csv": "region,amount\nNorth,15\nSouth,25\n"}
    )


def _ask(root: Path, question: str):
    project = load_project(root)
    agent = load_agent(project, root / "a.agent.yml")

    async def go():
        async with ModelPool(project.models, environ={"TOOL_TEST_KEY": "k-123456"}) as pool:
            sql = Databases(project.databases, project.root)
            try:
                return await AgentRunner(agent, pool, project.root, sql).ask(question)
            finally:
                sql.close()

    return asyncio.run(go())


def _tool_names(vendor: str, body: dict[str, Any]) -> list[str]:
    if vendor == "openai":
        return [t["function"]["name"] for t in body["tools"]]
    if vendor == "anthropic":
        return [t["name"] for t in body["tools"]]
    return [f["name"] for t in body["tools"] for f in t["functionDeclarations"]]


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_tool_loop_runs_sql_and_feeds_rows_back(make_project: MakeProject, vendor: str) -> None:
    factory, tool_response, vendor_name = VENDORS[vendor]

    def answer(request: RecordedRequest) -> Any:
        results = last_tool_results(request.body)
        if not results:
            return tool_response([("query", {"sql": SQL})])
        return f"South leads. (saw: {results[0][1].splitlines()[2]})"

    with factory(answer) as server:
        root = _project(make_project, vendor_name, server.url)
        completion = _ask(root, "Which region sells most?")
        requests = server.requests
    assert completion.text == "South leads. (saw: | South | 25 |)"
    assert [(c.name, c.arguments) for c in completion.tool_calls] == [("query", {"sql": SQL})]
    assert len(requests) == 2
    assert _tool_names(vendor, requests[0].body) == ["query"]
    (result,) = last_tool_results(requests[1].body)
    assert "| North | 15 |" in result[1]


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_sql_errors_go_back_to_the_model(make_project: MakeProject, vendor: str) -> None:
    factory, tool_response, vendor_name = VENDORS[vendor]

    def answer(request: RecordedRequest) -> Any:
        results = last_tool_results(request.body)
        if not results:
            return tool_response([("query", {"sql": "SELECT nope FROM sales.csv"})])
        return "fixed: " + results[0][1][:40]

    with factory(answer) as server:
        root = _project(make_project, vendor_name, server.url)
        completion = _ask(root, "q")
    assert completion.text.startswith("fixed: Error: database 'shop': BinderException")


def test_tool_call_limit_then_answer(make_project: MakeProject) -> None:
    def answer(request: RecordedRequest) -> Any:
        results = last_tool_results(request.body)
        if results and "limit reached" in results[-1][1]:
            return "giving up: " + results[-1][1][:45]
        return openai_tool_call_response([("query", {"sql": "SELECT 1 AS one"})])

    with fake_openai(answer) as server:
        root = _project(make_project, "openai", server.url)
        completion = _ask(root, "loop forever")
        calls = len(server.requests)
    assert completion.text.startswith("giving up: Tool call limit reached (3 calls")
    assert len(completion.tool_calls) == 4  # 3 run, the 4th answered with the limit message
    assert calls == 5


def test_model_that_never_stops_calling_tools_fails(make_project: MakeProject) -> None:
    with fake_openai(
        lambda _r: openai_tool_call_response([("query", {"sql": "SELECT 1"})])
    ) as server:
        root = _project(make_project, "openai", server.url)
        with pytest.raises(ProviderError, match="kept calling tools after the limit of 3"):
            _ask(root, "loop")


def test_bad_arguments_and_unknown_tools_are_reported_to_the_model(
    make_project: MakeProject,
) -> None:
    def answer(request: RecordedRequest) -> Any:
        results = last_tool_results(request.body)
        if not results:
            return openai_tool_call_response([("query", "{not json"), ("nope", {"sql": "x"})])
        return " || ".join(text for _id, text in results)

    with fake_openai(answer) as server:
        root = _project(make_project, "openai", server.url)
        completion = _ask(root, "q")
    first, second = completion.text.split(" || ")
    assert "not valid JSON" in first
    assert "no tool named 'nope'" in second


def test_mock_vendor_tool_call_rules(make_project: MakeProject) -> None:
    config = """\
    models:
      - name: m
        vendor: mock
        rules:
          - match: "^\\\\| region"
            output: "From the table: South."
          - match: "Which"
            tool_call: {name: query, arguments: {sql: "SELECT region FROM sales.csv ORDER BY amount DESC"}}
    databases:
      - {name: shop, type: duckdb, dataset: data}
    """
    root = make_project(
        config, {"a.agent.yml": AGENT, "data/sales.csv": "region,amount\nNorth,15\nSouth,25\n"}
    )
    completion = _ask(root, "Which region?")
    assert completion.text == "From the table: South."
    assert completion.tool_calls[0].name == "query"


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("COPY (SELECT 'pwned') TO '{outside}'", "only one read-only SELECT statement"),
        ("SELECT * FROM read_text('{secret}')", "Permission Error"),
        ("SELECT 1; DROP TABLE x", "only one read-only SELECT statement"),
        ("SET enable_external_access = true", "only one read-only SELECT statement"),
        ("SELECT * FROM sales.csv JOIN read_csv('{secret}') ON true", "Permission Error"),
    ],
)
def test_model_written_sql_is_sandboxed(
    make_project: MakeProject, tmp_path_factory: pytest.TempPathFactory, sql: str, expected: str
) -> None:
    outside_dir = tmp_path_factory.mktemp("outside")
    secret = outside_dir / "secret.txt"
    secret.write_text("top secret")
    outside = outside_dir / "pwn.csv"
    query = sql.format(outside=outside, secret=secret)

    def answer(request: RecordedRequest) -> Any:
        results = last_tool_results(request.body)
        if not results:
            return openai_tool_call_response([("query", {"sql": query})])
        return "saw: " + results[0][1]

    with fake_openai(answer) as server:
        root = _project(make_project, "openai", server.url)
        completion = _ask(root, "q")
    assert expected in completion.text
    assert "top secret" not in completion.text
    assert not outside.exists()


def test_sandboxed_tool_still_reads_dataset_files_by_name(make_project: MakeProject) -> None:
    def answer(request: RecordedRequest) -> Any:
        results = last_tool_results(request.body)
        if not results:
            return openai_tool_call_response(
                [("query", {"sql": "SELECT COUNT(*) AS n FROM 'sales.csv'"})]
            )
        return results[0][1]

    with fake_openai(answer) as server:
        root = _project(make_project, "openai", server.url)
        completion = _ask(root, "q")
    assert completion.text.splitlines()[2] == "| 2 |"
