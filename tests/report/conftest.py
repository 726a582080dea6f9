"""Fixtures of the report tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .shared_project import run_commands


@pytest.fixture(scope="session")
def documents_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the project :func:`outputs` runs on (its JUnit files are there)."""
    return tmp_path_factory.mktemp("documents")


@pytest.fixture(scope="session")
def outputs(documents_root: Path) -> dict[str, Any]:
    """Every command of :data:`~.shared_project.COMMANDS` run once, on one project:
    name -> (exit code, the parsed document)."""
    return run_commands(documents_root)
