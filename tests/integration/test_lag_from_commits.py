"""Lag statuses judged over the groups' own commits, read from the real cluster's offsets topic (Burrow's ring):
the situations of issue 31 give Burrow's statuses, and a stopped group reads STOP within one commit interval of
the moment Burrow's rule decides it (time since the last commit > the span of the window's commits).

The lag sampler runs no thread here: each step calls ``sample_once`` (which reads the log ends and pumps the
offsets topic) or ``commit_watch.pump_all`` as the sampler's thread would between rounds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.test import Client
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from broker.local import launcher
from console.background import commit_watch, lag_sampler
from console.models import CommitRing
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, produce, unique
from tests.integration.test_groups import api_group, join_and_commit
from tests.integration.test_lag_status import api_end

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]

WINDOW = 5
EVERY = 2.0  # seconds between a group's commits (Burrow keeps commits at least a second apart)


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None, settings) -> Iterator[Client]:
    settings.KAZAMI_LAG_WINDOW = WINDOW
    settings.KAZAMI_LAG_FROM_COMMITS = True
    lag_sampler.sample_once()  # the reader follows the offsets topic from here on
    yield logged_in()
    commit_watch.stop_all()


class Committer:
    """A consumer of ``group`` with no member (the group stays Empty) that commits offsets of one partition."""

    def __init__(self, group: str, topic: str) -> None:
        self.tp = TopicPartition(topic, 0)
        self.consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), group_id=group, enable_auto_commit=False)
        self.consumer.assign([self.tp])

    def commit(self, offset: int) -> None:
        self.consumer.commit({self.tp: OffsetAndMetadata(offset, "", -1)})

    def close(self) -> None:
        self.consumer.close(autocommit=False)


def drive(group: str, topic: str, steps: list[tuple[int, int]]) -> None:
    """Per step, write ``produce`` records then commit ``offset`` (a negative one: log end minus that), each
    step ``EVERY`` seconds after the last, with a sampler round after each commit."""
    committer = Committer(group, topic)
    try:
        for i, (count, offset) in enumerate(steps):
            if i:
                time.sleep(EVERY)
            if count:
                produce(topic, [(None, b"x")] * count, partition=0)
            committer.commit(offset if offset >= 0 else api_end(topic) + offset)
            lag_sampler.sample_once()
    finally:
        committer.close()


def partition_status(client: Client, group: str) -> tuple[str, str]:
    body = api_group(client, group)
    return body["partitions"][0]["status"], body["partitions"][0]["status_reason"]


def rule_moment_ms(group: str) -> int:
    """When Burrow's STOP rule decides: the last commit's time plus the span of the window of commits."""
    ring = CommitRing.objects.get(group=group).commits[-WINDOW:]
    assert len(ring) == WINDOW, ring
    first, last = ring[0][0], ring[-1][0]
    return int(last + (last - first))


def topic_with(records: int) -> str:
    name = create_topic(unique("cm"), partitions=1)
    produce(name, [(None, b"x")] * records, partition=0)
    return name


def test_a_stopped_group_reads_stop_within_one_commit_interval_of_burrows_rule(client: Client) -> None:
    topic, group = topic_with(100), unique("g-cm-stop")
    # Moving, behind, the lag falling: OK at every commit.
    drive(group, topic, [(5, 10 + 15 * i) for i in range(WINDOW)])
    assert partition_status(client, group)[0] == "OK"
    decided = watch_until_stop(client, group)
    assert decided["never"] <= {"OK"}, decided  # no WARN on its way (the first departure)
    assert "no commit for" in decided["reason"]


def test_a_stopped_group_with_a_live_member_reads_stop_as_burrow_says(client: Client) -> None:
    topic, group = topic_with(100), unique("g-cm-member")
    member = KafkaConsumer(
        topic, bootstrap_servers=BOOTSTRAP.split(","), group_id=group, enable_auto_commit=False, max_poll_records=1
    )
    try:
        tp = TopicPartition(topic, 0)
        for i in range(WINDOW):
            if i:
                time.sleep(EVERY)
            produce(topic, [(None, b"x")] * 5, partition=0)
            join_and_commit(member, {tp: 10 + 15 * i})
            lag_sampler.sample_once()
        # The member stays (its heartbeats go on) but commits nothing more.
        decided = watch_until_stop(client, group)
        assert decided["never"] <= {"OK"}, decided
    finally:
        member.close(autocommit=False)


def watch_until_stop(client: Client, group: str) -> dict:  # type: ignore[type-arg]
    """Ask for the status (pumping the offsets topic as the sampler's thread does) until it reads STOP; checks it
    was not STOP before Burrow's rule decides and was STOP no later than one commit interval after."""
    moment = rule_moment_ms(group)
    seen: set[str] = set()
    last_not_stop = 0.0
    deadline = time.time() + 60
    while time.time() < deadline:
        commit_watch.pump_all()
        asked = time.time() * 1000
        status, reason = partition_status(client, group)
        answered = time.time() * 1000
        if status == "STOP":
            assert answered > moment, f"STOP {moment - answered:.0f} ms before Burrow's rule decides"
            assert last_not_stop < moment + EVERY * 1000, (
                f"still {sorted(seen)} {last_not_stop - moment:.0f} ms after Burrow's rule decided"
            )
            return {"never": seen, "reason": reason}
        seen.add(status)
        last_not_stop = asked
        time.sleep(0.2)
    raise AssertionError(f"never STOP; seen {sorted(seen)}")


def test_a_group_committing_the_same_offset_again_is_stall_not_stop(client: Client) -> None:
    topic, group = topic_with(50), unique("g-cm-stall")
    drive(group, topic, [(5, 30)] * WINDOW)
    assert partition_status(client, group)[0] == "STALL"
    time.sleep(EVERY)
    drive(group, topic, [(5, 30)])  # still committing: still STALL, never STOP
    assert partition_status(client, group)[0] == "STALL"


def test_falling_behind_is_warn_keeping_one_behind_is_ok_and_going_back_is_rewind(client: Client) -> None:
    topic, behind = topic_with(20), unique("g-cm-warn")
    drive(behind, topic, [(10, 3 * (i + 1)) for i in range(WINDOW)])
    status, reason = partition_status(client, behind)
    assert status == "WARN"
    assert "falling behind" in reason

    topic, steady = topic_with(10), unique("g-cm-steady")
    drive(steady, topic, [(1, -1)] * WINDOW)  # one record behind at every commit
    assert partition_status(client, steady)[0] == "OK"

    topic, rewound = topic_with(60), unique("g-cm-rewind")
    drive(rewound, topic, [(0, 50), (0, 51), (0, 10), (0, 11), (0, 12)])
    status, reason = partition_status(client, rewound)
    assert status == "REWIND"
    assert "went back from 51 to 10" in reason
