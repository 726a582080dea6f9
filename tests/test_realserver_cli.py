"""What a real small-model server broke, seen from the commands.

Models are fake OpenAI-compatible servers on 127.0.0.1 (answers cut at the token limit
come back with ``finish_reason: "length"``, as llama.cpp sends them) or the offline mock.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.errors import ConfigError
from oxyeval.providers import ChatMessage, ModelPool, ModelSpec
from oxyeval.suites.cases.scoring import lexical_similarity
from oxyeval.workflow.engine import execute_workflow

from .conftest import MakeProject
from .fakes import RecordedRequest, fake_openai, openai_chat_response

ROOT = Path(__file__).resolve().parents[1]


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def cut_every_other(text: str = "The total is") -> Any:
    """An answer source for fake_openai: every second answer stops at the token limit."""
    counter = itertools.count()
    lock = threading.Lock()

    def answer(request: RecordedRequest) -> dict[str, Any]:
        with lock:
            n = next(counter)
        return openai_chat_response(text, finish_reason="length" if n % 2 == 0 else "stop")

    return answer


def always_cut(text: str) -> Any:
    return lambda request: openai_chat_response(text, finish_reason="length")


def config(url: str, extra: str = "") -> str:
    return (
        "models:\n"
        f"  - {{name: gemma, vendor: openai, model_ref: gemma3-270m, api_url: {url}{extra}}}\n"
        "  - name: judge\n    vendor: mock\n    rules:\n"
        '      - {match: ".", output: "Same.\\nAnswer: A"}\n'
    )


AGENT = """\
model: gemma
system_instructions: Answer.
tests:
  - type: consistency
    name: totals
    n: 6
    task_description: What is the total?
"""


def _token_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "token limit" in line]


# ------------------------------------------------------- item 18: the token-limit warning


def test_cut_runs_are_one_line_naming_the_test_and_the_default_cap(
    make_project: MakeProject,
) -> None:
    with fake_openai(cut_every_other()) as server:
        root = make_project(config(server.url), {"a.agent.yml": AGENT})
        result = invoke("test", str(root / "a.agent.yml"), "--format", "json")
    assert result.exit_code == 0, result.stderr
    json.loads(result.stdout)  # stdout stays pure JSON
    (line,) = _token_lines(result.stderr)  # one line for six runs, not three
    assert re.search(
        r"test 'totals' \(\S*a\.agent\.yml\): 3 of 6 runs \(\d, \d, \d\) stopped", line
    )
    # No max_tokens set: the default cap went out, and either it or the server's context
    # cut the answer; the line says both.
    assert "max_tokens: 1024 for model 'gemma', the default when none is set" in line
    assert "--n_ctx" in line
    assert "raise max_tokens" not in line


def test_with_max_tokens_set_the_warning_names_it(make_project: MakeProject) -> None:
    with fake_openai(cut_every_other()) as server:
        root = make_project(config(server.url, ", max_tokens: 64"), {"a.agent.yml": AGENT})
        result = invoke("test", str(root / "a.agent.yml"))
        sent = {r.body.get("max_tokens") for r in server.requests}
    assert result.exit_code == 0, result.stderr
    assert sent == {64}
    (line,) = _token_lines(result.stderr)
    assert "3 of 6 runs (" in line
    assert "max_tokens: 64 for model 'gemma'" in line and "raise max_tokens" in line


def test_agent_max_tokens_overrides_the_models_in_the_warning(make_project: MakeProject) -> None:
    agent = AGENT.replace("model: gemma\n", "model: gemma\nmax_tokens: 32\n")
    with fake_openai(cut_every_other()) as server:
        root = make_project(config(server.url, ", max_tokens: 64"), {"a.agent.yml": agent})
        result = invoke("test", str(root / "a.agent.yml"))
    (line,) = _token_lines(result.stderr)
    assert "max_tokens: 32 for model 'gemma'" in line


WORKFLOW = """\
tasks:
  - name: summary
    type: agent
    agent_ref: w.agent.yml
    consistency_run: 3
    judge_model: judge
    prompt: Summarise.
