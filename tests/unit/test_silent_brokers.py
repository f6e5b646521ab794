"""A broker that did not answer is left out of reads for a while, but asked again once every time-out: one answer
ends its silence at once (broker.client.connection.ClusterConnection.is_silent / note_answered)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import kafka.errors
import pytest
from kafka import TopicPartition

from broker.client.config import ClusterConfig
from broker.client.connection import PROBE_WINDOW, SILENT_ROUNDS, ClusterConnection
from broker.topics.read import partition_offsets


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    return now


def test_a_silent_broker_is_asked_again_once_every_time_out(clock: list[float]) -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",), timeout=2.5))
    conn.mark_silent(1)
    assert conn.is_silent(1)
    assert not conn.is_silent(2)
    assert conn.silent_brokers() == {1}
    seen = []
    for step in range(int(2.5 * SILENT_ROUNDS / 0.05) + 2):
        clock[0] = 1000.0 + step * 0.05
        seen.append((round(step * 0.05, 2), conn.is_silent(1)))
    asked = [t for t, silent in seen if not silent]
    # Left out for the first time-out, then asked for PROBE_WINDOW seconds once every time-out, then no longer silent.
    assert asked[0] == 2.5
    assert all(t >= 2.5 for t in asked)
    windows = sorted({int(t // 2.5) for t in asked if t < 2.5 * SILENT_ROUNDS})
    assert windows == list(range(1, SILENT_ROUNDS))
    assert all((t % 2.5) < PROBE_WINDOW + 1e-9 for t in asked if t < 2.5 * SILENT_ROUNDS)
    assert not conn.is_silent(1)  # past SILENT_ROUNDS time-outs


def test_an_answer_ends_the_silence_and_another_time_out_starts_it_again(clock: list[float]) -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",), timeout=2.5))
    conn.mark_silent(1)
    conn.mark_silent(2)
    clock[0] += 2.5  # the first probe window
    conn.note_answered([1])
    clock[0] += 1.0
    assert not conn.is_silent(1)
    assert conn.is_silent(2)
    assert conn.silent_brokers() == {2}
    conn.mark_silent(1)  # the probe of a broker that still does not answer: silent again from now
    clock[0] += 1.0
    assert conn.is_silent(1)


class OffsetsAdmin:
    """Answers ListOffsets like a cluster whose broker 1 leads partition 0 and broker 2 partition 1; a broker
    in ``frozen`` times out. Records which partitions each request named."""

    def __init__(self, frozen: set[int]) -> None:
        self.frozen = frozen
        self.asked: list[list[int]] = []

    def list_partition_offsets(self, specs: dict[Any, Any], isolation_level: Any = None) -> dict[Any, Any]:
        self.asked.append(sorted(tp.partition for tp in specs))
        if any(LEADERS[tp] in self.frozen for tp in specs):
            raise kafka.errors.KafkaTimeoutError("no answer")
        return {tp: SimpleNamespace(offset=10 + tp.partition) for tp in specs}


LEADERS = {TopicPartition("t", 0): 1, TopicPartition("t", 1): 2}


def test_a_read_of_one_partition_asks_its_leader_even_when_another_caller_found_it_silent(clock: list[float]) -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",), timeout=2.5))
    conn.mark_silent(1)  # another caller's request timed out a moment ago (overload, a pause)
    one = [TopicPartition("t", 0)]

    admin = OffsetsAdmin(frozen=set())
    assert partition_offsets(admin, conn, one, "earliest", LEADERS) == {}  # a listing leaves it out
    assert admin.asked == []
    assert partition_offsets(admin, conn, one, "earliest", LEADERS, insist=True) == {one[0]: 10}
    assert admin.asked == [[0]]
    assert not conn.is_silent(1)  # it answered: the listings ask it again too


def test_an_insisted_read_asks_a_frozen_leader_once_and_marks_it_silent(clock: list[float]) -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",), timeout=2.5))
    admin = OffsetsAdmin(frozen={1})
    one = [TopicPartition("t", 0)]
    assert partition_offsets(admin, conn, one, "earliest", LEADERS, insist=True) == {}
    assert admin.asked == [[0]]  # not a second time alone: that would double the wait for the same silence
    assert conn.is_silent(1)
    # Without insisting, a time-out over two leaders is followed by one request per leader, to find the silent one.
    both = list(LEADERS)
    admin.asked.clear()
    conn.note_answered([1])
    assert partition_offsets(admin, conn, both, "earliest", LEADERS) == {both[1]: 11}
    assert admin.asked == [[0, 1], [0], [1]]
    assert conn.is_silent(1)
    assert not conn.is_silent(2)
