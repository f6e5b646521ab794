"""Consumer groups against the real cluster: lag, lag in time, pages, API, exports, metrics, resets."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import OffsetSpec
from kafka.structs import OffsetAndMetadata
from prometheus_client.parser import text_string_to_metric_families

from broker.local import launcher
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import admin, create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


def commit(group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit offsets for a group without keeping a member (the group stays empty)."""
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), group_id=group, enable_auto_commit=False)
    try:
        tps = [TopicPartition(t, p) for t, p in offsets]
        consumer.assign(tps)
        consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()})
    finally:
        consumer.close(autocommit=False)


def join_and_commit(consumer: KafkaConsumer, offsets: dict[TopicPartition, int]) -> None:
    """Poll until the consumer holds its assignment, then commit (again after a poll if a rebalance was on)."""
    from kafka.errors import CommitFailedError, RebalanceInProgressError

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        consumer.poll(timeout_ms=500)
        if not consumer.assignment():
            continue
        try:
            consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()})
            return
        except (RebalanceInProgressError, CommitFailedError):
            continue
    raise AssertionError("the consumer did not join its group in time")


def api_group(client: Client, group: str) -> Any:
    response = client.get(f"/api/clusters/local/groups/{group}/")
    assert response.status_code == 200, response.content
    return response.json()


def test_lag_is_log_end_minus_committed_for_every_partition(client: Client) -> None:
    name = create_topic(unique("glag"), partitions=3)
    produce(name, [(None, b"x")] * 10, partition=0)
    produce(name, [(None, b"x")] * 7, partition=1)
    produce(name, [(None, b"x")] * 4, partition=2)
    group = unique("g-lag")
    commit(group, {(name, 0): 3, (name, 1): 7, (name, 2): 1})
    body = api_group(client, group)
    client_admin: KafkaAdminClient = admin()
    try:
        committed = client_admin.list_group_offsets([group])[group]
        tps = list(committed)
        ends = client_admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
    finally:
        client_admin.close()
    truth = {(tp.topic, tp.partition): ends[tp].offset - committed[tp].offset for tp in tps}
    shown = {(p["topic"], p["partition"]): p["lag"] for p in body["partitions"]}
    assert shown == truth == {(name, 0): 7, (name, 1): 0, (name, 2): 3}
    assert body["total_lag"] == 10
    assert body["state"] == "Empty"
    row = next(p for p in body["partitions"] if p["partition"] == 0)
    assert (row["committed_offset"], row["log_end_offset"], row["member"]) == (3, 10, None)


