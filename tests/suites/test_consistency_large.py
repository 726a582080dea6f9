"""Consistency runs of many tests: tests start a window at a time, and a run whose tests
are kept on disk reports, stores and decides as one held in memory."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from oxyeval.report.json import to_json, write_json
from oxyeval.suites import suite as suite_module
from oxyeval.suites.consistency import ConsistencyRun, run_tests

from ._helpers import UnderWay, scrubbed
from .test_one_store import CONFIG


def _agent(tests: int, n: int) -> str:
    lines = "".join(
        f"  - {{type: consistency, name: t{i}, n: {n}, task_description: 'total {i}?', "
        "model_ref: judge}\n"
        for i in range(tests)
    )
    return f"model: analyst\nsystem_instructions: Be brief.\ntests:\n{lines}"


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "config.yml").write_text(CONFIG)
    (root / "a.agent.yml").write_text(_agent(4, 3))
    (root / "b.agent.yml").write_text(_agent(3, 3))  # two files: tests labelled by file
    return root


def test_tests_start_a_window_at_a_time_not_all_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suite_module, "_WINDOW_RUNS", 6)
    root = tmp_path / "p"
    root.mkdir()
    (root / "config.yml").write_text(CONFIG)
    (root / "a.agent.yml").write_text(_agent(12, 3))
    sink = UnderWay(3)

    run = run_tests([root / "a.agent.yml"], project_dir=str(root), events=sink)
    assert sink.most == 2  # six runs under way: two tests of three
    assert [t.name for t in run.tests] == [f"t{i}" for i in range(12)]
    assert all(t.ok for t in run.tests)


def _document(run: ConsistencyRun) -> dict[str, Any]:
    """The document as ``oxy test --format json`` writes it (streamed when on disk)."""
    out = io.StringIO()
    write_json(to_json(run, run.decision), out)
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


_VOLATILE = frozenset({"runId", "createdAt", "at", "durationS", "latencyS", "latencyMs", "history"})


def test_a_run_kept_on_disk_reports_and_decides_as_one_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def two_runs(root: Path) -> tuple[ConsistencyRun, ConsistencyRun]:
        files = [root / "a.agent.yml", root / "b.agent.yml"]
        first = run_tests(files, project_dir=str(root))
        return first, run_tests(files, project_dir=str(root))

    held = two_runs(_project(tmp_path / "held"))
    monkeypatch.setenv("OXY_RESULTS_IN_MEMORY", "1")  # every list spills past one item
    kept = two_runs(_project(tmp_path / "kept"))

    assert not held[1].spilled and kept[1].spilled
    for memory, disk in zip(held, kept, strict=True):
        shown = scrubbed(_document(disk), tmp_path / "kept", _VOLATILE)
        assert shown == scrubbed(_document(memory), tmp_path / "held", _VOLATILE)
        assert disk.decision is not None and memory.decision is not None
        assert disk.decision.code == memory.decision.code
    doc = _document(kept[1])
    # labelled by file (two ran), in file order, each knowing its previous result
    subjects = [r["subject"] for r in doc["results"]]
    assert subjects[0].endswith("a.agent.yml: t0") and subjects[-1].endswith("b.agent.yml: t2")
    assert len(doc["tests"]) == 7 and all(t["previous"] is not None for t in doc["tests"])


def test_tests_cut_before_they_started_keep_their_previous_result_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import contextlib

    from oxyeval.suites.consistency import run_tests_async

    root = tmp_path / "p"
    root.mkdir()
    (root / "config.yml").write_text(
        CONFIG.replace("vendor: mock\n", "vendor: mock\n    latency_ms: 200\n", 1)
    )
    (root / "a.agent.yml").write_text(_agent(3, 2))
    files = [root / "a.agent.yml"]
    first = run_tests(files, project_dir=str(root))
    assert all(t.ok for t in first.tests)
    monkeypatch.setenv("OXY_RESULTS_IN_MEMORY", "0")
    monkeypatch.setattr(suite_module, "_WINDOW_RUNS", 1)  # one test under way at a time
    monkeypatch.setattr(suite_module, "_WINDOW_PER_CALL", 1)
    run = ConsistencyRun()
    started = asyncio.Event()

    def sink(event: Any) -> None:
        if type(event).__name__ == "SubjectStarted":
            started.set()

    async def go() -> None:
        task = asyncio.ensure_future(
            run_tests_async(files, project_dir=str(root), into=run, events=sink)
        )
        await asyncio.wait_for(started.wait(), 20)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert run.interrupted and run.spilled
    assert [t.name for t in run.tests] == ["t0", "t1", "t2"]
    cut = [t for t in run.tests if t.error == "interrupted before it finished"]
    assert cut and all(t.previous is not None for t in cut)
