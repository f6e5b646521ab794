"""Disks: the brokers' log dirs, and a partition's segment files, batches, records and indexes read from
the embedded cluster's folders, through the pages and the JSON API; names that would lead elsewhere are
refused before anything is opened."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from broker.local import launcher
from tests.conftest import logged_in
from tests.integration.kafka_helpers import create_topic, produce, small_segments, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


@pytest.fixture
def topic(kafka_cluster: launcher.ClusterLayout) -> str:
    """A topic on broker 0 alone, in small segments: 300 records over several segments."""
    name = create_topic(
        unique("disk"), assignments={0: [0]}, configs={**small_segments(2048), "index.interval.bytes": "100"}
    )
    for start in range(0, 300, 10):
        produce(
            name, [(f"k{i}".encode(), json.dumps({"n": i}).encode()) for i in range(start, start + 10)], partition=0
        )
    return name


def api(client: Client, path: str, status: int = 200, **params: Any) -> Any:
    response = client.get(f"/api/clusters/local/{path}", params)
    assert response.status_code == status, response.content[:500]
    return response.json()


def test_log_dirs_list_every_replica_with_its_size(client: Client, topic: str) -> None:
    disks = api(client, "brokers/0/logdirs/")
    [log_dir] = disks["log_dirs"]
    assert log_dir["readable"] is True
    ours = [p for p in log_dir["partitions"] if p["topic"] == topic]
    assert len(ours) == 1
    assert ours[0]["size"] > 0
    assert all(p["topic"] != topic for p in api(client, "brokers/1/logdirs/")["log_dirs"][0]["partitions"])
    page = client.get("/clusters/local/disks/")
    assert page.status_code == 200
    assert topic.encode() in page.content


def test_segments_batches_records_and_indexes(client: Client, topic: str) -> None:
    base = f"brokers/0/partitions/{topic}/0/segments/"
    segments = api(client, base)["segments"]
    assert len(segments) >= 3
    assert segments[0]["first_offset"] == 0
    assert segments[-1]["active"] is True
    assert sum(s["last_offset"] - s["first_offset"] + 1 for s in segments) == 300
    assert all(s["indexes_sane"] for s in segments)
    assert [s["findings"] for s in segments] == [[] for _ in segments]
    second = segments[1]["base_offset"]
    page = api(client, f"{base}{second}/batches", position=0, limit=1)
    assert page["batches"][0]["position"] == 0
    assert page["next_position"] == page["batches"][0]["size"]
    following = api(client, f"{base}{second}/batches", position=page["next_position"], limit=1)
    assert following["batches"][0]["base_offset"] == page["batches"][0]["last_offset"] + 1
    holding = api(client, f"{base}{second}/batches", offset=second + 3, limit=1)["batches"][0]
    assert holding["base_offset"] <= second + 3 <= holding["last_offset"]
    records = api(client, f"{base}{second}/batches/{holding['position']}/records")
    assert [r["value"] for r in records["records"]] == [
        json.dumps({"n": o}) for o in range(holding["base_offset"], holding["last_offset"] + 1)
    ]
    assert records["records"][0]["key"] == f"k{holding['base_offset']}"
    index = api(client, f"{base}{second}/index")
    assert index["entries"]
    assert all(e["ok"] for e in index["entries"])
    assert all(e["ok"] for e in api(client, f"{base}{second}/timeindex")["entries"])
    for path in (
        "segments/",
        f"segments/{second}/",
        f"segments/{second}/batches/{holding['position']}/",
        f"segments/{second}/index/",
        f"segments/{second}/timeindex/",
    ):
        response = client.get(f"/clusters/local/brokers/0/partitions/{topic}/0/{path}")
        assert response.status_code == 200, path


def test_names_that_lead_out_of_the_log_dir_are_refused(
    client: Client, topic: str, kafka_cluster: launcher.ClusterLayout
) -> None:
    assert api(client, "brokers/0/partitions/../0/segments/", 400)["error"] == "invalid_input"
    assert api(client, f"brokers/1/partitions/{topic}/0/segments/", 404)["message"].startswith("Broker 1 holds no")
    assert api(client, f"brokers/0/partitions/{topic}/0/segments/123456/batches", 404)
    assert api(client, f"brokers/0/partitions/{topic}/0/segments/0/batches/5/records", 404)
    # A segment name that is a symlink to a file outside the log dir: refused, never read.
    outside = Path(kafka_cluster.root) / "outside.log"
    outside.write_bytes(b"not for the console")
    link = Path(kafka_cluster.root) / "kafka-logs-0" / f"{topic}-0" / f"{99_999_999:020d}.log"
    os.symlink(outside, link)
    try:
        refused = api(client, f"brokers/0/partitions/{topic}/0/segments/99999999/batches", 400)
        assert "leads out of the log dir" in refused["message"]
    finally:
        link.unlink()
        outside.unlink()
    page = client.get("/clusters/local/brokers/0/partitions/x..y/0/segments/123/")
    assert page.status_code == 404


def test_a_message_page_links_to_its_batch_on_every_replica(
    client: Client, kafka_cluster: launcher.ClusterLayout
) -> None:
    name = create_topic(unique("diskmsg"), partitions=1, replication=3)
    produce(name, [(f"k{i}".encode(), f"value-{i}".encode()) for i in range(40)], partition=0)
    message_page = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/17/")
    assert b'hx-get="/clusters/local/topics/' in message_page.content
    on_disk = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/17/on-disk/").content.decode()
    links = re.findall(r'<a href="([^"]+)" data-broker="(\d)">', on_disk)
    assert sorted(int(b) for _, b in links) == [0, 1, 2]
    for url, broker in links:
        batch = client.get(url, follow=True)
        assert batch.status_code == 200
        assert batch.redirect_chain[-1][0].startswith(
            f"/clusters/local/brokers/{broker}/partitions/{name}/0/segments/0/batches/"
        )
        assert b'id="rec-17"' in batch.content
        assert b"value-17" in batch.content


def test_producer_snapshots_and_aborted_transactions(client: Client, kafka_cluster: launcher.ClusterLayout) -> None:
    from kafka import KafkaProducer

    from tests.conftest import BOOTSTRAP

    name = create_topic(unique("diskprod"), assignments={0: [0]}, configs=small_segments(1024))
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=unique("disk-tx"))
    producer.init_transactions()
    for end in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for i in range(5):
            producer.send(name, key=b"k", value=b"x" * 100 + str(i).encode(), partition=0)
        producer.flush()
        producer.commit_transaction() if end == "commit" else producer.abort_transaction()
    producer.close()
    state = api(client, f"brokers/0/partitions/{name}/0/producers/")
    [aborted] = state["aborted_transactions"]
    assert (aborted["first_offset"], aborted["last_offset"]) == (6, 11)  # 5 records after commit marker 5; marker 11
    assert state["snapshot_offset"] is not None  # segments rolled: the broker wrote producer snapshots
    assert [p["producer_id"] for p in state["producers"]] == [aborted["producer_id"]]
    page = client.get(f"/clusters/local/brokers/0/partitions/{name}/0/producers/")
    assert page.status_code == 200
    assert b'id="aborted"' in page.content
