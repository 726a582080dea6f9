"""One history store per database per run: the cache of answers and verdicts and the record
of results share it (`oxy test`, `oxy run`), the lean sqlite3 one once the project has a
history, and a run without history opens none and caches nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from oxyeval.project.config import load_project
from oxyeval.store import LiteStore, open_store
from oxyeval.suites import history_store as history_module
from oxyeval.suites.consistency import run_tests
from oxyeval.suites.history_store import Histories
from oxyeval.suites.workflows import run_workflow

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: analyst
    vendor: mock
    outputs: ["Total: 42", "Total is 42", "Total: 99"]
  - name: judge
    vendor: mock
    rules:
      - match: "99"
        output: "They differ.\\nAnswer: B"
      - match: "."
        output: "Same.\\nAnswer: A"
"""
AGENT = """\
model: analyst
system_instructions: Be brief.
tests:
  - {type: consistency, name: totals, n: 3, task_description: "total?", model_ref: judge}
"""
WORKFLOW = """\
tasks:
  - {name: say, type: agent, agent_ref: a.agent.yml, prompt: "total?", consistency_run: 3, judge_model: judge}
"""

Opened = list[tuple[str, str]]


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Opened:
    """Every store a run's History opens: (where, which kind of store)."""
    seen: Opened = []
    real = history_module.open_for_run

    def spy(location: object) -> object:
        store = real(location)  # type: ignore[arg-type]
        seen.append((str(location), type(store).__name__))
        return store

    monkeypatch.setattr(history_module, "open_for_run", spy)
    return seen


def _db(root: Path) -> Path:
    return root / ".oxy" / "oxyeval.db"


def test_oxy_test_opens_one_store_for_its_cache_and_its_results(
    make_project: MakeProject, opened: Opened
) -> None:
    root = make_project(CONFIG, {"a.agent.yml": AGENT})
    first = run_tests([root / "a.agent.yml"])
    assert opened == [(str(_db(root)), "LiteStore")]  # no history yet: made from the snapshot
    assert first.tests[0].judge_calls > 0 and first.cached_calls == 0
    for flag in (None, True, True):
        opened.clear()
        again = run_tests([root / "a.agent.yml"], cache=flag)
        assert opened == [(str(_db(root)), "LiteStore")], flag
        (note,) = again.history
        assert note.error is None and note.stored == 1
        assert again.tests[0].judge_calls == 0  # verdicts replayed through the lean store
        assert again.tests[0].previous is not None
    # the last --cache run replayed the answers the one before kept, and the verdicts
    assert again.cached_calls == first.tests[0].judge_calls + 3
    with open_store(_db(root), read_only=True) as store:
        runs = store.runs.list(kind="consistency")
        stats = store.cache.stats()
    assert [r.status for r in runs] == ["completed"] * 4
    assert stats.kind("answer").entries == 3 and stats.kind("verdict").hits > 0


def test_projects_sharing_a_database_share_its_store(
    make_project: MakeProject, opened: Opened, tmp_path: Path
) -> None:
    one = make_project(CONFIG, {"a.agent.yml": AGENT})
    two = tmp_path / "two"
    two.mkdir()
    (two / "config.yml").write_text((one / "config.yml").read_text())
    (two / "b.agent.yml").write_text(AGENT)
    shared = tmp_path / "shared.db"
    run = run_tests([one / "a.agent.yml", two / "b.agent.yml"], db=shared)
    assert opened == [(str(shared), "LiteStore")]
    assert [(n.db, n.stored, n.error) for n in run.history] == [(str(shared), 2, None)]
    opened.clear()
    run_tests([one / "a.agent.yml", two / "b.agent.yml"])  # each its own history
    assert sorted(opened) == sorted([(str(_db(one)), "LiteStore"), (str(_db(two)), "LiteStore")])


def test_oxy_run_shares_its_store_with_the_engine_cache(
    make_project: MakeProject, opened: Opened
) -> None:
    root = make_project(
        CONFIG,
        {"a.agent.yml": "model: analyst\nsystem_instructions: x\n", "w.workflow.yml": WORKFLOW},
    )
    for _ in range(2):
        opened.clear()
        result = asyncio.run(run_workflow(root / "w.workflow.yml"))  # the default cache
        assert opened == [(str(_db(root)), "LiteStore")]
        assert result.ok
    assert result.cached_calls > 0  # the second run replayed the verdicts of the first
    with open_store(_db(root), read_only=True) as store:
        stored = store.workflows.history("w.workflow.yml")
    assert [r.run.status for r in stored] == ["completed", "completed"]


def test_without_history_nothing_opens_and_nothing_is_cached(
    make_project: MakeProject, opened: Opened
) -> None:
    root = make_project(
        CONFIG,
        {
            "a.agent.yml": "model: analyst\nsystem_instructions: x\n",
            "w.workflow.yml": WORKFLOW,
            "b.agent.yml": AGENT,
        },
    )
    twice = [
        asyncio.run(run_workflow(root / "w.workflow.yml", history=False, cache=True))
        for _ in range(2)
    ]
    run = run_tests([root / "b.agent.yml"], history=False, cache=True)
    assert opened == [] and not (root / ".oxy").exists()
    assert [w.cached_calls for w in twice] == [0, 0]  # nothing kept, so nothing replayed
    assert run.cached_calls == 0 and run.history == []


def test_histories_resolve_each_project_once_and_hand_out_one_history_per_database(
    make_project: MakeProject, tmp_path: Path
) -> None:
    project = load_project(make_project(CONFIG))

    async def go() -> None:
        async with Histories() as histories:
            first = histories.for_project(project)
            assert first is not None and first is histories.for_project(project)
            first.start()
            store = await first.store()
            assert isinstance(store, LiteStore)  # a new history: made from the snapshot
        async with Histories() as histories:
            again = histories.for_project(project)
            assert again is not None and isinstance(await again.store(), LiteStore)
        async with Histories(tmp_path / "other.db") as histories:
            elsewhere = histories.location(project)
            assert elsewhere is not None and elsewhere.path == tmp_path / "other.db"
        off = Histories(enabled=False)
        assert off.for_project(project) is None and off.location(project) is None
        await off.aclose()

    asyncio.run(go())


def test_the_top_level_run_workflow_takes_the_same_cache_flag_as_run_tests(
    make_project: MakeProject,
) -> None:
    """It took a cache factory built by the CLI: ``cache=True`` raised TypeError."""
    import oxyeval

    root = make_project(
        CONFIG,
        {"a.agent.yml": "model: analyst\nsystem_instructions: x\n", "w.workflow.yml": WORKFLOW},
    )
    first = asyncio.run(oxyeval.run_workflow(root / "w.workflow.yml", cache=True))
    again = asyncio.run(oxyeval.run_workflow(root / "w.workflow.yml", cache=True))
    assert first.ok and again.ok and first.cached_calls == 0
    assert again.cached_calls > first.cached_calls  # answers and verdicts replayed
    assert str(again.output) == str(first.output)
