"""Avro times shown as ISO 8601 text: exactly what adding the value in its unit to the epoch gives, for any long
(beyond the years datetime can hold, the number as it was written)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from broker.schemas.avro import _LOGICAL_READERS

CASES = [
    ("long-timestamp-millis", datetime(1970, 1, 1, tzinfo=UTC), "milliseconds"),
    ("long-timestamp-micros", datetime(1970, 1, 1, tzinfo=UTC), "microseconds"),
    ("long-local-timestamp-millis", datetime(1970, 1, 1), "milliseconds"),
    ("long-local-timestamp-micros", datetime(1970, 1, 1), "microseconds"),
]


def expected(base: datetime, unit: str, value: object) -> object:
    try:
        return (base + timedelta(**{unit: value})).isoformat(timespec=unit)
    except (OverflowError, ValueError, TypeError):
        return value


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_every_long_reads_as_the_epoch_plus_that_many_units(value: int) -> None:
    for key, base, unit in CASES:
        assert _LOGICAL_READERS[key](value, None, None) == expected(base, unit, value)


def test_the_edges_and_what_is_no_long() -> None:
    for key, base, unit in CASES:
        for value in (0, -1, 1_795_000_005_000, 253_402_300_799_999, -62_135_596_800_000, 10**20, "x", None):
            assert _LOGICAL_READERS[key](value, None, None) == expected(base, unit, value), (key, value)
    assert _LOGICAL_READERS["long-timestamp-millis"](1_795_000_005_000, None, None) == "2026-11-18T11:06:45.000+00:00"
