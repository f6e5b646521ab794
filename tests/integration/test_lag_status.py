"""Status transitions produced by real consumers, judged with Burrow's rules over sampled history.

Samples are taken at chosen moments (a few seconds apart, in the recent past) rather than waiting
for the sampler's interval, so each scenario takes seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from kafka import KafkaConsumer, TopicPartition

from broker.local import launcher
from console.background import lag_sampler
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, produce, unique
from tests.integration.test_groups import api_group, commit, join_and_commit

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None, settings) -> Client:
    settings.KAZAMI_LAG_WINDOW = 3
    settings.KAZAMI_LAG_FROM_COMMITS = False  # the statuses over samples alone (test_lag_from_commits: over commits)
    settings.KAZAMI_LAG_SAMPLE_INTERVAL = 10
    return logged_in()


def moments(count: int = 3, step: int = 10, first_ago: int = 25) -> Iterator:  # type: ignore[type-arg]
    start = timezone.now() - timedelta(seconds=first_ago)
    for i in range(count):
        yield start + timedelta(seconds=i * step)


def status(client: Client, group: str) -> tuple[str, str]:
    body = api_group(client, group)
    partition = body["partitions"][0]
    return body["status"], partition["status"]


def test_a_fast_consumer_is_ok(client: Client) -> None:
    name = create_topic(unique("st-fast"), partitions=1)
    group = unique("g-fast")
    for at in moments():
        produce(name, [(None, b"x")] * 5, partition=0)
        end = api_end(name)
        commit(group, {(name, 0): end})
        lag_sampler.sample_once(now=at)
    assert status(client, group) == ("OK", "OK")


def test_a_slow_consumer_that_moves_but_falls_behind_is_warn(client: Client) -> None:
    name = create_topic(unique("st-slow"), partitions=1)
    group = unique("g-slow")
    position = 0
    for at in moments():
        produce(name, [(None, b"x")] * 10, partition=0)
        position += 3
        commit(group, {(name, 0): position})
        lag_sampler.sample_once(now=at)
    body = api_group(client, group)
    assert (body["status"], body["partitions"][0]["status"]) == ("WARN", "WARN")
    assert "WARN" in body["status_reason"]


def test_a_live_consumer_committing_the_same_offset_is_stall(client: Client) -> None:
    name = create_topic(unique("st-stall"), partitions=1)
    group = unique("g-stall")
    produce(name, [(None, b"x")] * 5, partition=0)
    consumer = KafkaConsumer(
        name,
        bootstrap_servers=BOOTSTRAP.split(","),
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        for at in moments():
            produce(name, [(None, b"x")] * 5, partition=0)
            join_and_commit(consumer, {TopicPartition(name, 0): 2})  # alive, commits, never moves
            lag_sampler.sample_once(now=at)
        assert status(client, group) == ("ERR", "STALL")
    finally:
        consumer.close(autocommit=False)


def test_a_stopped_consumer_with_messages_waiting_is_stop_and_a_caught_up_one_ok(client: Client) -> None:
    name = create_topic(unique("st-stop"), partitions=1)
    stopped, idle = unique("g-stopped"), unique("g-idle")
    produce(name, [(None, b"x")] * 4, partition=0)
    commit(stopped, {(name, 0): 1})
    commit(idle, {(name, 0): 4})
    for at in moments(first_ago=90):
        lag_sampler.sample_once(now=at)
    assert status(client, idle) == ("OK", "OK")  # nothing to read: not stopped
    produce(name, [(None, b"x")] * 6, partition=0)
    body = api_group(client, stopped)
    assert (body["status"], body["partitions"][0]["status"]) == ("ERR", "STOP")
    assert body["partitions"][0]["lag"] == 9  # lag taken now, not from the stale samples
    assert "has not moved" in body["status_reason"]


def test_a_group_whose_offset_went_back_is_rewind(client: Client) -> None:
    name = create_topic(unique("st-rewind"), partitions=1)
    group = unique("g-rewind")
    produce(name, [(None, b"x")] * 20, partition=0)
    for at, offset in zip(moments(), [15, 16, 5], strict=True):
        commit(group, {(name, 0): offset})
        lag_sampler.sample_once(now=at)
    assert status(client, group)[1] == "REWIND"


def api_end(topic: str) -> int:
    from kafka.admin import OffsetSpec

    from tests.integration.kafka_helpers import admin

    client = admin()
    try:
        tp = TopicPartition(topic, 0)
        return int(client.list_partition_offsets({tp: OffsetSpec.LATEST})[tp].offset)
    finally:
        client.close()


def stored_statuses(group: str) -> list[str]:
    from console.models import LagSample

    return list(LagSample.objects.filter(group=group).order_by("at").values_list("status", flat=True))


def test_a_consumer_one_record_behind_at_every_sample_is_ok_not_warn(client: Client) -> None:
    name = create_topic(unique("st-behind-one"), partitions=1)
    group = unique("g-behind-one")
    for at in moments(count=4, first_ago=35):
        produce(name, [(None, b"x")] * 5, partition=0)
        commit(group, {(name, 0): api_end(name) - 1})  # the sample lands between a write and the next commit
        lag_sampler.sample_once(now=at)
    assert status(client, group) == ("OK", "OK")
    assert "WARN" not in stored_statuses(group)


def test_a_consumer_that_closed_after_moving_goes_from_ok_to_stop_never_warn(client: Client) -> None:
    name = create_topic(unique("st-closed"), partitions=1)
    group = unique("g-closed")
    # Moving and keeping up for three samples, then closed: the next samples see the offset frozen and records
    # arriving. Burrow's ring of commits says OK until the offset has been still for longer than its span.
    times = list(moments(count=6, step=10, first_ago=100))
    for at in times[:3]:
        produce(name, [(None, b"x")] * 5, partition=0)
        commit(group, {(name, 0): api_end(name) - 1})
        lag_sampler.sample_once(now=at)
    for at in times[3:]:
        produce(name, [(None, b"x")] * 8, partition=0)
        lag_sampler.sample_once(now=at)
    assert "WARN" not in stored_statuses(group)
    assert status(client, group) == ("ERR", "STOP")  # judged now: still for far longer than the window


def test_a_live_member_that_stops_moving_is_stall_and_no_stop_is_stored_first(client: Client) -> None:
    name = create_topic(unique("st-live-stop"), partitions=1)
    group = unique("g-live-stop")
    produce(name, [(None, b"x")] * 5, partition=0)
    consumer = KafkaConsumer(
        name,
        bootstrap_servers=BOOTSTRAP.split(","),
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        times = list(moments(count=7, step=10, first_ago=120))
        for i, at in enumerate(times):
            produce(name, [(None, b"x")] * 5, partition=0)
            offset = 3 + i if i < 2 else 4  # moves, then holds
            join_and_commit(consumer, {TopicPartition(name, 0): offset})
            lag_sampler.sample_once(now=at)
        assert status(client, group) == ("ERR", "STALL")
        assert "STOP" not in stored_statuses(group)
    finally:
        consumer.close(autocommit=False)
