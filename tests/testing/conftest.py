"""What the SDK's tests share: a working directory of its own for each test (the SDK
finds its project, and keeps its history, from the working directory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``tmp_path``, made the working directory; its history is its own (no OXY_DB)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OXY_DB", raising=False)
    yield tmp_path
