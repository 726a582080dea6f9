"""``oxyeval.testing`` is a stage like the others: named at the root, imported lazily."""

from __future__ import annotations

import subprocess
import sys

import oxyeval
from tests.test_architecture import ORDER


def test_the_root_names_every_stage() -> None:
    assert set(ORDER) == oxyeval._STAGES
    assert oxyeval.testing.LLMTestCase.__module__ == "oxyeval.testing._cases"


def test_importing_the_sdk_loads_no_module_behind_it() -> None:
    code = (
        "import sys, oxyeval.testing\n"
        "print(sorted(m for m in sys.modules if m.startswith('oxyeval.testing.') "
        "or m in ('httpx', 'jsonschema', 'rich')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
