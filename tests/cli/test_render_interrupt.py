"""The first SIGTERM stops a template rendering in progress.

A rendering runs on the event loop's thread and never awaits, so the cancellation the
signal handler schedules could only run once it ended: a long loop in a formatter held
the first SIGTERM (and after a second one the run was not stored). The handler now also
raises the stop flag the sandbox checks between batches of loop iterations: the command
unwinds at once, keeps what finished, stores the run and reports it, exit 3.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from oxyeval.store import open_store

from ..conftest import MakeProject
from .test_interrupts import start

# Four million iterations that each read loop.index: seconds of work (within every
# limit), long after the signal.
SLOW = (
    "{% set l = range(2000) | list %}"
    "{% for i in l %}{% for j in l %}{% if loop.index < 0 %}x{% endif %}{% endfor %}{% endfor %}"
)

WORKFLOW = f"""\
tasks:
  - {{name: intro, type: formatter, template: "hello", export: {{format: txt, path: ready.txt}}}}
  - {{name: slow, type: formatter, template: "{{{{ intro }}}} {SLOW}"}}
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_during_a_long_rendering_stops_it_and_stores_the_run(
    make_project: MakeProject, sig: signal.Signals
) -> None:
    root = make_project(files={"w.workflow.yml": WORKFLOW})
    out, err = _signal_when_ready(root, sig, settle=0.3)  # well inside the rendering
    doc = json.loads(out)  # one JSON document, nothing else on stdout
    assert doc["status"] == "interrupted" and doc["summary"]["exitCode"] == 3
    tasks = {t["name"]: t for t in doc["tasks"]}
    assert tasks["intro"]["status"] == "succeeded" and tasks["intro"]["output"] == "hello"
    assert tasks["slow"]["status"] == "interrupted"
    assert f"interrupted ({sig.name}): 1 task(s) had finished, 1 interrupted" in err
    assert "Traceback" not in err
    with open_store(root / ".oxy" / "oxyeval.db") as store:
        (run,) = store.runs.list(5)
    assert run.kind == "workflow" and run.status == "interrupted"
    assert (run.done, run.total) == (1, 2)


# Long single calls and no loop iterations to count between them: a hundred wordwraps
# of a million-character word at width 1, each a fraction of a second now (seconds to
# minutes before, quadratic), so the signal arrives inside one (attack F6).
LONG_CALLS = "{% for i in range(100) %}{{ ('a' * 1000000) | wordwrap(1) | length }}{% endfor %}"


def test_sigterm_during_long_single_calls_ends_the_process_promptly(
    make_project: MakeProject,
) -> None:
    workflow = WORKFLOW.replace(SLOW, LONG_CALLS)
    root = make_project(files={"w.workflow.yml": workflow})
    out, _err = _signal_when_ready(root, signal.SIGTERM, settle=0.5)  # inside a wordwrap
    doc = json.loads(out)
    assert doc["status"] == "interrupted"
    assert {t["name"]: t["status"] for t in doc["tasks"]} == {
        "intro": "succeeded",
        "slow": "interrupted",
    }


def _signal_when_ready(root: Path, sig: signal.Signals, settle: float) -> tuple[str, str]:
    """Start ``oxy run``, send ``sig`` ``settle`` seconds after the first task exported its
    file (the slow one is then running), and return its output; the process must end
    within 3 s of the signal, not when the work it was doing would have ended."""
    proc = start(["run", "w.workflow.yml", "--format", "json"], root)
    deadline = time.monotonic() + 30
    while not (root / "ready.txt").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate(timeout=5)
            pytest.fail(f"never got ready (exit {proc.returncode}):\n{out}\n{err}")
        time.sleep(0.02)
    time.sleep(settle)
    proc.send_signal(sig)
    signalled = time.monotonic()
    try:
        out, err = proc.communicate(timeout=20)
    except Exception:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{sig.name} did not stop the work:\n{out}\n{err}")
    assert time.monotonic() - signalled < 3, err
    assert proc.returncode == 3, err
    return out, err
