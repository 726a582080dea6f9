"""A project written as Autoblocks' Python testing examples are (see autoblocks_project)
runs with only its import prefix changed, under ``oxy exec`` as under ``autoblocks
testing exec``: every suite runs, the summary names each verdict, and the command exits 1
because some failed. Its LLM calls reach a fake OpenAI server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes import fake_openai, last_user_text

from .autoblocks_project import FILES, IMPORT_PREFIX, answer, write_project

ROOT = Path(__file__).resolve().parents[2]


def _reply(request) -> str:  # type: ignore[no-untyped-def]
    system = request.body["messages"][0]["content"]
    return answer(system, last_user_text(request.body))


def test_the_example_project_runs_with_only_the_import_prefix_changed(here: Path) -> None:
    changed = write_project(here)
    assert changed == sum(text.count(IMPORT_PREFIX) for text in FILES.values()) >= 30
    written = "".join(p.read_text() for p in here.rglob("*.py"))
    assert "from autoblocks" not in written and "import autoblocks" not in written
    with fake_openai(_reply) as server:
        env = dict(
            os.environ,
            OPENAI_BASE_URL=server.url,
            OPENAI_API_KEY="sk-test",
            PYTHONPATH=os.pathsep.join([str(here), str(ROOT)]),
            NO_COLOR="1",
            COLUMNS="160",
        )
        env.pop("OXY_DB", None)
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from oxyeval.cli import main; main()",
                "exec",
                "--",
                sys.executable,
                "-c",
                "from my_project.run import run; run()",
            ],
            cwd=here,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        requests = len(server.requests)
    assert done.returncode == 1, done.stdout + done.stderr
    verdicts = {
        line.split()[1].rstrip(":"): line.split()[0]
        for line in done.stdout.splitlines()
        if line.startswith("  ") and line.split()[0] in ("PASS", "FAIL", "ERROR")
    }
    assert verdicts == {
        "quiz-cards": "PASS",  # no threshold: scores reported, pass undefined
        "outline": "FAIL",
        "math": "FAIL",
        "safety": "FAIL",
        "retrieval": "PASS",
        "generation": "FAIL",
    }
    assert "quiz-cards: 2 test case(s); 0 passed, 0 failed, 2 undefined" in done.stdout
    assert "0.50 -" in done.stdout  # one card of two grounded
    assert "outline: 2 test case(s), 1 not passed; 3 passed, 1 failed" in done.stdout
    clean = '/ clean: score 0.00 < threshold 1 (reason: {"error": "found [\'darn\']"})'
    assert any(
        line.startswith("safety: ") and line.endswith(clean) for line in done.stderr.splitlines()
    )
    assert '(reason: {"reason": "made up"})' in done.stderr
    assert "score 0.20 < threshold 0.5" in done.stderr
    # quiz 2 + 3 judge calls, outline 2, math 2, safety 2, retrieval 2, generation 2 + 2
    assert requests == 17
