"""A run's results past a few thousand live on disk: the list still appends, counts,
indexes, sorts and iterates as a list does, and a large cases run writes the same
JSON document as one held in memory."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from oxyeval.report import case_run_json, write_json
from oxyeval.suites.cases.results import CaseRun
from oxyeval.suites.cases.run import run_cases
from oxyeval.suites.spill import SpillList

from ..conftest import MakeProject
from .test_cases_run import CONFIG


def test_a_list_past_its_limit_moves_to_disk_and_reads_back_the_same() -> None:
    items = SpillList([{"n": 0}], limit=3)
    assert not items.spilled
    items.extend({"n": n, "text": "é" * n} for n in range(1, 10))
    assert items.spilled and len(items) == 10 and bool(items)
    assert [i["n"] for i in items] == list(range(10))
    assert (
        items[0] == {"n": 0} and items[-1]["n"] == 9 and [i["n"] for i in items[2:5]] == [2, 3, 4]
    )
    with pytest.raises(IndexError):
        items[10]
    items[3]["n"] = 99  # a copy: what is kept does not change
    assert items[3]["n"] == 3
    items.sort(key=lambda i: (i["n"] % 2, -i["n"]))  # odd last, each half descending
    assert [i["n"] for i in items] == [8, 6, 4, 2, 0, 9, 7, 5, 3, 1]
    items.append({"n": 10})  # appending after a sort goes at the end
    assert [i["n"] for i in items][-2:] == [1, 10]
    assert items == list(items) and items != [1]
    items.close()
    assert len(items) == 0


@pytest.mark.parametrize("limit", [3, 100])
def test_a_list_that_keeps_places_is_put_in_order_without_reading_items_back(
    limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.suites import spill as spill_module

    places = [5, 2, 9, 2, 0, 7, 1]
    items = SpillList(
        ({"n": n, "k": k} for k, n in enumerate(places)), limit=limit, place=lambda i: i["n"]
    )
    assert items.keeps_places and items.spilled == (limit == 3)
    items.sort(key=lambda i: -i["k"])  # any other order first: the places follow it
    reads = 0
    real = spill_module.pickle.loads

    def counted(data: bytes) -> object:
        nonlocal reads
        reads += 1
        return real(data)

    monkeypatch.setattr(spill_module.pickle, "loads", counted)
    items.in_place_order()
    assert reads == 0
    # by place, and stably: of the two at 2, the one now first (k=3) stays first
    assert [(i["n"], i["k"]) for i in items] == [
        (0, 4),
        (1, 6),
        (2, 3),
        (2, 1),
        (5, 0),
        (7, 5),
        (9, 2),
    ]
    items.append({"n": -1, "k": 7})
    items.in_place_order()
    assert [i["n"] for i in items][:2] == [-1, 0]
    with pytest.raises(TypeError):
        SpillList([1]).in_place_order()


@pytest.mark.parametrize("window", [1, 64, 1 << 20])
def test_items_are_read_back_whole_across_read_windows(
    window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read back a window at a time in the kept order, an item at a time after a sort:
    every item whole, whether it fits a window, straddles two or is larger than one."""
    from oxyeval.suites import spill

    monkeypatch.setattr(spill, "_WINDOW", window)
    items = SpillList(limit=0)
    items.extend({"n": n, "text": "x" * (n * 37 % 200)} for n in range(60))
    assert [i["n"] for i in items] == list(range(60))
    assert all(i["text"] == "x" * (i["n"] * 37 % 200) for i in items)
    items.sort(key=lambda i: -i["n"])
    assert [i["n"] for i in items] == list(range(59, -1, -1))
    items.append({"n": 60, "text": ""})  # written after reads: at the end, intact
    assert [i["n"] for i in items][-2:] == [0, 60]


def test_an_empty_or_small_list_stays_in_memory() -> None:
    items: SpillList[int] = SpillList(limit=3)
    assert not items and list(items) == [] and repr(items) == "SpillList(0 items in memory)"
    items.extend([3, 1, 2])
    items.sort(key=lambda n: n)
    assert list(items) == [1, 2, 3] and not items.spilled