def test_a_partition_without_commit_is_shown_as_such(client: Client) -> None:
    name = create_topic(unique("gnocommit"), partitions=2)
    produce(name, [(None, b"x")] * 5, partition=0)
    produce(name, [(None, b"x")] * 5, partition=1)
    group = unique("g-nocommit")
    consumer = KafkaConsumer(
        name,
        bootstrap_servers=BOOTSTRAP.split(","),
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        join_and_commit(consumer, {TopicPartition(name, 0): 2})
        body = api_group(client, group)
        html = client.get(f"/clusters/local/groups/{group}/").content.decode()
    finally:
        consumer.close(autocommit=False)
    rows = {p["partition"]: p for p in body["partitions"]}
    assert (rows[0]["committed_offset"], rows[0]["lag"]) == (2, 3)
    assert (rows[1]["committed_offset"], rows[1]["lag"], rows[1]["log_end_offset"]) == (None, None, 5)
    assert rows[1]["member"] is not None  # assigned, never committed
    assert body["partitions_without_commit"] == 1
    assert body["total_lag"] == 3
    assert body["state"] == "Stable"
    assert "no commit" in html


def aged_topic(prefix: str) -> str:
    """A new one-partition topic holding m0, m1 and m2, timestamped 10, 5 and 1 minutes ago."""
    from kafka import KafkaProducer

    name = create_topic(unique(prefix), partitions=1)
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all")
    now = int(time.time() * 1000)
    for i, age in enumerate([600_000, 300_000, 60_000]):
        producer.send(name, value=f"m{i}".encode(), partition=0, timestamp_ms=now - age)
    producer.flush()
    producer.close()
    return name


def test_lag_in_time_is_the_age_of_the_oldest_unconsumed_message(client: Client) -> None:
    name = aged_topic("gtime")
    group = unique("g-time")
    commit(group, {(name, 0): 1})  # m0 consumed; m1 (5 minutes old) is the oldest waiting
    row = api_group(client, group)["partitions"][0]
    assert row["lag"] == 2
    assert 300_000 <= row["lag_ms"] < 330_000
    commit(group, {(name, 0): 3})
    assert api_group(client, group)["partitions"][0]["lag_ms"] is None  # caught up


def test_the_list_page_and_api_show_groups_with_filter_and_hide_empty(client: Client) -> None:
    name = create_topic(unique("glist"), partitions=1)
    produce(name, [(None, b"x")] * 6, partition=0)
    prefix = unique("g-list")
    commit(f"{prefix}-a", {(name, 0): 1})
    commit(f"{prefix}-b", {(name, 0): 4})
    body = client.get("/api/clusters/local/groups/").json()
    mine = {g["group_id"]: g for g in body["groups"] if g["group_id"].startswith(prefix)}
    assert {g: v["total_lag"] for g, v in mine.items()} == {f"{prefix}-a": 5, f"{prefix}-b": 2}
    assert all(v["status"] in ("OK", "WARN", "ERR") for v in mine.values())
    html = client.get("/clusters/local/groups/", {"q": prefix, "sort": "lag", "dir": "desc"}).content.decode()
    assert html.index(f"{prefix}-a") < html.index(f"{prefix}-b")
    hidden = client.get("/clusters/local/groups/", {"q": prefix, "hide_empty": "1"}).content.decode()
    assert f"{prefix}-a" not in hidden
    assert f"No group with members matches “{prefix}”." in hidden
    assert "format=csv" in html  # the pager links to the list as CSV
    sheet = client.get("/clusters/local/groups/", {"q": prefix, "sort": "lag", "dir": "desc", "format": "csv"})
    assert sheet["Content-Type"].startswith("text/csv")
    lines = sheet.content.decode().splitlines()
    assert lines[0] == "group,state,protocol,members,topics,lag,lag_ms,status"
    rows = [line.split(",") for line in lines[1:]]
    assert [(r[0], r[4], r[5]) for r in rows] == [(f"{prefix}-a", name, "5"), (f"{prefix}-b", name, "2")]
    assert {r[7] for r in rows} <= {"OK", "WARN", "ERR", "NOT_EVALUATED", "STOP", "STALL", "REWIND"}


def test_an_unknown_group_is_404(client: Client) -> None:
    api = client.get("/api/clusters/local/groups/no-such-group/")
    assert api.status_code == 404
    assert "no-such-group" in api.json()["message"]
    assert client.get("/clusters/local/groups/no-such-group/").status_code == 404


def test_every_reset_strategy_with_dry_run_and_execution(client: Client) -> None:
    name = create_topic(unique("greset"), partitions=1)
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all")
    now = int(time.time() * 1000)
    for i in range(20):
        producer.send(name, value=b"x", partition=0, timestamp_ms=now - (20 - i) * 60_000)  # one a minute
    producer.flush()
    producer.close()
    group = unique("g-reset")
    commit(group, {(name, 0): 10})
    url = f"/api/clusters/local/groups/{group}/reset/"
    cases: list[tuple[dict[str, Any], int]] = [
        ({"strategy": "earliest"}, 0),
        ({"strategy": "latest"}, 20),
        ({"strategy": "current"}, 10),
        ({"strategy": "to-offset", "value": "15"}, 15),
        ({"strategy": "shift-by", "value": "-4"}, 6),
        ({"strategy": "to-datetime", "value": str(now - 5 * 60_000 - 1000)}, 15),
        ({"strategy": "by-duration", "value": "PT3M30S"}, 17),
    ]
    for spec, expected in cases:
        dry = client.post(url, {**spec, "topics": [name]}, content_type="application/json")
        assert dry.status_code == 200, (spec, dry.content)
        planned = dry.json()["partitions"][0]
        assert (planned["current_offset"], planned["new_offset"]) == (10, expected), spec
        assert dry.json()["dry_run"] is True
    assert api_group(client, group)["partitions"][0]["committed_offset"] == 10  # dry runs changed nothing
    done = client.post(url, {"strategy": "to-offset", "value": "15", "dry_run": False}, content_type="application/json")
    assert done.status_code == 200
    assert api_group(client, group)["partitions"][0]["committed_offset"] == 15
    clamped = client.post(url, {"strategy": "to-offset", "value": "900"}, content_type="application/json").json()
    assert clamped["partitions"][0]["new_offset"] == 20
    assert "past the end" in clamped["partitions"][0]["note"]
    below = client.post(url, {"strategy": "shift-by", "value": "-100"}, content_type="application/json").json()
    assert below["partitions"][0]["new_offset"] == 0
    future = client.post(
        url, {"strategy": "to-datetime", "value": "2099-01-01T00:00:00Z"}, content_type="application/json"
    ).json()
    assert future["partitions"][0]["new_offset"] == 20
    stranger = client.post(url, {"strategy": "latest", "topics": ["page-views-never"]}, content_type="application/json")
    assert stranger.status_code == 400
    assert "never committed offsets on page-views-never" in stranger.json()["message"]
    bad = client.post(url, {"strategy": "to-offset", "value": "ten"}, content_type="application/json")
    assert bad.status_code == 400


def test_the_reset_page_shows_a_dry_run_then_executes(client: Client) -> None:
    name = create_topic(unique("gresetpage"), partitions=2)
    produce(name, [(None, b"x")] * 8, partition=0)
    group = unique("g-resetpage")
    commit(group, {(name, 0): 2, (name, 1): 0})
    page = client.post(f"/clusters/local/groups/{group}/reset/", {"strategy": "latest", "dry_run": "1"})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="reset-plan"' in html
    assert "<strong>8</strong>" in html
    assert api_group(client, group)["partitions"][0]["committed_offset"] == 2
    done = client.post(f"/clusters/local/groups/{group}/reset/", {"strategy": "latest", "execute": "1"})
    assert done.status_code == 302
    assert api_group(client, group)["partitions"][0]["committed_offset"] == 8


def test_a_reset_of_an_active_group_is_refused_naming_its_members(client: Client) -> None:
    name = create_topic(unique("gactive"), partitions=1)
    produce(name, [(None, b"x")] * 3, partition=0)
    group = unique("g-active")
    consumer = KafkaConsumer(
        name,
        bootstrap_servers=BOOTSTRAP.split(","),
        group_id=group,
        client_id="busy-worker",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        join_and_commit(consumer, {TopicPartition(name, 0): 1})
        refused = client.post(
            f"/api/clusters/local/groups/{group}/reset/",
            {"strategy": "earliest", "dry_run": False},
            content_type="application/json",
        )
        assert refused.status_code == 409
        message = refused.json()["message"]
        assert "1 active member" in message
        assert "busy-worker" in message
        dry = client.post(
            f"/api/clusters/local/groups/{group}/reset/", {"strategy": "earliest"}, content_type="application/json"
        )
        assert dry.status_code == 200  # a dry run is always allowed
        assert client.post(f"/api/clusters/local/groups/{group}/delete/").status_code == 409
    finally:
        consumer.close(autocommit=False)


def test_delete_a_groups_offsets_for_a_topic_and_the_group(client: Client) -> None:
    one = create_topic(unique("gdel1"), partitions=1)
    two = create_topic(unique("gdel2"), partitions=1)
    produce(one, [(None, b"x")] * 2, partition=0)
    produce(two, [(None, b"x")] * 2, partition=0)
    group = unique("g-del")
    commit(group, {(one, 0): 1, (two, 0): 2})
    gone = client.post(
        f"/api/clusters/local/groups/{group}/delete-offsets/", {"topic": one}, content_type="application/json"
    )
    assert gone.status_code == 200
    assert [p["topic"] for p in api_group(client, group)["partitions"]] == [two]
    again = client.post(
        f"/api/clusters/local/groups/{group}/delete-offsets/", {"topic": one}, content_type="application/json"
    )
    assert again.status_code == 400
    assert client.post(f"/api/clusters/local/groups/{group}/delete/").status_code == 200
    assert client.get(f"/api/clusters/local/groups/{group}/").status_code == 404


def test_exports_and_prometheus_metrics(client: Client) -> None:
    name = create_topic(unique("gexport"), partitions=1)
    produce(name, [(None, b"x")] * 9, partition=0)
    group = unique("g-export")
    commit(group, {(name, 0): 4})
    csv_text = client.get("/clusters/local/groups-report.csv", {"groups": group}).content.decode()
    lines = csv_text.strip().splitlines()
    assert lines[0].startswith("group,state,topic,partition,committed_offset,log_end_offset,lag")
    assert lines[1].startswith(f"{group},Empty,{name},0,4,9,5,")
    report = json.loads(client.get("/clusters/local/groups-report.json", {"groups": group}).content)
    assert report["groups"][0]["partitions"][0]["lag"] == 5
    assert client.get("/clusters/local/groups-report.csv", {"groups": "nope-nope"}).status_code == 400
    text = client.get("/metrics").content.decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    lag = [s for s in families["kazami_consumer_lag"].samples if s.labels.get("group") == group]
    assert [(s.labels["topic"], s.labels["partition"], s.value) for s in lag] == [(name, "0", 5.0)]
    assert any(s.labels == {"cluster": "local"} and s.value == 1.0 for s in families["kazami_cluster_up"].samples)
    statuses = [s for s in families["kazami_consumer_group_status"].samples if s.labels.get("group") == group]
    assert len(statuses) == 1
    # Replication per topic and broker (what the alerts' Prometheus rules read).
    mine = {
        s.name: s.value
        for f in families.values()
        for s in f.samples
        if s.labels.get("topic") == name and s.name.startswith("kazami_partitions_")
    }
    assert mine == {
        "kazami_partitions_offline": 0,
        "kazami_partitions_under_replicated": 0,
        "kazami_partitions_under_min_isr": 0,
    }
    brokers = {
        s.labels["broker"]: s.value for s in families["kazami_broker_up"].samples if s.labels["cluster"] == "local"
    }
    assert brokers == {"0": 1.0, "1": 1.0, "2": 1.0}
