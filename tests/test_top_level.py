"""What README's Python API section writes after a bare ``import oxyeval`` works: the
top-level names, and every stage package by attribute, each imported only when named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CODE = """
import sys
import oxyeval
assert not [m for m in sys.modules if m.startswith("oxyeval.")], "a bare import loads stages"
from oxyeval.suites.cases.run import run_cases
assert oxyeval.run_cases is run_cases and oxyeval.suites.run_cases is run_cases
assert callable(oxyeval.store.case_id) and callable(oxyeval.workflow.ask_agent)
assert callable(oxyeval.report.load_saved_run) and callable(oxyeval.evaluation.check_drop)
assert oxyeval.CaseRun.__name__ == "CaseRun"
try:
    oxyeval.nope
except AttributeError as exc:
    assert "no attribute 'nope'" in str(exc)
else:
    raise AssertionError("oxyeval.nope resolved")
print("ok")
"""


def test_stage_packages_and_documented_names_resolve_from_a_bare_import() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