def _cases(count: int) -> str:
    rows = "".join(
        f'  - {{name: c{i}, input: {{text: "{word} {i}"}}, expected_output: positive}}\n'
        for i, word in enumerate(["I love", "I hate", "plain"] * (count // 3))
    )
    head = 'name: sentiment\nmodel: m\ntemplate: "Feedback: {{ text }}"\nsimilarity: lexical\n'
    return f"{head}cases:\n{rows}"


def test_a_run_kept_on_disk_writes_the_document_a_run_in_memory_would(
    make_project: MakeProject,
) -> None:
    root: Path = make_project(CONFIG, {"s.prompt.yml": _cases(12)})
    run = run_cases([root / "s.prompt.yml"], into=CaseRun(db=".", results=SpillList(limit=4)))
    assert run.results.spilled and len(run.results) == 12
    assert [r.name for r in run.results] == [f"c{i}" for i in range(12)]  # plan order
    assert all(r.output is None for r in run.as_results())  # the decision's are slim
    assert run.decision is not None and len(run.decision.outcomes) == 12
    held = CaseRun(db=run.db, **{k: getattr(run, k) for k in ("runs", "versions", "planned")})
    held.results = list(run.results)  # type: ignore[assignment]
    held.history, held.warnings = run.history, run.warnings
    streamed, whole = io.StringIO(), io.StringIO()
    write_json(case_run_json(run, run.decision), streamed)
    write_json(case_run_json(held, run.decision), whole)
    doc = json.loads(streamed.getvalue())
    assert doc == json.loads(whole.getvalue())
    assert streamed.getvalue().count("\n") < whole.getvalue().count("\n")  # an item a line
    assert len(doc["executions"]) == len(doc["results"]) == 12
    assert doc["summary"]["results"] == 12 and doc["regressions"] == 0
    assert [e["passed"] for e in doc["executions"][:3]] == [True, False, False]


def test_the_file_on_disk_has_no_name_and_is_its_users_only() -> None:
    import os
    import stat

    items = SpillList([f"answer {n}" for n in range(5)], limit=2)
    assert items.spilled and items._file is not None
    info = os.fstat(items._file.fileno())
    assert info.st_nlink == 0  # no folder lists it: no other process opens it by name
    assert stat.S_IMODE(info.st_mode) & 0o077 == 0
    items.close()


def test_a_list_with_an_estimate_of_its_items_spills_past_its_budget_not_a_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OXY_RESULTS_IN_MEMORY", raising=False)
    small = SpillList(size=len, budget=100)
    small.extend("x" * 10 for _ in range(10))  # 100 bytes: within the budget
    assert not small.spilled and len(small) == 10
    small.append("y")  # one byte past it
    assert small.spilled and list(small)[-1] == "y" and len(small) == 11
    many = SpillList(size=lambda _item: 1, budget=10_000)
    many.extend(range(5_000))  # far past the count a list without an estimate keeps
    assert not many.spilled and list(many) == list(range(5_000))
    small.close()


def test_a_count_set_in_the_environment_wins_over_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OXY_RESULTS_IN_MEMORY", "3")
    items = SpillList(size=lambda _item: 1, budget=1_000_000)
    items.extend(range(4))
    assert items.spilled and list(items) == [0, 1, 2, 3]
    items.close()


def test_a_case_run_holds_small_results_in_memory(make_project: MakeProject) -> None:
    root: Path = make_project(CONFIG, {"s.prompt.yml": _cases(30)})
    run = run_cases([root / "s.prompt.yml"], into=CaseRun(db="."))
    assert not run.results.spilled and len(run.results) == 30
    # The decision's results are slim whatever the run holds: no answers, no scores.
    assert all(r.output is None and not r.scores for r in run.decision_results())
    assert any(r.scores for r in run.as_results())


def test_a_case_result_on_disk_comes_back_equal_and_small() -> None:
    """A case result is kept on disk as its values: read back equal, every field
    included, in a few hundred bytes (by name, a slotted object took 705 and read back
    five times slower)."""
    import dataclasses
    import pickle

    from oxyeval.evaluation import Previous
    from oxyeval.suites.cases.results import CaseResult

    result = CaseResult(
        case_id="p::a", name="a", prompt_id="p", prompt_version=2, actual_output="positive",
        expected_output="positive", passed=True, score=1.0, output_diff=[{"op": "equal", "text": "positive"}],
        regression_types=["score"], previous=Previous(0.5, "2026-01-01T00:00:00.000Z", "run-0", (1, 2)),
        position=7, previous_unread=False,
    )  # fmt: skip
    kept = SpillList([result], limit=0)
    assert kept.spilled
    (back,) = list(kept)
    assert back == result and back is not result
    for f in dataclasses.fields(CaseResult):
        assert getattr(back, f.name) == getattr(result, f.name), f.name
    assert len(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)) < 400
