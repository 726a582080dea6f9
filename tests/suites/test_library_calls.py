"""What the command line used to do itself, callable from Python once (for a server and
the SDK): variables from files and pairs, opening a project's history, clearing its
cache, asking an agent with the run's one cache flag."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from oxyeval.errors import ConfigError
from oxyeval.project import parse_variables
from oxyeval.store import LocationError
from oxyeval.suites import ask, clear_cache, open_history
from oxyeval.suites.run_cache import cache_cutoff

from ..conftest import MakeProject


def test_variables_from_files_then_pairs_later_ones_winning(tmp_path: Path) -> None:
    first = tmp_path / "a.yml"
    first.write_text("month: 2026-01\nregion: north\n", encoding="utf-8")
    second = tmp_path / "b.yml"
    second.write_text("region: south\n", encoding="utf-8")
    values = parse_variables(["month=2026-03", "note=a=b"], [str(first), str(second)])
    assert values == {"month": "2026-03", "region": "south", "note": "a=b"}
    with pytest.raises(ConfigError, match="expected NAME=VALUE"):
        parse_variables(["novalue"])
    (tmp_path / "list.yml").write_text("- 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="expected a mapping"):
        parse_variables(files=[str(tmp_path / "list.yml")])


def test_the_cache_cutoff_is_an_age_in_days() -> None:
    from datetime import datetime, timezone

    now = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)
    assert cache_cutoff(1.5, now) == "2026-11-25T00:00:00.000Z"
    assert cache_cutoff(None) is None
    with pytest.raises(ValueError):
        cache_cutoff(float("nan"))


def test_asking_clearing_and_reading_the_history_from_python(make_project: MakeProject) -> None:
    root = make_project(files={"a.agent.yml": "model: agent_model\nsystem_instructions: x\n"})
    project = str(root)
    assert clear_cache(project) == (open_history(project)[1], 0)
    assert not (root / ".oxy").exists()  # nothing to clear: no history made
    first = asyncio.run(ask(root / "a.agent.yml", "total?", project_dir=project, cache=True))
    again = asyncio.run(ask(root / "a.agent.yml", "total?", project_dir=project, cache=True))
    assert first.output == again.output == "The total is 42."
    assert (first.cached_calls, again.cached_calls) == (0, 1)
    _project, location, store = open_history(project)
    assert store is not None and location.path == root / ".oxy" / "oxyeval.db"
    with store:
        assert store.cache.stats().kind("answer").entries == 1
    assert clear_cache(project, kind="answer")[1] == 1
    with pytest.raises(LocationError, match="does not exist"):
        open_history(project, root / "typo.db")
