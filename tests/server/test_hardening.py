"""What an attacker review of ``oxy serve`` found, each pinned: query cost, the Host check,
malformed bodies, queued runs, input errors and paths in messages."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from graphql import get_introspection_query
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.server.events import EventHub
from oxyeval.server.guard import _loopback_host, is_loopback
from oxyeval.server.runs import Runner, ServerBusy

from .conftest import Api, MakeApi, codes, write_project

pytestmark = pytest.mark.anyio


def _doubling(n: int) -> str:
    spreads = " ".join(f"fragment A{i} on Query {{ ...A{i + 1} ...A{i + 1} }}" for i in range(n))
    return f"{{ ...A0 }} {spreads} fragment A{n} on Query {{ serverInfo {{ version }} }}"


async def test_doubling_fragments_are_measured_once_and_refused(api: Api) -> None:
    # 2^60 fields when expanded: the rule must count them without expanding them
    response = await api.client.get("/graphql", params={"query": _doubling(60)})
    body = response.json()
    assert response.status_code == 400
    assert codes(body) == ["GRAPHQL_VALIDATION_FAILED"]
    assert "fields (fragments expanded)" in body["errors"][0]["message"]
    small = await api.client.get("/graphql", params={"query": _doubling(3)})
    assert small.status_code == 200 and "errors" not in small.json()  # 8 fields: fine


async def test_root_fields_and_introspection_are_capped(api: Api) -> None:
    many = "{" + " ".join(f"a{i}: serverInfo {{ version }}" for i in range(26)) + "}"
    error = await api.error(many, code="GRAPHQL_VALIDATION_FAILED")
    assert "26 root fields" in error["message"]
    twice = "{ a: __schema { types { name } } b: __schema { types { name } } }"
    assert "introspection" in (await api.error(twice))["message"]
    # what GraphQL clients and code generators send still works
    data = await api.data(get_introspection_query())
    assert data["__schema"]["queryType"]["name"] == "Query"


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1:4000", True),
        ("localhost:4000", True),
        ("LOCALHOST", True),
        ("[::1]:4000", True),
        ("127.0.0.1.attacker.example", False),  # a DNS-rebinding name
        ("127.attacker.example:4000", False),
        ("localhost:4000@evil.example", False),
        ("127.0.0.1:4000:x", False),
        ("", False),
    ],
)
def test_the_host_check_takes_loopback_names_only(host: str, ok: bool) -> None:
    assert _loopback_host(host) is ok


def test_loopback_is_an_address_not_a_prefix() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("127.0.0.1.nip.io")


async def test_a_rebinding_host_is_refused(api: Api) -> None:
    response = await api.client.post(
        "/graphql",
        json={"query": "{ serverInfo { version } }"},
        headers={"host": "127.0.0.1.attacker.example:4000"},
    )
    assert response.status_code == 421


async def test_malformed_bodies_get_json_errors_not_a_500(api: Api) -> None:
    nested = '{"query":"{serverInfo{version}}","variables":{"v":' + "[" * 100_000
    nested += "]" * 100_000 + "}}"
    response = await api.client.post(
        "/graphql", content=nested, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400 and codes(response.json()) == ["BAD_USER_INPUT"]

    async def chunks():  # no Content-Length: counted as it arrives
        for _ in range(30):
            yield b" " * 100_000

    response = await api.client.post(
        "/graphql", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413 and codes(response.json()) == ["BAD_USER_INPUT"]


async def test_runs_beyond_the_queue_are_refused_and_unstarted_ones_dropped() -> None:
    runner = Runner(EventHub(), max_runs=1, max_queued=1)
    gate = asyncio.Event()
    started: list[str] = []

    async def work(name: str) -> str:
        started.append(name)
        await gate.wait()
        return name

    first = asyncio.ensure_future(runner.run("a", lambda _sink: work("first")))
    await asyncio.sleep(0.01)
    waiting = asyncio.ensure_future(runner.run("b", lambda _sink: work("waiting")))
    await asyncio.sleep(0.01)
    with pytest.raises(ServerBusy):
        await runner.run("c", lambda _sink: work("third"))
    waiting.cancel()  # its client left before it had a slot: never run for nobody
    await asyncio.sleep(0.01)
    first.cancel()  # this one had started: it finishes anyway
    gate.set()
    await runner.drain()
    assert started == ["first"]
    assert runner.running == 0


async def test_a_case_whose_input_does_not_fit_is_bad_input(
    tmp_path: Path, make_api: MakeApi
) -> None:
    api = await make_api(write_project(tmp_path / "p", prompt=None))
    prompt = "mutation($i: PromptInput!) { createPrompt(input: $i) { latestVersion } }"
    create = "mutation($i: TestCaseInput!) { createTestCase(input: $i) { id } }"
    await api.data(prompt, {"i": {"name": "strict", "model": "quick", "template": "{{ text }}"}})
    refused = await api.error(
        create,
        {"i": {"promptId": "strict", "name": "odd", "input": {"other": "x"}}},
        code="BAD_USER_INPUT",
    )  # caught when made, not as an error on every run
    assert "does not fit prompt 'strict' version 1" in refused["message"]
    created = await api.data(
        create, {"i": {"promptId": "strict", "name": "ok", "input": {"text": "hi"}}}
    )
    # the prompt's next version asks for a variable the case does not give: its run says so
    await api.data(
        prompt, {"i": {"name": "strict", "model": "quick", "template": "{{ text }} {{ n + 1 }}"}}
    )
    error = await api.error(
        "mutation($i: RunTestCaseInput!) { runTestCase(input: $i) { passed } }",
        {"i": {"testCaseId": created["createTestCase"]["id"]}},
        code="BAD_USER_INPUT",
    )
    assert "does not fit" in error["message"]


async def test_messages_name_paths_relative_to_the_project(api: Api) -> None:
    error = await api.error(
        '{ abResult(testCaseId: "sentiment::praise", runId: "zz") { criteria } }',
        code="NOT_FOUND",
    )
    assert str(api.root) not in error["message"]
    assert ".oxy/oxyeval.db" in error["message"]


CREATE = "mutation($i: TestCaseInput!) { createTestCase(input: $i) { id name } }"
UPDATE = "mutation($id: ID!, $i: TestCaseInput!) { updateTestCase(id: $id, input: $i) { id name } }"
DELETE = "mutation($id: ID!) { deleteTestCase(id: $id) }"
RUN = "mutation($i: RunTestCaseInput!) { runTestCase(input: $i) { passed } }"
EXECUTIONS = "query($id: ID!) { testCaseExecutions(testCaseId: $id) { id } }"


async def test_a_new_case_never_inherits_an_old_ones_history(
    tmp_path: Path, make_api: MakeApi
) -> None:
    api = await make_api(write_project(tmp_path / "p", prompt=None))
    await api.data(
        "mutation($i: PromptInput!) { createPrompt(input: $i) { id } }",
        {"i": {"name": "tone", "model": "quick", "template": "{{ text }}"}},
    )
    case = {"promptId": "tone", "name": "a", "input": {"text": "hi"}, "expectedOutput": "positive"}
    first = (await api.data(CREATE, {"i": case}))["createTestCase"]["id"]
    await api.data(RUN, {"i": {"testCaseId": first}})
    dup = await api.error(CREATE, {"i": case}, code="BAD_USER_INPUT")
    assert "updateTestCase" in dup["message"] and "store." not in dup["message"]
    assert (await api.data(DELETE, {"id": first}))["deleteTestCase"] is True
    again = (await api.data(CREATE, {"i": case}))["createTestCase"]["id"]
    assert again != first and again.startswith("tone::a")
    assert (await api.data(EXECUTIONS, {"id": again}))["testCaseExecutions"] == []
    # renamed: keeps its id; its old name is free for a new case with no history
    await api.data(UPDATE, {"id": again, "i": {**case, "name": "b"}})
    third = (await api.data(CREATE, {"i": case}))["createTestCase"]["id"]
    assert third not in (first, again)
    taken = await api.error(UPDATE, {"id": third, "i": {**case, "name": "b"}})
    assert "already has a test case named 'b'" in taken["message"]
    moved = await api.error(UPDATE, {"id": third, "i": {**case, "promptId": "other"}})
    assert "cannot move to another prompt" in moved["message"]


async def test_compare_takes_id_starts_and_refuses_two_kinds(api: Api) -> None:
    runs = (await api.data('{ runs(kind: "cases") { id } }'))["runs"]
    await api.data(RUN, {"i": {"testCaseId": "sentiment::praise"}})
    latest = (await api.data('{ runs(kind: "cases", limit: 1) { id } }'))["runs"][0]["id"]
    short = await api.data(
        "query($a: ID!, $b: ID!) { compareRuns(baseRunId: $a, headRunId: $b) { base { id } } }",
        {"a": runs[-1]["id"][:8], "b": latest},
    )
    assert short["compareRuns"]["base"]["id"] == runs[-1]["id"]
    ab = await api.data('{ testBranches(testCaseId: "sentiment::praise") { id } }')
    ids = [b["id"] for b in ab["testBranches"]]
    ran = await api.data(
        "mutation($i: RunABTestInput!) { runABTest(input: $i) { runId } }",
        {"i": {"testCaseId": "sentiment::praise", "branchIds": ids}},
    )
    mixed = await api.error(
        "query($a: ID!, $b: ID!) { compareRuns(baseRunId: $a, headRunId: $b) { regressed } }",
        {"a": latest, "b": ran["runABTest"]["runId"]},
        code="BAD_USER_INPUT",
    )
    assert "one kind" in mixed["message"]


async def test_http_answers_are_json_with_the_spec_statuses(api: Api) -> None:
    bad = await api.client.post(
        "/graphql", content="{bad json", headers={"content-type": "application/json"}
    )
    assert bad.status_code == 400 and codes(bad.json()) == ["BAD_USER_INPUT"]
    get = await api.client.get("/graphql", params={"query": 'mutation { deleteTestCase(id: "x") }'})
    assert get.status_code == 405 and "POST" in get.json()["errors"][0]["message"]
    ran = await api.client.post(
        "/graphql", json={"query": '{ testCaseStats(testCaseId: "nope") { totalRuns } }'}
    )
    assert ran.status_code == 200 and codes(ran.json()) == ["NOT_FOUND"]  # it ran: 200
    empty = await api.error(
        "mutation($i: PromptInput!) { createPrompt(input: $i) { id } }",
        {"i": {"name": "x", "model": "quick", "template": "  "}},
        code="BAD_USER_INPUT",
    )
    assert "template" in empty["message"]


async def test_a_priced_models_case_runs_carry_their_cost(api: Api) -> None:
    ran = await api.data(
        "mutation($i: RunTestCaseInput!) { runTestCase(input: $i) { testCaseExecutionId costUsd } }",
        {"i": {"testCaseId": "sentiment::praise"}},
    )
    cost = ran["runTestCase"]["costUsd"]
    assert cost is not None and cost > 0  # quick is priced in config.yml
    stored = await api.data(
        'query { testCaseExecutions(testCaseId: "sentiment::praise", limit: 1) { id costUsd } }'
    )
    first = stored["testCaseExecutions"][0]
    assert first["id"] == ran["runTestCase"]["testCaseExecutionId"]
    assert first["costUsd"] == pytest.approx(cost)


async def test_a_keyless_vendor_branch_names_its_model(api: Api, no_env_keys: None) -> None:
    created = await api.data(
        "mutation($i: TestBranchInput!) { createTestBranch(input: $i) { id } }",
        {
            "i": {
                "testCaseId": "sentiment::praise",
                "name": "GPT-4 Turbo",
                "provider": "openai",
                "model": "gpt-4-turbo-preview",
            }
        },
    )
    error = await api.error(
        "mutation($i: RunABTestInput!) { runABTest(input: $i) { criteria } }",
        {
            "i": {
                "testCaseId": "sentiment::praise",
                "branchIds": [created["createTestBranch"]["id"]],
            }
        },
        code="BAD_USER_INPUT",
    )
    assert "gpt-4-turbo-preview" in error["message"] and "OPENAI_API_KEY" in error["message"]


async def test_a_bad_number_in_a_served_file_is_a_sync_error_not_a_failing_api(
    api: Api,
) -> None:
    prompt = api.root / "sentiment.prompt.yml"
    prompt.write_text(
        prompt.read_text().replace('input: {text: "I love it"}', f"input: {{text: {'9' * 5000}}}")
    )
    api.service.sync()
    data = await api.data("{ serverInfo { syncError models } testCases { id input } }")
    error = data["serverInfo"]["syncError"]
    assert "sentiment.prompt.yml:" in error and "more than 308 digits" in error
    assert data["serverInfo"]["models"] == ["quick", "steady"]
    # the last good state is served meanwhile
    assert {"text": "I love it"} in [c["input"] for c in data["testCases"]]


def test_a_read_does_not_wait_for_a_sync_under_way(project: Path) -> None:
    import threading

    from oxyeval.server import TestingService

    service = TestingService(project)
    try:
        service._checked_at = float("-inf")  # due for a check
        with service._sync_lock:  # another request's sync, loading a large file
            reader = threading.Thread(target=service.sync, kwargs={"force": False})
            reader.start()
            reader.join(30)
            assert not reader.is_alive()  # it answered from the store as it is
    finally:
        service.close()


_CREATE = "mutation($i: TestCaseInput!) { createTestCase(input: $i) { id input } }"


def _create_body(value: str) -> str:
    """A createTestCase request whose input's ``text`` is ``value`` as written in the body
    (Python's ``json`` takes NaN, Infinity and 4,000-digit integers there)."""
    head = json.dumps({"query": _CREATE})[:-1]
    case = '{"promptId": "sentiment", "name": "bad", "input": {"text": ' + value + "}}"
    return head + ', "variables": {"i": ' + case + "}}"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("NaN", "NaN is not a number JSON allows"),
        ("-Infinity", "-Infinity is not a number JSON allows"),
        ("1e999", "Infinity is not a number JSON allows"),
        ("9" * 400, "an integer of more than 308 digits"),
        ("[" * 100 + "]" * 100, "nested more than 100 levels"),
    ],
    ids=["NaN", "-Infinity", "1e999", "400 digits", "101 levels"],
)
async def test_case_input_out_of_json_bounds_is_refused_and_never_stored(
    api: Api, value: str, why: str
) -> None:
    response = await api.client.post(
        "/graphql", content=_create_body(value), headers={"content-type": "application/json"}
    )
    body = response.json()
    assert codes(body) == ["BAD_USER_INPUT"], body
    assert why in body["errors"][0]["message"]
    data = await api.data("{ testCases { id input } }")
    assert "sentiment::bad" not in [c["id"] for c in data["testCases"]]


