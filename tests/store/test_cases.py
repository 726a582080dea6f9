"""Test cases: create, update, sync (upsert), soft delete, list; on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time

import pytest

from oxyeval.errors import EXIT_INPUT
from oxyeval.redact import register_secret
from oxyeval.store import AlreadyExistsError, NameTakenError, NotFoundError, Store

from ._helpers import make_case, record


def test_create_get_update_and_expected_output(store: Store) -> None:
    case = store.cases.create(
        "p1", "Positive", {"text": "I love it"}, "positive", "desc", id="pos", threshold=0.8
    )
    assert (case.id, case.prompt_id, case.input) == ("pos", "p1", {"text": "I love it"})
    assert case.total_runs == 0 and case.pass_rate is None and case.avg_score is None
    assert case.created_at == case.updated_at
    with pytest.raises(AlreadyExistsError) as info:
        store.cases.create("p1", "dup", {}, id="pos")
    assert info.value.exit_code == EXIT_INPUT
    time.sleep(0.005)
    updated = store.cases.update("pos", name="Positive!", expected_output="POSITIVE")
    assert (updated.name, updated.expected_output) == ("Positive!", "POSITIVE")
    assert updated.updated_at > case.updated_at
    same = store.cases.update("pos", name="Positive!")
    assert same.updated_at == updated.updated_at  # nothing really changed
    time.sleep(0.005)
    accepted = store.cases.update_expected_output("pos", "pos.")
    assert accepted.expected_output == "pos." and accepted.updated_at > updated.updated_at
    with pytest.raises(NotFoundError):
        store.cases.update("nope", name="x")
    with pytest.raises(TypeError):
        store.cases.update("pos", colour="red")
    with pytest.raises(ValueError):
        store.cases.update("pos", threshold=1.5)
    with pytest.raises(TypeError):
        store.cases.create("p1", "bad", ["not", "a", "mapping"])  # type: ignore[arg-type]


def test_upsert_keeps_identity_and_history(store: Store) -> None:
    first = store.cases.upsert("yaml-1", "p1", "greets", {"name": "Ann"}, "Hello Ann")
    record(store, "yaml-1", actual_output="Hello Ann")
    time.sleep(0.005)
    again = store.cases.upsert("yaml-1", "p1", "greets", {"name": "Ann"}, "Hello Ann")
    assert again.updated_at == first.updated_at  # unchanged YAML -> untouched row
    assert again.total_runs == 1
    time.sleep(0.005)
    changed = store.cases.upsert(
        "yaml-1", "p1", "greets", {"name": "Ann"}, "Hi Ann", source_file="t.yml"
    )
    assert changed.id == "yaml-1" and changed.created_at == first.created_at
    assert changed.updated_at > first.updated_at
    assert changed.expected_output == "Hi Ann" and changed.source_file == "t.yml"
    assert changed.total_runs == 1 and len(store.executions.list("yaml-1")) == 1


def test_soft_delete_hides_but_keeps_history(store: Store) -> None:
    make_case(store, "keep")
    make_case(store, "gone")
    record(store, "gone", score=0.9)
    assert store.cases.delete("gone") is True
    assert store.cases.delete("gone") is False
    assert store.cases.delete("never") is False
    assert [c.id for c in store.cases.list()] == ["keep"]
    assert [c.id for c in store.cases.list(include_deleted=True)] == ["keep", "gone"]
    assert store.cases.get("gone") is None
    kept = store.cases.get("gone", include_deleted=True)
    assert kept is not None and kept.deleted_at is not None and kept.total_runs == 1
    assert store.stats.case_stats("gone").total_runs == 1  # type: ignore[union-attr]
    with pytest.raises(NotFoundError):
        store.cases.update("gone", name="x")
    back = store.cases.upsert("gone", "p1", "case gone", {"text": "hi"}, "positive")
    assert back.deleted_at is None and back.total_runs == 1
    assert {c.id for c in store.cases.list()} == {"keep", "gone"}


def test_list_filters_by_prompt_in_creation_order(store: Store) -> None:
    for case_id, prompt in (("a", "p1"), ("b", "p2"), ("c", "p1"), ("d", "p1")):
        store.cases.create(prompt, case_id, {}, id=case_id, created_at="2026-01-01T00:00:00Z")
    # Same millisecond: creation order (seq) breaks the tie, on every backend.
    assert [c.id for c in store.cases.list("p1")] == ["a", "c", "d"]
    assert [c.id for c in store.cases.list("p2")] == ["b"]
    assert [c.id for c in store.cases.list()] == ["a", "c", "d", "b"]


def test_expected_output_is_redacted_on_write(store: Store) -> None:
    secret = "sk-case-secret-0123456789"
    register_secret(secret)
    case = store.cases.create("p", "leaky", {}, f"the key is {secret}", id="leak")
    assert secret not in (case.expected_output or "")
    assert (
        store.cases.update_expected_output("leak", f"again {secret}").expected_output == "again ***"
    )


def test_a_name_is_used_once_per_prompt_among_live_cases(store: Store) -> None:
    store.cases.create("p1", "greet", {}, id="p1::greet")
    with pytest.raises(NameTakenError) as info:
        store.cases.create("p1", "greet", {}, id="p1::greet~2")
    assert info.value.exit_code == EXIT_INPUT and info.value.taken == "p1::greet"
    assert "already has a test case named 'greet' (id 'p1::greet')" in str(info.value)
    store.cases.create("p2", "greet", {})  # another prompt: its own names
    other = store.cases.create("p1", "other", {})
    with pytest.raises(NameTakenError):
        store.cases.update(other.id, name="greet")
    with pytest.raises(NameTakenError):  # a file declaring it: the sync says so too
        store.cases.upsert("p1::x", "p1", "greet", {}, source_file="s.prompt.yml")
    assert [c.name for c in store.cases.list("p1")] == ["greet", "other"]
    store.cases.delete("p1::greet")  # a deleted case keeps its name without blocking it
    again = store.cases.create("p1", "greet", {}, id="p1::greet~2")
    assert again.name == "greet"
    with pytest.raises(NameTakenError):  # nor can it come back beside the new one
        store.cases.upsert("p1::greet", "p1", "greet", {})


def test_a_sync_of_many_cases_inserts_them_a_chunk_at_a_time(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.store import _cases

    monkeypatch.setattr(_cases, "_INSERT_CHUNK", 7)
    declared = {
        f"p::c{i}": {"prompt_id": "p", "name": f"c{i}", "input": {"n": i}, "expected_output": "x"}
        for i in range(30)
    }
    store.cases.sync(declared)
    listed = store.cases.list("p")
    assert sorted(c.id for c in listed) == sorted(declared)
    assert {c.id: c.input for c in listed}["p::c29"] == {"n": 29}
    store.cases.sync(declared)  # nothing new: nothing inserted twice
    assert len(store.cases.list("p")) == 30


def test_a_synced_prompt_s_cases_are_what_a_listing_reads_back(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.store import _cases

    monkeypatch.setattr(_cases, "_INSERT_CHUNK", 7)
    read_back: list[str] = []
    real_list = _cases.Cases.list

    def counted(self: _cases.Cases, prompt_id: str | None = None, **kwargs: object) -> object:
        read_back.append(str(prompt_id))
        return real_list(self, prompt_id, **kwargs)  # type: ignore[arg-type]

    def declared(names: range, expected: str = "x") -> dict[str, dict[str, object]]:
        return {
            f"p::c{i}": {
                "prompt_id": "p",
                "name": f"c{i}",
                "input": {"n": i, "nested": [1, {"k": (2, 3)}]},
                "expected_output": expected,
                "threshold": 0.5,
                "source_file": "p.prompt.yml",
            }
            for i in names
        }

    monkeypatch.setattr(_cases.Cases, "list", counted)
    first = store.cases.synced("p", declared(range(20)))  # all new
    time.sleep(0.005)
    again = store.cases.synced("p", declared(range(30)))  # unchanged, then 10 new
    assert read_back == []  # neither read the cases back
    assert first == real_list(store.cases, "p")[:20]
    assert again == real_list(store.cases, "p")  # the same cases, fields and order
    assert again[0].input == {"n": 0, "nested": [1, {"k": [2, 3]}]}  # as stored: JSON
    # What the sync cannot know is read back: a changed case, a case made elsewhere.
    changed = store.cases.synced("p", declared(range(30), expected="y"))
    assert read_back == ["p"] and changed == real_list(store.cases, "p")
    assert {c.expected_output for c in changed} == {"y"}
    store.cases.create("p", "made through the API", {})
    with_api = store.cases.synced("p", declared(range(30), expected="y"))
    assert read_back == ["p", "p"] and len(with_api) == 31


def test_a_synced_case_s_input_has_the_key_order_a_listing_reads_back(store: Store) -> None:
    """A template that prints a mapping prints it in its order: a case renders the same
    whether it was read back or not."""
    fields = {
        "prompt_id": "q",
        "name": "ordered",
        "input": {"zeta": 1, "alpha": {"y": 2, "b": 3}},
        "threshold": 1,
    }
    (synced,) = store.cases.synced("q", {"q::ordered": fields})
    (listed,) = store.cases.list("q")
    assert list(synced.input) == list(listed.input) == ["alpha", "zeta"]
    assert list(synced.input["alpha"]) == ["b", "y"]
    assert synced == listed and type(synced.threshold) is float
    (again,) = store.cases.synced("q", {"q::ordered": fields})  # unchanged: not read back
    assert list(again.input) == ["alpha", "zeta"]


def test_writers_racing_for_one_name_make_one_case(store: Store) -> None:
    """Each thread checks the name and inserts at the same moment, as concurrent API
    requests do; on PostgreSQL (READ COMMITTED) both checks can pass, and the index stops
    all but one."""
    writers = 6
    start = threading.Barrier(writers)
    made: list[str] = []
    refused: list[NameTakenError] = []

    def create(n: int) -> None:
        start.wait()
        try:
            made.append(store.cases.create("p1", "same", {}, id=f"p1::same~{n}").id)
        except NameTakenError as exc:
            refused.append(exc)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and len(refused) == writers - 1
    assert {exc.taken for exc in refused} == set(made)
    assert [c.id for c in store.cases.list("p1")] == made


def test_a_sync_longer_than_a_statement_updates_and_adds_across_statements(
    store: Store,
) -> None:
    """Stored cases are brought up to date a statement's rows at a time (a replay of
    100,000 cases no longer holds every stored row): every changed case is changed,
    every unchanged one kept, the new ones added after them in the files' order."""
    from oxyeval.store._util import IN_LIST_SIZE

    count = 2 * IN_LIST_SIZE + 7

    def declared(expected: dict[int, str], names: range) -> dict[str, dict[str, object]]:
        return {
            f"p::c{i:05d}": {
                "prompt_id": "p",
                "name": f"c{i:05d}",
                "input": {"n": i},
                "expected_output": expected.get(i, "x"),
            }
            for i in names
        }

    store.cases.sync(declared({}, range(count)))
    changed = {i: "y" for i in range(0, count, 97)}  # some in every statement's rows
    later = declared(changed, range(count + 5))
    listed = store.cases.synced("p", later)
    assert [c.id for c in listed] == list(later)  # the stored in order, then the new
    assert {c.id for c in listed if c.expected_output == "y"} == {f"p::c{i:05d}" for i in changed}
    assert listed == store.cases.list("p")
