"""Pass/fail runs of many subjects: they start a window at a time, and a run whose
subjects are kept on disk reports, stores and decides as one held in memory."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from oxyeval.evaluation import decide_run
from oxyeval.project.config import load_project
from oxyeval.report import test_files_json as files_document
from oxyeval.report.json import write_json
from oxyeval.suites import run_test_files
from oxyeval.suites import suite as suite_module
from oxyeval.suites.passfail import Criterion, PassFailRun, Subject, pass_fail_judge, run_passfail
from oxyeval.suites.targets import TextTarget

from ...conftest import MakeProject
from .._helpers import UnderWay, scrubbed

CONFIG = """\
models:
  - name: bot
    vendor: mock
    outputs: [ANSWER-OK, ANSWER-OK, ANSWER-BAD]
  - name: judge
    vendor: mock
    rules:
      - {match: "ANSWER-BAD", output: "Wrong.\\nVerdict: FAIL"}
      - {match: "ANSWER-OK", output: "Right.\\nVerdict: PASS"}
"""


def test_subjects_start_a_window_at_a_time_not_all_at_once(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suite_module, "_WINDOW_RUNS", 4)
    project = load_project(make_project(CONFIG))
    runs, subjects = 2, 30
    sink = UnderWay(runs)

    def build(context):  # type: ignore[no-untyped-def]
        return [
            Subject(
                key=f"q{i}::bot",
                label=f"q{i}",
                target=TextTarget(context, "bot", f"Question {i}?"),
                criteria=[Criterion("ok", "The answer is OK")],
                runs=runs,
                threshold=0.5,
                judge=pass_fail_judge(context, "judge"),
            )
            for i in range(subjects)
        ]

    run = asyncio.run(run_passfail(project, build, label="many", concurrency=1, events=sink))
    # eight rounds of a concurrency of 1 under way, two runs each: four subjects at most
    assert sink.most == 4
    assert len(run.subjects) == subjects and run.model_calls == runs * subjects
    assert [s.key for s in run.subjects] == [f"q{i}::bot" for i in range(subjects)]


TEST_FILE = """\
settings: {runs: 3, judge_model: judge}
cases:
""" + "".join(
    f"  - {{name: case {i}, prompt: 'Question {i}?', expected: ANSWER-OK}}\n" for i in range(6)
)


def _document(run: PassFailRun) -> dict[str, Any]:
    """The document as ``oxy test --format json`` writes it (streamed when on disk)."""
    out = io.StringIO()
    write_json(files_document(run, run.decision), out)
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


_VOLATILE = frozenset(
    {"runId", "createdAt", "at", "durationMs", "durationS", "latencyMs", "id", "history"}
)


def test_a_run_kept_on_disk_reports_and_decides_as_one_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def two_runs(root: Path) -> tuple[PassFailRun, PassFailRun]:
        root.mkdir()
        (root / "config.yml").write_text(CONFIG)
        (root / "a.agent.yml").write_text("model: bot\nsystem_instructions: Answer.\n")
        (root / "a.agent.test.yml").write_text(TEST_FILE)
        first = run_test_files(project_dir=str(root))
        return first, run_test_files(project_dir=str(root))

    held = two_runs(tmp_path / "held")
    monkeypatch.setenv("OXY_RESULTS_IN_MEMORY", "1")  # every list spills past one item
    kept = two_runs(tmp_path / "kept")

    assert not held[1].spilled and kept[1].spilled
    for memory, disk in zip(held, kept, strict=True):
        shown = scrubbed(_document(disk), tmp_path / "kept", _VOLATILE)
        assert shown == scrubbed(_document(memory), tmp_path / "held", _VOLATILE)
        assert disk.decision is not None and memory.decision is not None
        assert disk.decision.code == memory.decision.code == decide_run(memory).code
    # the second run's results know their previous ones, read back from disk too
    doc = _document(kept[1])
    assert len(doc["cases"]) == 6 and all(r["previous"] is not None for r in doc["results"])
    assert doc["overall"]["answerRate"] == 1.0


SLOW = CONFIG + "  - {name: slow, vendor: mock, latency_ms: 5000, outputs: [ANSWER-OK]}\n"


def _one_run_each(keys: list[tuple[str, str]]) -> Any:
    """A build of one subject of one run per (key, model)."""

    def build(context):  # type: ignore[no-untyped-def]
        return [
            Subject(
                key=key,
                label=model,
                target=TextTarget(context, model, "Question?"),
                criteria=[Criterion("ok", "The answer is OK")],
                runs=1,
                threshold=0.5,
                judge=pass_fail_judge(context, "judge"),
            )
            for key, model in keys
        ]

    return build


def _cancelled_once(
    project: Any, build: Any, run: PassFailRun, when: asyncio.Event, **options: Any
) -> None:
    """Run ``build``'s subjects into ``run`` and cancel the run once ``when`` is set."""

    async def go() -> None:
        task = asyncio.ensure_future(run_passfail(project, build, label="x", into=run, **options))
        await asyncio.wait_for(when.wait(), 20)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())


def _stored_subjects(root: Path) -> list[str]:
    from oxyeval.store import open_store

    with open_store(root / ".oxy" / "oxyeval.db", read_only=True) as store:
        (stored_run,) = store.runs.list(5)
        return sorted(r.subject for r in store.results.for_run(stored_run.id))


def test_an_interrupted_run_kept_on_disk_stores_each_subject_once(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OXY_RESULTS_IN_MEMORY", "0")  # kept on disk from the first subject
    root = make_project(SLOW)
    run = PassFailRun()
    fast_done = asyncio.Event()
    from oxyeval.suites.passfail import run as run_module

    original_keep = run_module.PassFail._keep

    async def keep(self: Any, suite: Any, result: Any) -> None:
        await original_keep(self, suite, result)
        if result.key == "bot::q":
            fast_done.set()

    monkeypatch.setattr(run_module.PassFail, "_keep", keep)
    build = _one_run_each([("bot::q", "bot"), ("slow::q", "slow")])
    _cancelled_once(load_project(root), build, run, fast_done)
    assert run.interrupted and run.spilled
    assert sorted((s.key, s.interrupted) for s in run.subjects) == [
        ("bot::q", False),
        ("slow::q", True),
    ]
    assert _stored_subjects(root) == ["bot::q::ok", "slow::q::ok"]
    (cut,) = [s for s in run.subjects if s.interrupted]
    assert cut.results[0].as_result().error == "interrupted before any of its runs finished"


def test_an_interrupted_run_lists_and_stores_the_subjects_that_never_started(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suite_module, "_WINDOW_RUNS", 1)  # one subject under way at a time
    monkeypatch.setattr(suite_module, "_WINDOW_PER_CALL", 1)
    root = make_project(SLOW)
    run = PassFailRun()
    started = asyncio.Event()

    def sink(event: Any) -> None:
        if type(event).__name__ == "SubjectStarted":
            started.set()

    build = _one_run_each([("slow::0", "slow"), ("bot::1", "bot"), ("bot::2", "bot")])
    _cancelled_once(load_project(root), build, run, started, concurrency=1, events=sink)
    # the one under way and the two that never started, in plan order, all cut short
    assert [(s.key, s.interrupted) for s in run.subjects] == [
        ("slow::0", True),
        ("bot::1", True),
        ("bot::2", True),
    ]
    assert run.decision is not None and run.decision.code == 3
    assert _stored_subjects(root) == ["bot::1::ok", "bot::2::ok", "slow::0::ok"]
