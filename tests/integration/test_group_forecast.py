"""The forecast of a group against the real cluster: a consumer group draining a known backlog at a fixed rate
while a producer writes at a lower fixed rate; the catch-up time the group's API forecasts after a few samples is
within 20% of the time it then takes."""

from __future__ import annotations

import threading
import time

import pytest
from django.test import Client
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from broker.local import launcher
from console.background.lag_sampler import sample_once
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]

BACKLOG = 1600
TICK_S = 0.2
READ_PER_TICK = 20  # 100 records a second
WRITE_PER_TICK = 4  # 20 records a second: the group gains 80 a second, about 20 s for the backlog


def test_the_catch_up_forecast_is_within_a_fifth_of_the_measured_catch_up(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None
) -> None:
    client: Client = logged_in("viewer")
    topic = create_topic(unique("forecast"), partitions=1)
    produce(topic, [(None, b"b%d" % i) for i in range(BACKLOG)], partition=0)
    group = unique("g-forecast")
    tp = TopicPartition(topic, 0)
    state: dict[str, int] = {"end": BACKLOG, "committed": 0}
    caught_up: list[float] = []  # when the group got within one tick of the end
    stop = threading.Event()

    def write() -> None:
        producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), linger_ms=0)
        started, tick = time.monotonic(), 0
        try:
            while not stop.is_set():
                for i in range(WRITE_PER_TICK):
                    producer.send(topic, value=b"w%d" % i, partition=0)
                producer.flush(timeout=10)
                state["end"] += WRITE_PER_TICK
                tick += 1
                stop.wait(max(0.0, started + tick * TICK_S - time.monotonic()))
        finally:
            producer.close(timeout=5)

    def read() -> None:
        consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), group_id=group, enable_auto_commit=False)
        consumer.assign([tp])
        started, tick = time.monotonic(), 0
        try:
            while not stop.is_set():
                state["committed"] = min(state["committed"] + READ_PER_TICK, state["end"])
                consumer.commit({tp: OffsetAndMetadata(state["committed"], "", -1)})
                if not caught_up and state["end"] - state["committed"] <= READ_PER_TICK:
                    caught_up.append(time.monotonic())
                tick += 1
                stop.wait(max(0.0, started + tick * TICK_S - time.monotonic()))
        finally:
            consumer.close()

    threads = [threading.Thread(target=write, daemon=True), threading.Thread(target=read, daemon=True)]
    for t in threads:
        t.start()
    try:
        for _ in range(7):  # the lag sampler's samples, a second apart
            time.sleep(1)
            sample_once()
        body = client.get(f"/api/clusters/local/groups/{group}/").json()
        forecast_at = time.monotonic()
        ahead = body["forecast"]
        assert ahead is not None, body
        assert ahead["rate_in"] == pytest.approx(20, rel=0.3)
        assert ahead["rate_out"] == pytest.approx(100, rel=0.3)
        predicted = ahead["catch_up_s"]
        assert predicted is not None
        deadline = forecast_at + predicted * 3 + 30
        while not caught_up and time.monotonic() < deadline:
            time.sleep(0.1)
        assert caught_up, "the group never caught up"
        measured = caught_up[0] - forecast_at
        print(f"forecast: catch-up in {predicted:.1f} s; measured {measured:.1f} s")
        assert predicted == pytest.approx(measured, rel=0.2), (predicted, measured)
        assert ahead["retention_risk"] is None  # the topic keeps a week

        page = client.get(f"/clusters/local/groups/{group}/").content.decode()
        assert 'id="forecast"' in page
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=15)
