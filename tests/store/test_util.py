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
