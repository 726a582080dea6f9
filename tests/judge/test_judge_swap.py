"""judge_swap: each distinct pair judged in both orders; orders that disagree are a
position-bias judge error, shown per judge in the JSON and the pretty report."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from oxyeval.cli import main
from oxyeval.judge.consistency import assess
from oxyeval.judge.judge import JudgeResult

from ..conftest import MakeProject


def test_a_judge_that_favours_the_first_answer_gives_no_verdict_with_the_swap() -> None:
    calls: list[tuple[str, str]] = []

    async def first_wins(s1: str, s2: str) -> JudgeResult:
        calls.append((s1, s2))
        # Consistent whenever "yes" comes first: the verdict depends on the order.
        return JudgeResult("A" if s1.startswith("yes") else "B", "", "", 1, None)

    texts = {1: "yes", 2: "no", 3: "yes again"}
    plain = asyncio.run(assess(texts, first_wins, n=3))
    calls.clear()
    swapped = asyncio.run(assess(texts, first_wins, n=3, swap=True, min_judged=0.3))
    assert len(calls) == 6  # three distinct pairs, two orders each
    assert {(a, b) for a, b in calls} == {(b, a) for a, b in calls}
    by_runs = {c.runs: c for c in swapped.comparisons}
    # yes/no and no/yes-again flip with the order: no verdict, a judge error each.
    for runs in ((1, 2), (2, 3)):
        assert by_runs[runs].position_bias and by_runs[runs].choice is None
        assert "position-bias disagreement" in (by_runs[runs].error or "")
    # Both "yes" answers come first in either order: the verdict stands.
    assert by_runs[(1, 3)].choice == "A" and not by_runs[(1, 3)].position_bias
    assert by_runs[(1, 3)].judge_calls == 2
    assert swapped.accuracy == 1.0 and swapped.score.judged_pairs == 1
    assert plain.score.judged_pairs == 3  # without the swap each order's verdict counts


CONFIG = """\
models:
  - name: agent_model
    vendor: mock
    outputs: ["The total is 42.", "The total is 41."]
  - name: judge
    vendor: mock
    rules:
      - match: "FIRST=The total is 42"
        output: "Answer: A"
      - match: "."
        output: "Answer: {fair}"
judge:
  swap: true
"""

AGENT = """\
model: agent_model
system_instructions: Add up.
tests:
  - type: consistency
    name: totals
    n: 4
    min_judged: 0.1
    model_ref: judge
    task_description: What is the total?
    prompt: "FIRST={{ submission_1 }} SECOND={{ submission_2 }} Answer A or B."
"""


def _oxy(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        main(["test", str(root / "a.agent.yml"), "--no-history", *args])
    return int(info.value.code or 0), capsys.readouterr().out


@pytest.mark.parametrize("fair", ["A", "B"])
def test_the_swap_from_config_yml_is_reported_per_judge(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str], fair: str
) -> None:
    root = make_project(CONFIG.format(fair=fair), {"a.agent.yml": AGENT})
    code, out = _oxy(root, capsys, "--format", "json")
    test = json.loads(out)["tests"][0]
    biased = fair == "B"  # 42 first says A, 41 first says B: the orders disagree
    assert test["judgeSwap"] == {
        "pairs": 1,
        "disagreements": 1 if biased else 0,
        "share": 1.0 if biased else 0.0,
    }
    assert test["judgeCalls"] == 2
    judged = [c for c in test["comparisons"] if not c["identical"]]
    assert judged[0]["positionBias"] is biased
    assert (judged[0]["verdict"] is None) is biased
    if biased:
        assert "position-bias disagreement" in test["failedJudgements"][0]["error"]
        # The only pair sent got no verdict: identical pairs alone never make a score.
        assert test["accuracy"] is None and "position-bias" in test["error"]
        assert code == 3
    else:
        assert test["accuracy"] == 1.0 and test["judgedPairs"] == 6 and code == 0
    line = (
        f"judge swap (judge): {1 if biased else 0} of 1 pair(s) judged in both orders "
        f"disagreed ({100.0 if biased else 0.0:.1f}% position bias)"
    )
    saved = root / "run.json"
    saved.write_text(out, encoding="utf-8")
    code, out = _oxy(root, capsys)
    assert line in " ".join(out.split())
    # A saved run's report says it too.
    with pytest.raises(SystemExit):
        main(["report", str(saved)])
    assert line in " ".join(capsys.readouterr().out.split())
