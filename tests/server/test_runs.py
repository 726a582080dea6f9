"""Runs through the API: a model's concurrency limit holds across requests, a client that
leaves does not lose its executions, the event stream tells a run as it happens, and two
runs compare."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.fakes import fake_openai

from . import seed_docs as seed
from .conftest import CONFIG, PLAIN, PRAISE, Api, MakeApi, aseed, live, write_project

pytestmark = pytest.mark.anyio


def _slow_project(root: Path, url: str, concurrency: int = 2) -> Path:
    remote = f"""\
  - {{name: remote, vendor: openai, model_ref: gpt-x, api_url: "{url}",
     key_var: FAKE_KEY, concurrency: {concurrency}, max_retries: 0}}
"""
    return write_project(root, CONFIG.replace("pricing:", remote + "pricing:"))


async def _remote_branches(api: Api, count: int) -> list[str]:
    ids = []
    for n in range(count):
        branch = {"testCaseId": PRAISE, "name": f"R{n}", "provider": "project", "model": "remote"}
        made = (await api.data(seed.CREATE_TEST_BRANCH, {"input": branch}))["createTestBranch"]
        ids.append(made["id"])
    return ids


async def test_a_burst_of_ab_tests_keeps_the_models_concurrency(
    tmp_path: Path, make_api: MakeApi
) -> None:
    with fake_openai("positive", latency=0.2) as server:
        root = _slow_project(tmp_path / "p", server.url)
        await aseed(root)
        api = await make_api(root, environ={"FAKE_KEY": "k" * 20})
        ids = await _remote_branches(api, 2)
        mutation = seed.RUN_A_B_TEST
        variables = {"input": {"testCaseId": PRAISE, "branchIds": ids}}
        answers = await asyncio.gather(*(api.gql(mutation, variables) for _ in range(5)))
        assert all(status == 200 and not body.get("errors") for status, body in answers), answers
        assert len(server.requests) == 10
        assert server.max_in_flight <= 2
        assert server.max_in_flight == 2  # the limit is used, not serialised to 1
        for _, body in answers:
            outputs = [b["execution"]["output"] for b in body["data"]["runABTest"]["branches"]]
            assert outputs == ["positive", "positive"]


async def test_a_client_that_leaves_does_not_lose_the_run(
    tmp_path: Path, make_api: MakeApi
) -> None:
    with fake_openai("positive", latency=0.3) as server:
        root = _slow_project(tmp_path / "p", server.url, concurrency=1)
        await aseed(root)
        api = await make_api(root, environ={"FAKE_KEY": "k" * 20})
        ids = await _remote_branches(api, 2)
        request = asyncio.ensure_future(
            api.gql(seed.RUN_A_B_TEST, {"input": {"testCaseId": PRAISE, "branchIds": ids}})
        )
        while not server.requests:
            await asyncio.sleep(0.02)
        request.cancel()  # the client goes away mid-run
        with pytest.raises(asyncio.CancelledError):
            await request
        await api.service.drain()
        for branch_id in ids:
            execs = (await api.data(seed.GET_BRANCH_EXECUTIONS, {"branchId": branch_id}))[
                "testBranchExecutions"
            ]
            assert [e["output"] for e in execs] == ["positive"]
        runs = (await api.data('{ runs(kind: "ab") { status total } }'))["runs"]
        assert runs == [{"status": "completed", "total": 2}]


async def test_a_batch_whose_client_times_out_is_stored(tmp_path: Path, make_api: MakeApi) -> None:
    with fake_openai("neutral", latency=0.2) as server:
        root = write_project(tmp_path / "p")
        await aseed(root)
        _slow_project(root, server.url, concurrency=1)
        path = root / "sentiment.prompt.yml"
        path.write_text(path.read_text().replace("model: quick", "model: remote", 1))
        api = await make_api(root, environ={"FAKE_KEY": "k" * 20})
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(
                api.gql(seed.BATCH_RUN_TESTS, {"input": {"promptId": "sentiment"}}), 0.1
            )
        await api.service.drain()
        for case_id, passed in ((PRAISE, False), (PLAIN, True)):
            execs = (await api.data(seed.GET_TEST_CASE_EXECUTIONS, {"testCaseId": case_id}))[
                "testCaseExecutions"
            ]
            assert execs[0]["actualOutput"] == "neutral" and execs[0]["passed"] is passed
            assert execs[0]["promptVersion"] == 2
        runs = (await api.data('{ runs(kind: "cases") { status total } }'))["runs"]
        assert runs[0] == {"status": "completed", "total": 2}


async def test_events_tell_a_run_as_it_happens(api: Api) -> None:
    """Over a real socket: httpx's ASGITransport buffers a whole response, a stream too."""
    import httpx

    lines: list[dict] = []
    async with live(api.app) as base, httpx.AsyncClient(base_url=base, timeout=10) as client:

        async def listen() -> None:
            async with client.stream("GET", "/events") as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        lines.append(json.loads(line[6:]))
                        if lines[-1]["type"] == "run_finished":
                            return

        listener = asyncio.ensure_future(listen())
        while api.service.hub.listeners == 0:
            await asyncio.sleep(0.01)
        answer = await client.post(
            "/graphql",
            json={"query": seed.RUN_TEST_CASE, "variables": {"input": {"testCaseId": PRAISE}}},
        )
        assert answer.status_code == 200 and answer.json()["data"]["runTestCase"]["passed"]
        await asyncio.wait_for(listener, 10)
    types = [d["type"] for d in lines]
    assert types[0] == "run_started" and types[-1] == "run_finished"
    assert "sample_finished" in types
    streams = {d["stream"] for d in lines}
    assert len(streams) == 1 and next(iter(streams)).startswith("op-")
    assert {d["operation"] for d in lines} == {"runTestCase"}
    assert lines[-1]["status"] == "completed"
    sample = next(d for d in lines if d["type"] == "sample_finished")
    assert sample["subject"] == PRAISE and sample["error"] is None


