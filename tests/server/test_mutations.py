"""Every mutation of the schema through HTTP with the seed's documents, checked against
the store (and the YAML file where a case is declared), and the errors each refuses with."""

from __future__ import annotations

import pytest

from . import seed_docs as seed
from .conftest import PLAIN, PRAISE, Api, codes, parse_time

pytestmark = pytest.mark.anyio

CREATE_PROMPT = """
mutation P($input: PromptInput!) {
  createPrompt(input: $input) { id name source latestVersion versions { version } content }
}"""


async def _new_case(api: Api, prompt_id: str = "sentiment", **extra: object) -> dict:
    case = {
        "promptId": prompt_id,
        "name": "Positive sentiment detection",
        "description": "Tests detection of positive sentiment in customer feedback",
        "input": {"text": "I absolutely love this product! Best purchase ever."},
        "expectedOutput": "positive",
        **extra,
    }
    return (await api.data(seed.CREATE_TEST_CASE, {"input": case}))["createTestCase"]


async def test_create_update_delete_a_case(api: Api) -> None:
    made = await _new_case(api)
    stored = api.service.store.cases.get(made["id"])
    assert stored is not None and stored.source_file is None and stored.prompt_id == "sentiment"
    assert (
        made["input"]
        == stored.input
        == {"text": "I absolutely love this product! Best purchase ever."}
    )
    assert made["expectedOutput"] == "positive" and made["name"] == stored.name
    created = parse_time(made["createdAt"])
    listed = (await api.data(seed.GET_TEST_CASES, {"promptId": "sentiment"}))["testCases"]
    assert made["id"] in {c["id"] for c in listed} and len(listed) == 3

    change = {
        "promptId": "sentiment",
        "name": "Renamed",
        "input": {"text": "meh", "nested": [1, {"a": None}]},
        "expectedOutput": "neutral",
    }
    updated = (await api.data(seed.UPDATE_TEST_CASE, {"id": made["id"], "input": change}))[
        "updateTestCase"
    ]
    assert updated["name"] == "Renamed" and updated["description"] is None
    assert updated["input"] == change["input"]  # JSON round-trips, nested and null
    assert parse_time(updated["updatedAt"]) >= created
    again = api.service.store.cases.get(made["id"])
    assert again.expected_output == "neutral" and again.input == change["input"]

    assert (await api.data(seed.DELETE_TEST_CASE, {"id": made["id"]}))["deleteTestCase"] is True
    assert (await api.data(seed.GET_TEST_CASE, {"id": made["id"]}))["testCase"] is None
    assert (await api.data(seed.DELETE_TEST_CASE, {"id": made["id"]}))["deleteTestCase"] is False


async def test_a_yaml_case_is_refused_except_for_its_expected_output(api: Api) -> None:
    same = {
        "promptId": "sentiment",
        "name": "praise",
        "description": "Clear praise",
        "input": {"text": "I love it"},
    }
    error = await api.error(
        seed.UPDATE_TEST_CASE, {"id": PRAISE, "input": {**same, "name": "x"}}, "BAD_USER_INPUT"
    )
    assert "sentiment.prompt.yml" in error["message"] and error["path"] == ["updateTestCase"]
    await api.error(seed.DELETE_TEST_CASE, {"id": PRAISE}, "BAD_USER_INPUT")
    # the same fields with a new expected output: rewrites the file, as accept does
    done = await api.data(
        seed.UPDATE_TEST_CASE, {"id": PRAISE, "input": {**same, "expectedOutput": "glad"}}
    )
    assert done["updateTestCase"]["expectedOutput"] == "glad"
    assert "expected_output: glad" in (api.root / "sentiment.prompt.yml").read_text()


