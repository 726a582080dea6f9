"""An A/B run cancelled (Ctrl-C, SIGTERM) while a branch is still answering: what
finished is stored, ranked and reported, and the run is marked interrupted."""

from __future__ import annotations

import asyncio
import contextlib

from oxyeval.evaluation import decide_run
from oxyeval.store import open_store
from oxyeval.suites.ab import ABRun, run_ab_tests_async

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


def test_what_finished_before_the_signal_is_stored_ranked_and_reported(
    make_project: MakeProject,
) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": PROMPT})
    run = ABRun(criteria="best_quality", iterations=1)

    stored: list[str] = []

    async def go() -> None:
        task = asyncio.ensure_future(
            run_ab_tests_async(
                project_dir=str(root),
                into=run,
                on_execution=lambda _case, outcome: stored.append(outcome.branch_id),
            )
        )
        while not stored:  # Quick has answered and been stored; Stuck is waiting
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(go(), 20))
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
