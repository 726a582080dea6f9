"""Errors as the GraphQL spec carries them (code, path, no traceback, no secret), and what
guards the server: token, Host, content type, body size, query depth; `oxy serve`'s own
refusals to start."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from oxyeval.server import ServeError, serve
from oxyeval.server.guard import check_cors_origin
from tests.fakes import fake_openai, openai_error

from . import seed_docs as seed
from .conftest import (
    CONFIG,
    PRAISE,
    Api,
    MakeApi,
    aseed,
    assert_clean,
    codes,
    live,
    write_project,
)

pytestmark = pytest.mark.anyio

BRANCH = {"testCaseId": PRAISE, "name": "B", "provider": "project", "model": "quick"}


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        (seed.GET_TEST_CASE_EXECUTIONS, {"testCaseId": "x::y"}),
        (seed.GET_TEST_CASE_STATS, {"testCaseId": "x::y"}),
        (seed.GET_TEST_BRANCHES, {"testCaseId": "x::y"}),
        (seed.GET_BRANCH_EXECUTIONS, {"branchId": "x::y@z"}),
        (seed.RUN_TEST_CASE, {"input": {"testCaseId": "x::y"}}),
        (seed.UPDATE_EXPECTED_OUTPUT, {"testCaseId": "x::y", "output": "o"}),
        (seed.UPDATE_TEST_BRANCH, {"id": "x::y@z", "input": BRANCH}),
        (seed.RUN_A_B_TEST, {"input": {"testCaseId": "x::y", "branchIds": ["b"]}}),
        (seed.CREATE_TEST_BRANCH, {"input": {**BRANCH, "testCaseId": "x::y"}}),
        (
            seed.UPDATE_TEST_CASE,
            {"id": "x::y", "input": {"promptId": "sentiment", "name": "n", "input": {}}},
        ),
        ('query { compareRuns(baseRunId: "a", headRunId: "b") { regressed } }', None),
    ],
)
async def test_unknown_ids_are_not_found(api: Api, query: str, variables: dict | None) -> None:
    error = await api.error(query, variables, "NOT_FOUND")
    assert error["path"] and isinstance(error["path"][0], str)


LIMITS = [
    (seed.GET_TEST_CASE_EXECUTIONS, {"testCaseId": PRAISE, "limit": 0}, "limit"),
    (seed.GET_TEST_CASE_EXECUTIONS, {"testCaseId": PRAISE, "limit": 501}, "limit"),
    (seed.GET_TEST_CASE_EXECUTIONS, {"testCaseId": PRAISE, "offset": -1}, "offset"),
    (seed.GET_BRANCH_EXECUTIONS, {"branchId": f"{PRAISE}@Quick", "limit": 0}, "limit"),
]


@pytest.mark.parametrize(("query", "variables", "word"), LIMITS)
async def test_bad_pages_are_bad_user_input(
    api: Api, query: str, variables: dict, word: str
) -> None:
    await api.data(
        'mutation { runABTest(input: {testCaseId: "sentiment::praise", branchIds: '
        '["sentiment::praise@Quick"]}) { criteria } }'
    )
    error = await api.error(query, variables, "BAD_USER_INPUT")
    assert word in error["message"]


CASE = {"promptId": "sentiment", "name": "n", "input": {"text": "t"}}


@pytest.mark.parametrize(
    ("query", "variables", "word"),
    [
        (seed.CREATE_TEST_CASE, {"input": {**CASE, "name": ""}}, "name"),
        (seed.CREATE_TEST_CASE, {"input": {**CASE, "name": "x" * 201}}, "name"),
        (seed.CREATE_TEST_CASE, {"input": {**CASE, "name": "a\x07b"}}, "control"),
        (seed.CREATE_TEST_CASE, {"input": {**CASE, "input": "text"}}, "input"),
        (seed.CREATE_TEST_CASE, {"input": {**CASE, "input": [1, 2]}}, "input"),
        (seed.CREATE_TEST_CASE, {"input": {**CASE, "input": {"t": "x" * 300_000}}}, "input"),
        (seed.CREATE_TEST_BRANCH, {"input": {**BRANCH, "temperature": 3}}, "temperature"),
        (seed.CREATE_TEST_BRANCH, {"input": {**BRANCH, "topP": 2}}, "topP"),
        (seed.CREATE_TEST_BRANCH, {"input": {**BRANCH, "maxTokens": 0}}, "maxTokens"),
        (seed.CREATE_TEST_BRANCH, {"input": {**BRANCH, "provider": "acme"}}, "provider"),
        (seed.CREATE_TEST_BRANCH, {"input": {**BRANCH, "name": " "}}, "name"),
        (
            seed.RUN_A_B_TEST,
            {"input": {"testCaseId": PRAISE, "branchIds": ["b"], "winnerCriteria": "vibes"}},
            "winnerCriteria",
        ),
        (
            'mutation { runABTest(input: {testCaseId: "sentiment::praise", branchIds: ["b"],'
            " iterations: 51}) { criteria } }",
            None,
            "iterations",
        ),
        (seed.RUN_TEST_CASE, {"input": {"testCaseId": PRAISE, "promptVersion": 0}}, "Version"),
        ('{ runs(kind: "nope") { id } }', None, "kind"),
        ("{ runs(limit: 501) { id } }", None, "limit"),
    ],
)
async def test_bad_values_are_bad_user_input(
    api: Api, query: str, variables: dict | None, word: str
) -> None:
    before = len(api.service.store.cases.list())
    error = await api.error(query, variables, "BAD_USER_INPUT")
    assert word in error["message"]
    assert len(api.service.store.cases.list()) == before  # nothing written


async def test_a_sixth_branch_and_a_second_control_are_refused(api: Api) -> None:
    # the two YAML branches are in the store once a run synced them
    await api.data(
        'mutation { runABTest(input: {testCaseId: "sentiment::praise", branchIds: '
        '["sentiment::praise@Quick"]}) { criteria } }'
    )
    error = await api.error(
        seed.CREATE_TEST_BRANCH, {"input": {**BRANCH, "isControl": True}}, "BAD_USER_INPUT"
    )
    assert "control" in error["message"]
    for n in range(3):
        await api.data(seed.CREATE_TEST_BRANCH, {"input": {**BRANCH, "name": f"B{n}"}})
    error = await api.error(
        seed.CREATE_TEST_BRANCH, {"input": {**BRANCH, "name": "B6"}}, "BAD_USER_INPUT"
    )
    assert "5" in error["message"]
    assert len(api.service.store.branches.list(PRAISE)) == 5


async def test_a_syntax_error_and_an_unknown_field(api: Api) -> None:
    status, body = await api.gql("{ testCases { id ")
    assert status == 400 and codes(body) == ["GRAPHQL_PARSE_FAILED"]
    assert_clean(body)
    status, body = await api.gql("{ testCases { id colour } }")
    assert status == 400 and codes(body) == ["GRAPHQL_VALIDATION_FAILED"]
    assert "colour" in body["errors"][0]["message"] and body["errors"][0]["locations"]
    status, body = await api.gql(seed.GET_TEST_CASE, {"id": None})
    assert status == 400 and codes(body) == ["BAD_USER_INPUT"]


SECRET = "sk-test-abcdefghijklmnopqrstuvwxyz0123456789"


def _endpoint_project(root: Path, url: str) -> Path:
    remote = f"""\
  - {{name: remote, vendor: openai, model_ref: gpt-x, api_url: "{url}",
     key_var: FAKE_KEY, max_retries: 0}}
