"""What one GraphQL request may cost: a document refused before it runs when its lists
nested in lists would make a huge answer, when it is too long to parse, or when it would
make graphql-core's own checks slow; and while it runs, a bound on its answer's values and
a deadline, and its work stopped when its client leaves."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from oxyeval.server import limits

from .conftest import Api, MakeApi, codes

pytestmark = pytest.mark.anyio

NESTED = "prompts { testCases { prompt { testCases { prompt { testCases { id } } } } } }"
#: 25 root fields of 7 fields, 7 deep: within the depth, field and root-field limits
ATTACK = "{ " + " ".join(f"a{i}: {NESTED}" for i in range(25)) + " }"


async def test_lists_nested_in_lists_are_refused_before_they_run(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    real = api.service.prompts

    async def counted() -> list:
        reads.append("prompts")
        return await real()

    monkeypatch.setattr(api.service, "prompts", counted)
    status, body = await api.gql(ATTACK)
    assert status == 400 and codes(body) == ["GRAPHQL_VALIDATION_FAILED"]
    message = body["errors"][0]["message"]
    assert "would cost about" in message and f"{limits.DEFAULT_MAX_COST:,}" in message
    two_lists = "{ prompts { testCases { prompt { testCases { id } } } } }"
    assert (await api.gql(two_lists))[0] == 400
    assert reads == []  # refused before a resolver ran
    data = await api.data("{ prompts { id testCases { id prompt { id } } } }")
    assert {c["id"] for c in data["prompts"][0]["testCases"]} >= {"sentiment::praise"}
    assert reads == ["prompts"]


async def test_a_page_size_given_as_a_variable_is_counted(project: Path, make_api: MakeApi) -> None:
    api = await make_api(project, max_cost=200)
    query = (
        'query($n: Int) { testCaseExecutions(testCaseId: "sentiment::praise", limit: $n)'
        " { id passed score } }"
    )
    assert (await api.gql(query, {"n": 5}))[0] == 200  # 1 + 10 + 5 x 3
    status, body = await api.gql(query, {"n": 500})
    assert status == 400 and "would cost about 1,511" in body["errors"][0]["message"]
    status, body = await api.gql(query)  # no limit: the default page, 50 rows
    assert status == 200


async def test_many_operations_are_measured_in_one_pass(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[object] = []
    real = limits._Measure.__init__

    def counted(self: limits._Measure, *args: object, **kwargs: object) -> None:
        made.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(limits._Measure, "__init__", counted)
    many = " ".join(f"query Q{i} {{ serverInfo {{ version }} }}" for i in range(1000))
    response = await api.client.post("/graphql", json={"query": many, "operationName": "Q7"})
    assert response.status_code == 200 and response.json()["data"]["serverInfo"]["version"]
    assert len(made) == 1  # one fragment map and memo for the document, not one per operation
    huge = " ".join(f"query Q{i}{{__typename}}" for i in range(30_000))  # 0.8 MB
    status, body = await api.gql(huge)
    assert status == 400 and codes(body) == ["GRAPHQL_PARSE_FAILED"]
    assert f"more than {limits.MAX_TOKENS} tokens" in body["errors"][0]["message"]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        (
            '{ testCase(id: "x") { ' + " ".join("a: id a: name" for _ in range(60)) + " } }",
            "one name 120 times",
        ),
        (
            '{ testCase(id: "x") { '
            + " ".join(f"...F{i}" for i in range(101))
            + " } } "
            + " ".join(f"fragment F{i} on TestCase {{ a: id }}" for i in range(101)),
            "one name 101 times",
        ),
        (
            '{ testCase(id: "x") { ...F0 } } '
            + " ".join(f"fragment F{i} on TestCase {{ id }}" for i in range(201)),
            "defines 201 fragments",
        ),
    ],
)
async def test_what_makes_the_spec_checks_quadratic_is_refused_first(
    api: Api, query: str, words: str
) -> None:
    status, body = await api.gql(query)
    assert status == 400 and codes(body) == ["GRAPHQL_VALIDATION_FAILED"]
    # only this server's rule answered: graphql-core's (conflicting fields, unused
    # fragments) never ran on the document
    assert len(body["errors"]) == 1 and words in body["errors"][0]["message"]


# -- while it runs


async def test_an_answer_past_its_value_bound_is_refused(project: Path, make_api: MakeApi) -> None:
    api = await make_api(project, max_values=40)
    small = await api.data("{ testCases { id } }")
    assert len(small["testCases"]) == 2
    many = "{ " + " ".join(f"a{i}: testCases {{ id name passRate }}" for i in range(8)) + " }"
    status, body = await api.gql(many)  # 8 lists of 2 cases of 3 fields: past 40 values
    assert status == 400 and codes(body) == ["BAD_USER_INPUT"]
    assert "more than 40 values" in body["errors"][0]["message"] and "data" not in body
    assert (await api.gql("{ a0: testCases { id name passRate } }"))[0] == 200


class Stalled:
    """A read that never ends, and whether it was cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    async def __call__(self, *_: object) -> list:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return []


async def test_a_query_past_its_deadline_is_stopped(
    project: Path, make_api: MakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = await make_api(project, query_timeout=0.2)
    stalled = Stalled()
    monkeypatch.setattr(api.service, "prompts", stalled)
    status, body = await api.gql("{ prompts { id } }")
    assert status == 503 and codes(body) == ["SERVER_BUSY"]
    assert "longer than 0.2 s" in body["errors"][0]["message"]
    assert stalled.cancelled  # its await was cancelled, not left running


async def test_a_mutation_has_no_query_deadline(
    project: Path, make_api: MakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a run goes on until its models answer; it is bounded by the run queue instead
    api = await make_api(project, query_timeout=0.05)
    real = api.service.delete_test_case

    async def slow(case_id: str) -> bool:
        await asyncio.sleep(0.3)
        return await real(case_id)

    monkeypatch.setattr(api.service, "delete_test_case", slow)
    data = await api.data('mutation { deleteTestCase(id: "nope") }')
    assert data == {"deleteTestCase": False}


async def test_a_query_stops_when_its_client_leaves(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    stalled = Stalled()
    monkeypatch.setattr(api.service, "prompts", stalled)
    body = json.dumps({"query": "{ prompts { id } }"}).encode()
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        if messages:
            return messages.pop()
        await stalled.started.wait()  # the client goes once the query is running
        return {"type": "http.disconnect"}

    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/graphql",
        "raw_path": b"/graphql",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 4000),
    }
    await asyncio.wait_for(api.app(scope, receive, send), 10)  # returns: nothing is left
    assert stalled.cancelled


def test_the_answers_built_at_once_share_one_pool() -> None:
    pool = limits.Pool(100)
    first, second = limits.Budget(80, None, pool), limits.Budget(80, None, pool)
    assert first.spend(70)
    assert not second.spend(40)  # 110 in all
    assert second.exceeded == "busy" and first.exceeded is None
    second.release()
    first.spend(10)  # what the refused one held is back in the pool
    assert pool.used == 80


def test_a_stopping_server_stops_the_queries_it_has_going() -> None:
    pool = limits.Pool(1000)
    query, mutation = limits.Budget(100, 30, pool), limits.Budget(100, 30, pool)
    mutation.for_mutation()  # its run is finished and stored anyway: its client gets it
    pool.stop_all()
    assert query.exceeded == "stopping" and query.stopped.is_set()
    assert mutation.exceeded is None
    query.release()
    mutation.release()
    assert not pool.active
