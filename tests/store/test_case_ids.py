"""Cases created through the API are identified as ``<prompt>::<case name>``.

They used to get a random id, so `oxy cases show "p::api case"` did not find them and
`oxy cases show "api case"` titled them with a UUID. There is one id rule now,
:func:`oxyeval.store.case_id`, for cases declared in YAML and cases created through the
API, and the same rules for a name used twice: one live case per name and prompt, and a
deleted case's name brings it back with its history. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.errors import EXIT_INPUT
from oxyeval.store import AlreadyExistsError, Location, Store, case_id, open_store
from oxyeval.suites import prompt_sync

from ..conftest import MakeProject
from ..suites.test_cases_run import CONFIG, PROMPT
from ._helpers import record
from .conftest import Backend


def test_the_yaml_path_and_the_api_share_one_id_rule() -> None:
    assert prompt_sync.case_id is case_id  # what a sync of YAML cases uses
    assert case_id("sentiment", "api case") == "sentiment::api case"


def test_a_case_created_through_the_api_gets_the_prompt_and_name_id(store: Store) -> None:
    case = store.cases.create("p", "api case", {"text": "hi"}, "positive")
    assert case.id == "p::api case"
    fetched = store.cases.get("p::api case")
    assert fetched is not None and (fetched.prompt_id, fetched.name) == ("p", "api case")
    # An id given explicitly is still honoured.
    assert store.cases.create("p", "other", {}, id="custom").id == "custom"
    assert {c.id for c in store.cases.list("p")} == {"p::api case", "custom"}


def test_a_name_is_used_once_per_prompt(store: Store) -> None:
    store.cases.create("p", "dup", {"text": "first"}, "one")
    with pytest.raises(AlreadyExistsError) as info:
        store.cases.create("p", "dup", {"text": "second"}, "two")
    assert info.value.exit_code == EXIT_INPUT
    assert "'p::dup' already exists" in str(info.value) and "store.cases.update" in str(info.value)
    kept = store.cases.get("p::dup")
    assert kept is not None and (kept.input, kept.expected_output) == ({"text": "first"}, "one")
    # The same name under another prompt is another case.
    assert store.cases.create("q", "dup", {}).id == "q::dup"
    assert len(store.cases.list()) == 2


def test_a_deleted_case_created_again_comes_back_with_its_history(store: Store) -> None:
    first = store.cases.create("p", "again", {"text": "old"}, "old")
    record(store, "p::again", score=0.9)
    assert store.cases.delete("p::again") is True
    back = store.cases.create("p", "again", {"text": "new"}, "new", "described")
    assert back.id == "p::again" and back.deleted_at is None
    assert (back.input, back.expected_output, back.description) == (
        {"text": "new"},
        "new",
        "described",
    )
    assert back.created_at == first.created_at and back.total_runs == 1
    assert len(store.executions.list("p::again")) == 1
    # As when a file declares a removed case again (the sync's upsert).
    store.cases.delete("p::again")
    synced = store.cases.upsert(case_id("p", "again"), "p", "again", {"text": "yaml"}, "yaml")
    assert synced.id == "p::again" and synced.deleted_at is None and synced.total_runs == 1


def test_a_yaml_case_and_an_api_case_of_the_same_name_are_one_case(store: Store) -> None:
    made = store.cases.create("p", "shared", {"text": "api"}, "api")
    record(store, "p::shared", score=1.0)
    synced = store.cases.upsert(
        case_id("p", "shared"), "p", "shared", {"text": "file"}, "file", source_file="p.yml"
    )
    assert synced.id == made.id and synced.total_runs == 1
    assert synced.source_file == "p.yml" and synced.input == {"text": "file"}
    with pytest.raises(AlreadyExistsError):  # and the API cannot create it a second time
        store.cases.create("p", "shared", {})


def test_two_writers_creating_one_name_make_one_case(location: Location) -> None:
    stores = [open_store(location), open_store(location)]
    gate = threading.Barrier(2)
    outcomes: list[str] = []

    def create(store: Store, text: str) -> None:
        gate.wait()
        try:
            store.cases.create("p", "race", {"text": text})
            outcomes.append("created")
        except AlreadyExistsError:
            outcomes.append("exists")

    threads = [
        threading.Thread(target=create, args=(s, t)) for s, t in zip(stores, "ab", strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert sorted(outcomes) == ["created", "exists"]
        assert [c.id for c in stores[0].cases.list()] == ["p::race"]
    finally:
        for s in stores:
            s.close()


def _db_argument(location: Location) -> str:
    if location.backend == "sqlite":
        assert location.path is not None
        return str(location.path)
    return location.url.replace("postgresql+psycopg://", "postgresql://")


def test_oxy_cases_finds_an_api_case_by_its_full_id(
    backend: Backend, make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    monkeypatch.chdir(root)
    monkeypatch.delenv("OXY_DB", raising=False)
    location = backend.fresh()
    with open_store(location) as store:
        store.cases.create("p", "api case", {"text": "hi"}, "positive")
        store.cases.create("sentiment", "api case", {"text": "love"}, "positive")
    db = _db_argument(location)
    runner = CliRunner()

    shown = runner.invoke(app, ["cases", "show", "p::api case", "--db", db, "--json"])
    assert shown.exit_code == 0, shown.stderr
    case = json.loads(shown.stdout)["testCase"]
    assert (case["id"], case["promptId"], case["name"]) == ("p::api case", "p", "api case")

    # By name alone it is ambiguous now (two prompts have one), and the error lists full ids.
    ambiguous = runner.invoke(app, ["cases", "show", "api case", "--db", db])
    assert ambiguous.exit_code == EXIT_INPUT
    assert "p::api case" in ambiguous.stderr and "sentiment::api case" in ambiguous.stderr

    # The pretty view is titled with the prompt::name id, not a random one.
    pretty = runner.invoke(app, ["cases", "show", "sentiment::api case", "--db", db])
    assert pretty.exit_code == 0, pretty.stderr
    assert "sentiment::api case" in pretty.stdout

    # `oxy cases run --case <prompt>::<case>` runs it, and its history is under that id.
    ran = runner.invoke(app, ["cases", "run", "--case", "sentiment::api case", "--db", db])
    assert ran.exit_code == 0, ran.stderr
    with open_store(location) as store:
        stats = store.stats.case_stats("sentiment::api case")
        assert stats is not None and stats.total_runs == 1
    assert not (Path(root) / ".oxy").exists()  # everything went to --db