COMPARE = """
query C($base: ID!, $head: ID!) {
  compareRuns(baseRunId: $base, headRunId: $head) {
    base { id } head { id }
    regressed fixed improved worsened unchanged added removed
    changes { key subject change scoreDelta outputDiff before { output passed } after { output passed } }
  }
}"""


async def test_compare_runs_finds_the_regression_and_the_fix(api: Api) -> None:
    base = (await api.data('{ runs(kind: "cases") { id } }'))["runs"][0]["id"]
    path = api.root / "sentiment.prompt.yml"
    # the second version answers like plain's baseline wants: praise breaks, plain gets fixed
    path.write_text(
        path.read_text()
        .replace("model: quick", "model: steady", 1)
        .replace("expected_output: neutral", "expected_output: The sentiment is clearly positive.")
    )
    await api.data(seed.BATCH_RUN_TESTS, {"input": {"promptId": "sentiment"}})
    head = (await api.data('{ runs(kind: "cases") { id } }'))["runs"][0]["id"]
    assert head != base
    result = (await api.data(COMPARE, {"base": base, "head": head}))["compareRuns"]
    assert (result["base"]["id"], result["head"]["id"]) == (base, head)
    assert (result["regressed"], result["fixed"], result["unchanged"]) == (1, 1, 0)
    changes = {c["subject"]: c for c in result["changes"]}
    praise = changes[PRAISE]
    assert praise["change"] == "regressed" and praise["scoreDelta"] < 0
    assert praise["before"] == {"output": "positive", "passed": True}
    assert praise["after"] == {"output": "The sentiment is clearly positive.", "passed": False}
    before = "".join(d["text"] for d in praise["outputDiff"] if d["op"] != "insert")
    after = "".join(d["text"] for d in praise["outputDiff"] if d["op"] != "delete")
    assert (before, after) == ("positive", "The sentiment is clearly positive.")
    assert changes[PLAIN]["change"] == "fixed"
    same = (await api.data(COMPARE, {"base": head, "head": head}))["compareRuns"]
    assert same["unchanged"] == 2 and same["regressed"] == same["fixed"] == 0


RUN_COUNTS = """{ runs(limit: 50) {
  id kind passed failed errors pending results averageScore consistency
} }"""


async def test_runs_count_every_kind_from_its_results(api: Api) -> None:
    """SDK, judged pass/fail and A/B runs have counts like test-case runs: the service
    shapes what the store counted, with no word of any kind."""
    from oxyeval.evaluation import Result
    from oxyeval.store import NewBranchExecution, NewConsistencyResult
    from oxyeval.suites.passfail.results import PASSFAIL  # registered where it is written
    from oxyeval.testing._results import SDK

    store = api.service.store
    sdk = store.runs.start(SDK.name, subject="suite", total=6)
    store.results.add(
        sdk,
        [Result("sdk", f"ok{k}", "scored", passed=False, score=0.2) for k in range(4)]
        + [Result("sdk", f"bad{k}", "error", error="grader down") for k in range(2)],
    )
    passfail = store.runs.start(PASSFAIL.name, total=2)
    store.results.add(
        passfail,
        [
            Result("passfail", "t::a", "scored", passed=True, score=1.0),
            Result("passfail", "t::b", "scored", passed=False, score=0.0),
        ],
    )
    branch = store.branches.create(PRAISE, "Counted", model="quick")
    ab = store.runs.start("ab", subject=PRAISE, total=2)
    store.branches.add_executions(
        ab,
        [
            NewBranchExecution(
                branch_id=branch.id,
                test_case_id=PRAISE,
                status="success",
                quality_score=0.9,
                passed=True,
            ),
            NewBranchExecution(
                branch_id=branch.id, test_case_id=PRAISE, status="error", error="429", iteration=1
            ),
        ],
    )
    consistency = store.runs.start("consistency", total=1)
    store.tests.record(
        consistency,
        NewConsistencyResult(file="a.agent.yml", name="t", status="scored", accuracy=0.6),
    )
    runs = {r["id"]: r for r in (await api.data(RUN_COUNTS))["runs"]}
    counts = {
        run_id: (r["results"], r["passed"], r["failed"], r["errors"])
        for run_id, r in runs.items()
        if run_id in (sdk, passfail, ab, consistency)
    }
    assert counts == {
        sdk: (6, 0, 4, 2),
        passfail: (2, 1, 1, 0),
        ab: (2, 1, 0, 1),
        consistency: (1, 0, 0, 0),
    }
    assert runs[sdk]["averageScore"] == pytest.approx(0.2)
    assert runs[consistency]["consistency"]["tests"] == 1
    assert runs[consistency]["consistency"]["averageAccuracy"] == pytest.approx(0.6)
    assert runs[sdk]["consistency"] is None

    again = store.runs.start("consistency", total=1)
    store.tests.record(
        again, NewConsistencyResult(file="a.agent.yml", name="t", status="scored", accuracy=0.8)
    )
    query = """query C($base: ID!, $head: ID!) { compareRuns(baseRunId: $base, headRunId: $head) {
      base { results averageScore consistency } improved changes { after { outcome } } } }"""
    compared = (await api.data(query, {"base": consistency, "head": again}))["compareRuns"]
    assert compared["base"]["consistency"] == runs[consistency]["consistency"]
    assert (compared["base"]["results"], compared["improved"]) == (1, 1)
    assert compared["changes"][0]["after"]["outcome"] == "unjudged"
