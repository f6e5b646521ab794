"""Merging partitions by time (broker.messages.merged): the cursor's text, the merge's order and where it
must stop. The reads themselves are tested against the real cluster (tests/integration/test_merged_messages.py)."""

from __future__ import annotations

import pytest

from broker.errors import InvalidInput
from broker.messages.log import Message
from broker.messages.merged import AFTER, BEFORE, Cursor, _merge, _Read, check_order, parse_partitions


def record(partition: int, offset: int, timestamp: int | None) -> Message:
    return Message("t", partition, offset, timestamp, "CreateTime", None, b"v", [])


def test_a_cursor_reads_back_from_its_text() -> None:
    cursor = Cursor(BEFORE, {2: 7, 0: 120, 11: 0})
    assert cursor.text == "b0:120,2:7,11:0"
    assert Cursor.parse(cursor.text) == cursor
    assert Cursor.parse("a3:9") == Cursor(AFTER, {3: 9})


@pytest.mark.parametrize("text", ["", "x0:1", "b0", "b0:1,", "b-1:3", "b0:1;1:2", "a0:99999999999999999999"])
def test_a_cursor_this_console_did_not_write_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput, match="cursor"):
        Cursor.parse(text)


def test_orders_and_partition_lists() -> None:
    assert check_order(None) == "newest"
    assert check_order("oldest") == "oldest"
    with pytest.raises(InvalidInput, match="newest or oldest"):
        check_order("sideways")
    assert parse_partitions(" 2, 0,2 ") == [0, 2]
    assert parse_partitions("") is None
    with pytest.raises(InvalidInput, match="partition numbers"):
        parse_partitions("0,two")


def test_the_newest_of_every_partition_comes_first_and_each_partition_gives_a_run_of_its_offsets() -> None:
    reads = {
        0: _Read([record(0, 10, 100), record(0, 11, 400), record(0, 12, 500)], True, True),
        1: _Read([record(1, 3, 200), record(1, 4, 450)], True, True),
        # Timestamps that go back: the merge still takes partition 2's rows in offset order.
        2: _Read([record(2, 0, 300), record(2, 1, 50)], True, True),
    }
    newest = _merge(reads, BEFORE, 10)
    assert [(m.partition, m.offset) for m in newest] == [(0, 12), (1, 4), (0, 11), (1, 3), (0, 10), (2, 1), (2, 0)]
    oldest = _merge(reads, AFTER, 4)
    assert [(m.partition, m.offset) for m in oldest] == [(0, 10), (1, 3), (2, 0), (2, 1)]


def test_equal_times_and_missing_times_have_a_fixed_order() -> None:
    reads = {p: _Read([record(p, 0, 100), record(p, 1, None)], True, True) for p in (0, 1)}
    assert [(m.partition, m.offset) for m in _merge(reads, AFTER, 4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [(m.partition, m.offset) for m in _merge(reads, BEFORE, 4)] == [(0, 1), (0, 0), (1, 1), (1, 0)]


def test_the_merge_stops_where_a_partition_ran_out_before_its_end() -> None:
    """Partition 1's read was cut short (a time-out): what it holds below its rows is unknown, so the page ends
    there rather than show partition 0's older rows ahead of partition 1's newer ones."""
    reads = {
        0: _Read([record(0, i, 10 * i) for i in range(10)], False, True),
        1: _Read([record(1, 5, 85)], False, False),
    }
    taken = _merge(reads, BEFORE, 10)
    assert [(m.partition, m.offset) for m in taken] == [(0, 9), (1, 5)]
