"""SQLAlchemy is imported only when the full store is opened: ``oxy --help`` and ``oxy test
--no-history`` (which never touch the history) must not pay for it, and after a project's
first run ``oxy test`` and ``oxy run`` (their results and their cache: one store per run)
use the lean sqlite3 store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

# Runs the real CLI entry point in a fresh interpreter, then reports which heavy modules
# ended up imported (whatever the exit code).
_PROBE = """
import atexit, json, sys
def report():
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"sqlalchemy", "alembic", "psycopg"})
    sys.__stderr__.write("\\nLOADED=" + json.dumps(heavy) + "\\n")
atexit.register(report)
sys.argv = ["oxy", *sys.argv[1:]]
from oxyeval.cli._app import main
main()
"""


def _loaded(*args: str, cwd: Path) -> tuple[int, list[str]]:
    code, loaded, _out = _probe(*args, cwd=cwd)
    return code, loaded


def _probe(*args: str, cwd: Path) -> tuple[int, list[str], str]:
    """Exit code, heavy modules imported, and stdout of one ``oxy`` process."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OXY_DB", None)
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = next(x for x in proc.stderr.splitlines() if x.startswith("LOADED="))
    return proc.returncode, json.loads(line.removeprefix("LOADED=")), proc.stdout


def test_help_and_import_do_not_load_the_store_stack(tmp_path: Path) -> None:
    code, loaded = _loaded("--help", cwd=tmp_path)
    assert code == 0 and loaded == []
    code, loaded = _loaded("cases", "--help", cwd=tmp_path)
    assert code == 0 and loaded == []


def test_oxy_test_without_history_does_not_load_the_store_stack(tmp_path: Path) -> None:
    project = tmp_path / "examples"
    shutil.copytree(EXAMPLES, project, ignore=shutil.ignore_patterns("output", ".oxy"))
    agent = str(project / "agents" / "users.agent.yml")
    code, loaded = _loaded("test", agent, "--format", "json", "--no-history", cwd=project)
    assert code == 0 and loaded == []
    assert not (project / ".oxy").exists()
    code, loaded = _loaded("test", agent, "--format", "json", cwd=project)
    assert code == 0 and loaded == []  # the first run creates the history from the snapshot
    assert (project / ".oxy" / "oxyeval.db").is_file()
    # Later runs too store their results with the lean sqlite3 writer.
    code, loaded = _loaded("test", agent, "--format", "json", "--no-cache", cwd=project)
    assert code == 0 and loaded == []


def test_a_plain_oxy_test_keeps_results_and_verdicts_without_sqlalchemy(tmp_path: Path) -> None:
    """Judge verdicts are cached by default: after the first run, the cache and the results
    share one lean store, and --cache replays answers from it the same way."""
    project = tmp_path / "examples"
    shutil.copytree(EXAMPLES, project, ignore=shutil.ignore_patterns("output", ".oxy"))
    agent = str(project / "agents" / "users.agent.yml")
    code, loaded, out = _probe("test", agent, "--format", "json", "--cache", cwd=project)
    assert code == 0 and loaded == []  # the first run creates the history from the snapshot
    first = json.loads(out)
    verdicts = first["judgeCalls"]
    answers = sum(t["n"] for t in first["tests"])
    assert verdicts > 0 and first["summary"]["cachedCalls"] == 0
    replayed = []
    for flags in ((), ("--cache",)):
        code, loaded, out = _probe("test", agent, "--format", "json", *flags, cwd=project)
        assert (code, loaded) == (0, []), flags
        doc = json.loads(out)
        assert doc["judgeCalls"] == 0, flags  # every verdict came from the cache
        replayed.append(doc["summary"]["cachedCalls"])
    assert replayed == [verdicts, verdicts + answers]  # --cache: the answers too
    from oxyeval.store import open_store

    with open_store(project / ".oxy" / "oxyeval.db", read_only=True) as store:
        stats = store.cache.stats()
        runs = store.runs.list(kind="consistency")
    assert [r.status for r in runs] == ["completed"] * 3  # every run stored
    assert stats.kind("verdict").hits > 0 and stats.kind("answer").hits > 0  # replays counted


def test_a_read_on_a_new_project_does_not_need_it_either(tmp_path: Path) -> None:
    project = tmp_path / "examples"
    shutil.copytree(EXAMPLES, project, ignore=shutil.ignore_patterns("output", ".oxy"))
    code, loaded = _loaded("history", cwd=project)
    assert code == 0 and loaded == []  # no history yet: nothing to open
    code, loaded = _loaded("cases", "run", "prompts/sentiment.prompt.yml", "-q", cwd=project)
    assert code == 1 and "sqlalchemy" in loaded  # a run does open it


def test_oxy_run_stores_its_runs_without_sqlalchemy(
    tmp_path: Path,
) -> None:
    project = tmp_path / "examples"
    shutil.copytree(EXAMPLES, project, ignore=shutil.ignore_patterns("output", ".oxy"))
    workflow = str(project / "workflows" / "monthly_report.workflow.yml")
    for _ in range(2):  # the first run creates the history from the snapshot
        code, loaded = _loaded("run", workflow, "-q", cwd=project)
        assert code == 0 and loaded == []
    from oxyeval.store import open_store

    with open_store(project / ".oxy" / "oxyeval.db", read_only=True) as store:
        stored = store.workflows.history("workflows/monthly_report.workflow.yml")
    assert [r.run.status for r in stored] == ["completed", "completed"]  # both runs kept
