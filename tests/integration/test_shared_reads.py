"""Answers shared between callers against the real cluster (broker/shared_reads.py): a read is kept for the
cluster's max_age, a change made through the console drops what was kept, and the lag-in-time lookup
reads each message's timestamp once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from broker.client.config import ClusterConfig
from broker.client.connection import ClusterConnection
from broker.groups import lag as groups
from broker.local import launcher
from broker.messages.produce import do_produce
from broker.topics import read as topics
from broker.topics.changes import do_create_topic
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, produce, unique
from tests.integration.test_groups import aged_topic, commit

pytestmark = pytest.mark.kafka


def connection(max_age: float) -> ClusterConnection:
    return ClusterConnection(
        ClusterConfig(name="shared", bootstrap_servers=tuple(BOOTSTRAP.split(",")), max_age=max_age)
    )


@pytest.fixture
def kept(kafka_cluster: launcher.ClusterLayout) -> Iterator[ClusterConnection]:
    conn = connection(max_age=60)  # long enough that only a change drops an answer during the test
    yield conn
    conn.close()


def ends(detail: topics.TopicDetail) -> list[int | None]:
    return [p.end_offset for p in detail.partitions]


def test_a_topic_read_is_kept_until_a_change_through_the_console(kept: ClusterConnection) -> None:
    name = create_topic(unique("shared"), partitions=1)
    assert ends(topics.get_topic(kept, name)) == [0]
    asked = kept.reads.asked

    produce(name, [(None, b"from another client")], partition=0)
    assert ends(topics.get_topic(kept, name)) == [0]  # kept: what a page shows for up to max_age
    assert kept.reads.asked == asked

    written = do_produce(kept, name, key=None, value=b"through the console", partition=0)
    assert written.offset == 1
    assert ends(topics.get_topic(kept, name)) == [2]  # the console's own change: asked again at once
    assert kept.reads.asked == asked + 2  # the produce's partition check, then the topic


def test_a_topic_created_through_the_console_is_listed_at_once(kept: ClusterConnection) -> None:
    before = {t.name for t in topics.get_topics(kept)}
    name = unique("shared-new")
    do_create_topic(kept, name, partitions=2, replication_factor=1)
    # The brokers' metadata may show a new topic a moment after the controller made it: wait until the
    # cluster itself lists it, well within the kept answer's max_age.
    fresh = connection(max_age=0)
    try:
        deadline = time.monotonic() + 10
        while name not in {t.name for t in topics.get_topics(fresh)}:
            assert time.monotonic() < deadline, "the cluster never listed the new topic"
            time.sleep(0.1)
    finally:
        fresh.close()
    after = {t.name for t in topics.get_topics(kept)}  # not the list kept from before the change
    assert after - before == {name}


def test_with_max_age_zero_every_read_asks_the_cluster(kafka_cluster: launcher.ClusterLayout) -> None:
    conn = connection(max_age=0)
    try:
        name = create_topic(unique("shared-zero"), partitions=1)
        assert ends(topics.get_topic(conn, name)) == [0]
        produce(name, [(None, b"x")], partition=0)
        assert ends(topics.get_topic(conn, name)) == [1]
    finally:
        conn.close()


def test_lag_in_time_reads_each_timestamp_once(kafka_cluster: launcher.ClusterLayout, monkeypatch: Any) -> None:
    conn = connection(max_age=0)  # every listing asks the cluster; only the timestamps are kept
    reads: list[list[tuple[str, int, int]]] = []
    original = groups.read_timestamps

    def counted(
        c: ClusterConnection, wanted: list[tuple[str, int, int]], **where: Any
    ) -> dict[tuple[str, int, int], int]:
        reads.append(sorted(wanted))
        return original(c, wanted, **where)

    monkeypatch.setattr(groups, "read_timestamps", counted)
    name = aged_topic("shared-lag")  # m1, the first unconsumed below, was written 5 minutes ago
    group = unique("g-shared")
    commit(group, {(name, 0): 1})
    try:
        first = groups.get_group(conn, group).partitions[0].lag_ms
        second = groups.get_group(conn, group).partitions[0].lag_ms
        assert reads == [[(name, 0, 1)]]  # the second listing knew the timestamp
        assert first is not None
        assert second is not None
        assert 300_000 <= first <= second < 330_000  # the same message, a moment older

        commit(group, {(name, 0): 2})  # the group moved on: the new offset's message is read
        assert 60_000 <= (groups.get_group(conn, group).partitions[0].lag_ms or 0) < 90_000
        assert reads == [[(name, 0, 1)], [(name, 0, 2)]]
    finally:
        conn.close()
