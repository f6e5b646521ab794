"""The background threads do not spin: a console process that does not hold the lag sampler's lease asks
for it once per interval, not again and again (an earlier replication watch waited 0 s without the lease
and burnt a core asking the database)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

import pytest
from django.test import override_settings

from console.background import alerts, commit_watch, lag_sampler, replication_watch, throughput

INTERVAL_S = 0.25
RUN_S = 1.3


def _asks_while_refused(run_forever: Callable[..., None], setting: str) -> int:
    """How often ``run_forever`` asked for the lease in RUN_S seconds while it was always refused."""
    asked = []

    def refuse() -> bool:
        asked.append(time.monotonic())
        return False

    stop = threading.Event()
    with override_settings(**{setting: INTERVAL_S}):
        thread = threading.Thread(target=run_forever, args=(stop,), kwargs={"acquire": refuse}, daemon=True)
        thread.start()
        time.sleep(RUN_S)
        stop.set()
        replication_watch.watches.wake.set()  # end the replication watch's wait at once
        thread.join(timeout=5)
    assert not thread.is_alive()
    return len(asked)


def test_it_asks_for_the_lease_once_per_interval_in_the_replication_watch() -> None:
    asked = _asks_while_refused(replication_watch.run_forever, "KAZAMI_REPLICATION_INTERVAL")
    # One ask at the start and one per whole interval after it; a spinning loop asks thousands of times.
    assert 1 <= asked <= RUN_S / INTERVAL_S + 1, asked


def test_it_asks_for_the_lease_once_per_interval_in_the_lag_sampler() -> None:
    asked = _asks_while_refused(lag_sampler.run_forever, "KAZAMI_LAG_SAMPLE_INTERVAL")
    assert 1 <= asked <= RUN_S / INTERVAL_S + 1, asked


def test_a_follow_up_look_left_from_when_it_held_the_lease_does_not_make_it_spin() -> None:
    # A process that held the lease heard a ZooKeeper watch (follow-up looks due), then lost the lease: the
    # looks it can no longer take are forgotten, and it still asks once per interval.
    replication_watch.watches.tell("gone", "brokers changed")
    replication_watch.watches.take(0.0)  # follow-ups due from time 0, long past
    assert replication_watch.watches.next_due(time.monotonic()) == 0.0
    try:
        asked = _asks_while_refused(replication_watch.run_forever, "KAZAMI_REPLICATION_INTERVAL")
        assert 1 <= asked <= RUN_S / INTERVAL_S + 1, asked
        assert replication_watch.watches.next_due(time.monotonic()) is None
    finally:
        replication_watch.watches.drop()


def _pumps_while_holding(monkeypatch: pytest.MonkeyPatch, changed: int) -> list[float]:
    """When the lease holder read the offsets topics in RUN_S seconds between two rounds, with every read finding
    ``changed`` rings changed."""
    pumped: list[float] = []

    def pump_all() -> int:
        pumped.append(time.monotonic())
        return changed

    monkeypatch.setattr(lag_sampler, "COMMIT_PUMP_S", 0.05)
    monkeypatch.setattr(lag_sampler, "COMMIT_PUMP_IDLE_S", 0.4)
    monkeypatch.setattr(lag_sampler, "sample_once", lambda: {})
    monkeypatch.setattr(throughput, "sample_once", lambda: None)
    monkeypatch.setattr(commit_watch, "pump_all", pump_all)
    monkeypatch.setattr(commit_watch, "enabled", lambda: True)
    stop = threading.Event()
    with override_settings(KAZAMI_LAG_SAMPLE_INTERVAL=60):
        thread = threading.Thread(target=lag_sampler.run_forever, args=(stop,), kwargs={"acquire": lambda: True})
        thread.start()
        time.sleep(RUN_S)
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()
    return pumped


def test_offsets_topics_are_read_less_and_less_often_while_no_group_commits(monkeypatch: pytest.MonkeyPatch) -> None:
    busy = _pumps_while_holding(monkeypatch, changed=3)
    idle = _pumps_while_holding(monkeypatch, changed=0)
    assert len(busy) >= RUN_S / 0.05 / 2  # every COMMIT_PUMP_S while commits come
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(idle)]
    assert len(idle) <= 6, gaps  # 0.05, 0.1, 0.2, 0.4, 0.4...: doubling up to COMMIT_PUMP_IDLE_S
    assert gaps == sorted(gaps), gaps
    assert max(gaps) < 0.4 + 0.1, gaps


def _replication_polls(monkeypatch: pytest.MonkeyPatch, watched: bool) -> list[float]:
    """When the lease holder's replication watch polled in RUN_S seconds, finding nothing each time."""
    polls: list[float] = []

    def watch_round(names: list[str], polled: bool) -> list[object]:
        if polled:
            polls.append(time.monotonic())
        return []

    monkeypatch.setattr(replication_watch, "watch_round", watch_round)
    monkeypatch.setattr(replication_watch, "get_configs", lambda: {"local": None})
    monkeypatch.setattr(replication_watch.watches, "ensure", lambda names: None)
    monkeypatch.setattr(replication_watch.watches, "watching", lambda name: watched)
    monkeypatch.setattr(alerts, "deliver_due", lambda: None)
    stop = threading.Event()
    with override_settings(KAZAMI_REPLICATION_INTERVAL=0.05):
        thread = threading.Thread(target=replication_watch.run_forever, args=(stop,), kwargs={"acquire": lambda: True})
        thread.start()
        time.sleep(RUN_S)
        stop.set()
        replication_watch.watches.wake.set()
        thread.join(timeout=5)
    assert not thread.is_alive()
    return polls


def test_polls_of_a_cluster_zookeeper_watches_stretch_while_they_find_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    unwatched = _replication_polls(monkeypatch, watched=False)
    watched = _replication_polls(monkeypatch, watched=True)
    assert len(unwatched) >= RUN_S / 0.05 / 2  # every interval: nothing tells a change at once
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(watched)]
    assert max(gaps) < 0.05 * replication_watch.WATCHED_STRETCH + 0.05, gaps
    assert len(watched) < len(unwatched) / 2, (len(watched), len(unwatched))
