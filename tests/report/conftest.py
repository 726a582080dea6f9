"""Fixtures of the report tests."""

from __future__ import annotations

from typing import Any

import pytest

from .shared_project import run_commands


@pytest.fixture(scope="session")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every command of :data:`~.shared_project.COMMANDS` run once, on one project:
    name -> (exit code, the parsed document); ``root``: the project's folder."""
    return run_commands(tmp_path_factory.mktemp("documents"))
