"""An A/B run cancelled (Ctrl-C, SIGTERM) while a branch is still answering: what
finished is stored, ranked and reported, and the run is marked interrupted."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from oxyeval.evaluation import decide_run
from oxyeval.store import open_store
from oxyeval.suites.ab import ABRun, run_ab_tests_async
from oxyeval.suites.spill import SpillList

from ...conftest import MakeProject

CONFIG = """\
models:
  - {name: quick, vendor: mock, outputs: [positive]}
  - {name: stuck, vendor: mock, latency_ms: 30000, outputs: [positive]}
"""
PROMPT = """\
name: s
model: quick
template: "{{ text }}"
similarity: lexical
branches:
  - {name: Quick, model: quick}
  - {name: Stuck, model: stuck}
cases:
  - {name: one, input: {text: hi}, expected_output: positive}
"""


def _cancelled_once_stored(root: Path, run: ABRun, **options: Any) -> list[str]:
    """Run the project's A/B tests into ``run`` and cancel it once a first execution is
    stored (Quick has answered; Stuck is waiting): the branch ids stored."""
    stored: list[str] = []

    async def go() -> None:
        task = asyncio.ensure_future(
            run_ab_tests_async(
                project_dir=str(root),
                into=run,
                on_execution=lambda _case, outcome: stored.append(outcome.branch_id),
                **options,
            )
        )
        while not stored:
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(go(), 20))
    return stored


def test_what_finished_before_the_signal_is_stored_ranked_and_reported(
    make_project: MakeProject,
) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    run = ABRun(criteria="best_quality", iterations=1)
    stored = _cancelled_once_stored(root, run)
    assert stored == ["s::one@Quick"]
    assert run.interrupted
    (result,) = run.results
    assert result.interrupted
    quick = next(b for b in result.branches if b.branch.name == "Quick")
    stuck = next(b for b in result.branches if b.branch.name == "Stuck")
    assert len(quick.outcomes) == 1 and quick.outcomes[0].execution_id
    assert stuck.outcomes == [] and result.winner is quick
    assert decide_run(run).code == 3
    with open_store(root / ".oxy" / "oxyeval.db", read_only=True) as store:
        (stored_run,) = store.runs.list(5)
        assert stored_run.status == "interrupted"
        (execution,) = store.branches.executions("s::one@Quick")
        assert execution.id == quick.outcomes[0].execution_id
        assert store.branches.executions("s::one@Stuck") == []


@pytest.mark.parametrize("on_disk", [False, True])
def test_a_case_that_never_started_is_listed_in_plan_order(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch, on_disk: bool
) -> None:
    from oxyeval.suites import suite as suite_module

    if on_disk:
        monkeypatch.setenv("OXY_RESULTS_IN_MEMORY", "0")  # each result kept on disk
    monkeypatch.setattr(suite_module, "_WINDOW_PER_CALL", 1)
    monkeypatch.setattr(suite_module, "_WINDOW_RUNS", 1)  # one case under way at a time
    two = PROMPT + "  - {name: two, input: {text: yo}, expected_output: positive}\n"
    root = make_project(CONFIG, {"s.prompt.yml": two})
    run = ABRun(criteria="best_quality", iterations=1)
    _cancelled_once_stored(root, run, concurrency=1)
    assert run.interrupted and isinstance(run.results, SpillList)
    assert run.results.spilled == on_disk
    one, never = run.results
    assert (one.case_name, never.case_name) == ("one", "two")
    assert one.interrupted and [len(b.outcomes) for b in one.branches] == [1, 0]
    # never started: cut short, each branch listed with no iteration, and said so
    assert never.interrupted and [len(b.outcomes) for b in never.branches] == [0, 0]
    assert never.winner is None and never.notes
    assert decide_run(run).code == 3


def test_each_result_is_reported_with_its_own_outcome_when_cases_finish_out_of_order(
    make_project: MakeProject,
) -> None:
    import io
    import json

    from oxyeval.report import ab_run_json, write_json
    from oxyeval.suites.ab import run_ab_tests

    config = """\
models:
  - {name: slow, vendor: mock, latency_ms: 300, outputs: [positive]}
  - {name: bad, vendor: mock, rules: [{match: ".", error: "the server said no"}]}
"""
    prompt = """\
name: s
model: slow
template: "{{ text }}"
similarity: lexical
cases:
  - {name: one, input: {text: hi}, expected_output: positive, branches: [{name: S, model: slow}]}
  - {name: two, input: {text: yo}, expected_output: positive, branches: [{name: B, model: bad}]}
"""
    root = make_project(config, {"s.prompt.yml": prompt})
    run = run_ab_tests(project_dir=str(root))  # "two" fails at once, "one" ends later
    out = io.StringIO()
    write_json(ab_run_json(run, run.decision), out)
    shown = [
        (r["subject"], r["status"], r["outcome"]) for r in json.loads(out.getvalue())["results"]
    ]
    assert shown == [("s::one@S", "success", "passed"), ("s::two@B", "error", "unknown")]