async def test_update_expected_output_rewrites_a_yaml_case_and_only_stores_an_api_case(
    api: Api,
) -> None:
    path = api.root / "sentiment.prompt.yml"
    before = path.read_text()
    data = await api.data(seed.UPDATE_EXPECTED_OUTPUT, {"testCaseId": PLAIN, "output": "positive"})
    case = data["updateExpectedOutput"]
    assert case["id"] == PLAIN and case["expectedOutput"] == "positive"
    parse_time(case["updatedAt"])
    after = path.read_text()
    assert after != before and "expected_output: neutral" not in after
    assert api.service.store.cases.get(PLAIN).expected_output == "positive"
    # the next run passes against the new baseline
    run = await api.data(seed.RUN_TEST_CASE, {"input": {"testCaseId": PLAIN}})
    assert run["runTestCase"]["passed"] is True

    made = await _new_case(api)
    files = sorted(p.name for p in api.root.iterdir() if p.is_file())
    await api.data(seed.UPDATE_EXPECTED_OUTPUT, {"testCaseId": made["id"], "output": "upbeat"})
    assert api.service.store.cases.get(made["id"]).expected_output == "upbeat"
    assert path.read_text() == after  # an API case has no file
    assert sorted(p.name for p in api.root.iterdir() if p.is_file()) == files


async def test_run_test_case_answers_the_seeds_fields(api: Api) -> None:
    data = await api.data(seed.RUN_TEST_CASE, {"input": {"testCaseId": PRAISE, "promptVersion": 1}})
    result = data["runTestCase"]
    stored = api.service.store.executions.latest(PRAISE)
    assert result["testCaseExecutionId"] == stored.id
    assert result["passed"] is True and result["exactMatch"] is True and result["score"] == 1.0
    assert result["actualOutput"] == "positive" == stored.actual_output
    assert result["outputDiff"] == [{"op": "equal", "text": "positive"}]
    assert result["lengthDiff"] == 0 and result["tokenDiff"] == 0
    assert result["latencyMs"] is not None and result["isRegression"] is False
    missing = await api.error(
        seed.RUN_TEST_CASE, {"input": {"testCaseId": PRAISE, "promptVersion": 9}}
    )
    assert "9" in missing["message"]


async def test_run_test_case_flags_a_regression_after_a_changed_answer(api: Api) -> None:
    path = api.root / "sentiment.prompt.yml"
    path.write_text(path.read_text().replace("model: quick", "model: steady", 1))
    result = (await api.data(seed.RUN_TEST_CASE, {"input": {"testCaseId": PRAISE}}))["runTestCase"]
    assert result["passed"] is False and result["isRegression"] is True
    assert result["regressionType"] == "FAILED"
    assert result["lengthDiff"] == len("The sentiment is clearly positive.") - len("positive")
    assert any(d["op"] == "insert" for d in result["outputDiff"])
    stored = api.service.store.executions.latest(PRAISE)
    assert stored.is_regression and stored.prompt_version == 2
    # version 1 is still runnable by number, and answers as before
    old = (
        await api.data(seed.RUN_TEST_CASE, {"input": {"testCaseId": PRAISE, "promptVersion": 1}})
    )["runTestCase"]
    assert old["actualOutput"] == "positive"


async def test_batch_run_with_and_without_ids(api: Api) -> None:
    every = (await api.data(seed.BATCH_RUN_TESTS, {"input": {"promptId": "sentiment"}}))[
        "batchRunTests"
    ]
    assert len(every) == 2
    assert {r["actualOutput"] for r in every} == {"positive"}
    assert sorted(r["passed"] for r in every) == [False, True]
    ids = {r["testCaseExecutionId"] for r in every}
    assert ids == {
        api.service.store.executions.latest(PRAISE).id,
        api.service.store.executions.latest(PLAIN).id,
    }
    one = (
        await api.data(seed.BATCH_RUN, {"input": {"promptId": "sentiment", "testCaseIds": [PLAIN]}})
    )["batchRunTests"]
    assert len(one) == 1 and one[0]["passed"] is False
    assert api.service.store.executions.latest(PLAIN).id == one[0]["testCaseExecutionId"]
    wrong = await api.error(
        seed.BATCH_RUN_TESTS,
        {"input": {"promptId": "sentiment", "testCaseIds": ["other::x"]}},
        "NOT_FOUND",
    )
    assert "other::x" in wrong["message"]
    await api.error(seed.BATCH_RUN_TESTS, {"input": {"promptId": "nope"}}, "NOT_FOUND")


