"""The offsets topic read as commits (broker.groups.commit_log) and Burrow's rules judged over them
(broker.groups.lag_status with ``commits=True``)."""

from __future__ import annotations

import struct

import pytest

from broker.groups.commit_log import Commit, Forget, Rings, parse
from broker.groups.lag_status import Observation, PartitionVerdict, Rules, evaluate_group, evaluate_partition


def string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def compact(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw) + 1]) + raw


def key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    return struct.pack(">h", version) + string(group) + string(topic) + struct.pack(">i", partition)


@pytest.mark.parametrize(
    "value",
    [
        struct.pack(">hq", 0, 42) + string("m") + struct.pack(">q", 1_700_000_000_123),
        struct.pack(">hq", 1, 42) + string("") + struct.pack(">qq", 1_700_000_000_123, 1_700_000_999_000),
        struct.pack(">hq", 2, 42) + string("meta") + struct.pack(">q", 1_700_000_000_123),
        struct.pack(">hqi", 3, 42, 7) + string("") + struct.pack(">q", 1_700_000_000_123),
        struct.pack(">hqi", 4, 42, 7) + compact("x") + struct.pack(">q", 1_700_000_000_123) + b"\x00",
    ],
    ids=["v0", "v1", "v2", "v3", "v4-flexible"],
)
def test_every_layout_of_an_offset_commit_reads_as_the_same_commit(value: bytes) -> None:
    assert parse(key("g", "orders", 3), value) == Commit("g", "orders", 3, 42, 1_700_000_000_123)


def test_a_tombstone_forgets_and_other_records_are_not_commits() -> None:
    assert parse(key("g", "orders", 3, version=0), None) == Forget("g", "orders", 3)
    group_metadata = struct.pack(">h", 2) + string("g")
    assert parse(group_metadata, b"\x00\x03anything") is None
    assert parse(struct.pack(">h", 5) + b"whatever", b"x") is None  # KIP-848 records
    assert parse(key("g", "t", 0), struct.pack(">hq", 9, 1)) is None  # a layout from the future
    assert parse(key("g", "t", 0), struct.pack(">hq", 0, 1)) is None  # cut short
    assert parse(b"\x00", b"") is None
    assert parse(None, b"x") is None


def test_rings_keep_the_last_commits_merge_close_ones_and_drop_late_ones() -> None:
    rings = Rings(window=3, min_distance_ms=1000)
    k = ("g", "t", 0)
    assert not rings.add(Commit("g", "t", 0, 5, 1_000), None)  # no log end known: its lag would be a guess
    assert rings.add(Commit("g", "t", 0, 5, 1_000), 9)
    assert rings.add(Commit("g", "t", 0, 6, 1_500), 9)  # within a second: replaces the last
    assert rings.get(k) == [Observation(1_500, 6, 9)]
    assert not rings.add(Commit("g", "t", 0, 7, 1_400), 9)  # older than the newest: dropped
    for i, at in enumerate((3_000, 5_000, 7_000)):
        rings.add(Commit("g", "t", 0, 10 + i, at), 11)
    assert rings.get(k) == [Observation(3_000, 10, 11), Observation(5_000, 11, 11), Observation(7_000, 12, 12)]
    assert rings.get(k)[-1].lag == 0  # a commit past the log end known then is caught up, never negative
    assert rings.forget(k)
    assert rings.get(k) == []
    assert not rings.forget(k)


def ring(*commits: tuple[int, int, int]) -> list[Observation]:
    return [Observation(at, committed, end) for at, committed, end in commits]


RULES = Rules(window=5)


def judge(history: list[Observation], now: int, end: int | None = None) -> PartitionVerdict:
    return evaluate_partition("t", 0, history, now, end, RULES, commits=True)


def test_stop_is_decided_when_the_time_since_the_last_commit_passes_the_span_of_the_window() -> None:
    # Five commits a second apart (span 4 s), moving and behind; then nothing more.
    history = ring(*((1_000 * i, 100 + i, 110 + i) for i in range(5)))
    assert judge(history, now=4_000 + 4_000, end=120).status == "OK"  # 4 s without a commit: not more than the span
    stopped = judge(history, now=4_000 + 4_001, end=120)
    assert stopped.status == "STOP"
    assert "no commit for 4 s" in stopped.reason
    assert "16 messages wait" in stopped.reason
    assert judge(history, now=9_000, end=104).status == "OK"  # caught up: never in trouble
    # A log end read lately at or below the last commit (Burrow's broker offsets): caught up lately, not STOP.
    lately = evaluate_partition("t", 0, history, 8_001, 120, RULES, commits=True, recent_ends=[103, 104, 120])
    assert lately.status == "OK"


def test_a_group_that_commits_the_same_offset_again_is_stall_not_stop_whatever_its_members() -> None:
    history = ring(*((1_000 * i, 50, 60 + i) for i in range(5)))
    assert judge(history, now=4_500, end=70).status == "STALL"
    # Samples could not tell this from a consumer gone; over samples only membership decided.
    assert evaluate_partition("t", 0, history, 4_500, 70, RULES).status == "STOP"


def test_falling_behind_rewound_and_keeping_one_behind_over_commits() -> None:
    behind = ring(*((1_000 * i, 100 + i, 105 + 3 * i) for i in range(5)))
    assert judge(behind, now=4_500).status == "WARN"
    one_behind = ring(*((1_000 * i, 100 + i, 101 + i) for i in range(5)))
    assert judge(one_behind, now=4_500).status == "OK"  # lag 1 at every commit keeps up
    rewound = ring((0, 100, 200), (1_000, 101, 200), (2_000, 40, 200), (3_000, 41, 200), (4_000, 42, 200))
    assert judge(rewound, now=4_500).status == "REWIND"
    # Every commit counts: the same offset committed twice between moves is no reason for OK.
    repeated = ring((0, 100, 110), (1_000, 100, 111), (2_000, 101, 113), (3_000, 101, 114), (4_000, 102, 116))
    assert judge(repeated, now=4_500).status == "WARN"


def test_commits_are_judged_no_later_than_the_moment_the_reader_had_read_to() -> None:
    history = ring(*((1_000 * i, 100 + i, 110 + i) for i in range(5)))
    parts = {("t", 0): history}
    late = evaluate_group(parts, 20_000, {("t", 0): 120}, RULES, from_commits={("t", 0)}, commits_read_to_ms=6_000)
    assert late.partitions[0].status == "OK"  # a commit after 6 s may be on its way: not STOP yet
    read = evaluate_group(parts, 20_000, {("t", 0): 120}, RULES, from_commits={("t", 0)}, commits_read_to_ms=19_000)
    assert read.partitions[0].status == "STOP"