"""


def test_a_workflow_task_warns_once_for_its_runs(
    make_project: MakeProject, caplog: pytest.LogCaptureFixture
) -> None:
    with fake_openai(always_cut("A long summary that")) as server:
        root = make_project(
            config(server.url),
            {
                "w.agent.yml": "model: gemma\nsystem_instructions: Write.\n",
                "r.workflow.yml": WORKFLOW,
            },
        )
        with caplog.at_level("WARNING", logger="oxyeval"):
            run = asyncio.run(execute_workflow(root / "r.workflow.yml"))
    assert run.ok
    lines = [r.getMessage() for r in caplog.records if "token limit" in r.getMessage()]
    assert lines == [
        "task 'summary': 3 of 3 runs (1, 2, 3) stopped at the token limit (max_tokens: 1024 "
        "for model 'gemma', the default when none is set) and may be cut off: set max_tokens "
        "for the model to allow longer answers; an answer shorter than that filled the "
        "server's context window instead (shorten the prompt, or give the server a larger "
        "context: llama.cpp --n_ctx / -c)"
    ]


# ------------------------------------------------ item 22: accepting a cut-off output


PROMPT = """\
name: summary
model: gemma
template: "Summarise: {{ text }}"
similarity: lexical
cases:
  - name: long
    input: {text: "the report"}
