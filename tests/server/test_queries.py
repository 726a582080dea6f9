"""Every query of the schema through HTTP, with the seed's own documents, checked against
the store the CLI writes (not only "no error")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import seed_docs as seed
from .conftest import PLAIN, PRAISE, Api, MakeApi, parse_time, write_project

pytestmark = pytest.mark.anyio

RUN_ONCE = "mutation R($id: ID!) { runTestCase(input: {testCaseId: $id}) { testCaseExecutionId } }"


async def test_test_cases_of_a_prompt_are_the_stores_cases_with_their_stats(api: Api) -> None:
    data = await api.data(seed.GET_TEST_CASES, {"promptId": "sentiment"})
    cases = {c["id"]: c for c in data["testCases"]}
    assert set(cases) == {PRAISE, PLAIN}
    praise, plain = cases[PRAISE], cases[PLAIN]
    stored = api.service.store.cases.get(PRAISE)
    assert praise["name"] == stored.name == "praise"
    assert praise["description"] == "Clear praise" and plain["description"] is None
    assert praise["input"] == {"text": "I love it"} == stored.input  # JSON out as JSON
    assert praise["expectedOutput"] == "positive"
    # the seeded run: praise passed, plain failed; passRate in percent
    assert (praise["totalRuns"], praise["passRate"], praise["lastPassed"]) == (1, 100.0, True)
    assert (plain["totalRuns"], plain["passRate"], plain["lastPassed"]) == (1, 0.0, False)
    assert praise["avgScore"] == 1.0
    latest = api.service.store.executions.latest(PRAISE)
    assert parse_time(praise["lastRun"]) == parse_time(
        (await api.data(seed.GET_TEST_CASE_EXECUTIONS, {"testCaseId": PRAISE}))[
            "testCaseExecutions"
        ][0]["createdAt"]
    )
    assert latest is not None
    assert parse_time(praise["createdAt"]) <= parse_time(praise["updatedAt"])
    # no prompt given: every live case; an unknown prompt: none
    every = await api.data("{ testCases { id promptId sourceFile threshold } }")
    assert {c["id"] for c in every["testCases"]} == {PRAISE, PLAIN}
    assert {c["sourceFile"] for c in every["testCases"]} == {"sentiment.prompt.yml"}
    none = await api.data(seed.GET_TEST_CASES, {"promptId": "nope"})
    assert none["testCases"] == []


async def test_test_case_answers_its_prompt(api: Api) -> None:
    data = await api.data(seed.GET_TEST_CASE, {"id": PLAIN})
    case = data["testCase"]
    assert case["id"] == PLAIN and case["prompt"] == {"id": "sentiment", "name": "sentiment"}
    assert case["passRate"] == 0.0 and case["totalRuns"] == 1
    missing = await api.data(seed.GET_TEST_CASE, {"id": "sentiment::nope"})
    assert missing["testCase"] is None  # nullable: null, as the seed's client expects


async def test_executions_are_newest_first_and_paginated(api: Api) -> None:
    for _ in range(3):
        await api.data(RUN_ONCE, {"id": PRAISE})
    stored = api.service.store.executions.list(PRAISE, 10, 0)
    assert len(stored) == 4
    page1 = (await api.data(seed.GET_TEST_CASE_EXECUTIONS, {"testCaseId": PRAISE, "limit": 2}))[
        "testCaseExecutions"
    ]
    page2 = (
        await api.data(
            seed.GET_TEST_CASE_EXECUTIONS, {"testCaseId": PRAISE, "limit": 2, "offset": 2}
        )
    )["testCaseExecutions"]
    page3 = (
        await api.data(
            seed.GET_TEST_CASE_EXECUTIONS, {"testCaseId": PRAISE, "limit": 2, "offset": 4}
        )
    )["testCaseExecutions"]
    ids = [e["id"] for e in page1 + page2]
    assert ids == [e.id for e in stored] and len(set(ids)) == 4 and page3 == []
    times = [parse_time(e["createdAt"]) for e in page1 + page2]
    assert times == sorted(times, reverse=True)
    first = page1[0]
    assert first["actualOutput"] == "positive" and first["exactMatch"] is True
    assert first["passed"] is True and first["score"] == 1.0 and first["promptVersion"] == 1
    assert first["isRegression"] is False and first["regressionType"] is None
    assert first["runDuration"] is not None and first["runDuration"] >= 0
    # default limit: all four
    every = (await api.data(seed.GET_TEST_CASE_EXECUTIONS, {"testCaseId": PRAISE}))[
        "testCaseExecutions"
    ]
    assert len(every) == 4


def use_model(root: Path, model: str) -> None:
    """Edit the YAML prompt's model: its next run is a new prompt version."""
    path = root / "sentiment.prompt.yml"
    path.write_text(path.read_text("utf-8").replace("model: quick", f"model: {model}", 1))


