"""``--batch``: the three vendors' batch APIs on fake servers (batches that take several
polls, expire, partly fail, or do not exist), the answers identical to a live run's, a
rerun that costs nothing, and a run stopped by SIGTERM between submit and results that
the next run resumes without paying again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.suites import batch_ledger

from ..batchfakes import BatchFake, Submitted
from ..conftest import MakeProject

ANSWERS = ["The total is 42.", "Total: 42", "It is 42 in all."]
PATHS = {"openai": "/v1", "anthropic": "/v1", "google": "/v1beta"}
ENV = {"BATCH_TEST_KEY": "sk-batch-test-1f2e", "OXYEVAL_BATCH_POLL": "0.01"}


class Script:
    """Agent answers in turn (in the order the requests reach the server), verdict A for
    judge prompts: the same answers for a live run and a batch of the same requests."""

    def __init__(self) -> None:
        self.next = 0
        self.lock = threading.Lock()

    def __call__(self, text: str) -> str:
        if "[Submission 1]" in text:
            return "Same facts.\nAnswer: A"
        with self.lock:
            self.next += 1
            return ANSWERS[(self.next - 1) % len(ANSWERS)]


@pytest.fixture
def fake() -> Iterator[BatchFake]:
    with BatchFake(Script(), polls=2) as server:
        yield server


@pytest.fixture(autouse=True)
def _project_history(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OXY_DB", raising=False)


def project(make_project: MakeProject, fake: BatchFake, vendor: str = "openai") -> Path:
    config = (
        f"models:\n  - name: local\n    vendor: {vendor}\n    model_ref: gpt-4o-mini\n"
        f"    api_url: {fake.url}{PATHS[vendor]}\n    key_var: BATCH_TEST_KEY\n    max_retries: 0\n"
    )
    agent = (
        "model: local\nsystem_instructions: Be brief.\ntests:\n"
        "  - type: consistency\n    name: totals\n    n: 3\n    concurrency: 1\n"
        "    task_description: What is the total?\n"
    )
    return make_project(config, {"a.agent.yml": agent})


def oxy(root: Path, *args: str, code: int = 0) -> Any:
    result = CliRunner(env=ENV).invoke(app, [*args, "--project", str(root)])
    assert result.exit_code == code, result.stdout + result.stderr
    return result


def oxy_test(root: Path, *flags: str) -> tuple[dict[str, Any], str]:
    result = oxy(root, "test", str(root / "a.agent.yml"), "--format", "json", *flags)
    return json.loads(result.stdout), result.stderr


def outputs(doc: dict[str, Any]) -> list[Any]:
    [test] = doc["results"]
    keys = ("status", "score", "output", "scores", "inputTokens", "outputTokens")
    return [test[k] for k in keys]


@pytest.mark.parametrize("vendor", ["openai", "anthropic", "google"])
def test_a_batch_run_equals_a_live_run(
    make_project: MakeProject, fake: BatchFake, vendor: str
) -> None:
    root = project(make_project, fake, vendor)
    live, _ = oxy_test(root, "--no-cache")
    assert len(fake.live) == 6 and not fake.batches  # 3 answers, 3 verdicts
    fake.answer.next = 0  # type: ignore[attr-defined]
    batched, err = oxy_test(root, "--no-cache", "--batch")
    assert outputs(batched) == outputs(live)
    assert batched["results"][0]["costUsd"] == pytest.approx(live["results"][0]["costUsd"] / 2)
    assert len(fake.live) == 6  # nothing more was asked live
    generation, judging = fake.submitted(vendor)
    assert len(generation.requests) == 3 and len(judging.requests) == 3
    assert generation.polls == judging.polls == 3  # polled until it ended (after 2 polls)
    assert f"{generation.id} to model 'local' (generation, 3 requests)" in err
    assert "(judge, 3 requests)" in err and "0/3 done" in err
    assert "6 answers from 2 new batches" in err
    assert "at batch prices" in err and " live, " in err


def test_expired_and_failed_requests_are_asked_again_live(
    make_project: MakeProject, fake: BatchFake
) -> None:
    root = project(make_project, fake)
    fake.expire_next = True  # the generation batch expires with 1 of 3 answered
    fake.failing_polls = 2  # and its first two polls meet an outage, waited out
    fake.error = lambda text: "[Submission 1]" in text  # every judge request fails
    doc, err = oxy_test(root, "--no-cache", "--batch")
    assert doc["results"][0]["status"] == "scored" and doc["results"][0]["score"] == 1.0
    assert fake.live == ["openai"] * 5  # 2 expired answers + 3 failed verdicts, live
    assert (
        "2 of 3 requests of batch opebatch1 (model 'local', expired): 2 were not answered; "
        "asked again live" in err
    )
    assert (
        "3 of 3 requests of batch opebatch2 (model 'local', ended): 3 errored (the first: "
        "model 'local' (openai): request r0 of a batch failed: HTTP 400: scripted failure)" in err
    )
    assert "5 retried live" in err
    assert err.count("polling opebatch1 failed") == 2 and "HTTP 503" in err


def test_a_rerun_of_a_finished_batch_run_makes_no_call(
    make_project: MakeProject, fake: BatchFake
) -> None:
    root = project(make_project, fake)
    first, _ = oxy_test(root, "--batch")
    calls = len(fake.calls)
    again, err = oxy_test(root, "--batch", "--cache")
    assert len(fake.calls) == calls  # no batch, no poll, no live call
    assert outputs(again) == outputs(first)
    assert again["summary"]["cachedCalls"] == 6
    # The answers replayed cost what the batch did, not the live price.
    assert again["results"][0]["costUsd"] == pytest.approx(first["results"][0]["costUsd"])
    assert "0 answers from 0 new batches" in err


def test_a_server_without_a_batch_api_runs_live_and_says_so_once(
    make_project: MakeProject, fake: BatchFake
) -> None:
    fake.batch_api = False
    root = project(make_project, fake)
    doc, err = oxy_test(root, "--no-cache", "--batch")
    assert doc["results"][0]["status"] == "scored"
    assert fake.live == ["openai"] * 6 and not fake.batches
    assert err.count("has no batch API") == 1 and "6 calls made live" in err
    assert "at batch prices" not in err and "every priced call made live" in err


def test_a_vendor_without_a_batch_api_runs_live(make_project: MakeProject) -> None:
    agent = (
        "model: agent_model\nsystem_instructions: x\ntests:\n"
        "  - {type: consistency, name: t, n: 2, task_description: q}\n"
    )
    from ..conftest import MOCK_CONFIG

    # Two answers that differ, so the judge (a second mock model) is asked too.
    config = MOCK_CONFIG.replace('["The total is 42."]', '["The total is 42.", "It is 42."]')
    config += "defaults:\n  judge_model: judge\n"
    root = make_project(config, {"a.agent.yml": agent})
    doc, err = oxy_test(root, "--batch")
    assert doc["results"][0]["status"] == "scored"
    said = "model 'agent_model' (mock): this vendor has no batch API; its calls run live"
    assert err.count(said) == 1
    judge = "model 'judge' (mock): this vendor has no batch API"  # its own line too
    assert err.count(judge) == 1


def stopped_after_submit(root: Path, fake: BatchFake) -> tuple[int, str]:
    """``oxy test --batch`` stopped by SIGTERM once its generation batch is submitted (the
    batch never ends while it runs): its exit code and stderr."""
    fake.polls = 10**9
    env = {k: v for k, v in os.environ.items() if k != "OXY_DB"} | ENV
    proc = subprocess.Popen(
        [sys.executable, "-m", "oxyeval", "test", "a.agent.yml", "--batch", "--no-cache"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert fake.first_submitted.wait(30), proc.stderr
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


def test_answers_of_a_batch_resumed_apart_are_counted_in_the_closing_lines(
    make_project: MakeProject, fake: BatchFake
) -> None:
    root = project(make_project, fake)
    assert stopped_after_submit(root, fake)[0] == 3
    fake.polls = 0
    assert "1 batch collected." in oxy(root, "batch", "resume").stdout
    doc, err = oxy_test(root, "--batch", "--no-cache")
    assert doc["results"][0]["status"] == "scored" and not fake.live
    # 3 generation answers kept by the resume, 3 verdicts from a new judge batch
    assert "3 answers from 1 new batch; 3 kept from batches collected earlier" in err


def test_sigterm_between_submit_and_results_resumes_without_paying_twice(
    make_project: MakeProject, fake: BatchFake
) -> None:
    root = project(make_project, fake)
    code, err = stopped_after_submit(root, fake)
    assert code == 3, err
    assert "submitted opebatch1 to model 'local'" in err  # kept before the process stopped
    assert "stopped while waiting for its batches; they stay open (`oxy batch status`)" in err
    [generation] = fake.submitted()

    status = oxy(root, "batch", "status").stdout
    assert "opebatch1" in status and "running" in status and "0/3 done" in status

    store = batch_ledger(project_dir=str(root))
    try:
        [batch] = store.batches.list()
        kept = store.batches.requests(batch.id)
    finally:
        store.close()
    assert (batch.remote_id, batch.phase, batch.kind) == ("opebatch1", "generation", "consistency")
    assert [(r.subject, r.phase, r.run_index, r.status) for r in kept] == [
        ("a.agent.yml::totals", "generation", n, "pending") for n in (1, 2, 3)
    ]

    fake.polls = 0  # the batch has ended by now
    doc, err = oxy_test(root, "--batch", "--no-cache")
    assert "collecting batch opebatch1 of model 'local' that an earlier run submitted" in err
    assert [b.id for b in fake.submitted()] == ["opebatch1", "opebatch2"]  # judging only
    assert ("POST", "/v1/batches") in fake.calls and not fake.live
    assert doc["results"][0]["status"] == "scored" and doc["results"][0]["output"] in ANSWERS
    assert "No open batches" in oxy(root, "batch", "status").stdout
    assert "opebatch1" in oxy(root, "batch", "status", "--all").stdout
    assert len(generation.requests) == 3


def test_batch_resume_and_cancel(make_project: MakeProject, fake: BatchFake) -> None:
    root = project(make_project, fake)
    fake.polls = 10**9
    for remote in ("opebatch1", "opebatch2"):  # two open batches, as a stopped run leaves
        question = {"messages": [{"role": "user", "content": "q"}]}
        fake.batches[remote] = Submitted(remote, "openai", [("r0", question)])
        store = batch_ledger(project_dir=str(root))
        store.batches.add(
            vendor="openai", model="local", model_ref="gpt-4o-mini", api_url=fake.url,
            remote_id=remote, phase="generation", kind="consistency",
            requests=[("r0", "hash-" + remote, "generation", "", 1)],
        )  # fmt: skip
        store.close()
    assert "1 batch cancelled." in oxy(root, "batch", "cancel", "opebatch2").stdout
    assert fake.batches["opebatch2"].cancelled and not fake.batches["opebatch1"].cancelled
    assert "opebatch2  openai/local  generation  cancelling" in oxy(root, "batch", "status").stdout
    cancels = [c for c in fake.calls if c[1].endswith("/cancel")]
    again = oxy(root, "batch", "cancel", "opebatch2")  # not asked of the vendor twice
    assert "0 batches cancelled." in again.stdout and "cancelled already" in again.stderr
    assert [c for c in fake.calls if c[1].endswith("/cancel")] == cancels
    fake.polls = 0
    result = oxy(root, "batch", "resume")
    assert "2 batches collected." in result.stdout
    store = batch_ledger(project_dir=str(root))
    try:
        [kept] = [r for b in store.batches.list() if b.remote_id == "opebatch1"
                  for r in store.batches.requests(b.id)]  # fmt: skip
    finally:
        store.close()
    assert kept.status == "succeeded" and kept.answer["text"] in ANSWERS
    oxy(root, "batch", "cancel", "nope", code=2)


def test_a_batch_whose_model_left_config_is_named_and_the_others_still_resume(
    make_project: MakeProject, fake: BatchFake
) -> None:
    root = project(make_project, fake)
    question = {"messages": [{"role": "user", "content": "q"}]}
    store = batch_ledger(project_dir=str(root))
    for remote, model in (("opebatch1", "gone"), ("opebatch2", "local")):
        fake.batches[remote] = Submitted(remote, "openai", [("r0", question)])
        store.batches.add(
            vendor="openai", model=model, model_ref="gpt-4o-mini", api_url=fake.url,
            remote_id=remote, phase="generation", kind="consistency",
            requests=[("r0", "hash-" + remote, "generation", "", 1)],
        )  # fmt: skip
    store.close()
    result = oxy(root, "batch", "resume", code=2)
    assert "1 batch collected; 1 could not be: opebatch1 (model 'gone')" in result.stderr
    assert ("GET", "/v1/batches/opebatch2") in fake.calls  # the other one was collected


def test_a_resume_stopped_by_sigterm_says_the_batches_stay_open(
    make_project: MakeProject, fake: BatchFake
) -> None:
    root = project(make_project, fake)
    fake.polls = 10**9  # never ends while the resume waits
    question = {"messages": [{"role": "user", "content": "q"}]}
    fake.batches["opebatch1"] = Submitted("opebatch1", "openai", [("r0", question)])
    store = batch_ledger(project_dir=str(root))
    store.batches.add(
        vendor="openai", model="local", model_ref="gpt-4o-mini", api_url=fake.url,
        remote_id="opebatch1", phase="generation", kind="consistency",
        requests=[("r0", "hash-1", "generation", "", 1)],
    )  # fmt: skip
    store.close()
    env = {k: v for k, v in os.environ.items() if k != "OXY_DB"} | ENV
    proc = subprocess.Popen(
        [sys.executable, "-m", "oxyeval", "batch", "resume"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for _ in range(3000):  # until it polls the batch
            if ("GET", "/v1/batches/opebatch1") in fake.calls or proc.poll() is not None:
                break
            threading.Event().wait(0.01)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, err
    assert "interrupted (SIGTERM): the batches stay open" in err and "nothing ran" not in err


def test_ab_branches_of_one_model_share_its_batch(
    make_project: MakeProject, fake: BatchFake
) -> None:
    config = "".join(
        f"  - {{name: {name}, vendor: {vendor}, model_ref: {ref}, api_url: '{fake.url}/v1', "
        "key_var: BATCH_TEST_KEY}\n"
        for name, vendor, ref in (
            ("a", "openai", "gpt-4o-mini"),
            ("b", "anthropic", "claude-haiku-4-5"),
        )
    )
    prompt = (
        'name: s\nmodel: a\ntemplate: "{{ text }}"\nsimilarity: lexical\nbranches:\n'
        "  - {name: A, model: a}\n  - {name: Warm, model: a, temperature: 0.9}\n"
        "  - {name: B, model: b}\n"
        "cases:\n  - {name: one, input: {text: hi}, expected_output: The total is 42.}\n"
    )
    root = make_project("models:\n" + config, {"s.prompt.yml": prompt})
    result = oxy(root, "ab", "run", "--batch", "--format", "json")
    openai, anthropic = fake.submitted("openai"), fake.submitted("anthropic")
    assert [len(b.requests) for b in openai] == [2] and [len(b.requests) for b in anthropic] == [1]
    temperatures = sorted(str(body.get("temperature")) for _c, body in openai[0].requests)
    assert temperatures == ["0.7", "0.9"]  # each branch's own settings, in one batch
    assert (
        "submitted opebatch" in result.stderr
        and "to model 'a' (generation, 2 requests)" in result.stderr
    )
    assert not fake.live and json.loads(result.stdout)["summary"]["exitCode"] == 0


def test_cases_run_batch(make_project: MakeProject, fake: BatchFake) -> None:
    root = project(make_project, fake)
    (root / "p.prompt.yml").write_text(
        "name: totals\nmodel: local\ntemplate: 'Question: {{ q }}'\nsimilarity: lexical\ncases:\n"
        "  - {name: one, input: {q: one}, expected_output: The total is 42.}\n"
        "  - {name: two, input: {q: two}, expected_output: 'Total: 42'}\n"
    )
    args = ["cases", "run", "--batch", "--format", "json", "--project", str(root)]
    result = CliRunner(env=ENV).invoke(app, args)
    assert result.exit_code in (0, 1), result.stderr  # which case gets which answer varies
    doc = json.loads(result.stdout)
    [batch] = fake.submitted()
    assert len(batch.requests) == 2 and not fake.live
    assert sorted(r["output"] for r in doc["results"]) == ["The total is 42.", "Total: 42"]


def test_an_agent_loop_without_a_batch_api_answers_as_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example agent calls a SQL tool, then answers: each call made once, and the
    loop in the run itself sees the answers the collecting pass got, unchanged."""
    import shutil

    examples = tmp_path / "examples"
    shutil.copytree(
        Path(__file__).resolve().parents[2] / "examples",
        examples,
        ignore=shutil.ignore_patterns("output", ".oxy", "chattest"),
    )
    monkeypatch.chdir(examples)

    def run(*flags: str) -> tuple[list[Any], str]:
        args = ["test", "agents/sales.agent.test.yml", "--format", "json", "--no-cache", *flags]
        result = CliRunner(env=ENV).invoke(app, args)
        assert result.exit_code == 0, result.stderr
        keys = ("subject", "status", "score", "output", "inputTokens", "outputTokens")
        return [[r[k] for k in keys] for r in json.loads(result.stdout)["results"]], result.stderr

    live, _ = run()
    batched, err = run("--batch")
    assert batched == live
    assert "11 calls made live" in err  # 9 agent turns (3 runs x 3), 2 verdicts: once each


def test_a_cases_run_stopped_before_any_case_ended_says_none_is_stored() -> None:
    """As a --batch run stopped while its batches ran leaves it: no result, nothing planned
    yet (it said "0 of 0 case(s) finished and are stored in .")."""
    from types import SimpleNamespace

    from oxyeval.report import reporter

    line = reporter("cases").interrupted_line(
        SimpleNamespace(results=[], planned=0, db="."), "interrupted (SIGTERM)"
    )
    assert line == "interrupted (SIGTERM): no case had finished, none is stored"