"""
    return write_project(root, CONFIG.replace("pricing:", remote + "pricing:"))


@pytest.mark.parametrize("status", [500, 401])
async def test_a_failing_endpoint_is_a_provider_error_without_the_key(
    tmp_path: Path, make_api: MakeApi, status: int
) -> None:
    def fail(request: object) -> tuple[int, dict]:
        # a careless server echoes the key it got
        return status, openai_error(f"refused key {SECRET} (Bearer {SECRET})")

    with fake_openai(fail) as server:
        server.responder = fail  # every answer fails
        root = _endpoint_project(tmp_path / "p", server.url)
        await aseed(root)
        api = await make_api(root, environ={**os.environ, "FAKE_KEY": SECRET})
        branch = {**BRANCH, "name": "Remote", "model": "remote"}
        made = (await api.data(seed.CREATE_TEST_BRANCH, {"input": branch}))["createTestBranch"]
        _, body = await api.gql(
            seed.RUN_A_B_TEST, {"input": {"testCaseId": PRAISE, "branchIds": [made["id"]]}}
        )
        assert_clean(body, SECRET)
        if body.get("errors"):
            assert codes(body) == ["PROVIDER_ERROR"]
        else:  # a branch that failed is reported as an error execution, not a crash
            (branch_result,) = body["data"]["runABTest"]["branches"]
            assert branch_result["execution"]["status"] == "error"
        prompt = {"name": "remote-p", "model": "remote", "template": "Hi {{ text }}"}
        await api.data(
            "mutation P($input: PromptInput!) { createPrompt(input: $input) { id } }",
            {"input": prompt},
        )
        case = (
            await api.data(
                seed.CREATE_TEST_CASE,
                {"input": {"promptId": "remote-p", "name": "c", "input": {"text": "x"}}},
            )
        )["createTestCase"]
        _, body = await api.gql(seed.RUN_TEST_CASE, {"input": {"testCaseId": case["id"]}})
        assert codes(body) == ["PROVIDER_ERROR"] and body["errors"][0]["path"] == ["runTestCase"]
        assert_clean(body, SECRET)
        assert server.requests and all(
            r.headers.get("authorization") == f"Bearer {SECRET}" for r in server.requests
        )


# -- the guard

TOKEN = "t0ken-" + "x" * 26


async def test_token_enforcement(project: Path, make_api: MakeApi) -> None:
    open_api = await make_api(project)
    status, _ = await open_api.gql("{ serverInfo { version } }")
    assert status == 200  # loopback without a token

    api = await make_api(project, token=TOKEN, loopback_only=False)
    query = "{ serverInfo { version } }"
    status, body = await api.gql(query)
    assert status == 401 and codes(body) == ["UNAUTHENTICATED"]
    status, body = await api.gql(query, headers={"Authorization": "Bearer wrong"})
    assert status == 401 and codes(body) == ["UNAUTHENTICATED"]
    assert TOKEN not in str(body)
    status, body = await api.gql(query, headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and body["data"]["serverInfo"]["version"]
    refused = await api.client.get("/events")
    assert refused.status_code == 401
    wrong = await api.client.get("/events", params={"token": "nope"})
    assert wrong.status_code == 401
    # ?token= (what EventSource can send); /events itself never ends, so a finite GET
    # shows the guard letting the query-string token through, and a live stream the rest
    by_query = await api.client.get(
        "/graphql", params={"query": "{ serverInfo { version } }", "token": TOKEN}
    )
    assert by_query.status_code == 200
    async with (
        live(api.app) as base,
        httpx.AsyncClient(base_url=base, timeout=10) as client,
        client.stream("GET", "/events", params={"token": TOKEN}) as stream,
    ):
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
    # with a token, another Host is fine (the token is the guard)
    status, _ = await api.gql(
        query, headers={"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}
    )
    assert status == 200


async def test_host_content_type_and_size(api: Api) -> None:
    query = {"query": "{ serverInfo { version } }"}
    evil = await api.client.post("/graphql", json=query, headers={"Host": "evil.example"})
    assert evil.status_code == 421
    evil_get = await api.client.get("/", headers={"Host": "evil.example:4000"})
    assert evil_get.status_code == 421
    ok = await api.client.post("/graphql", json=query, headers={"Host": "localhost:4000"})
    assert ok.status_code == 200
    form = await api.client.post("/graphql", data={"query": "{ serverInfo { version } }"})
    assert form.status_code == 415
    multipart = await api.client.post(
        "/graphql", files={"operations": ("o", b'{"query": "{ serverInfo { version } }"}')}
    )
    assert multipart.status_code == 415
    plain = await api.client.post("/graphql", content=b"{}", headers={"Content-Type": "text/plain"})
    assert plain.status_code == 415
    big = b'{"query": "{ serverInfo { version } }", "x": "' + b"a" * 1_000_001 + b'"}'
    too_big = await api.client.post(
        "/graphql", content=big, headers={"Content-Type": "application/json"}
    )
    assert too_big.status_code == 413 and too_big.json()["errors"][0]["extensions"]["code"]


async def test_depth_limit_through_fragments(project: Path, make_api: MakeApi) -> None:
    api = await make_api(project, max_depth=3)
    shallow = "{ testCases { id prompt { id } } }"
    assert (await api.gql(shallow))[0] == 200
    deep = """