async def test_stats_count_runs_pass_rate_in_percent_regressions_and_trend(api: Api) -> None:
    await api.data(RUN_ONCE, {"id": PRAISE})
    # a second prompt version answers a long sentence: fails where it passed -> regression
    use_model(api.root, "steady")
    await api.data(RUN_ONCE, {"id": PRAISE})
    stats = (await api.data(seed.GET_TEST_CASE_STATS, {"testCaseId": PRAISE}))["testCaseStats"]
    assert stats["totalRuns"] == 3
    assert stats["passRate"] == pytest.approx(200 / 3)  # percent, as the seed says
    stored = api.service.store.executions.list(PRAISE, 10, 0)
    assert stats["avgScore"] == pytest.approx(sum(e.score for e in stored) / 3)
    assert stored[0].score < 0.8
    recent = stats["recentRuns"]
    assert [r["passed"] for r in recent] == [False, True, True]  # newest first
    assert [r["promptVersion"] for r in recent] == [2, 1, 1]
    assert [r["id"] for r in recent] == [e.id for e in stored]
    (regression,) = stats["regressions"]
    assert regression["id"] == recent[0]["id"] and regression["regressionType"] == "FAILED"
    assert regression["promptVersion"] == 2
    (day,) = stats["trendData"]
    assert day["totalRuns"] == 3 and day["passRate"] == pytest.approx(200 / 3)
    assert day["date"] == parse_time(recent[0]["createdAt"]).date().isoformat()
    # the seed's shorter GetStats document too
    short = (await api.data(seed.GET_STATS, {"testCaseId": PRAISE}))["testCaseStats"]
    assert (
        short["passRate"] == stats["passRate"]
        and short["trendData"][0]["passRate"] == day["passRate"]
    )
    listed = await api.data("{ testCases { id regressionCount } }")
    counts = {c["id"]: c["regressionCount"] for c in listed["testCases"]}
    assert counts == {PRAISE: 1, PLAIN: 0}


