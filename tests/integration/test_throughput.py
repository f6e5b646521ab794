"""Throughput from the end offsets, against the real cluster: a topic written at a known rate between two looks
is measured within 25% of it, per topic, per broker and for the cluster, in the API and on the pages."""

from __future__ import annotations

import time

import pytest
from django.test import Client
from kafka import KafkaProducer

from broker.local import launcher
from console.background import throughput
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]
RATE = 200  # messages a second
SECONDS = 6


def test_a_known_produce_rate_is_measured_within_a_quarter(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None
) -> None:
    client: Client = logged_in("viewer")
    topic = create_topic(unique("rate"), partitions=3)
    throughput._last.clear()
    assert client.get("/api/clusters/local/").json()["throughput"] is None  # not measured yet
    assert throughput.sample_once(min_interval_s=0) == {}  # the first look: nothing to compare with
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks=1, linger_ms=5)
    started = time.monotonic()
    try:
        for i in range(RATE * SECONDS):
            producer.send(topic, value=b"x" * 100, key=b"k%d" % (i % 30))
            time.sleep(max(0.0, started + (i + 1) / RATE - time.monotonic()))
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)
    stored = throughput.sample_once(min_interval_s=0)
    assert stored.get("local", 0) >= 2  # the cluster, this topic, its leaders

    body = client.get("/api/clusters/local/").json()["throughput"]
    measured = {t["topic"]: t for t in body["topics"]}[topic]
    # The producer wrote RATE a second between the two looks (taken right before and right after it wrote).
    assert abs(measured["messages_in_per_s"] - RATE) <= 0.25 * RATE, (measured, body["interval_s"])
    # And exactly what it wrote: the end offsets moved by every message sent.
    assert measured["messages_in_per_s"] * body["interval_s"] == pytest.approx(RATE * SECONDS, rel=0.02)
    assert measured["bytes_in_per_s"] is None or measured["bytes_in_per_s"] >= measured["messages_in_per_s"] * 100
    assert body["messages_in_per_s"] >= measured["messages_in_per_s"]
    assert sum(b["messages_in_per_s"] for b in body["brokers"]) == pytest.approx(body["messages_in_per_s"], rel=0.01)

    topic_body = client.get(f"/api/clusters/local/topics/{topic}/").json()["throughput"]
    assert topic_body["messages_in_per_s"] == measured["messages_in_per_s"]
    idle = create_topic(unique("rate-idle"), partitions=1)
    assert client.get(f"/api/clusters/local/topics/{idle}/").json()["throughput"]["messages_in_per_s"] == 0

    page = client.get("/clusters/local/").content.decode()
    assert f'<tr data-topic="{topic}">' in page
    assert 'id="throughput-chart"' in page
    part = client.get("/clusters/local/throughput/").content.decode()
    assert 'id="messages-in"' in part
    assert client.get(f"/clusters/local/topics/{topic}/").status_code == 200
