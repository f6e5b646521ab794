"""Messages of transactional producers as Kafka holds them and as read_committed consumers see them:
labels, markers, paging, search, downloads, tail and group lag, against a real transactional producer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from broker.local import launcher
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]

# The history every test here reads (one partition):
#   0-2 committed, 3 commit marker, 4-5 aborted, 6 abort marker, 7-8 committed, 9 commit marker,
#   10 a plain record, 11-12 a transaction left open (the last stable offset is 11, the high watermark 13).
COMMITTED = [0, 1, 2, 7, 8]
ABORTED = [4, 5]
OPEN = [11, 12]
MARKERS = {3: "commit", 6: "abort", 9: "commit"}
PLAIN = 10


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


def transactional_producer() -> KafkaProducer:
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=unique("kazami-test-tx"))
    producer.init_transactions()
    return producer


def send_transaction(producer: KafkaProducer, topic: str, values: list[str], end: str | None) -> None:
    producer.begin_transaction()
    for value in values:
        producer.send(topic, key=b"k", value=value.encode(), partition=0)
    producer.flush()
    if end == "commit":
        producer.commit_transaction()
    elif end == "abort":
        producer.abort_transaction()


@pytest.fixture
def history(kafka_cluster: launcher.ClusterLayout) -> Iterator[tuple[str, KafkaProducer]]:
    """A topic with the history above, and the producer whose transaction is still open."""
    name = create_topic(unique("tx"), partitions=1)
    producer = transactional_producer()
    send_transaction(producer, name, ["a0", "a1", "a2"], "commit")
    send_transaction(producer, name, ["b0", "b1"], "abort")
    send_transaction(producer, name, ["c0", "c1"], "commit")
    produce(name, [(None, b"plain")], partition=0)
    send_transaction(producer, name, ["d0", "d1"], None)
    try:
        yield name, producer
    finally:
        producer.close(timeout=5)


def page(client: Client, topic: str, **params: Any) -> Any:
    response = client.get(f"/api/clusters/local/topics/{topic}/partitions/0/messages", params)
    assert response.status_code == 200, response.content
    return response.json()


def offsets(body: Any) -> list[int]:
    return [m["offset"] for m in body["messages"]]


def test_every_record_and_marker_is_labelled(client: Client, history: tuple[str, KafkaProducer]) -> None:
    name, _ = history
    body = page(client, name, limit=50)
    assert (body["end_offset"], body["last_stable_offset"], body["isolation"]) == (13, 11, "read_uncommitted")
    assert offsets(body) == list(range(13))
    by_offset = {m["offset"]: m for m in body["messages"]}
    assert [o for o, m in by_offset.items() if m["transaction"] == "committed"] == COMMITTED
    assert [o for o, m in by_offset.items() if m["transaction"] == "aborted"] == ABORTED
    assert [o for o, m in by_offset.items() if m["transaction"] == "open"] == OPEN
    assert {o: m["control"] for o, m in by_offset.items() if m["control"]} == MARKERS
    assert by_offset[PLAIN]["transaction"] is None
    assert by_offset[PLAIN]["control"] is None
    assert by_offset[4]["value"] == "b0"
    producers = {m["producer_id"] for o, m in by_offset.items() if o != PLAIN}
    assert len(producers) == 1
    assert producers != {None}
    assert by_offset[3]["key"] is None
    assert by_offset[3]["value"] is None


def test_read_committed_shows_what_such_a_consumer_gets(client: Client, history: tuple[str, KafkaProducer]) -> None:
    name, _ = history
    body = page(client, name, limit=50, isolation="read_committed")
    assert offsets(body) == [*COMMITTED, PLAIN]
    # The same as a real read_committed consumer.
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), isolation_level="read_committed")
    try:
        tp = TopicPartition(name, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen: list[int] = []
        deadline = time.monotonic() + 20
        while len(seen) < 6 and time.monotonic() < deadline:
            seen += [r.offset for r in consumer.poll(timeout_ms=500).get(tp, [])]
    finally:
        consumer.close()
    assert seen == offsets(body)
    bad = client.get(f"/api/clusters/local/topics/{name}/partitions/0/messages", {"isolation": "serializable"})
    assert bad.status_code == 400
    assert "read_committed" in bad.json()["message"]


def test_paging_steps_over_markers_and_hidden_records(client: Client, history: tuple[str, KafkaProducer]) -> None:
    name, _ = history
    first = page(client, name, offset=0, limit=3)
    assert (offsets(first), first["next_offset"], first["prev_offset"]) == ([0, 1, 2], 3, None)
    second = page(client, name, offset=first["next_offset"], limit=3)
    assert (offsets(second), second["prev_offset"], second["next_offset"]) == ([3, 4, 5], 0, 6)
    last = page(client, name, last="1", limit=3)
    assert (offsets(last), last["next_offset"], last["prev_offset"]) == ([10, 11, 12], None, 7)

    committed = {"isolation": "read_committed", "limit": 3}
    one = page(client, name, offset=0, **committed)
    assert (offsets(one), one["next_offset"]) == ([0, 1, 2], 7)
    two = page(client, name, offset=one["next_offset"], **committed)
    assert (offsets(two), two["prev_offset"], two["next_offset"]) == ([7, 8, 10], 0, None)
    # From a marker's or an aborted record's offset, the page starts at the next record the consumer gets.
    assert offsets(page(client, name, offset=3, **committed)) == [7, 8, 10]
    end = page(client, name, last="1", **committed)
    assert (offsets(end), end["prev_offset"]) == ([7, 8, 10], 0)
    # Past the last stable offset a read_committed consumer sees nothing yet: the page says so.
    beyond = page(client, name, offset=12, **committed)
    assert offsets(beyond) == [7, 8, 10]
    assert "last stable offset (11)" in beyond["notes"][0]


def test_markers_open_as_messages_with_neighbours(client: Client, history: tuple[str, KafkaProducer]) -> None:
    name, _ = history
    base = f"/api/clusters/local/topics/{name}/partitions/0/messages"
    marker = client.get(f"{base}/6").json()
    assert (marker["control"], marker["transaction"], marker["prev_offset"], marker["next_offset"]) == (
        "abort",
        None,
        5,
        7,
    )
    record = client.get(f"{base}/4").json()
    assert (record["transaction"], record["value"], record["prev_offset"], record["next_offset"]) == (
        "aborted",
        "b0",
        3,
        5,
    )
    page_html = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/3/")
    assert page_html.status_code == 200
    assert b"Transaction commit marker" in page_html.content
    listing = client.get(f"/clusters/local/topics/{name}/partitions/0/", {"limit": 50}).content.decode()
    assert listing.count("marker-row") == 3
    assert "Last stable offset" in listing


def test_downloads_and_search_honour_the_isolation_level(client: Client, history: tuple[str, KafkaProducer]) -> None:
    name, _ = history
    base = f"/api/clusters/local/topics/{name}/partitions/0/messages"
    assert client.get(f"{base}/4", {"download": "value"}).content == b"b0"
    refused = client.get(f"{base}/4", {"download": "value", "isolation": "read_committed"})
    assert refused.status_code == 404
    assert "aborted transaction" in refused.json()["message"]
    still_open = client.get(f"{base}/11", {"download": "value", "isolation": "read_committed"})
    assert still_open.status_code == 404
    assert "still open" in still_open.json()["message"]
    marker = client.get(f"{base}/3", {"download": "value"})
    assert marker.status_code == 404
    assert "commit marker" in marker.json()["message"]

    search = f"/api/clusters/local/topics/{name}/search/"
    everything = client.get(search, {"q": 'key == "k"'}).json()
    assert {m["offset"]: m["transaction"] for m in everything["messages"]} == {
        **dict.fromkeys(COMMITTED, "committed"),
        **dict.fromkeys(ABORTED, "aborted"),
        **dict.fromkeys(OPEN, "open"),
    }
    aborted = client.get(search, {"q": 'transaction == "aborted"'}).json()
    assert [m["offset"] for m in aborted["messages"]] == ABORTED
    committed = client.get(search, {"q": "", "isolation": "read_committed"}).json()
    assert [m["offset"] for m in committed["messages"]] == [*COMMITTED, PLAIN]
    csv = client.get(f"/clusters/local/topics/{name}/search/", {"format": "csv", "isolation": "read_committed"})
    assert csv.status_code == 200
    assert b"b0" not in csv.content
    assert b"a0" in csv.content


def test_an_open_transaction_settles_when_it_ends(client: Client, history: tuple[str, KafkaProducer]) -> None:
    name, producer = history
    producer.commit_transaction()
    # The coordinator answers EndTxn once the commit is in its log; it writes the marker to the partition just
    # after (a CI run read the page in between: end 13, LSO 11). The page then shows the transaction open.
    deadline = time.monotonic() + 15
    body = page(client, name, limit=50)
    while (body["end_offset"], body["last_stable_offset"]) != (14, 14) and time.monotonic() < deadline:
        time.sleep(0.2)
        body = page(client, name, limit=50)
    assert (body["end_offset"], body["last_stable_offset"]) == (14, 14)
    by_offset = {m["offset"]: m for m in body["messages"]}
    assert [by_offset[o]["transaction"] for o in OPEN] == ["committed", "committed"]
    assert by_offset[13]["control"] == "commit"
    # The last page read_committed holds three records although the last offset is a marker.
    last = page(client, name, last="1", limit=3, isolation="read_committed")
    assert offsets(last) == [PLAIN, *OPEN]
    last_all = page(client, name, last="1", limit=3)
    assert offsets(last_all) == [11, 12, 13]


def test_a_committed_transaction_above_an_open_one_is_settled_by_its_marker(
    client: Client, kafka_cluster: launcher.ClusterLayout
) -> None:
    name = create_topic(unique("txabove"), partitions=1)
    left_open, other = transactional_producer(), transactional_producer()
    try:
        send_transaction(left_open, name, ["open"], None)  # 0, open: the LSO stays at 0
        send_transaction(other, name, ["done"], "commit")  # 1, marker at 2
        send_transaction(other, name, ["dropped"], "abort")  # 3, marker at 4
        body = page(client, name, limit=10)
        assert body["last_stable_offset"] == 0
        assert [(m["offset"], m["transaction"], m["control"]) for m in body["messages"]] == [
            (0, "open", None),
            (1, "committed", None),
            (2, None, "commit"),
            (3, "aborted", None),
            (4, None, "abort"),
        ]
        assert offsets(page(client, name, isolation="read_committed")) == []
    finally:
        left_open.close(timeout=5)
        other.close(timeout=5)


def test_a_read_committed_group_at_the_end_has_no_lag_for_read_committed(
    client: Client, kafka_cluster: launcher.ClusterLayout
) -> None:
    name = create_topic(unique("txlag"), partitions=1)
    producer = transactional_producer()
    try:
        send_transaction(producer, name, ["r0", "r1"], "commit")  # 0-1, commit marker at 2
        send_transaction(producer, name, ["x0"], "abort")  # 3, abort marker at 4
        send_transaction(producer, name, ["r2"], "commit")  # 5, commit marker at 6
    finally:
        producer.close(timeout=5)
    group = unique("txgroup")
    consumer = KafkaConsumer(
        bootstrap_servers=BOOTSTRAP.split(","),
        group_id=group,
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    tp = TopicPartition(name, 0)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen: list[int] = []
        deadline = time.monotonic() + 20
        while len(seen) < 3 and time.monotonic() < deadline:
            seen += [r.offset for r in consumer.poll(timeout_ms=500).get(tp, [])]
        assert seen == [0, 1, 5]
        # As Kafka Streams and every exactly-once pipeline commit: the offset after the last record read.
        consumer.commit({tp: OffsetAndMetadata(seen[-1] + 1, "", -1)})
    finally:
        consumer.close(autocommit=False)
    body = client.get(f"/api/clusters/local/groups/{group}/").json()
    row = body["partitions"][0]
    assert (row["committed_offset"], row["log_end_offset"], row["last_stable_offset"]) == (6, 7, 7)
    assert (row["lag"], row["lag_read_committed"]) == (1, 0)
    assert (body["total_lag"], body["total_lag_read_committed"]) == (1, 0)
    html = client.get(f"/clusters/local/groups/{group}/").content.decode()
    assert "0 for read_committed" in html
    # Judged caught up: nothing waits for it (Burrow's rules see lag 0, not the marker's 1).
    assert 'id="group-status">OK<' in html

    # Behind by the aborted transaction and what follows: only the committed record counts.
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), group_id=group, enable_auto_commit=False)
    try:
        consumer.assign([tp])
        consumer.commit({tp: OffsetAndMetadata(2, "", -1)})
    finally:
        consumer.close(autocommit=False)
    row = client.get(f"/api/clusters/local/groups/{group}/").json()["partitions"][0]
    assert (row["lag"], row["lag_read_committed"]) == (5, 1)
