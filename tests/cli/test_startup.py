"""`oxy --help` starts fast: the modules a command needs are imported by that command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("asyncio", "httpx", "sqlalchemy", "jinja2", "jsonschema", "duckdb", "yaml", "networkx")
_PROBE = (
    "import sys, json\n"
    "from oxyeval.cli import main\n"
    "try:\n"
    "    main(['--help'])\n"
    "except SystemExit:\n"
    "    pass\n"
    f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)), file=sys.stderr)\n"
)


def test_help_imports_no_heavy_module(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == []
