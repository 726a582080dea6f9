"""The store's own value helpers: what every row's timestamps and texts become."""

from __future__ import annotations

import pytest

from oxyeval.store._util import utc_timestamp, valid_params


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("2026-11-27T10:00:00.123Z", "2026-11-27T10:00:00.123Z"),  # the stored form: kept
        ("2026-11-27T10:00:00Z", "2026-11-27T10:00:00.000Z"),
        ("2026-11-27T10:00:00.123456+01:00", "2026-11-27T09:00:00.123Z"),
        (" 2026-11-27T10:00:00.123Z ", "2026-11-27T10:00:00.123Z"),
        ("2026-11-27T10:00:00.123z", "2026-11-27T10:00:00.123Z"),
    ],
)
def test_timestamps_are_stored_in_one_form(given: str, stored: str) -> None:
    assert utc_timestamp(given) == stored
    assert utc_timestamp(stored) == stored


def test_a_surrogate_anywhere_in_a_batch_is_made_valid() -> None:
    clean = [{"a": "x", "b": 1, "c": [("é", None, 2.5, b"raw")]}] * 3
    assert valid_params(clean) is clean  # nothing to fix: nothing copied
    bad = [*clean, {"a": "ok", "c": [("é\ud800",)]}]
    fixed = valid_params(bad)
    assert fixed[-1]["c"][0][0] == "é\ufffd" and fixed[0] == clean[0]
    assert valid_params("\udc00") == "\ufffd"


def test_a_batch_s_ids_are_unique_uuid7s_in_ascending_order_of_time() -> None:
    import time
    import uuid

    from oxyeval.store import new_ids

    before = time.time_ns() // 1_000_000
    first = new_ids(2_000)
    second = new_ids(2_000)
    after = time.time_ns() // 1_000_000
    assert first == sorted(first) and second == sorted(second)
    assert len(set(first) | set(second)) == 4_000
    for made in (first[0], first[-1], second[0]):
        parsed = uuid.UUID(made)
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
        assert made == parsed.hex  # 32 hex digits, as every stored id
        assert before <= int(made[:12], 16) <= after  # the time in milliseconds first
    assert first[-1][:12] <= second[0][:12]  # a later batch sorts after in time
    assert new_ids(0) == []
