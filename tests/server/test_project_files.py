"""The API's writes of project files and of case names, under attack and under load.

A served project may come from someone else (links to the user's files) and is written
by concurrent requests: a write never follows a link, a link out of the project is never
read (nor quoted in ``serverInfo.syncError`` or the log), writers of one file take turns,
and a name is used once per prompt however many requests race for it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import stat
from pathlib import Path

import pytest

from oxyeval.project.document import load_yaml

from ..conftest import VICTIM_SECRET, VICTIM_TEXT
from . import seed_docs as seed
from .conftest import Api, MakeApi, codes, write_project

pytestmark = pytest.mark.anyio

FOUR = """\
name: tone
model: quick
template: "{{ text }}"
similarity: lexical
cases:
  - {name: a, input: {text: a}, expected_output: x}
  - {name: b, input: {text: b}, expected_output: x}
  - {name: c, input: {text: c}, expected_output: x}
  - {name: d, input: {text: d}, expected_output: x}
"""


def _in_file(path: Path) -> dict[str, str]:
    return {c["name"]: c["expected_output"] for c in load_yaml(path).data["cases"]}


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".oxy-tmp"))


async def _accept(api: Api, case_id: str, output: str) -> dict:
    data = await api.data(seed.UPDATE_EXPECTED_OUTPUT, {"testCaseId": case_id, "output": output})
    return data["updateExpectedOutput"]


async def _accept_raw(api: Api, case_id: str, output: str) -> dict:
    """:func:`_accept` with the body as a JSON client may send it: ``\\ud800`` escaped,
    which decodes to a lone surrogate (httpx itself refuses to encode one)."""
    variables = {"testCaseId": case_id, "output": output}
    body = json.dumps({"query": seed.UPDATE_EXPECTED_OUTPUT, "variables": variables})
    response = await api.client.post(
        "/graphql", content=body, headers={"content-type": "application/json"}
    )
    answer = response.json()
    assert response.status_code == 200 and not answer.get("errors"), answer
    return answer["data"]["updateExpectedOutput"]


async def test_a_planted_temporary_link_is_not_written_through(api: Api, victim: Path) -> None:
    prompt = api.root / "sentiment.prompt.yml"
    planted = api.root / "sentiment.prompt.yml.oxy-tmp"
    planted.symlink_to(victim)
    made = await _accept(api, "sentiment::plain", "echo owned >> ~/.bashrc")
    assert made["expectedOutput"] == "echo owned >> ~/.bashrc"
    assert victim.read_text(encoding="utf-8") == VICTIM_TEXT
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert _in_file(prompt)["plain"] == "echo owned >> ~/.bashrc"
    assert planted.is_symlink() and _leftovers(api.root) == [planted.name]


async def test_a_prompt_file_linking_out_is_neither_read_nor_quoted(
    tmp_path: Path, make_api: MakeApi, victim: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_project(tmp_path / "proj")
    (root / "prompts").mkdir()
    (root / "prompts" / "x.prompt.yml").symlink_to(victim)
    with caplog.at_level(logging.WARNING, logger="oxyeval.server"):
        api = await make_api(root)
    error = (await api.data("{ serverInfo { syncError } }"))["serverInfo"]["syncError"]
    assert "prompts/x.prompt.yml" in error and "is a link that leaves the project" in error
    assert VICTIM_SECRET not in error and VICTIM_SECRET not in caplog.text
    assert "is a link that leaves the project" in caplog.text


async def test_concurrent_accepts_of_one_file_all_land(tmp_path: Path, make_api: MakeApi) -> None:
    """Four requests a round, each setting another case of one file: every answer is in
    the file afterwards, and the store agrees with the file."""
    root = write_project(tmp_path / "proj", prompt=None)
    (root / "tone.prompt.yml").write_text(FOUR, encoding="utf-8")
    api = await make_api(root)
    for round in range(4):
        answers = await asyncio.gather(
            *(_accept(api, f"tone::{name}", f"{name} {round}") for name in "abcd")
        )
        said = {a["id"].split("::")[1]: a["expectedOutput"] for a in answers}
        assert said == {name: f"{name} {round}" for name in "abcd"}
        assert _in_file(root / "tone.prompt.yml") == said
        stored = {c.name: c.expected_output for c in api.service.store.cases.list("tone")}
        assert stored == said
    assert _leftovers(root) == []


async def test_concurrent_creates_of_one_name_make_one_case(api: Api) -> None:
    case = {"promptId": "sentiment", "name": "dup", "input": {"text": "hi"}}
    results = await asyncio.gather(
        *(api.gql(seed.CREATE_TEST_CASE, {"input": case}) for _ in range(6))
    )
    made = [body["data"]["createTestCase"]["id"] for _, body in results if not body.get("errors")]
    refused = [body for _, body in results if body.get("errors")]
    assert len(made) == 1 and len(refused) == 5
    for body in refused:
        assert codes(body) == ["BAD_USER_INPUT"]
        message = body["errors"][0]["message"]
        assert f"already has a test case named 'dup' (id '{made[0]}')" in message
    live = [c.id for c in api.service.store.cases.list("sentiment") if c.name == "dup"]
    assert live == made


async def test_a_lone_surrogate_becomes_a_replacement_character(api: Api) -> None:
    made = await _accept_raw(api, "sentiment::plain", "bad \ud800 text")
    assert made["expectedOutput"] == "bad \ufffd text"
    assert _in_file(api.root / "sentiment.prompt.yml")["plain"] == "bad \ufffd text"
    assert api.service.store.cases.get("sentiment::plain").expected_output == "bad \ufffd text"
    assert _leftovers(api.root) == []
