"""Consumer groups on topics a transactional producer wrote (issue 27): listed as fast as any group, with
lag as Kafka counts it (log end minus committed, markers included), lag for read_committed consumers, and
lag in time from the first record after the committed offset.

A group that read every record of a transactional topic commits the offset of the last commit (or abort)
marker: nothing but markers stands between it and the log end. A consumer asked for the record there is
given none and polls until its time-out, which made every groups page wait 2.5 s (the cluster's request
time-out) while the topics listing took 0.05 s. So did a group whose committed offset retention (or a
delete-records) has deleted: the consumer, out of range, went to the log end and waited there."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import OffsetSpec
from kafka.structs import OffsetAndMetadata

from broker.client.config import ClusterConfig
from broker.client.connection import ClusterConnection
from broker.groups import lag as groups
from broker.local import launcher
from broker.topics.read import topic_leaders
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import admin, create_topic, unique
from tests.integration.kafka_tools import CONSUMER_GROUPS, run_tool

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]

MINUTE = 60_000
# The three topics, one partition each, and their records' ages in minutes (None: a marker):
#   committed: 0-1 committed (10, 9 min old), 2 commit marker
#   aborted:   0 committed (10), 1 commit marker, 2-3 aborted (8, 7), 4 abort marker
#   open:      0 committed (10), 1 commit marker, 2-3 a transaction still open (6, 5)
#   deleted:   0-3 plain records (10, 9, 8, 7), 0-1 deleted (the log starts at 2)
ENDS = {"committed": 3, "aborted": 5, "open": 4, "deleted": 4}
STABLE_ENDS = {"committed": 3, "aborted": 5, "open": 2, "deleted": 4}
LOG_START = 2  # of "deleted"
UNCHECKED = -1
# Group -> (topic, committed offset, lag, lag for read_committed, minutes of lag in time or None).
CASES = {
    # Read everything (as a read_uncommitted consumer commits): only the commit marker is left.
    "after-commit": ("committed", 2, 1, 0, None),
    "caught-up": ("committed", 3, 0, 0, None),
    # Before an aborted transaction: its records wait for a read_uncommitted consumer, none for read_committed.
    "before-abort": ("aborted", 1, 4, 0, 8),
    "in-abort": ("aborted", 3, 2, 0, 7),
    # At the abort marker: nothing but it is left.
    "at-abort-marker": ("aborted", 4, 1, 0, None),
    # Before a transaction still open: its records are there (read_uncommitted), but not yet given to
    # read_committed consumers, which stop at the last stable offset.
    "at-commit-marker": ("open", 1, 3, 0, 6),
    "at-open": ("open", 2, 2, 0, 6),
    # Below the log start: Kafka still counts the lag from there; no record's age to tell.
    "below-log-start": ("deleted", 1, 3, UNCHECKED, None),
    "at-log-start": ("deleted", 2, 2, 2, 8),
}


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


def send(producer: KafkaProducer, topic: str, ages: list[int], end: str | None, now: int) -> None:
    producer.begin_transaction()
    for age in ages:
        producer.send(topic, value=f"{age} min".encode(), partition=0, timestamp_ms=now - age * MINUTE)
    producer.flush()
    if end == "commit":
        producer.commit_transaction()
    elif end == "abort":
        producer.abort_transaction()


def commit(group: str, topic: str, offset: int) -> None:
    """Commit as a consumer of ``group`` would, keeping no member."""
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), group_id=group, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
    finally:
        consumer.close(autocommit=False)


@pytest.fixture(scope="module")
def written(kafka_cluster: launcher.ClusterLayout) -> Iterator[tuple[dict[str, str], dict[str, str], int]]:
    """({kind: topic}, {case: group}, when the records were written, ms), the producer of the open
    transaction kept open until the module ends."""
    topics = {kind: create_topic(unique(f"txg-{kind}"), partitions=1) for kind in ENDS}
    now = int(time.time() * 1000)
    producers = []
    plain = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all")
    for age in (10, 9, 8, 7):
        plain.send(topics["deleted"], value=f"{age} min".encode(), partition=0, timestamp_ms=now - age * MINUTE)
    plain.close(timeout=10)
    client: KafkaAdminClient = admin()
    try:
        client.delete_records({TopicPartition(topics["deleted"], 0): LOG_START})
    finally:
        client.close()
    for kind, topic in topics.items():
        if kind == "deleted":
            continue
        producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=unique("kazami-txg"))
        producer.init_transactions()
        producers.append(producer)
        if kind == "committed":
            send(producer, topic, [10, 9], "commit", now)
        else:
            send(producer, topic, [10], "commit", now)
            send(producer, topic, [8, 7] if kind == "aborted" else [6, 5], "abort" if kind == "aborted" else None, now)
    prefix = unique("txg")
    group_of = {case: f"{prefix}-{case}" for case in CASES}
    for case, (kind, offset, *_) in CASES.items():
        commit(group_of[case], topics[kind], offset)
    try:
        yield topics, group_of, now
    finally:
        for producer in producers:
            producer.close(timeout=5)


def reference_offsets(topics: dict[str, str]) -> tuple[dict[str, int], dict[str, int]]:
    """Log ends and last stable offsets as kafka-python's admin client reads them."""
    client: KafkaAdminClient = admin()
    try:
        tps = {kind: TopicPartition(topic, 0) for kind, topic in topics.items()}
        ends = client.list_partition_offsets(dict.fromkeys(tps.values(), OffsetSpec.LATEST))
        stables = client.list_partition_offsets(
            dict.fromkeys(tps.values(), OffsetSpec.LATEST), isolation_level="read_committed"
        )
    finally:
        client.close()
    return {k: ends[tp].offset for k, tp in tps.items()}, {k: stables[tp].offset for k, tp in tps.items()}


