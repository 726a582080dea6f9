"""A suite's history: opened in the background, handed out once, closed at the end."""

from __future__ import annotations

import asyncio

from oxyeval.project.config import load_project
from oxyeval.store import open_store
from oxyeval.suites.history_store import History

from ..conftest import MakeProject


def test_history_opens_in_the_background_and_closes(make_project: MakeProject) -> None:
    project = load_project(make_project())

    async def go() -> None:
        history = History.for_project(project)
        history.start()  # begins opening while the caller goes on
        first, second = await asyncio.gather(history.store(), history.store())
        assert first is second is not None  # one store for everyone who asks
        await history.aclose()

    asyncio.run(go())
    with open_store(project.root / ".oxy" / "oxyeval.db", read_only=True) as store:
        assert store.runs.list() == []  # a valid, empty history


def test_disabled_history_opens_nothing(make_project: MakeProject) -> None:
    project = load_project(make_project())

    async def go() -> None:
        history = History.for_project(project, enabled=False)
        history.start()
        assert not history.enabled and await history.store() is None
        await history.aclose()

    asyncio.run(go())
    assert not (project.root / ".oxy").exists()