async def test_branches_report_their_provider_and_aggregates(api: Api) -> None:
    ab = {
        "testCaseId": PRAISE,
        "branchIds": ["sentiment::praise@Quick", "sentiment::praise@Steady"],
    }
    await api.data(seed.RUN_A_B_TEST, {"input": ab})
    branches = (await api.data(seed.GET_TEST_BRANCHES, {"testCaseId": PRAISE}))["testBranches"]
    by_name = {b["name"]: b for b in branches}
    assert set(by_name) == {"Quick", "Steady"}
    quick = by_name["Quick"]
    # a branch naming a config.yml model: the model's vendor fills the required provider
    assert quick["provider"] == "mock" and quick["model"] == "quick"
    assert by_name["Steady"]["isControl"] is True and quick["isControl"] is False
    assert quick["isActive"] is True and quick["totalRuns"] == 1
    assert quick["avgQualityScore"] == 1.0 and quick["passRate"] == 100.0
    assert by_name["Steady"]["avgLatency"] >= 10  # the scripted 10 ms, measured
    parse_time(quick["createdAt"])
    execs = (await api.data(seed.GET_BRANCH_EXECUTIONS, {"branchId": quick["id"], "limit": 10}))[
        "testBranchExecutions"
    ]
    stored = api.service.store.branches.executions(quick["id"], limit=10, offset=0)
    assert [e["id"] for e in execs] == [e.id for e in stored] and len(execs) == 1
    assert execs[0]["output"] == "positive" and execs[0]["status"] == "success"
    assert execs[0]["promptVersion"] == 1 and execs[0]["qualityScore"] == 1.0
    assert execs[0]["inputTokens"] > 0 and execs[0]["estimatedCost"] > 0
    short = (await api.data(seed.GET_BRANCH_EXECUTIONS_2, {"branchId": quick["id"], "limit": 10}))[
        "testBranchExecutions"
    ]
    assert short[0]["output"] == "positive"
    none = await api.data(seed.GET_BRANCH_EXECUTIONS, {"branchId": quick["id"], "offset": 1})
    assert none["testBranchExecutions"] == []


async def test_prompts_and_prompt(api: Api) -> None:
    data = await api.data(
        "{ prompts { id name source latestVersion versions { version contentHash content"
        " createdAt } content testCases { id } createdAt } }"
    )
    (prompt,) = data["prompts"]
    assert prompt["id"] == "sentiment" and prompt["source"] == "sentiment.prompt.yml"
    assert prompt["latestVersion"] == 1 and len(prompt["versions"]) == 1
    assert prompt["content"]["template"] == "Feedback: {{ text }}"
    assert prompt["versions"][0]["content"] == prompt["content"]
    assert len(prompt["versions"][0]["contentHash"]) == 64
    parse_time(prompt["versions"][0]["createdAt"])
    assert {c["id"] for c in prompt["testCases"]} == {PRAISE, PLAIN}
    one = await api.data('{ prompt(id: "sentiment") { id name latestVersion } }')
    assert one["prompt"] == {"id": "sentiment", "name": "sentiment", "latestVersion": 1}
    assert (await api.data('{ prompt(id: "nope") { id } }'))["prompt"] is None


async def test_runs_run_results_subjects_and_trend(api: Api) -> None:
    await api.data(RUN_ONCE, {"id": PRAISE})
    runs = (
        await api.data(
            '{ runs(kind: "cases") { id kind subject status total passed failed startedAt'
            " finishedAt } }"
        )
    )["runs"]
    assert len(runs) == 2 and all(r["kind"] == "cases" for r in runs)
    newest, seeded = runs
    assert (seeded["total"], seeded["passed"], seeded["failed"]) == (2, 1, 1)
    assert (newest["total"], newest["passed"], newest["status"]) == (1, 1, "completed")
    assert parse_time(newest["startedAt"]) >= parse_time(seeded["startedAt"])
    assert parse_time(newest["finishedAt"]) >= parse_time(newest["startedAt"])
    by_subject = (await api.data('{ runs(subject: "sentiment.prompt.yml") { id } }'))["runs"]
    assert {r["id"] for r in by_subject} == {r["id"] for r in runs}
    assert (await api.data('{ runs(kind: "ab") { id } }'))["runs"] == []
    assert len((await api.data("{ runs(limit: 1, offset: 1) { id } }"))["runs"]) == 1

    detail = (
        await api.data(
            "query D($id: ID!) { run(id: $id) { run { id total } results { subject passed"
            " output scores { metric value } } workflow } }",
            {"id": seeded["id"]},
        )
    )["run"]
    assert detail["run"] == {"id": seeded["id"], "total": 2}
    assert {(r["subject"], r["passed"]) for r in detail["results"]} == {
        (PRAISE, True),
        (PLAIN, False),
    }
    assert detail["workflow"] is None
    assert (await api.data('{ run(id: "nope") { run { id } } }'))["run"] is None

    results = (
        await api.data(
            '{ results(kind: "cases", subject: "sentiment::praise") { runId passed output'
            " createdAt } }"
        )
    )["results"]
    assert [r["runId"] for r in results] == [newest["id"], seeded["id"]]
    subjects = (await api.data('{ subjects(kind: "cases") }'))["subjects"]
    assert sorted(subjects) == [PLAIN, PRAISE]
    trend = (
        await api.data('{ resultTrend(kind: "cases") { date totalRuns passRate avgScore errors } }')
    )["resultTrend"]
    assert len(trend) == 1 and trend[0]["totalRuns"] == 3
    assert trend[0]["passRate"] == pytest.approx(200 / 3)
    one = (
        await api.data(
            '{ resultTrend(kind: "cases", subject: "sentiment::plain") { totalRuns passRate } }'
        )
    )["resultTrend"]
    assert one == [{"totalRuns": 1, "passRate": 0.0}]


