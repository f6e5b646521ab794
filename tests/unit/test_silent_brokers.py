"""A broker that did not answer is left out of reads for a while, but asked again once every time-out: one answer
ends its silence at once (broker.client.connection.ClusterConnection.is_silent / note_answered)."""

from __future__ import annotations

import time

import pytest

from broker.client.config import ClusterConfig
from broker.client.connection import PROBE_WINDOW, SILENT_ROUNDS, ClusterConnection


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
