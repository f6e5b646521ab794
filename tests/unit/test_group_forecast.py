"""The group forecast from lag samples: rates in and out, catch-up time, retention risk; no cluster."""

from __future__ import annotations

import pytest

from broker.groups.forecast import Point, forecast


def test_catch_up_is_the_lag_over_the_gain() -> None:
    # 10 s: partition 0 written 200 and read 700; partition 1 written 100 and read 400.
    history = {
        ("t", 0): [Point(0, 1000, 3000), Point(5_000, 1300, 3100), Point(10_000, 1700, 3200)],
        ("t", 1): [Point(0, 0, 900), Point(10_000, 400, 1000)],
    }
    got = forecast(history, {}, {})
    assert got is not None
    assert got.rate_in == pytest.approx(30.0)
    assert got.rate_out == pytest.approx(110.0)
    assert got.lag == (3200 - 1700) + (1000 - 400)
    assert got.catch_up_s == pytest.approx(2100 / 80)
    assert got.over_s == 10
    assert got.as_dict()["catch_up_s"] == 26.2


def test_a_group_that_does_not_gain_never_catches_up_and_one_caught_up_is_done() -> None:
    falling = forecast({("t", 0): [Point(0, 0, 100), Point(4_000, 40, 300)]}, {}, {})
    assert falling is not None
    assert falling.catch_up_s is None
    done = forecast({("t", 0): [Point(0, 0, 100), Point(4_000, 300, 300)]}, {}, {})
    assert done is not None
    assert (done.lag, done.catch_up_s) == (0, 0.0)


def test_too_little_history_gives_no_forecast() -> None:
    assert forecast({("t", 0): [Point(0, 0, 100)]}, {}, {}) is None
    assert forecast({("t", 0): [Point(0, 0, 100), Point(500, 10, 100)]}, {}, {}) is None
    assert forecast({}, {}, {}) is None


def test_retention_risk_names_the_partition_whose_oldest_unread_record_goes_first() -> None:
    history = {
        ("orders", 0): [Point(0, 0, 10_000), Point(10_000, 100, 10_000)],  # 10/s out: 9,900 left, 990 s
        ("orders", 1): [Point(0, 0, 50), Point(10_000, 50, 60)],  # caught up but for 10 records: 1/s in, 5/s out
        ("audit", 0): [Point(0, 0, 500), Point(10_000, 0, 600)],  # not read at all
    }
    ages = {("orders", 0): 3_000_000, ("orders", 1): 1_000, ("audit", 0): 86_000_000}
    retention = {"orders": 3_600_000, "audit": 86_400_000}
    got = forecast(history, ages, retention)
    assert got is not None
    risk = got.retention_risk
    assert risk is not None
    # audit-0 is deleted in 400 s and never read; orders-0 in 600 s but read in 990 s: audit-0 goes first.
    assert (risk.topic, risk.partition, risk.deleted_in_s, risk.catch_up_s) == ("audit", 0, 400.0, None)
    safe = forecast(history, ages, {"orders": 7_200_000, "audit": -1})  # audit kept for ever
    assert safe is not None
    assert safe.retention_risk is None  # orders-0 read in 990 s, deleted in 4,200 s
