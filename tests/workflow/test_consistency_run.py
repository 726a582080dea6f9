"""A workflow agent task's consistency_run is scored by the rules of a consistency test
(oxyeval.judge.consistency.assess): too few verdicts fail the task with assess's reason."""

from __future__ import annotations

import asyncio

import pytest

from oxyeval.workflow.engine import WorkflowFailed, WorkflowRun, execute_workflow

from ..conftest import MakeProject

# Four runs answer, in order: "Total is 42.", "The total is 42.", "Total: 42", "Total is 7."
CONFIG = """\
models:
  - name: varied
    vendor: mock
    outputs: {outputs}
  - name: judge
    vendor: mock
    rules:
{rules}
"""
OUTPUTS = '["Total is 42.", "The total is 42.", "Total: 42", "Total is 7."]'
WORKFLOW = """\
tasks:
  - name: t
    type: agent
    agent_ref: varied.agent.yml
    prompt: "What is the total?"
    consistency_run: {n}
    judge_model: judge
"""


def run(
    make_project: MakeProject, rules: list[str], n: int = 4, outputs: str = OUTPUTS
) -> WorkflowRun:
    config = CONFIG.format(outputs=outputs, rules="\n".join(f"      - {r}" for r in rules))
    root = make_project(
        config,
        {
            "varied.agent.yml": "model: varied\nsystem_instructions: be brief\n",
            "w.workflow.yml": WORKFLOW.format(n=n),
        },
    )
    return asyncio.run(execute_workflow(root / "w.workflow.yml"))


def test_too_few_verdicts_fail_the_task_with_assess_reason(make_project: MakeProject) -> None:
    # Every pair with run 3 or run 4 fails: 1 of the 6 pairs is judged (17% < 50%).
    rules = [
        '{match: "Total: 42", error: "judge overloaded"}',
        '{match: "Total is 7", error: "judge overloaded"}',
        '{match: ".", output: "Same.\\nAnswer: A"}',
    ]
    with pytest.raises(WorkflowFailed) as failed:
        run(make_project, rules)
    assert failed.value.exit_code == 3  # not scored, as an unscored consistency test
    record = failed.value.run.records[0]
    assert record.status == "failed"
    assert record.error is not None
    assert record.error.startswith(
        "consistency_run: judge 'judge': only 1 of 6 run pairs got a verdict "
        "(17%; min_judged is 50%): 5 judge error(s), first: "
    )
    assert "judge overloaded" in record.error


def test_failed_runs_count_against_the_judged_share(make_project: MakeProject) -> None:
    # Two of four runs return empty answers (failed runs): 1 of the 6 pairs can be judged.
    rules = ['{match: ".", output: "Same.\\nAnswer: A"}']
    with pytest.raises(WorkflowFailed) as failed:
        run(make_project, rules, outputs='["Total is 42.", "  ", "  ", "Total is 7."]')
    error = failed.value.run.records[0].error
    assert error == (
        "consistency_run: judge 'judge': only 1 of 6 run pairs got a verdict "
        "(17%; min_judged is 50%): 2 of 4 runs failed"
    )


def test_one_successful_run_has_nothing_to_compare(make_project: MakeProject) -> None:
    rules = ['{match: ".", output: "Same.\\nAnswer: A"}']
    with pytest.raises(WorkflowFailed) as failed:
        run(make_project, rules, n=3, outputs='["Total is 42.", " ", " "]')
    error = failed.value.run.records[0].error
    assert error is not None
    assert error.startswith(
        "consistency_run: only 1 of 3 runs succeeded, need at least 2 to compare; first error: "
        "run 2: "
    )


def test_half_the_pairs_judged_is_a_score(make_project: MakeProject) -> None:
    # Pairs with run 3 fail (3 of 6); 1-2 agree, 1-4 and 2-4 disagree: 3 of 6 judged = 50%.
    rules = [
        '{match: "Total: 42", error: "judge overloaded"}',
        '{match: "Total is 7", output: "Different.\\nAnswer: B"}',
        '{match: ".", output: "Same.\\nAnswer: A"}',
    ]
    result = run(make_project, rules)
    assert str(result.output) == "Total is 42."  # runs 1 and 2 tie at 1/2; earliest wins
    assert result.output.score == pytest.approx(0.5)
    details = result.records[0].details["consistency"]
    assert details["judged_pairs"] == 3 and details["total_pairs"] == 6
    assert details["accuracy"] == pytest.approx(1 / 3)
    assert details["selected_run"] == 1 and details["successful_runs"] == 4
    assert len(details["judge_errors"]) == 3
    assert result.output.details is details  # the output carries the same record


def test_a_consistency_run_output_is_text_in_templates(make_project: MakeProject) -> None:
    config = CONFIG.format(
        outputs='["Same answer."]', rules='      - {match: ".", output: "Answer: A"}'
    )
    root = make_project(
        config,
        {
            "varied.agent.yml": "model: varied\nsystem_instructions: be brief\n",
            "w.workflow.yml": WORKFLOW.format(n=2)
            + '  - {name: f, type: formatter, template: "{{ t | tojson }} {{ t | reverse }} '
            '{{ t.score }} {{ t | upper }}"}\n',
        },
    )
    run = asyncio.run(execute_workflow(root / "w.workflow.yml"))
    assert run.output == '"Same answer." .rewsna emaS 1.0 SAME ANSWER.'
    assert run.outputs["t"].score == 1.0 and run.outputs["t"] == "Same answer."
