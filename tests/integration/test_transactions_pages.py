"""Transactions, a partition's producers and hanging transactions against a real transactional producer that
commits one transaction and leaves one open, compared with Kafka's own kafka-transactions tool."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from broker.local import launcher
from console.models import AuditEntry
from tests.conftest import BOOTSTRAP, KRAFT, KRAFT_KAFKA_VERSION, logged_in
from tests.integration.kafka_helpers import create_topic, produce, unique
from tests.integration.kafka_tools import _log_config, table

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]

TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand"
# The history of partition 0: 0-1 committed, 2 the commit marker, 3-4 a transaction left open (the last stable
# offset is 3), 5 a plain record above it (the high watermark is 6).
LSO, HW = 3, 6


@dataclass
class Open:
    topic: str
    transactional_id: str
    producer: KafkaProducer


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in("admin")


@pytest.fixture
def left_open(kafka_cluster: launcher.ClusterLayout) -> Iterator[Open]:
    topic = create_topic(unique("txpages"), partitions=1)
    transactional_id = unique("kazami-tx")
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=transactional_id)
    producer.init_transactions()
    producer.begin_transaction()
    for value in (b"c0", b"c1"):
        producer.send(topic, value=value, partition=0)
    producer.commit_transaction()
    producer.begin_transaction()
    for value in (b"o0", b"o1"):
        producer.send(topic, value=value, partition=0)
    producer.flush()
    produce(topic, [(None, b"plain")], partition=0)
    try:
        yield Open(topic, transactional_id, producer)
    finally:
        producer.close(timeout=5)


def transactions_tool(*args: str) -> str:
    """Kafka's kafka-transactions.sh, from the jars of the cluster's own Kafka version."""
    jars = launcher.classpath(KRAFT_KAFKA_VERSION if KRAFT else None)
    command = ["java", "-Xmx256m", f"-Dlog4j2.configurationFile={_log_config()}", "-cp", jars]
    command += [TRANSACTIONS_COMMAND, "--bootstrap-server", BOOTSTRAP.split(",")[0], *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    print(done.stdout)
    return done.stdout


def read_committed(topic: str, want: int, seconds: float = 8) -> tuple[list[int], int]:
    """The offsets a read_committed consumer from offset 0 is given within ``seconds``, and its position."""
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), isolation_level="read_committed")
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen: list[int] = []
        deadline = time.monotonic() + seconds
        while len(seen) < want and time.monotonic() < deadline:
            seen += [r.offset for r in consumer.poll(timeout_ms=500).get(tp, [])]
        return seen, consumer.position(tp)
    finally:
        consumer.close()


def get(client: Client, path: str, **params: Any) -> Any:
    response = client.get(f"/api/clusters/local/{path}", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_an_open_transaction_is_listed_as_kafkas_tool_lists_it(client: Client, left_open: Open) -> None:
    body = get(client, "transactions/", state="Ongoing")
    ours = next(t for t in body["transactions"] if t["transactional_id"] == left_open.transactional_id)
    assert ours["state"] == "Ongoing"
    assert ours["partitions"] == [{"topic": left_open.topic, "partition": 0}]
    assert ours["timeout_ms"] == 60_000  # kafka-python's transaction_timeout_ms
    assert ours["start_time"] > 0
    assert body["unanswered"] == []
    assert all(t["state"] == "Ongoing" for t in body["transactions"])
    assert client.get("/api/clusters/local/transactions/", {"state": "Running"}).status_code == 400

    listed = {r["TransactionalId"]: r for r in table(transactions_tool("list"), "TransactionalId")}
    row = listed[left_open.transactional_id]
    assert (int(row["ProducerId"]), row["TransactionState"], int(row["Coordinator"])) == (
        ours["producer_id"],
        "Ongoing",
        ours["coordinator"],
    )
    described = table(transactions_tool("describe", "--transactional-id", left_open.transactional_id), "CoordinatorId")
    [kafka] = described
    assert (int(kafka["CoordinatorId"]), int(kafka["ProducerId"])) == (ours["coordinator"], ours["producer_id"])
    assert int(kafka["ProducerEpoch"]) == ours["producer_epoch"]
    assert int(kafka["TransactionTimeoutMs"]) == ours["timeout_ms"]
    assert int(kafka["CurrentTransactionStartTimeMs"]) == ours["start_time"]
    assert kafka["TopicPartitions"] == f"{left_open.topic}-0"

    page = client.get("/clusters/local/transactions/", {"state": "Ongoing"}).content.decode()
    assert left_open.transactional_id in page
    assert f"/clusters/local/topics/{left_open.topic}/partitions/0/producers/" in page
    assert 'href="/clusters/local/transactions/"' in client.get("/clusters/local/").content.decode()


def test_the_producers_page_names_the_transaction_holding_the_lso_back(client: Client, left_open: Open) -> None:
    body = get(client, f"topics/{left_open.topic}/partitions/0/producers/")
    assert (body["high_watermark"], body["last_stable_offset"]) == (HW, LSO)
    listing = get(client, "transactions/")["transactions"]
    producer_id = next(t for t in listing if t["transactional_id"] == left_open.transactional_id)["producer_id"]
    holder = body["holder"]
    assert (holder["producer_id"], holder["first_offset"], holder["current_txn_start_offset"]) == (
        producer_id,
        LSO,
        LSO,
    )
    assert (holder["transactional_id"], holder["coordinator_state"]) == (left_open.transactional_id, "Ongoing")
    assert holder["since"] > 0
    # Records, not offsets: the two open ones and the plain record above them.
    assert (body["hidden_records"], body["open_records"], body["hidden_counted"]) == (3, 2, True)
    assert producer_id in [p["producer_id"] for p in body["producers"]]
    # What a read_committed consumer gets: the committed records, and it stops at the LSO.
    assert read_committed(left_open.topic, 3) == ([0, 1], LSO)

    page = client.get(f"/clusters/local/topics/{left_open.topic}/partitions/0/producers/").content.decode()
    assert "holds the last stable offset back" in page
    assert f'<strong class="mono">{producer_id}</strong>' in page
    assert "cannot see 3 records yet, 2 of them in transactions still open" in page
    assert f"/clusters/local/topics/{left_open.topic}/partitions/0/?offset={LSO}" in page


def test_the_hanging_search_asks_the_coordinator(client: Client, left_open: Open) -> None:
    # With the brokers' transaction.max.timeout.ms (15 minutes) nothing here is old enough.
    default = get(client, "transactions/hanging/", topics=left_open.topic)
    assert (default["max_timeout_ms"], default["partitions"], default["candidates"]) == (900_000, 1, [])
    # With the threshold lowered, the open transaction is a candidate; its coordinator still has it.
    lowered = get(client, "transactions/hanging/", topics=left_open.topic, max_timeout_ms=0)
    [candidate] = lowered["candidates"]
    assert (candidate["topic"], candidate["partition"], candidate["current_txn_start_offset"]) == (
        left_open.topic,
        0,
        LSO,
    )
    assert (candidate["transactional_id"], candidate["coordinator_state"]) == (left_open.transactional_id, "Ongoing")
    assert (candidate["hanging"], lowered["hanging"]) == (False, [])
    assert "Ongoing with this partition" in candidate["reason"]
    page = client.get("/clusters/local/transactions/hanging/", {"topics": left_open.topic, "max_timeout_ms": 0})
    html = page.content.decode()
    assert "not hanging" in html
    assert "abort-form" not in html  # only hanging transactions are aborted from the console
    missing = client.get("/api/clusters/local/transactions/hanging/", {"topics": "no-such-topic-here"})
    assert missing.status_code == 404


def test_aborting_in_the_console_frees_the_lso_for_read_committed_consumers(client: Client, left_open: Open) -> None:
    left_open.producer.close(timeout=5)  # gone, its transaction still open
    holder = get(client, f"topics/{left_open.topic}/partitions/0/producers/")["holder"]
    spec = {
        "topic": left_open.topic,
        "partition": 0,
        "producer_id": holder["producer_id"],
        "producer_epoch": holder["producer_epoch"],
        "coordinator_epoch": holder["coordinator_epoch"],
    }
    viewer = logged_in("viewer", "tx-viewer")
    refused = viewer.post("/api/clusters/local/transactions/abort/", spec, content_type="application/json")
    assert refused.status_code == 403
    assert "abort hanging transactions" in refused.json()["message"]
    wrong = {**spec, "producer_epoch": holder["producer_epoch"] + 5}
    stale = client.post("/api/clusters/local/transactions/abort/", wrong, content_type="application/json")
    assert stale.status_code == 400
    assert read_committed(left_open.topic, 3, seconds=3) == ([0, 1], LSO)

    page = client.post("/clusters/local/transactions/hanging/", {**spec, "topics": left_open.topic})
    assert page.status_code == 200, page.content
    assert f"the last stable offset is now {HW + 1}" in page.content.decode()
    after = get(client, f"topics/{left_open.topic}/partitions/0/producers/")
    assert (after["high_watermark"], after["last_stable_offset"], after["holder"]) == (HW + 1, HW + 1, None)
    assert after["hidden_records"] == 0
    # The consumer proceeds: past the aborted records to the plain one, and to the end.
    assert read_committed(left_open.topic, 3) == ([0, 1, 5], HW + 1)
    again = client.post("/api/clusters/local/transactions/abort/", spec, content_type="application/json")
    assert again.status_code == 404

    entries = AuditEntry.objects.filter(action="transactions.abort", target=f"{left_open.topic}-0")
    assert sorted(e.outcome for e in entries) == ["done", "failed", "failed", "refused"]
    done = entries.get(outcome="done")
    assert done.params["producer_id"] == holder["producer_id"]
    assert done.username == "test-admin"
