"""Ctrl-C in the middle of a run of hundreds of cases: every case that finished is in the
history and in the report (the same ones), and a rerun with ``--cache`` replays them
and asks only for the rest.

A real subprocess and a real SIGINT: the fake server answers the first 150 requests and
holds every later one open; the signal goes once it has seen 20 more, which the run can
only send as 20 answered cases give their slots up, so all 150 have finished by then
(their writes may still be under way: that is what must not lose them). The run keeps
no more than 100 results in memory, so most are reported from disk, as in a run of
100,000.
"""

from __future__ import annotations

import json
import signal

from oxyeval.store import open_store

from ..conftest import MakeProject
from ..fakes import FakeServer, RecordedRequest, ResponseLike, openai_chat_response, stall
from .test_interrupts import signal_when, start

CASES = 300
ANSWERED = 150
CONCURRENCY = 20
ON_DISK = {"OXY_RESULTS_IN_MEMORY": "100"}  # past 100 results, kept on disk

CONFIG = """\
models:
  - name: m
    vendor: openai
    model_ref: m
    api_url: {url}
    timeout: 60
    max_retries: 0
    concurrency: {concurrency}
"""


def _prompt() -> str:
    lines = ['name: p\nmodel: m\ntemplate: "Say {{ n }}"\nsimilarity: lexical\ncases:\n']
    lines += [f"  - {{name: c{i}, input: {{n: {i}}}, expected_output: ok}}\n" for i in range(CASES)]
    return "".join(lines)


def test_an_interrupted_big_run_keeps_what_finished_and_a_cached_rerun_replays_it(
    make_project: MakeProject,
) -> None:
    limit = [ANSWERED]
    seen: list[int] = []

    def respond(_request: RecordedRequest) -> ResponseLike:
        seen.append(1)
        return (200, openai_chat_response("ok")) if len(seen) <= limit[0] else stall(60.0)

    with FakeServer(respond) as server:
        root = make_project(
            CONFIG.format(url=server.url, concurrency=CONCURRENCY), {"p.prompt.yml": _prompt()}
        )
        args = ["cases", "run", "p.prompt.yml", "--format", "json"]
        args += ["--concurrency", str(CONCURRENCY)]
        code, out, err = signal_when(
            start(args, root, ON_DISK),
            lambda: len(server.requests) >= ANSWERED + CONCURRENCY,
            signal.SIGINT,
        )
        assert code == 3, err
        doc = json.loads(out)
        reported = {e["testCaseId"]: e["id"] for e in doc["executions"]}
        assert len(reported) == ANSWERED and doc["summary"]["interrupted"] is True
        with open_store(root / ".oxy" / "oxyeval.db", read_only=True) as store:
            (run,) = store.runs.list(5)
            stored = {e.test_case_id: e.id for e in store.executions.for_run(run.id)}
        assert run.status == "interrupted" and run.done == ANSWERED
        assert stored == reported  # exactly the finished ones, in both

        limit[0] = 10**9
        asked = len(server.requests)
        rerun = start([*args, "--cache"], root, ON_DISK)
        out, err = rerun.communicate(timeout=120)
        assert rerun.returncode == 0, err
        doc = json.loads(out)
        assert doc["summary"]["results"] == CASES
        assert doc["summary"]["cachedCalls"] == ANSWERED  # replayed, not asked again
        assert len(server.requests) - asked == CASES - ANSWERED
        replayed = {e["testCaseId"] for e in doc["executions"] if e["cached"]}
        assert replayed == set(stored)