"""


@pytest.fixture
def cut_cases(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OXY_DB", raising=False)
    with fake_openai(always_cut("The report says that sales")) as server:
        root = make_project(config(server.url), {"s.prompt.yml": PROMPT})
        monkeypatch.chdir(root)
        yield root


def test_cases_run_records_the_finish_reason_and_warns(cut_cases: Path) -> None:
    result = invoke("cases", "run", "--format", "json")
    assert result.exit_code == 0, result.stderr  # pending: neither pass nor failure
    (execution,) = json.loads(result.stdout)["executions"]
    assert execution["finishReason"] == "length" and execution["pending"]
    (line,) = _token_lines(result.stderr)
    assert "prompt 'summary' v1: case 'long' stopped at the token limit (max_tokens: 1024" in line
    assert "only with --force" in line


def test_accept_refuses_a_cut_off_output_without_force(cut_cases: Path) -> None:
    invoke("cases", "run")
    before = (cut_cases / "s.prompt.yml").read_text()
    refused = invoke("cases", "accept", "long")
    assert refused.exit_code == 2
    assert "case 'summary::long'" in refused.stderr
    assert "token limit" in refused.stderr and "--force" in refused.stderr
    assert "finish reason 'length'" in refused.stderr
    assert (cut_cases / "s.prompt.yml").read_text() == before  # nothing written

    forced = invoke("cases", "accept", "long", "--force")
    assert forced.exit_code == 0, forced.stderr
    assert "expected_output: The report says that sales" in (cut_cases / "s.prompt.yml").read_text()


def test_accept_takes_a_complete_output_without_force(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OXY_DB", raising=False)
    with fake_openai("Sales rose.") as server:
        root = make_project(config(server.url), {"s.prompt.yml": PROMPT})
        monkeypatch.chdir(root)
        invoke("cases", "run")
        accepted = invoke("cases", "accept", "long")
    assert accepted.exit_code == 0, accepted.stderr
    assert "expected_output: Sales rose." in (root / "s.prompt.yml").read_text()


# ------------------------------------------------------------ item 14: pending cases


def test_a_pending_case_is_shown_as_pending_not_failed(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OXY_DB", raising=False)
    mock = "models:\n  - {name: gemma, vendor: mock, outputs: [Sales rose.]}\n"
    root = make_project(mock, {"s.prompt.yml": PROMPT})
    monkeypatch.chdir(root)
    result = invoke("cases", "run")
    assert result.exit_code == 0, result.stderr
    assert "long: pending" in result.stdout
    assert "failed" not in result.stdout.replace("0 failed", "")
    assert "1 pending (no expected output)" in result.stdout


# ------------------------------------------------------- item 22: the lexical score


ECHO = (
    "You label the sentiment of customer feedback. Answer with one word: positive, "
    "negative or neutral. Feedback: I absolutely love this product, it is positive. "
) * 4


def test_a_long_echo_of_the_prompt_no_longer_scores_like_the_answer() -> None:
    echo = ECHO[:500]
    assert len(echo) == 500
    assert lexical_similarity(echo, "positive") < 0.05


def test_length_penalty_follows_the_documented_formula() -> None:
    # Same words in the same proportions: the cosine is 1, only the length factor acts.
    assert lexical_similarity("positive positive", "positive") == 1.0  # 2x the words: none
    assert lexical_similarity("positive positive positive", "positive") == pytest.approx(2 / 3)
    assert lexical_similarity("positive " * 8, "positive") == pytest.approx(2 / 8)
    # Symmetric.
    assert lexical_similarity("positive", "positive " * 8) == pytest.approx(2 / 8)


def test_the_cases_table_says_what_a_lexical_score_cannot_tell(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OXY_DB", raising=False)
    mock = "models:\n  - {name: gemma, vendor: mock, outputs: [Sales rose.]}\n"
    prompt = PROMPT + "    expected_output: up\n"
    root = make_project(mock, {"s.prompt.yml": prompt})
    monkeypatch.chdir(root)
    result = invoke("cases", "run")
    text = " ".join(result.stdout.split())
    assert "lexical = word overlap, not semantic" in text
    assert "a synonym or paraphrase scores low" in text and "scaled down" in text


# ------------------------------------------------- the workflow guide's example


def _guide_run_command() -> list[str]:
    guide = (ROOT / "docs" / "guides" / "workflows.md").read_text()
    match = re.search(
        r"^oxy run (examples/workflows/monthly_report\.workflow\.yml --var \S+)", guide, re.M
    )
    assert match, "the workflow guide no longer shows the monthly report command"
    return ["run", *match.group(1).split()]


def _check_report(report: str) -> str:
    """The summary sentence must agree with the table under it; returns the month."""
    header = re.search(r"^# Sales report (\d{4}-\d{2})$", report, re.M)
    assert header, report
    month = header.group(1)
    summary = report.splitlines()[1]
    months_named = set(re.findall(r"\d{4}-\d{2}", summary))
    assert months_named == {month}, summary
    for name in ("January", "February", "March", "April", "May", "June", "July", "August",
                 "September", "October", "November", "December"):  # fmt: skip
        assert name not in summary, summary
    rows = re.findall(r"^- (\w+): ([0-9.]+)$", report, re.M)
    if rows:
        top, total = rows[0]
        assert top in summary and total in summary, summary
        others = {region for region, _ in rows[1:]}
        assert not others & set(re.findall(r"\w+", summary)), summary
    else:
        assert "no sales" in summary, summary
    return month


@pytest.fixture
def examples_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(
        ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("output", ".oxy")
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_readme_monthly_report_command_agrees_with_itself(examples_copy: Path) -> None:
    args = _guide_run_command()
    result = invoke(*args)
    assert result.exit_code == 0, result.stderr
    month = _check_report(result.stdout)
    assert f"month={month}" in " ".join(args)


@pytest.mark.parametrize("month", ["2026-09", "2026-10", "2027-01"])
def test_the_monthly_report_agrees_with_its_table_for_any_month(
    examples_copy: Path, month: str
) -> None:
    result = invoke(
        "run", "examples/workflows/monthly_report.workflow.yml", "--var", f"month={month}"
    )
    assert result.exit_code == 0, result.stderr
    assert _check_report(result.stdout) == month


# ------------------------------------------------------------ mock rules behind item 15


def _mock_answers(rules: list[dict[str, Any]], questions: list[str]) -> list[str]:
    spec = ModelSpec(name="m", vendor="mock", options={"rules": rules})

    async def go() -> list[str]:
        async with ModelPool({"m": spec}, environ={}) as pool:
            model = pool.get("m")
            return [(await model.generate([ChatMessage("user", q)])).text for q in questions]

    return asyncio.run(go())


def test_mock_rule_outputs_cycle_per_question_and_quote_groups() -> None:
    rules = [
        {
            "match": r"for (?P<month>\d{4}-\d{2})",
            "outputs": [r"A \g<month>", r"B \g<month> (\g<1>)"],
        },
        {"match": ".", "output": r"no month in \g<0>"},
    ]
    answers = _mock_answers(
        rules, ["for 2026-09", "for 2026-09", "for 2026-10", "for 2026-09", "hi"]
    )
    assert answers == [
        "A 2026-09",
        "B 2026-09 (2026-09)",
        "A 2026-10",
        "A 2026-09",
        "no month in h",
    ]


def test_a_mock_rule_quoting_a_group_its_match_lacks_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"group \\g<month>, which its match 'x' does not define"):
        _mock_answers([{"match": "x", "output": r"\g<month>"}], ["x"])


def test_a_mock_rule_with_output_and_outputs_fails_validation(make_project: MakeProject) -> None:
    root = make_project(
        "models:\n  - name: m\n    vendor: mock\n    rules:\n"
        "      - {match: x, output: a, outputs: [b]}\n"
    )
    result = invoke("validate", str(root))
    assert result.exit_code == 2
    assert "config.yml:5" in result.stdout + result.stderr
    assert "a mock rule takes output: or outputs:, not both" in result.stdout + result.stderr