def median_seconds(client: Client, url: str, runs: int = 5) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(url)
        samples.append(time.perf_counter() - started)
        assert response.status_code == 200, response.content
    return statistics.median(samples)


def test_the_log_is_as_the_cases_expect(written: tuple[dict[str, str], dict[str, str], int]) -> None:
    topics, _, _ = written
    assert reference_offsets(topics) == (ENDS, STABLE_ENDS)


def test_groups_on_transactional_topics_list_as_fast_as_topics(
    client: Client, written: tuple[dict[str, str], dict[str, str], int]
) -> None:
    """With nothing cached (KAZAMI_MAX_AGE=0 in the tests), the groups listing, and the page of a group
    with only markers left, cost what the topics listing and a topic's page cost, not a time-out more."""
    topics, group_of, _ = written
    listed = {g["group_id"] for g in client.get("/api/clusters/local/groups/").json()["groups"]}
    assert set(group_of.values()) <= listed
    stalled = group_of["after-commit"]
    client.get(f"/api/clusters/local/groups/{stalled}/")  # the group's type learnt, as a listing does
    # Interleaved, so that a busy moment of the machine falls on both sides.
    figures: dict[str, list[float]] = {"groups": [], "topics": [], "group": [], "topic": []}
    for _ in range(3):
        figures["groups"].append(median_seconds(client, "/api/clusters/local/groups/", 3))
        figures["topics"].append(median_seconds(client, "/api/clusters/local/topics/", 3))
        figures["group"].append(median_seconds(client, f"/api/clusters/local/groups/{stalled}/", 3))
        figures["topic"].append(median_seconds(client, f"/api/clusters/local/topics/{topics['committed']}/", 3))
    median = {name: statistics.median(samples) for name, samples in figures.items()}
    print({name: round(seconds, 3) for name, seconds in median.items()})
    assert median["groups"] <= 5 * median["topics"], median
    assert median["group"] <= 5 * median["topic"], median


