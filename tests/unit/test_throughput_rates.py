"""Rates from two looks at the end offsets and replica sizes (broker.topics.throughput.rates)."""

from __future__ import annotations

import pytest

from broker.topics.throughput import Look, rates


def test_messages_and_bytes_per_topic_per_broker_and_in_all() -> None:
    before = Look(
        1_000_000,
        ends={("a", 0): 100, ("a", 1): 50, ("b", 0): 7},
        leaders={("a", 0): 1, ("a", 1): 2, ("b", 0): 1},
        sizes={("a", 0): 10_000, ("a", 1): 5_000, ("b", 0): 700},
    )
    after = Look(
        1_010_000,  # ten seconds later
        ends={("a", 0): 300, ("a", 1): 150, ("b", 0): 7, ("c", 0): 99},  # c is new: left out
        leaders={("a", 0): 1, ("a", 1): 2, ("b", 0): 1, ("c", 0): 3},
        sizes={("a", 0): 30_000, ("a", 1): 15_000, ("b", 0): 700, ("c", 0): 9_900},
        disk={1: 91_400, 2: 45_000, 3: 29_700, 4: 12},  # every replica; broker 4 leads nothing
    )
    measured = rates(before, after)
    assert measured is not None
    assert measured.seconds == 10
    assert (measured.topics["a"].messages_per_s, measured.topics["a"].bytes_per_s) == (30, 3_000)
    assert (measured.topics["b"].messages_per_s, measured.topics["b"].bytes_per_s) == (0, 0)
    assert "c" not in measured.topics
    assert (measured.brokers[1].messages_per_s, measured.brokers[1].bytes_per_s) == (20, 2_000)
    assert (measured.brokers[2].messages_per_s, measured.brokers[2].bytes_per_s) == (10, 1_000)
    assert (measured.total.messages_per_s, measured.total.bytes_per_s) == (30, 3_000)
    assert {b: r.disk_bytes for b, r in measured.brokers.items()} == {1: 91_400, 2: 45_000, 3: 29_700, 4: 12}
    assert (measured.brokers[4].messages_per_s, measured.brokers[4].bytes_per_s) == (0, 0)


def test_bytes_are_not_known_where_a_replica_shrank_or_a_leader_moved() -> None:
    before = Look(
        0, ends={("a", 0): 0, ("a", 1): 0}, leaders={("a", 0): 1, ("a", 1): 2}, sizes={("a", 0): 900, ("a", 1): 0}
    )
    after = Look(
        2_000,
        ends={("a", 0): 40, ("a", 1): 10},
        leaders={("a", 0): 1, ("a", 1): 3},  # partition 1 has a new leader
        sizes={("a", 0): 100, ("a", 1): 500},  # partition 0's oldest segment was deleted
    )
    measured = rates(before, after)
    assert measured is not None
    assert measured.topics["a"].messages_per_s == 25
    assert measured.topics["a"].bytes_per_s is None
    assert measured.brokers[1].bytes_per_s is None
    assert measured.brokers[3].messages_per_s == 5
    assert measured.total.bytes_per_s is None


@pytest.mark.parametrize("gap_ms", [0, -1000])
def test_looks_out_of_order_give_no_rates(gap_ms: int) -> None:
    look = Look(5_000, ends={("a", 0): 1}, leaders={("a", 0): 1})
    assert rates(look, Look(5_000 + gap_ms, ends={("a", 0): 2}, leaders={("a", 0): 1})) is None


def test_a_topic_made_again_is_left_out_for_that_interval() -> None:
    before = Look(0, ends={("a", 0): 500}, leaders={("a", 0): 1})
    after = Look(1_000, ends={("a", 0): 20}, leaders={("a", 0): 1})
    measured = rates(before, after)
    assert measured is not None
    assert measured.topics == {}
    assert measured.total.messages_per_s == 0