query Deep { testCases { ...C } }
fragment C on TestCase { prompt { ...P } }
fragment P on Prompt { testCases { prompt { id } } }
"""
    status, body = await api.gql(deep)
    assert status == 400 and codes(body) == ["GRAPHQL_VALIDATION_FAILED"]
    message = body["errors"][0]["message"]
    assert "Deep" in message and "5" in message and "3" in message


# -- oxy serve refuses to start


def _oxy(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "OXY_SERVE_TOKEN"}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "oxyeval", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=environ,
    )


def test_serve_refuses_a_public_host_without_a_token_and_a_short_token(project: Path) -> None:
    public = _oxy("--host", "0.0.0.0", "--port", "0", "--project", str(project))
    assert public.returncode == 2 and "token" in public.stderr
    short = _oxy("--token", "short", "--port", "0", "--project", str(project))
    assert short.returncode == 2 and "16" in short.stderr
    assert "short" not in short.stdout


def test_serve_on_a_taken_port_exits_3(project: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _oxy("--port", str(port), "--project", str(project))
    assert result.returncode == 3 and str(port) in result.stderr


def test_serve_on_port_0_prints_the_port_the_os_chose(project: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "OXY_SERVE_TOKEN"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "oxyeval", "serve", "--port", "0", "--project", str(project)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once the server listens
        assert line.startswith("oxy serve: dashboard http://127.0.0.1:"), line
        url = line.split()[3].rstrip("/")
        assert not url.endswith(":0")
        assert httpx.get(url + "/healthz", timeout=10).status_code == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


# -- CORS


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://app.example", "https://app.example"),
        ("HTTPS://App.Example:443", "https://app.example"),
        ("http://localhost:3000", "http://localhost:3000"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ],
)
def test_a_cors_origin_is_taken_as_a_browser_sends_it(given: str, expected: str) -> None:
    assert check_cors_origin(given, None) == expected


@pytest.mark.parametrize(
    "given",
    [
        "https://app.example/",
        "https://app.example/path",
        "app.example",
        "ftp://app.example",
        "https://user@app.example",
        "https://app.example:99999",
        "https://a.example,https://b.example",
        "https://",
    ],
)
def test_a_malformed_cors_origin_is_refused(given: str) -> None:
    with pytest.raises(ValueError, match="not an origin"):
        check_cors_origin(given, TOKEN)


async def test_any_origin_needs_a_token(project: Path, make_api: MakeApi) -> None:
    for origin in ("*", "null"):
        with pytest.raises(ServeError, match="token"):
            await make_api(project, cors_origin=origin)
    api = await make_api(project, cors_origin="*", token=TOKEN, loopback_only=False)
    response = await api.client.post(
        "/graphql",
        json={"query": "{ serverInfo { version } }"},
        headers={"Origin": "https://elsewhere.example", "Authorization": f"Bearer {TOKEN}"},
    )
    assert response.status_code == 200 and response.headers["access-control-allow-origin"] == "*"


async def test_only_the_named_origin_is_allowed(project: Path, make_api: MakeApi) -> None:
    api = await make_api(project, cors_origin="http://localhost:3000")
    ask = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    ok = await api.client.options("/graphql", headers={"Origin": "http://localhost:3000", **ask})
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == "http://localhost:3000"
    other = await api.client.options("/graphql", headers={"Origin": "https://evil.example", **ask})
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers


def test_serve_refuses_any_origin_without_a_token(tmp_path: Path) -> None:
    # before it opens anything (`oxy serve` turns ServeError into exit 2)
    with pytest.raises(ServeError, match=r"--cors-origin \* would let every web site"):
        serve(tmp_path / "nowhere", cors_origin="*", environ={"OXY_SERVE_TOKEN": ""})