def test_lag_counts_markers_as_kafka_does_and_read_committed_lag_does_not(
    client: Client, written: tuple[dict[str, str], dict[str, str], int]
) -> None:
    topics, group_of, now = written
    ends, stables = reference_offsets(topics)
    listed = {g["group_id"]: g for g in client.get("/api/clusters/local/groups/").json()["groups"]}
    for case, (kind, offset, lag, stable_lag, minutes) in CASES.items():
        body = client.get(f"/api/clusters/local/groups/{group_of[case]}/").json()
        [row] = body["partitions"]
        assert (row["topic"], row["committed_offset"]) == (topics[kind], offset), case
        assert (row["log_end_offset"], row["last_stable_offset"]) == (ends[kind], stables[kind]), case
        assert row["lag"] == ends[kind] - offset == lag, case
        if stable_lag != UNCHECKED:
            assert row["lag_read_committed"] == stable_lag, case
        if minutes is None:
            assert row["lag_ms"] is None, case  # markers at most: no record waits
        else:
            # The first record after the committed offset, aborted or open ones included (a
            # read_uncommitted consumer is given them), written ``minutes`` before ``now``.
            age = minutes * MINUTE + int(time.time() * 1000) - now
            assert age - 1000 <= row["lag_ms"] <= age + 60_000, case
        summary = listed[group_of[case]]
        assert summary["total_lag"] == lag, case
        if stable_lag != UNCHECKED:
            assert summary["total_lag_read_committed"] == stable_lag, case
        if minutes is None:
            assert summary["lag_ms"] is None, case
        else:  # read a moment before the group's own page
            assert 0 <= row["lag_ms"] - summary["lag_ms"] < 30_000, case


def test_lag_is_what_kafka_consumer_groups_says(
    client: Client, written: tuple[dict[str, str], dict[str, str], int]
) -> None:
    """Kafka's own tool, one run for every group (a table per group, the same header over each)."""
    _, group_of, _ = written
    args = [arg for g in group_of.values() for arg in ("--group", g)]
    output = run_tool(CONSUMER_GROUPS, "--describe", *args)
    lines = [line.split() for line in output.splitlines() if line.strip()]
    header = next(cells for cells in lines if cells[0] == "GROUP")
    rows = [dict(zip(header, cells, strict=False)) for cells in lines if cells[0] in group_of.values()]
    theirs = {r["GROUP"]: (int(r["CURRENT-OFFSET"]), int(r["LOG-END-OFFSET"]), int(r["LAG"])) for r in rows}
    ours = {}
    for group in group_of.values():
        [row] = client.get(f"/api/clusters/local/groups/{group}/").json()["partitions"]
        ours[group] = (row["committed_offset"], row["log_end_offset"], row["lag"])
    assert ours == theirs


def test_the_first_record_after_an_offset_skips_markers_and_stops_at_the_log_end(
    kafka_cluster: launcher.ClusterLayout, written: tuple[dict[str, str], dict[str, str], int]
) -> None:
    """read_timestamps, against what a plain read_uncommitted consumer is given."""
    topics, _, _ = written
    given: dict[tuple[str, int], int] = {}  # (topic, offset) -> timestamp, records only
    consumer = KafkaConsumer(
        bootstrap_servers=BOOTSTRAP.split(","), enable_auto_commit=False, auto_offset_reset="earliest"
    )
    try:
        for kind, topic in topics.items():
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            records = {"committed": 2, "deleted": 2}.get(kind, 3)
            deadline = time.monotonic() + 20
            seen: list[Any] = []
            while len(seen) < records and time.monotonic() < deadline:
                seen += consumer.poll(timeout_ms=500).get(tp, [])
            given.update({(topic, r.offset): r.timestamp for r in seen})
    finally:
        consumer.close()
    wanted = [(topic, 0, offset) for kind, topic in topics.items() for offset in range(ENDS[kind])]
    expected = {}
    for topic, partition, offset in wanted:
        after = sorted(o for (t, o) in given if t == topic and o >= offset)
        if topic == topics["deleted"] and offset < LOG_START:
            continue  # no longer there: no record's age to tell
        if after:
            expected[(topic, partition, offset)] = given[(topic, after[0])]
    conn = ClusterConnection(ClusterConfig(name="txg", bootstrap_servers=tuple(BOOTSTRAP.split(","))))
    try:

        def read(admin_client: KafkaAdminClient) -> dict[tuple[str, int, int], int]:
            leaders = topic_leaders(admin_client.describe_topics(list(topics.values())))
            return groups.read_timestamps(conn, wanted, admin=admin_client, leaders=leaders)

        found = conn.call(read, "test read")
    finally:
        conn.close()
    assert found == expected
    # The markers at the end have no record after them.
    assert (topics["committed"], 0, 2) not in found
    assert (topics["aborted"], 0, 4) not in found
    assert (topics["deleted"], 0, LOG_START) in found