async def test_a_json_literal_out_of_bounds_is_refused_as_written(api: Api) -> None:
    literal = (
        'mutation { createTestCase(input: {promptId: "sentiment", name: "bad", '
        "input: {text: %s}}) { id } }"
    )
    error = await api.error(literal % ("9" * 5000), code="BAD_USER_INPUT")
    assert "an integer of more than 308 digits" in error["message"]  # not "NaN"
    error = await api.error(literal % "1e999", code="BAD_USER_INPUT")
    assert "Infinity is not a number JSON allows" in error["message"]


async def test_input_at_the_bounds_is_stored_and_answered(api: Api) -> None:
    deep: object = "I love it"
    for _ in range(98):  # input itself is the first level
        deep = [deep]
    value = {"text": deep, "n": 10**308 - 1, "x": -1.5e308}
    data = await api.data(_CREATE, {"i": {"promptId": "sentiment", "name": "edge", "input": value}})
    assert data["createTestCase"]["input"]["n"] == 10**308 - 1


async def test_a_row_stored_with_nan_by_an_older_version_is_answered(
    api: Api, project: Path
) -> None:
    import sqlite3

    case = {"promptId": "sentiment", "name": "old", "input": {"text": "I love it"}}
    case_id = (await api.data(_CREATE, {"i": case}))["createTestCase"]["id"]
    stored = '{"n":NaN,"big":' + "9" * 5000 + ',"text":"I love it","x":-Infinity}'
    with sqlite3.connect(project / ".oxy/oxyeval.db") as db:
        db.execute("UPDATE test_cases SET input = ? WHERE id = ?", (stored, case_id))
    query = "query($id: ID!) { testCases { id input } testCase(id: $id) { input } }"
    data = await api.data(query, {"id": case_id})
    expected = {"n": None, "big": None, "text": "I love it", "x": None}
    assert {c["id"]: c["input"] for c in data["testCases"]}[case_id] == expected
    assert data["testCase"]["input"] == expected
    result = CliRunner().invoke(
        app, ["cases", "list", "--project", str(project), "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr

    def strict(name: str) -> None:
        raise AssertionError(f"{name} in --format json output")

    cases = json.loads(result.stdout, parse_constant=strict)["testCases"]
    assert {c["id"]: c["input"] for c in cases}[case_id] == expected
