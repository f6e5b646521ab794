"""Failover as in Kafka's multi-broker walkthrough, on the session's cluster (ZooKeeper mode, and KRaft
on the KRaft run): the leader of a partition is stopped, another takes over, the ISR shrinks and grows
back, the timeline records it, and no message acknowledged with acks=all is lost. On ZooKeeper mode the
stop reaches the timeline through the replication watch's ZooKeeper watches alone (no polling round)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from broker.local import launcher
from console.background import replication_watch
from tests.conftest import BOOTSTRAP, KRAFT, logged_in
from tests.integration.kafka_helpers import admin, create_topic, unique, wait_healthy

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    replication_watch.forget()
    return logged_in()


def until(
    what: str,
    check: Callable[[], Any],
    timeout: float = 60,
    show: Callable[[], Any] | None = None,
    polled: bool = True,
) -> Any:
    """Wait for ``check`` while the replication watch runs its rounds; ``polled=False``: only the looks a
    ZooKeeper watch asks for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replication_watch.watch_round(["local"], polled=polled)
        if found := check():
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}" + (f"; seen: {show()}" if show else ""))


def partition(client: Client, name: str, number: int) -> dict[str, Any]:
    body = client.get("/api/clusters/local/replication/").json()
    return next(p for p in body["partitions"] if p["topic"] == name and p["partition"] == number)


def test_the_api_shows_each_partitions_replicas_as_kafka_does(client: Client) -> None:
    name = create_topic(unique("repl"), partitions=3, replication=3)
    body = client.get("/api/clusters/local/replication/").json()
    kafka = admin()
    try:
        [truth] = kafka.describe_topics([name])
    finally:
        kafka.close()
    for p in truth["partitions"]:
        ours = partition(client, name, p["partition_index"])
        assert ours["leader"] == p["leader_id"]
        assert ours["replicas"] == p["replica_nodes"]
        assert ours["isr"] == sorted(p["isr_nodes"])
        assert ours["preferred_leader"] == p["replica_nodes"][0]
    assert sorted(b["id"] for b in body["brokers"]) == [0, 1, 2]
    assert sum(b["leads"] for b in body["brokers"]) == body["counts"]["partitions"]


def test_stopping_a_leader_moves_leadership_shrinks_the_isr_and_loses_no_acknowledged_message(
    client: Client, kafka_cluster: launcher.ClusterLayout
) -> None:
    name = create_topic(unique("failover"), partitions=1, replication=3, configs={"min.insync.replicas": "2"})
    victim = partition(client, name, 0)["leader"]
    acked: list[int] = []
    stop = threading.Event()

    def write() -> None:  # acks=all all along, as the walkthrough's producer
        producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all", retries=20, linger_ms=5)
        i = 0
        while not stop.is_set():
            future = producer.send(name, value=str(i).encode(), partition=0)
            with contextlib.suppress(KafkaError):  # a send that failed is simply not acknowledged
                future.get(timeout=30)
                acked.append(i)
            i += 1
            time.sleep(0.01)
        producer.close()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    replication_watch.observe("local")  # the timeline's starting point
    if not KRAFT:
        replication_watch.watches.ensure(["local"])
        until("the ZooKeeper watches to be set", lambda: replication_watch.watches.watching("local"), timeout=20)
    started = time.time()
    stopping = client.post(f"/api/clusters/local/brokers/{victim}/stop/")  # as an admin would, from the console
    assert (stopping.status_code, stopping.json()["state"]) == (202, "stopping")
    try:
        moved = until(
            "a new leader and a smaller ISR",
            lambda: (p := partition(client, name, 0))["leader"] not in (None, victim) and victim not in p["isr"] and p,
        )
        assert moved["under_replicated"] is True
        since = str(int(started * 1000) - 1000)

        def timeline(**only: str) -> list[dict[str, Any]]:
            # Filtered: in the whole suite a stop moves hundreds of partitions, more than a page of events.
            found: list[dict[str, Any]] = client.get("/api/clusters/local/events/", {"since": since, **only}).json()[
                "events"
            ]
            return found

        def told() -> list[dict[str, Any]] | None:
            e = timeline(topic=name) + timeline(kind="broker_gone")
            return e if {"leader_changed", "isr_shrank", "broker_gone"} <= {x["kind"] for x in e} else None

        events = until(
            "the timeline to tell it",
            told,
            timeout=90,
            show=lambda: timeline(topic=name) + timeline(kind="broker_gone,broker_registered,controller_changed"),
            polled=KRAFT,  # ZooKeeper mode: only what the ZooKeeper watches make the watch look at
        )
        [gone] = timeline(kind="broker_gone")
        same_look = [e for e in timeline(limit="1000") if e["at"] == gone["at"]]
        assert same_look[0]["kind"] == "broker_gone"  # listed above the partitions it moved
        mine = [e for e in events if e["topic"] == name]
        assert any(e["kind"] == "leader_changed" and e["details"]["from"] == victim for e in mine)
        assert any(e["kind"] == "isr_shrank" and victim in e["details"]["removed"] for e in mine)
        [gone] = [e for e in events if e["kind"] == "broker_gone" and e["broker"] == victim]
        if not KRAFT:
            assert gone["details"]["via"].startswith("zookeeper: "), gone  # looked at because ZooKeeper told
        page = client.get("/clusters/local/replication/").content.decode()
        assert f'data-tp="{name}-0"' in page  # the under-replicated partition is listed
        assert "event-isr_shrank" in page
    finally:
        replication_watch.watches.drop()
        until(
            "the stop to finish", lambda: client.post(f"/api/clusters/local/brokers/{victim}/start/").status_code == 202
        )
        wait_healthy()
    until("the ISR to grow back", lambda: victim in partition(client, name, 0)["isr"], timeout=90)
    back = [
        *client.get("/api/clusters/local/events/", {"since": str(int(started * 1000)), "topic": name}).json()["events"],
        *client.get(
            "/api/clusters/local/events/", {"since": str(int(started * 1000)), "kind": "broker_registered"}
        ).json()["events"],
    ]
    assert client.get("/api/clusters/local/events/", {"kind": "isr_grew"}).status_code == 400
    assert any(e["kind"] == "isr_expanded" and e["topic"] == name and victim in e["details"]["added"] for e in back)
    assert any(e["kind"] == "broker_registered" and e["broker"] == victim for e in back)
    stop.set()
    writer.join(timeout=60)
    assert len(acked) > 10
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), enable_auto_commit=False)
    tp = TopicPartition(name, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not set(acked) <= seen:
        for records in consumer.poll(timeout_ms=500).values():
            seen.update(int(r.value) for r in records)
    consumer.close()
    assert set(acked) <= seen, f"{len(set(acked) - seen)} acknowledged messages missing"


def test_only_admins_stop_brokers_and_only_those_of_the_embedded_cluster(
    client: Client, clusters_reset: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    viewer = logged_in("viewer", "embedded-viewer")
    assert viewer.post("/api/clusters/local/brokers/1/stop/").status_code == 403
    assert client.post("/api/clusters/local/brokers/9/stop/").status_code == 400  # no broker 9
    assert client.post("/api/clusters/local/brokers/1/reboot/").status_code == 404
    assert client.get("/api/clusters/local/brokers/1/logdirs/").status_code == 200  # not taken for an action
    monkeypatch.setattr("django.conf.settings.KAZAMI_EMBEDDED_CLUSTER", "")
    elsewhere = client.post("/api/clusters/local/brokers/1/stop/")
    assert elsewhere.status_code == 409
    assert "not an embedded cluster" in elsewhere.json()["message"]
