"""What one GraphQL request may cost: a document refused before it runs when its lists
nested in lists would make a huge answer, when it is too long to parse, or when it would
make graphql-core's own checks slow; and while it runs, a bound on its answer's values and
a deadline, and its work stopped when its client leaves."""

from __future__ import annotations

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