async def test_branches_create_update_delete_and_run_ab(api: Api) -> None:
    made = []
    for name, model, control in (("A", "quick", False), ("B", "steady", False)):
        branch = {
            "testCaseId": PRAISE,
            "name": name,
            "description": "via the API",
            "provider": "project",
            "model": model,
            "temperature": 0.9,
            "maxTokens": 1000,
            "topP": 0.95,
            "isControl": control,
            "otherParams": {"seed": 7},
        }
        made.append(
            (await api.data(seed.CREATE_TEST_BRANCH, {"input": branch}))["createTestBranch"]
        )
    a, b = made
    assert a["temperature"] == 0.9 and a["model"] == "quick"
    stored = api.service.store.branches.get(a["id"])
    assert stored.max_tokens == 1000 and stored.top_p == 0.95
    assert stored.other_params == {"seed": 7} and not stored.is_control

    change = {
        "testCaseId": PRAISE,
        "name": "B2",
        "provider": "mock",
        "model": "steady",
        "temperature": 0.1,
        "maxTokens": 50,
    }
    updated = (await api.data(seed.UPDATE_TEST_BRANCH, {"id": b["id"], "input": change}))[
        "updateTestBranch"
    ]
    assert updated == {"id": b["id"], "name": "B2", "temperature": 0.1, "maxTokens": 50}
    assert api.service.store.branches.get(b["id"]).temperature == 0.1

    for criteria, winner in (("best_quality", "A"), ("fastest", "A"), ("cheapest", "A")):
        result = (
            await api.data(
                seed.RUN_A_B_TEST,
                {
                    "input": {
                        "testCaseId": PRAISE,
                        "branchIds": [a["id"], b["id"]],
                        "promptVersion": 1,
                        "winnerCriteria": criteria,
                    }
                },
            )
        )["runABTest"]
        # The API's winner is its specification's: the branch ranked first, even with
        # one iteration, where the CLI calls no winner over noise.
        assert result["criteria"] == criteria and result["winner"]["branchName"] == winner
        assert result["branches"][0]["branchName"] == winner
        ranks = {r["branchName"]: r["rank"] for r in result["branches"]}
        assert ranks == {"A": 1, "B2": 2}
        outputs = {r["branchName"]: r["execution"]["output"] for r in result["branches"]}
        assert outputs == {"A": "positive", "B2": "The sentiment is clearly positive."}
    default = (
        await api.data(
            seed.RUN_A_B_TEST_2,
            {"input": {"testCaseId": PRAISE, "branchIds": [a["id"], b["id"]]}},
        )
    )["runABTest"]
    assert default["criteria"] == "best_quality"  # the seed's default
    execs = (await api.data(seed.GET_BRANCH_EXECUTIONS, {"branchId": a["id"]}))[
        "testBranchExecutions"
    ]
    assert len(execs) == 4 and all(e["output"] == "positive" for e in execs)

    assert (await api.data(seed.DELETE_TEST_BRANCH, {"id": b["id"]}))["deleteTestBranch"] is True
    left = (await api.data(seed.GET_TEST_BRANCHES, {"testCaseId": PRAISE}))["testBranches"]
    assert b["id"] not in {x["id"] for x in left}
    assert (await api.data(seed.DELETE_TEST_BRANCH, {"id": b["id"]}))["deleteTestBranch"] is False
    # its history stays readable
    assert (
        len(
            (await api.data(seed.GET_BRANCH_EXECUTIONS, {"branchId": b["id"]}))[
                "testBranchExecutions"
            ]
        )
        == 4
    )


