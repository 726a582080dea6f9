"""Ctrl-C and SIGTERM: finished results are printed and stored, exit 3, reason on stderr.

Real subprocesses and real signals: the fake server
holds the later model calls open, and each test waits until the server has seen
the request that can only come after the first results exist before signalling,
so no test depends on a sleep.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.store import open_store

from ..conftest import MakeProject, default_signals
from ..fakes import FakeServer, RecordedRequest, ResponseLike, openai_chat_response, stall

ROOT = Path(__file__).resolve().parents[2]
SIGNALS = [signal.SIGTERM, signal.SIGINT]

CONFIG = """\
models:
  - name: slow
    vendor: openai
    model_ref: m
    api_url: {url}
    timeout: 60
    max_retries: 0
  - name: fast
    vendor: mock
    outputs: ["one", "two"]
  - name: judge
    vendor: mock
    rules:
      - match: "."
        output: "Same.\\nAnswer: A"
"""


def answer_first(count: int) -> Callable[[RecordedRequest], ResponseLike]:
    """Answer the first ``count`` requests (each differently), hold every later one open."""
    seen: list[int] = []

    def respond(_request: RecordedRequest) -> ResponseLike:
        seen.append(1)
        if len(seen) > count:
            return stall(60.0)
        return (200, openai_chat_response(f"answer {len(seen)}"))

    return respond


def start(
    args: list[str], cwd: Path, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """``python -m oxyeval ...`` with this tree first on the path and SIGINT not ignored
    (see :func:`default_signals`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **(extra_env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "oxyeval", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )


def signal_when(
    proc: subprocess.Popen[str], ready: Callable[[], bool], sig: signal.Signals
) -> tuple[int, str, str]:
    """Send ``sig`` once ``ready()`` holds, then collect the exit code and output."""
    deadline = time.monotonic() + 30
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate(timeout=5)
            pytest.fail(f"never got ready (exit {proc.returncode}):\n{out}\n{err}")
        time.sleep(0.02)
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{sig.name} did not stop the command:\n{out}\n{err}")
    return proc.returncode, out, err


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_oxy_test_json_keeps_finished_tests_and_runs(
    make_project: MakeProject, sig: signal.Signals
) -> None:
    slow_agent = """\
    model: slow
    system_instructions: Be brief.
    tests:
      - {type: consistency, name: slow one, n: 3, concurrency: 1, task_description: q, model_ref: judge}
    """
    fast_agent = """\
    model: fast
    system_instructions: Be brief.
    tests:
      - {type: consistency, name: quick, n: 2, task_description: q, model_ref: judge}
    """
    # The slow model answers after 0.2 s: the in-process quick test is long done by the
    # third request. Runs of "slow one" go one at a time (concurrency 1), so when the
    # server sees the third request, runs 1 and 2 have finished.
    with FakeServer(answer_first(2), latency=0.2) as server:
        root = make_project(
            CONFIG.format(url=server.url), {"a.agent.yml": fast_agent, "b.agent.yml": slow_agent}
        )
        proc = start(["test", "a.agent.yml", "b.agent.yml", "--format", "json"], root)
        code, out, err = signal_when(proc, lambda: len(server.requests) >= 3, sig)

    assert code == 3, err
    doc = json.loads(out)  # one JSON document, nothing else on stdout
    quick, slow = doc["tests"]
    assert quick["name"] == "quick" and quick["status"] == "scored"
    assert quick["accuracy"] == 1.0
    assert slow["name"] == "slow one" and slow["status"] == "interrupted"
    assert slow["accuracy"] is None
    assert [(o["run"], o["text"]) for o in slow["outputs"]] == [(1, "answer 1"), (2, "answer 2")]
    assert "2 of 3 run(s) finished" in slow["error"]
    assert doc["summary"]["interrupted"] is True and doc["summary"]["exitCode"] == 3
    assert f"interrupted ({sig.name})" in err
    assert "reporting 1 test(s) that finished and 1 cut short" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_oxy_run_json_has_the_shape_of_a_finished_run(
    make_project: MakeProject, sig: signal.Signals
) -> None:
    workflow = """\
    tasks:
      - {name: intro, type: formatter, template: "hello"}
      - {name: ask, type: agent, agent_ref: b.agent.yml, prompt: "{{ intro }}"}
    """
    finished_workflow = "tasks:\n  - {name: intro, type: formatter, template: hello}\n"
    with FakeServer(answer_first(0)) as server:
        root = make_project(
            CONFIG.format(url=server.url),
            {
                "b.agent.yml": "model: slow\nsystem_instructions: x\n",
                "w.workflow.yml": workflow,
                "done.workflow.yml": finished_workflow,
            },
        )
        normal = CliRunner().invoke(
            app, ["run", str(root / "done.workflow.yml"), "--format", "json"]
        )
        proc = start(["run", "w.workflow.yml", "--format", "json"], root)
        code, out, err = signal_when(proc, lambda: len(server.requests) >= 1, sig)

    assert normal.exit_code == 0, normal.stderr
    assert code == 3, err
    doc = json.loads(out)
    assert set(doc) == set(json.loads(normal.stdout))  # workflow, output, failedTasks, durationS...
    assert doc["status"] == "interrupted" and doc["summary"]["exitCode"] == 3
    assert doc["workflow"] == "w.workflow.yml"
    assert isinstance(doc["durationS"], float) and doc["output"] is None
    tasks = {t["name"]: t for t in doc["tasks"]}
    assert tasks["intro"]["status"] == "succeeded" and tasks["intro"]["output"] == "hello"
    assert tasks["ask"]["status"] == "interrupted"
    assert f"interrupted ({sig.name}): 1 task(s) had finished, 1 interrupted" in err


def test_oxy_run_question_interrupted_prints_the_answer_document_shape(
    make_project: MakeProject,
) -> None:
    with FakeServer(answer_first(0)) as server:
        root = make_project(
            CONFIG.format(url=server.url),
            {
                "b.agent.yml": "model: slow\nsystem_instructions: x\n",
                "f.agent.yml": "model: fast\nsystem_instructions: x\n",
            },
        )
        args = ["--question", "hi", "--format", "json"]
        normal = CliRunner().invoke(app, ["run", str(root / "f.agent.yml"), *args])
        proc = start(["run", "b.agent.yml", *args], root)
        code, out, err = signal_when(proc, lambda: len(server.requests) >= 1, signal.SIGTERM)
    assert normal.exit_code == 0, normal.stderr
    assert code == 3, err
    doc = json.loads(out)
    assert set(doc) == set(json.loads(normal.stdout))  # agent, output, usage, durationS...
    assert (
        doc["status"] == "interrupted" and doc["output"] is None and doc["summary"]["exitCode"] == 3
    )
    assert doc["agent"] == "b.agent.yml"
    assert "interrupted (SIGTERM) before the agent answered" in err


def test_oxy_cases_run_sigterm_stores_and_prints_finished_cases(make_project: MakeProject) -> None:
    prompt = """\
    name: greet
    model: slow
    template: "Say {{ word }}"
    similarity: lexical
    cases:
      - {name: one, input: {word: a}, expected_output: answer 1}
      - {name: two, input: {word: b}, expected_output: answer 2}
      - {name: three, input: {word: c}, expected_output: answer 3}
    """
    with FakeServer(answer_first(1)) as server:
        root = make_project(CONFIG.format(url=server.url), {"g.prompt.yml": prompt})
        args = ["cases", "run", "g.prompt.yml", "--concurrency", "1", "--format", "json"]
        proc = start(args, root)
        code, out, err = signal_when(proc, lambda: len(server.requests) >= 2, signal.SIGTERM)

    assert code == 3, err
    doc = json.loads(out)
    assert [e["name"] for e in doc["executions"]] == ["one"]
    assert doc["executions"][0]["actualOutput"] == "answer 1"
    assert doc["summary"]["interrupted"] is True and doc["planned"] == 3
    assert "interrupted (SIGTERM): 1 of 3 case(s) finished" in err
    with open_store(root / ".oxy" / "oxyeval.db") as store:
        (run,) = store.runs.list(5)
    assert run.status == "interrupted" and run.done == 1 and run.total == 3


def test_oxy_test_pretty_says_interrupted_and_keeps_partial_runs(
    make_project: MakeProject,
) -> None:
    agent = """\
    model: slow
    system_instructions: Be brief.
    tests:
      - {type: consistency, name: slow one, n: 3, concurrency: 1, task_description: q, model_ref: judge}
    """
    with FakeServer(answer_first(2)) as server:
        root = make_project(CONFIG.format(url=server.url), {"b.agent.yml": agent})
        proc = start(["test", "b.agent.yml"], root)
        code, out, err = signal_when(proc, lambda: len(server.requests) >= 3, signal.SIGTERM)
    assert code == 3, err
    assert "Eval interrupted; 0 of 1 test(s) finished" in out
    assert "interrupted: 2 of 3 run(s) finished; not scored" in out
    assert "reporting 0 test(s) that finished and 1 cut short" in err


# --------------------------------------------------------------------------- library level


def test_a_test_cut_short_while_judging_keeps_its_verdicts(make_project: MakeProject) -> None:
    """Interrupted after some verdicts: a partial score, marked interrupted, not 'scored'."""
    from oxyeval.suites.consistency import run_tests_async
    from oxyeval.suites.consistency.results import ConsistencyRun

    config = """\
    models:
      - name: fast
        vendor: mock
        outputs: ["one", "two", "three"]
      - name: judge
        vendor: openai
        model_ref: j
        api_url: {url}
        timeout: 60
        max_retries: 0
    """
    agent = """\
    model: fast
    system_instructions: x
    tests:
      - {type: consistency, name: t, n: 3, concurrency: 1, task_description: q, model_ref: judge}
    """
    verdicts = iter(["Same.\nAnswer: A", "Differ.\nAnswer: B"])

    def respond(_request: RecordedRequest) -> ResponseLike:
        text = next(verdicts, None)
        return stall(60.0) if text is None else (200, openai_chat_response(text))

    run = ConsistencyRun()
    with FakeServer(respond) as server:
        root = make_project(config.format(url=server.url), {"a.agent.yml": agent})

        async def go() -> None:
            task = asyncio.ensure_future(run_tests_async([root / "a.agent.yml"], into=run))
            while len(server.requests) < 3:  # two verdicts given, the third held open
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(go())

    (test,) = run.tests
    assert test.interrupted and not test.ok
    assert test.to_dict()["status"] == "interrupted"
    assert [o.text for o in test.outputs] == ["one", "two", "three"]
    assert test.pairs == 3 and test.judged_pairs == 2
    assert test.accuracy == pytest.approx(0.5)  # one A, one B among the judged pairs
    assert "2 of 3 pair(s) judged" in (test.error or "")


def test_an_interrupted_workflow_run_marks_running_and_pending_tasks(
    make_project: MakeProject,
) -> None:
    from oxyeval.workflow.engine import WorkflowRun, execute_workflow

    workflow = """\
    tasks:
      - {name: intro, type: formatter, template: "hello"}
      - {name: ask, type: agent, agent_ref: b.agent.yml, prompt: "{{ intro }}"}
      - {name: after, type: formatter, template: "{{ ask }}"}
    """
    run = WorkflowRun()
    with FakeServer(answer_first(0)) as server:
        root = make_project(
            CONFIG.format(url=server.url),
            {"b.agent.yml": "model: slow\nsystem_instructions: x\n", "w.workflow.yml": workflow},
        )

        async def go() -> None:
            task = asyncio.ensure_future(execute_workflow(root / "w.workflow.yml", into=run))
            while not server.requests:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(go())

    status = {r.name: (r.status, r.error) for r in run.records}
    assert status["intro"] == ("succeeded", None)
    assert status["ask"] == ("interrupted", "interrupted before it finished")
    assert status["after"] == ("interrupted", "interrupted before it started")
    assert run.interrupted and not run.ok
    assert run.to_dict()["status"] == "interrupted"


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_before_the_command_runs_exits_3_with_a_reason(
    make_project: MakeProject, sig: str
) -> None:
    # The window between start-up and the command's event loop (imports, loading files):
    # Click would print "Aborted!" and exit 1, the code for a failed test.
    root = make_project(files={"a.agent.yml": "model: agent_model\nsystem_instructions: hi\n"})
    script = (
        "import os, signal, sys\n"
        "import oxyeval.cli._app as cli\n"
        "real = cli._invoke\n"
        f"cli._invoke = lambda args: (os.kill(os.getpid(), signal.{sig}), real(args))[1]\n"
        "sys.argv = ['oxy', 'test', 'a.agent.yml', '--format', 'json']\n"
        "cli.main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=default_signals,
    )
    assert proc.returncode == 3, proc.stderr
    assert f"interrupted ({sig})" in proc.stderr
    assert json.loads(proc.stdout)["exitCode"] == 3
    assert "Aborted" not in proc.stderr and "Traceback" not in proc.stderr


def test_a_signal_while_the_report_is_written_does_not_cut_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The first signal is said and the report written whole (a JSON document cut in two
    helps nobody); a second one ends at once, exit 3."""
    from oxyeval.cli.interrupt import SignalExit, report_whole

    with report_whole():
        os.kill(os.getpid(), signal.SIGTERM)  # delivered at the next bytecode
        written = "the whole report"
    assert written == "the whole report"
    assert "interrupted (SIGTERM) while the report was written" in capsys.readouterr().err
    with pytest.raises(SignalExit) as stopped, report_whole():
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)  # not reached: the second signal stops it
    assert stopped.value.code == 3
    assert "again while the report was written; it is cut short" in capsys.readouterr().err
