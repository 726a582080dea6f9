"""Prompts and their content-addressed versions, on SQLite and PostgreSQL."""

from __future__ import annotations

from oxyeval.store import Store


def test_prompt_versions_follow_content(store: Store) -> None:
    store.prompts.upsert("p1", "Sentiment", "prompts/s.yml")
    assert store.prompts.ensure_version("p1", {"system": "be brief", "model": "m"}) == 1
    # Same content with keys in another order is the same version.
    assert store.prompts.ensure_version("p1", {"model": "m", "system": "be brief"}) == 1
    assert store.prompts.ensure_version("p1", {"system": "be verbose", "model": "m"}) == 2
    assert store.prompts.ensure_version("p1", {"system": "be brief", "model": "m"}) == 1
    assert store.prompts.latest_version("p1") == 2
    assert store.prompts.get_version("p1", 1) == {"system": "be brief", "model": "m"}
    assert store.prompts.get_version("p1", 3) is None
    assert [v.version for v in store.prompts.versions("p1")] == [1, 2]
    assert store.prompts.find_version("p1", {"model": "m", "system": "be verbose"}) == 2
    assert store.prompts.find_version("p1", {"model": "other"}) is None
    assert store.prompts.latest_version("unknown") is None
    assert store.prompts.ensure_version("p2", {"system": "be brief", "model": "m"}) == 1
    store.prompts.upsert("p1", "Sentiment v2", "prompts/s2.yml")
    got = store.prompts.get("p1")
    assert got is not None and (got.name, got.source) == ("Sentiment v2", "prompts/s2.yml")
    assert [p.id for p in store.prompts.list()] == ["p1", "p2"]


def test_version_content_keeps_unicode_and_dates(store: Store) -> None:
    from datetime import date

    content = {"template": "Grüße {{ x }} ✓", "when": date(2026, 1, 2)}
    v = store.prompts.ensure_version("p", content)
    assert store.prompts.get_version("p", v) == {
        "template": "Grüße {{ x }} ✓",
        "when": "2026-01-02",
    }
    assert store.prompts.ensure_version("p", content) == v