@pytest.mark.parametrize(
    ("other", "message"),
    [
        ({"model": "other", "seed": 1}, "otherParams model cannot be set here"),
        ({"blob": "x" * 19_000, "more": "y" * 1}, None),  # under the API's own 20,000 bytes
        (
            {
                "deep": {
                    "a": {
                        "b": {
                            "c": {
                                "d": {
                                    "e": {
                                        "f": {
                                            "g": {
                                                "h": {
                                                    "i": {
                                                        "j": {
                                                            "k": {
                                                                "l": {"m": {"n": {"o": {"p": 1}}}}
                                                            }
                                                        }
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            },
            "nested deeper than 16 levels",
        ),
    ],
)
async def test_other_params_a_vendor_would_not_take_are_refused_before_the_store(
    api: Api, other: dict, message: str | None
) -> None:
    """What a vendor accepts is the providers' rule, checked where the API takes the
    input: the store only keeps plain JSON, so this check is the API's to make."""
    branch = {"testCaseId": PRAISE, "name": "X", "provider": "project", "model": "quick"}
    if message is None:
        made = await api.data(seed.CREATE_TEST_BRANCH, {"input": {**branch, "otherParams": other}})
        assert made["createTestBranch"]["id"]
        return
    error = await api.error(
        seed.CREATE_TEST_BRANCH, {"input": {**branch, "otherParams": other}}, "BAD_USER_INPUT"
    )
    assert message in error["message"]
    assert "X" not in {b.name for b in api.service.store.branches.list(PRAISE)}
    made = (await api.data(seed.CREATE_TEST_BRANCH, {"input": branch}))["createTestBranch"]
    change = {**branch, "otherParams": other}
    error = await api.error(
        seed.UPDATE_TEST_BRANCH, {"id": made["id"], "input": change}, "BAD_USER_INPUT"
    )
    assert message in error["message"]
    assert api.service.store.branches.get(made["id"]).other_params == {}


async def test_create_prompt_versions_and_a_case_on_it(api: Api) -> None:
    prompt = {
        "name": "greeter",
        "model": "quick",
        "template": "Say hi to {{ who }}",
        "system": "Be brief.",
        "params": {"temperature": 0, "max_tokens": 20},
    }
    first = (await api.data(CREATE_PROMPT, {"input": prompt}))["createPrompt"]
    assert first["id"] == "greeter" and first["source"] == "api"
    assert first["latestVersion"] == 1 and first["content"]["template"] == "Say hi to {{ who }}"
    same = (await api.data(CREATE_PROMPT, {"input": prompt}))["createPrompt"]
    assert same["latestVersion"] == 1  # the same content is the same version
    second = (await api.data(CREATE_PROMPT, {"input": {**prompt, "model": "steady"}}))[
        "createPrompt"
    ]
    assert second["latestVersion"] == 2 and [v["version"] for v in second["versions"]] == [1, 2]
    assert api.service.store.prompts.latest_version("greeter") == 2
    refused = await api.error(
        CREATE_PROMPT, {"input": {**prompt, "name": "sentiment"}}, "BAD_USER_INPUT"
    )
    assert "sentiment.prompt.yml" in refused["message"]
    await api.error(CREATE_PROMPT, {"input": {**prompt, "model": "gpt-9"}}, "BAD_USER_INPUT")
    await api.error(
        CREATE_PROMPT, {"input": {**prompt, "params": {"temperature": 5}}}, "BAD_USER_INPUT"
    )
    await api.error(CREATE_PROMPT, {"input": {**prompt, "name": "a b"}}, "BAD_USER_INPUT")

    case = await _new_case(api, "greeter", input={"who": "Ann"}, expectedOutput="positive")
    run = (await api.data(seed.RUN_TEST_CASE, {"input": {"testCaseId": case["id"]}}))["runTestCase"]
    # version 2 (steady) answers its sentence
    assert run["actualOutput"] == "The sentiment is clearly positive."
    assert api.service.store.executions.latest(case["id"]).prompt_version == 2
    v1 = (
        await api.data(
            seed.RUN_TEST_CASE, {"input": {"testCaseId": case["id"], "promptVersion": 1}}
        )
    )["runTestCase"]
    assert v1["actualOutput"] == "positive" and v1["passed"] is True
    prompts = (await api.data("{ prompts { id source } }"))["prompts"]
    assert {p["id"]: p["source"] for p in prompts} == {
        "sentiment": "sentiment.prompt.yml",
        "greeter": "api",
    }


async def test_a_case_on_an_unknown_prompt_is_not_found(api: Api) -> None:
    _, body = await api.gql(
        seed.CREATE_TEST_CASE,
        {"input": {"promptId": "cm123456789", "name": "x", "input": {"text": "hi"}}},
    )
    assert codes(body) == ["NOT_FOUND"] and body["errors"][0]["path"] == ["createTestCase"]
    assert "createPrompt" in body["errors"][0]["message"]