async def test_server_info(api: Api) -> None:
    info = (
        await api.data(
            "{ serverInfo { version project db maxBranches maxDepth maxBodyBytes models"
            " runKinds } }"
        )
    )["serverInfo"]
    from oxyeval import __version__

    assert info["version"] == __version__ and info["project"] == str(api.root)
    assert info["models"] == ["quick", "steady"] and info["maxBranches"] == 5
    assert info["maxDepth"] == 10 and info["maxBodyBytes"] == 1_000_000
    limits = (await api.data("{ serverInfo { maxCost maxValues queryTimeoutMs } }"))["serverInfo"]
    assert limits == {"maxCost": 500_000, "maxValues": 500_000, "queryTimeoutMs": 30_000}
    assert "cases" in info["runKinds"] and "ab" in info["runKinds"]


async def test_a_query_by_get(api: Api) -> None:
    params = {"query": seed.GET_TEST_CASE, "variables": json.dumps({"id": PRAISE})}
    json_type = {"content-type": "application/json"}
    response = await api.client.get("/graphql", params=params, headers=json_type)
    assert response.status_code == 200
    assert response.json()["data"]["testCase"]["prompt"]["id"] == "sentiment"
    # a mutation is not run by GET
    refused = await api.client.get(
        "/graphql",
        params={"query": seed.DELETE_TEST_CASE, "variables": json.dumps({"id": PRAISE})},
        headers=json_type,
    )
    assert refused.status_code == 405 and refused.json()["errors"]
    assert api.service.store.cases.get(PRAISE) is not None


@pytest.mark.parametrize("content_type", [None, "text/plain", "multipart/form-data; boundary=x"])
async def test_a_cross_site_get_query_is_refused(
    api: Api, monkeypatch: pytest.MonkeyPatch, content_type: str | None
) -> None:
    # what an <img src> or a no-cors fetch on any web page sends, with no preflight
    asked: list[str] = []
    real = api.service.prompts

    async def counted() -> list:
        asked.append("prompts")
        return await real()

    monkeypatch.setattr(api.service, "prompts", counted)
    headers = {"origin": "https://evil.example"}
    if content_type is not None:
        headers["content-type"] = content_type
    response = await api.client.get(
        "/graphql", params={"query": "{ prompts { id } }"}, headers=headers
    )
    assert response.status_code == 403 and response.json()["errors"][0]["extensions"] == {
        "code": "FORBIDDEN"
    }
    assert "Content-Type: application/json" in response.json()["errors"][0]["message"]
    assert asked == []


async def test_a_fresh_server_lists_the_yaml_cases(tmp_path: Path, make_api: MakeApi) -> None:
    api = await make_api(write_project(tmp_path / "fresh"))
    data = await api.data(seed.GET_TEST_CASES, {"promptId": "sentiment"})
    assert {c["id"] for c in data["testCases"]} == {PRAISE, PLAIN}
