"""Local model servers out of the box: what llama.cpp's server (llama-cpp-python 0.3.36
serving Gemma 3 270M) broke, against a fake that behaves as it did (:func:`fake_llama_cpp`).

Recorded behaviours, each named where a test relies on it: ``json_schema`` refused with
HTTP 500 and pydantic's "Input should be 'text' or 'json_object'"; ``json_object`` with a
``schema`` taken; generation until the context is full without ``max_tokens``; one
request at a time at a slow token rate; ``finish_reason: length`` on a cut answer;
``system`` messages dropped by the ``gemma`` chat format.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from typing import Any

import pytest

from oxyeval.errors import ProviderError
from oxyeval.judge import Judge, JudgeSession
from oxyeval.providers import ChatMessage, GenerateParams, ModelPool, ModelSpec

from ..fakes import SleepRecorder, fake_llama_cpp, judge_reply


def local_spec(url: str, **fields: Any) -> ModelSpec:
    return ModelSpec(name="gemma", vendor="openai", model_ref="gemma3-270m", api_url=url, **fields)


def formats(server: Any) -> list[str | None]:
    """The response_format type each request asked for (None: plain text), with the
    llama-cpp-python ``schema`` key shown as ``json_object+schema``."""
    out: list[str | None] = []
    for request in server.requests:
        wanted = request.body.get("response_format")
        if wanted is None:
            out.append(None)
        else:
            out.append(wanted["type"] + ("+schema" if "schema" in wanted else ""))
    return out


def test_the_judge_learns_json_object_with_a_schema_once_before_its_calls_fan_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Recorded: json_schema -> HTTP 500 "Input should be 'text' or 'json_object'";
    # {"type": "json_object", "schema": ...} -> a valid verdict object.
    async def go(url: str) -> list[Any]:
        async with ModelPool({"gemma": local_spec(url)}, sleep=SleepRecorder()) as pool:
            session = JudgeSession()
            judges = [Judge(pool.get("gemma"), session=session) for _ in range(4)]
            return await asyncio.gather(
                *(j.compare("q", "42", f"forty-two {k}") for k, j in enumerate(judges))
            )

    with (
        caplog.at_level(logging.WARNING, logger="oxyeval.judge"),
        fake_llama_cpp(judge_reply("A")) as server,
    ):
        results = asyncio.run(go(server.url))
        asked = formats(server)
    assert [r.choice for r in results] == ["A"] * 4
    assert all(r.error is None for r in results)
    # The refused form is sent by the first call only (its one retry confirms the 500 is
    # the server's answer to the request), then every call asks in the form it took.
    assert asked == ["json_schema", "json_schema"] + ["json_object+schema"] * 4
    notes = [r.getMessage() for r in caplog.records if r.name == "oxyeval.judge"]
    assert len(notes) == 1
    assert '"json_object", "schema"' in notes[0] and "HTTP 500" in notes[0]
    assert "Input should be 'text' or 'json_object'" in notes[0]


def test_a_refusal_is_recognised_by_its_message_whatever_the_status() -> None:
    from oxyeval.judge.structured import is_refusal

    assert is_refusal(
        ProviderError("HTTP 500: Input should be 'text' or 'json_object'", status=500)
    )
    assert is_refusal(ProviderError("unknown variant `json_schema`", status=422))
    assert is_refusal(ProviderError("'response_format.type' must be 'json_schema'", status=400))
    assert not is_refusal(ProviderError("HTTP 500: The server had an error", status=500))
    assert not is_refusal(ProviderError("connection refused (response_format)", status=None))


def test_text_sees_no_system_message_on_the_gemma_chat_format() -> None:
    # Recorded: the gemma chat format drops system messages; the fake does too.
    seen: list[Any] = []

    def reply(request: Any) -> str:
        seen.append([m["role"] for m in request.body["messages"]])
        return "ok"

    async def go(url: str) -> None:
        async with ModelPool({"gemma": local_spec(url)}, sleep=SleepRecorder()) as pool:
            await pool.get("gemma").generate(
                [ChatMessage("system", "Be brief."), ChatMessage("user", "Hi")]
            )

    with fake_llama_cpp(reply) as server:
        asyncio.run(go(server.url))
    assert seen == [["user"]]


# -- runaway generations: a cap, the keys, streaming, a small concurrency -----------------

LOCAL_CONFIG = """\
models:
  - {{name: gemma, vendor: openai, model_ref: gemma3-270m, api_url: {url}}}
  - {{name: hosted, vendor: openai, model_ref: gpt-4o-mini, api_url: https://api.example.com/v1, key_var: K}}
"""


def test_a_local_model_is_capped_streamed_and_starts_at_one_request(
    make_project: Any,
) -> None:
    # Recorded: without max_tokens the server writes until its context is full (4,096
    # tokens, 141 s there); one request at a time.
    from oxyeval.project import load_project
    from oxyeval.providers import DEFAULT_OUTPUT_TOKENS, LOCAL_OUTPUT_TOKENS

    with fake_llama_cpp("The total is 42.", n_ctx=100_000) as server:
        project = load_project(make_project(LOCAL_CONFIG.format(url=server.url)))
        local, hosted = project.models["gemma"], project.models["hosted"]
        assert (local.concurrency, local.stream) == (1, True)
        assert (hosted.concurrency, hosted.stream) == (16, False)

        async def go() -> Any:
            async with ModelPool(project.models, sleep=SleepRecorder()) as pool:
                assert pool.get("gemma").limiter.limit == 1  # one request sent at a time
                return await asyncio.gather(
                    *(pool.get("gemma").generate([ChatMessage("user", "Total?")]) for _ in range(3))
                )

        answers = asyncio.run(go())
        bodies = [r.body for r in server.requests]
    assert [a.text for a in answers] == ["The total is 42."] * 3
    # A local server gets the smaller default cap, so a judge prompt of two answers fits.
    assert all(b["max_tokens"] == LOCAL_OUTPUT_TOKENS and b["stream"] for b in bodies)
    assert LOCAL_OUTPUT_TOKENS < DEFAULT_OUTPUT_TOKENS


def test_an_abandoned_streamed_call_stops_the_generation_a_whole_one_does_not() -> None:
    # Recorded: the server goes on generating for a request whose client left unless it
    # was streamed. 4,000 tokens at 4,000/s: a call that gives up after 0.2 s.
    async def call(url: str, stream: bool) -> None:
        spec = local_spec(url, timeout=0.2, max_retries=0, stream=stream)
        async with ModelPool({"gemma": spec}, sleep=SleepRecorder()) as pool:
            with pytest.raises(ProviderError, match=r"timed out|timeout"):
                await pool.get("gemma").generate(
                    [ChatMessage("user", "Go on.")], GenerateParams(max_tokens=4000)
                )

    for stream in (True, False):
        with fake_llama_cpp(" ".join(["word"] * 4000)) as server:
            asyncio.run(call(server.url, stream))
            (tokens,) = server.wait_generated(1)
        if stream:
            assert tokens < 2000  # stopped soon after the client left
        else:
            assert tokens == 4000  # generated to the end for nobody


def test_every_model_definition_sets_max_tokens_timeout_and_concurrency(tmp_path: Any) -> None:
    import json

    from oxyeval.project import load_chattest

    models = tmp_path / "models"
    models.mkdir()
    (models / "gemma.json").write_text(
        json.dumps(
            {
                "key": "gemma",
                "url": "http://127.0.0.1:8765/v1/chat/completions",
                "maxTokens": 128,
                "timeout": 30,
                "concurrency": 2,
            }
        )
    )
    (models / "plain.json").write_text(
        json.dumps({"key": "plain", "url": "http://localhost:8765/v1/chat/completions"})
    )
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "p.json").write_text(
        json.dumps(
            {
                "key": "p",
                "prompt": "Hi",
                "models": ["gemma", "plain"],
                "tests": ["says hello"],
                "testModel": "gemma",
            }
        )
    )
    specs = load_chattest([tmp_path], environ={}).specs()
    gemma, plain = specs["gemma"], specs["plain"]
    assert (gemma.params.max_tokens, gemma.timeout, gemma.concurrency) == (128, 30.0, 2)
    assert (plain.params.max_tokens, plain.concurrency, plain.stream) == (None, 1, True)


AB_PROMPT = """\
name: totals
model: gemma
max_tokens: 64
template: "Total of {{ q }}?"
similarity: lexical
branches:
  - {name: plain, model: gemma, control: true}
  - {name: short, model: gemma, max_tokens: 16, timeout: 30}
cases:
  - {name: one, input: {q: "1+1"}, expected_output: "2"}
"""


def test_ab_branches_send_the_prompts_cap_unless_they_set_their_own(
    make_project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from oxyeval.cli import app

    monkeypatch.delenv("OXY_DB", raising=False)
    with fake_llama_cpp("2") as server:
        root = make_project(LOCAL_CONFIG.format(url=server.url), {"totals.prompt.yml": AB_PROMPT})
        monkeypatch.chdir(root)
        result = CliRunner().invoke(app, ["ab", "run", "--format", "json"])
        caps = sorted(r.body["max_tokens"] for r in server.requests)
    assert result.exit_code in (0, 1), result.output
    assert caps == [16, 64]  # not the Testing API's 2048 over the prompt's 64


# -- verdicts only from complete answers ----------------------------------------------------

CUT_REPLIES = [
    # Recorded on the real server (finish_reason: length), each once read as a verdict.
    "The user should answer: A.\n\n...Be clear on when the two models are the",
    "Answer: B\n(",
    "exactly one of:\nVerdict: PASS\nVerdict: F",
]


@pytest.mark.parametrize("reply", CUT_REPLIES)
def test_a_reply_cut_at_the_token_limit_carries_no_verdict(reply: str) -> None:
    from oxyeval.judge import CONSISTENCY, PASS_FAIL

    rubric = PASS_FAIL if "PASS" in reply else CONSISTENCY
    assert rubric.parse(reply) is not None  # read as a verdict were it complete...
    assert rubric.parse(reply, cut=True) is None  # ...but never from a cut-off reply


def test_a_complete_final_verdict_in_a_cut_reply_counts() -> None:
    from oxyeval.judge import CONSISTENCY

    verdict = CONSISTENCY.parse("Both give 42.\nAnswer: A\n", cut=True)
    assert verdict is not None and verdict.choice == "A"
    assert CONSISTENCY.parse("Both give 42.\nAnswer: A.", cut=True) is not None
    assert CONSISTENCY.parse("Both give 42.\nAnswer: A", cut=True) is None  # "A" of "Also"?


def test_the_judge_asks_again_after_a_cut_reply_and_never_counts_it() -> None:
    # The server cuts each reply at the judge's max_tokens (finish_reason: length) right
    # after a verdict-shaped phrase: no verdict, twice, so a judge error, not A or B.
    from oxyeval.project.config import JudgeSettings

    replies = iter(["Same facts. Answer: A (both say 42)", "Answer: B (they differ on 42)"])

    def reply(_request: Any) -> str:
        return next(replies)

    async def go(url: str) -> Any:
        async with ModelPool({"gemma": local_spec(url)}, sleep=SleepRecorder()) as pool:
            judge = Judge(pool.get("gemma"), settings=JudgeSettings(max_tokens=5))
            return await judge.compare("q", "42", "forty-two")

    with fake_llama_cpp(reply) as server:
        result = asyncio.run(go(server.url))
    assert result.choice is None and result.calls == 2
    assert result.error is not None and "cut off at max_tokens=5" in result.error


# -- pass/fail needs enough verdicts --------------------------------------------------------


def numbered(text: str) -> Any:
    """Answers that differ per request (a judge is asked once per distinct answer)."""
    counter = itertools.count(1)
    lock = threading.Lock()

    def reply(_request: Any) -> str:
        with lock:
            return f"{text} {next(counter)}."

    return reply


def first_only(verdict: str) -> Any:
    """A judge that gives ``verdict`` on its first request and rambles without one after."""
    counter = itertools.count()
    lock = threading.Lock()

    def reply(_request: Any) -> str:
        with lock:
            n = next(counter)
        return f"Looks right.\nVerdict: {verdict}" if n == 0 else "The answer mentions a total"

    return reply


def test_a_chattest_cell_with_one_verdict_of_three_runs_is_an_error_that_shows_the_rest(
    tmp_path: Any,
) -> None:
    import json

    from typer.testing import CliRunner

    from oxyeval.cli import app

    with (
        fake_llama_cpp(numbered("The total is")) as model,
        fake_llama_cpp(first_only("PASS")) as judge,
    ):
        (tmp_path / "models").mkdir()
        (tmp_path / "prompts").mkdir()
        for key, server in (("gemma", model), ("grader", judge)):
            (tmp_path / "models" / f"{key}.json").write_text(
                json.dumps({"key": key, "url": server.url + "/chat/completions"})
            )
        (tmp_path / "prompts" / "total.json").write_text(
            json.dumps(
                {
                    "key": "total",
                    "prompt": "What is the total?",
                    "models": ["gemma"],
                    "tests": ["gives a total"],
                    "runVolume": 3,
                    "testModel": "grader",
                }
            )
        )
        pretty = CliRunner().invoke(
            app, ["chattest", str(tmp_path), "--db", str(tmp_path / "h.db")]
        )
    assert pretty.exit_code == 3, pretty.output  # never 0 on judge errors
    assert "ERR - (1/1, 2 unjudged)" in pretty.stdout
    assert "only 1 of 3 runs got a verdict (min_judged is 50%)" in pretty.output


def test_a_test_file_where_nothing_got_a_verdict_claims_no_consistency(
    make_project: Any,
) -> None:
    import json

    from typer.testing import CliRunner

    from oxyeval.cli import app

    with (
        fake_llama_cpp(numbered("The total is")) as model,
        fake_llama_cpp("I would need to check the numbers") as judge,
    ):
        root = make_project(
            "models:\n"
            f"  - {{name: gemma, vendor: openai, model_ref: g, api_url: {model.url}}}\n"
            f"  - {{name: grader, vendor: openai, model_ref: j, api_url: {judge.url}}}\n",
            {
                "a.agent.yml": "model: gemma\nsystem_instructions: Answer.\n",
                "a.agent.test.yml": "settings: {runs: 3, judge_model: grader}\n"
                "cases:\n  - {name: total, prompt: 'What is the total?', expected: '42'}\n",
            },
        )
        runner = CliRunner()
        as_json = runner.invoke(
            app, ["test", str(root / "a.agent.test.yml"), "--format", "json", "--no-history"]
        )
        pretty = runner.invoke(app, ["test", str(root / "a.agent.test.yml"), "--no-history"])
    assert as_json.exit_code == 3 and pretty.exit_code == 3, pretty.output
    document = json.loads(as_json.stdout)
    (case,) = document["cases"]
    assert case["judgeErrors"] == 3 and case["consistent"] is None and case["passRate"] is None
    assert document["overall"]["consistency"] is None
    assert "consistency -" in pretty.stdout and "consistency 100.0%" not in pretty.stdout
    assert "(0/0, 3 unjudged)" in pretty.stdout


# -- A/B: a winner only beyond the noise ----------------------------------------------------

AB_TWO = """\
name: totals
model: gemma
template: "Total of {{ q }}?"
similarity: lexical
branches:
  - {name: cold, model: gemma, temperature: 0.0, control: true}
  - {name: warm, model: gemma, temperature: 0.9}
cases:
  - {name: one, input: {q: "1+1"}, expected_output: "The total is 2"}
"""


def test_ab_calls_no_winner_when_every_branch_fails_alike(
    make_project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Recorded: both branches answered junk; a quality gap of 0.0008 crowned one of them.
    from oxyeval.suites.ab import run_ab_tests

    monkeypatch.delenv("OXY_DB", raising=False)
    with fake_llama_cpp(numbered("Sure, here is some text about totals, number")) as server:
        root = make_project(LOCAL_CONFIG.format(url=server.url), {"t.prompt.yml": AB_TWO})
        (result,) = run_ab_tests(project_dir=str(root)).results
    assert [b.ok for b in result.branches] == [True, True]
    assert result.winner is None
    assert any("cannot tell a difference from noise" in n for n in result.notes)


def test_an_ab_run_interrupted_before_any_answer_does_not_say_every_branch_errored(
    make_project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib

    from oxyeval.suites.ab import ABRun, run_ab_tests_async

    monkeypatch.delenv("OXY_DB", raising=False)
    run = ABRun(criteria="best_quality", iterations=1)
    # A slow token rate: no branch answers before the run is cancelled.
    with fake_llama_cpp("2", tokens_per_second=0.5) as server:
        root = make_project(LOCAL_CONFIG.format(url=server.url), {"t.prompt.yml": AB_TWO})

        async def go() -> None:
            task = asyncio.ensure_future(run_ab_tests_async(project_dir=str(root), into=run))
            while not server.requests:
                await asyncio.sleep(0.01)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        asyncio.run(asyncio.wait_for(go(), 10))
    (result,) = run.results
    assert result.interrupted and result.winner is None
    assert not any("errored" in n for n in result.notes), result.notes
    assert any(n.startswith("interrupted before") for n in result.notes)


# -- what was paid for is kept ---------------------------------------------------------------

CUT_AGENT = """\
model: gemma
system_instructions: Answer.
tests:
  - type: consistency
    name: totals
    n: 3
    task_description: What is the total?
"""


def test_answers_cut_at_the_token_limit_are_replayed_by_a_cache_rerun_and_still_marked_cut(
    make_project: Any,
) -> None:
    # Recorded: a small model's answers all stopped at max_tokens, none was cached, and a
    # --cache rerun after Ctrl-C replayed nothing.
    from typer.testing import CliRunner

    from oxyeval.cli import app

    with fake_llama_cpp(numbered("The total of the orders in the north region is")) as server:
        root = make_project(
            "models:\n"
            f"  - {{name: gemma, vendor: openai, model_ref: g, api_url: {server.url}, "
            "max_tokens: 4}\n"
            "  - name: judge\n    vendor: mock\n    rules:\n"
            '      - {match: ".", output: "Same.\\nAnswer: A"}\n',
            {"a.agent.yml": CUT_AGENT},
        )
        runner = CliRunner()
        first = runner.invoke(app, ["test", str(root / "a.agent.yml"), "--cache"])
        asked = len(server.requests)
        again = runner.invoke(app, ["test", str(root / "a.agent.yml"), "--cache"])
        asked_again = len(server.requests) - asked
    assert first.exit_code == 0 and again.exit_code == 0, again.output
    assert asked == 3 and asked_again == 0  # every cut answer replayed
    for result in (first, again):  # and reported as cut both times
        assert "3 of 3 runs (1, 2, 3) stopped at the token limit (max_tokens: 4" in result.stderr


# -- what the judge and the user are shown ---------------------------------------------------

WORKFLOW = """\
tasks:
  - name: facts
    type: formatter
    template: "March had 3 orders"
  - name: summary
    type: agent
    agent_ref: w.agent.yml
    prompt: "Summarise: {{ facts }}"
tests:
  - type: consistency
    task_ref: summary
    n: 2
    model_ref: judge
"""


def test_a_workflow_test_shows_its_judge_the_prompt_as_rendered(make_project: Any) -> None:
    # Recorded: the judge was shown "{{ month }}" (the template), not what was asked.
    from typer.testing import CliRunner

    from oxyeval.cli import app

    with (
        fake_llama_cpp(numbered("Three orders in March")) as model,
        fake_llama_cpp(judge_reply("A")) as judge,
    ):
        root = make_project(
            "models:\n"
            f"  - {{name: gemma, vendor: openai, model_ref: g, api_url: {model.url}}}\n"
            f"  - {{name: judge, vendor: openai, model_ref: j, api_url: {judge.url}}}\n",
            {
                "w.agent.yml": "model: gemma\nsystem_instructions: Answer.\n",
                "r.workflow.yml": WORKFLOW,
            },
        )
        result = CliRunner().invoke(app, ["test", str(root / "r.workflow.yml"), "--no-history"])
        shown = [r.body["messages"][-1]["content"] for r in judge.requests]
    assert result.exit_code == 0, result.output
    assert shown and all("Summarise: March had 3 orders" in p for p in shown)
    assert not any("{{ facts }}" in p for p in shown)


def test_oxy_run_question_warns_when_the_answer_stopped_at_the_token_limit(
    make_project: Any,
) -> None:
    import json

    from typer.testing import CliRunner

    from oxyeval.cli import app

    with fake_llama_cpp("The total of all the orders is forty two") as server:
        root = make_project(
            "models:\n"
            f"  - {{name: gemma, vendor: openai, model_ref: g, api_url: {server.url}, "
            "max_tokens: 3}\n",
            {"a.agent.yml": "model: gemma\nsystem_instructions: Answer.\n"},
        )
        runner = CliRunner()
        args = ["run", str(root / "a.agent.yml"), "--question", "Total?"]
        pretty = runner.invoke(app, args)
        as_json = runner.invoke(app, [*args, "--format", "json"])
    assert pretty.exit_code == 0 and pretty.stdout.strip() == "The total of"
    assert "the answer stopped at the token limit (max_tokens: 3 for model 'gemma')" in (
        pretty.stderr
    )
    warnings = json.loads(as_json.stdout)["warnings"]
    assert any("stopped at the token limit" in w for w in warnings)


SERVER_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/srv/llama_cpp/server/errors.py", line 171, in custom_route_handler\n'
    "    response = await original_route_handler(request)\n"
    "RuntimeError: llama_decode returned -3"
)


def test_a_server_traceback_is_shown_as_its_exception_once_per_output(make_project: Any) -> None:
    from typer.testing import CliRunner

    from oxyeval.cli import app

    from ..fakes import FakeResponse, FakeServer

    def crash(_request: Any) -> FakeResponse:
        return FakeResponse(500, {"error": {"message": SERVER_TRACEBACK}})

    with FakeServer(crash) as server:
        root = make_project(
            "models:\n"
            f"  - {{name: gemma, vendor: openai, model_ref: g, api_url: {server.url}, "
            "max_retries: 0}\n"
            "  - {name: judge, vendor: mock, outputs: ['Answer: A']}\n",
            {"a.agent.yml": CUT_AGENT},
        )
        result = CliRunner().invoke(app, ["test", str(root / "a.agent.yml"), "--no-history"])
    assert result.exit_code == 3
    stdout = " ".join(result.stdout.split())  # as one line, whatever the terminal width
    assert "RuntimeError: llama_decode returned -3 (the server's traceback is left out)" in stdout
    assert "custom_route_handler" not in result.output
    assert result.stdout.count("llama_decode returned -3") == 1  # listed once, not per line


def test_a_branch_sets_its_own_timeout_and_concurrency(make_project: Any) -> None:
    from oxyeval.project import load_project
    from oxyeval.project.prompts import load_prompts
    from oxyeval.suites.ab.plan import _branch_model
    from oxyeval.workflow import RunContext

    prompt_text = AB_PROMPT.replace(
        "{name: short, model: gemma, max_tokens: 16, timeout: 30}",
        "{name: short, model: gemma, max_tokens: 16, timeout: 30, concurrency: 1}",
    ).replace("{name: plain, model: gemma, control: true}", "{name: plain, model: hosted}")
    root = make_project(
        LOCAL_CONFIG.format(url="http://127.0.0.1:9/v1"), {"totals.prompt.yml": prompt_text}
    )
    project = load_project(root)
    (prompt,) = load_prompts(project, [root / "totals.prompt.yml"])
    declared = {b.name: b for b in prompt.branches_of(prompt.cases[0])}
    short, plain = declared["short"], declared["plain"]
    assert (short.timeout, short.concurrency) == (30.0, 1)
    assert (plain.timeout, plain.concurrency) == (None, None)

    async def go() -> Any:
        from oxyeval.store import TestBranch

        async with RunContext(project, environ={"K": "k"}) as context:
            made = {}
            for b in (short, plain):
                row = TestBranch(
                    id=f"totals::one@{b.name}", test_case_id="totals::one", name=b.name,
                    description=None, provider=None, model=b.model, temperature=0.7,
                    max_tokens=b.cap(project, 64), top_p=1.0, is_control=False,
                    is_active=True, other_params={}, source_file="totals.prompt.yml",
                    created_at="", updated_at="",
                )  # fmt: skip
                made[b.name] = _branch_model(context, project, declared, row)
            return made

    made = asyncio.run(go())
    assert made["short"].spec.timeout == 30.0 and made["short"].limiter.ceiling == 1
    assert made["plain"].spec.timeout == 120.0 and made["plain"].limiter.ceiling == 16


def test_a_model_named_in_code_or_by_vendor_gets_a_local_servers_defaults_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the endpoint is decides, whoever names the model: an A/B branch's
    ``provider:``, the SDK's judge from OPENAI_BASE_URL, a DeepEval model object."""
    from oxyeval.providers import vendor_model_spec
    from oxyeval.testing.models import OpenAIModel

    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8765/v1", "OPENAI_API_KEY": "sk-local-123456"}
    monkeypatch.setenv("OPENAI_API_KEY", env["OPENAI_API_KEY"])
    by_vendor = vendor_model_spec("openai", "gemma", environ=env)
    in_code = OpenAIModel("gemma", base_url="http://localhost:8765/v1").model_spec()
    hosted = vendor_model_spec("openai", "gpt-4.1", environ={"OPENAI_API_KEY": "sk-h-123456"})
    for spec in (by_vendor, in_code):
        assert (spec.local, spec.stream, spec.concurrency) == (True, True, 1), spec.name
    assert (hosted.local, hosted.stream, hosted.concurrency) == (False, False, 16)
