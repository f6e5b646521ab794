"""A topic's messages across partitions (``GET /api/clusters/<c>/topics/<t>/messages/`` and its page), against the
real cluster, checked against kcat reading the same topic."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaProducer

from broker.local import launcher
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]
BASE_MS = 1_790_000_000_000
PARTITIONS = 3


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


def kcat_all(topic: str, isolation: str = "read_uncommitted") -> list[dict[str, Any]]:
    """Every record of the topic as kcat (librdkafka) is given it: partition, offset, ts, key, payload."""
    done = subprocess.run(
        [
            "kcat",
            "-C",
            "-b",
            BOOTSTRAP,
            "-t",
            topic,
            "-o",
            "beginning",
            "-e",
            "-J",
            "-q",
            "-X",
            f"isolation.level={isolation}",
        ],
        capture_output=True,
        check=True,
        timeout=60,
    )
    return [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def spread(kafka_cluster: launcher.ClusterLayout) -> str:
    """Three partitions written in turn, one record a second of record time: 0, 1, 2, 0, 1, 2, ... and partition 2
    stops after six, so the newest pages hold partitions 0 and 1 only and the oldest all three."""
    name = create_topic(unique("merged"), partitions=PARTITIONS)
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all")
    try:
        for i in range(40):
            p = i % PARTITIONS
            if p == 2 and i > 17:
                continue
            value = json.dumps({"n": i, "pad": "x" * (i % 5)}).encode()
            producer.send(name, key=f"k{i}".encode(), value=value, partition=p, timestamp_ms=BASE_MS + i * 1000)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)
    return name


def merged(client: Client, topic: str, status: int = 200, **params: Any) -> Any:
    response = client.get(f"/api/clusters/local/topics/{topic}/messages/", params)
    assert response.status_code == status, response.content
    return response.json()


def walk(client: Client, topic: str, **params: Any) -> list[list[tuple[int, int]]]:
    """Every page from the first, following next_cursor."""
    pages, cursor = [], None
    while True:
        body = merged(client, topic, **params, **({"cursor": cursor} if cursor else {}))
        pages.append([(m["partition"], m["offset"]) for m in body["messages"]])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 50, "the cursor does not move"


def test_newest_first_pages_through_every_record_once_in_kcats_time_order(client: Client, spread: str) -> None:
    given = kcat_all(spread)
    assert len(given) == 33
    by_time = sorted(given, key=lambda r: (-r["ts"], r["partition"]))
    pages = walk(client, spread, limit=7)
    assert [len(p) for p in pages] == [7, 7, 7, 7, 5]
    assert [spot for page in pages for spot in page] == [(r["partition"], r["offset"]) for r in by_time]
    first = merged(client, spread, limit=7)
    assert first["order"] == "newest"
    assert first["prev_cursor"] is None  # nothing newer than the newest
    assert first["messages"][0]["value"] == json.dumps({"n": 39, "pad": "xxxx"})
    assert first["messages"][0]["timestamp"] == BASE_MS + 39_000
    assert {m["partition"] for m in first["messages"]} == {0, 1}  # partition 2 stopped early
    # The page before the second one is the first one again.
    second = merged(client, spread, limit=7, cursor=first["next_cursor"])
    back = merged(client, spread, limit=7, cursor=second["prev_cursor"])
    assert [(m["partition"], m["offset"]) for m in back["messages"]] == pages[0]


def test_oldest_first_holds_a_record_of_every_partition_and_ends(client: Client, spread: str) -> None:
    by_time = sorted(kcat_all(spread), key=lambda r: (r["ts"], r["partition"]))
    pages = walk(client, spread, order="oldest", limit=10)
    assert [spot for page in pages for spot in page] == [(r["partition"], r["offset"]) for r in by_time]
    assert set(p for p, _ in pages[0]) == {0, 1, 2}
    last = merged(
        client, spread, order="oldest", limit=10, cursor=merged(client, spread, order="oldest", limit=30)["next_cursor"]
    )
    assert len(last["messages"]) == 3
    assert last["next_cursor"] is None


def test_a_time_and_a_partition_filter_narrow_the_merge(client: Client, spread: str) -> None:
    at = BASE_MS + 21_000  # record 21; there is no record 20 (partition 2 has none after 17)
    newest = merged(client, spread, timestamp=str(at), limit=4)["messages"]
    assert [json.loads(m["value"])["n"] for m in newest] == [21, 19, 18, 17]
    oldest = merged(client, spread, order="oldest", timestamp="2026-09-21T14:13:40.500Z", limit=2)["messages"]
    assert all(m["timestamp"] >= BASE_MS + 20_500 for m in oldest)
    assert [json.loads(m["value"])["n"] for m in oldest] == [21, 22]
    only = merged(client, spread, partitions="2", limit=50)
    assert only["partitions"] == [2]
    assert [json.loads(m["value"])["n"] for m in only["messages"]] == [17, 14, 11, 8, 5, 2]
    two = merged(client, spread, partitions="0,2", order="oldest", limit=4)["messages"]
    assert [(m["partition"], json.loads(m["value"])["n"]) for m in two] == [(0, 0), (2, 2), (0, 3), (2, 5)]


def test_bad_input_is_refused_with_a_reason(client: Client, spread: str) -> None:
    assert "no partition 7" in merged(client, spread, 404, partitions="0,7")["message"]
    assert "cursor" in merged(client, spread, 400, cursor="page-2")["message"]
    assert "newest or oldest" in merged(client, spread, 400, order="sideways")["message"]
    assert "timestamp" in merged(client, spread, 400, timestamp="yesterday")["message"]
    assert merged(client, "no-such-topic-anywhere", 404)["error"]
    page = client.get(f"/clusters/local/topics/{spread}/messages/", {"cursor": "page-2"})
    assert page.status_code == 400
    assert "cursor" in page.content.decode()


def test_read_committed_leaves_out_what_such_a_consumer_is_not_given(client: Client, kafka_cluster: Any) -> None:
    name = create_topic(unique("merged-tx"), partitions=2)
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=unique("merged-tx"))
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(name, value=b"kept", partition=0)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(name, value=b"dropped", partition=1)
        producer.flush()  # written, then aborted (unflushed records would never reach the log)
        producer.abort_transaction()
    finally:
        producer.close(timeout=10)
    everything = merged(client, name)["messages"]
    assert sorted((m["value"], m["transaction"]) for m in everything) == [("dropped", "aborted"), ("kept", "committed")]
    assert all(m["control"] is None for m in everything)  # markers belong to the per-partition view
    committed = merged(client, name, isolation="read_committed")["messages"]
    assert [m["value"] for m in committed] == [r["payload"] for r in kcat_all(name, "read_committed")] == ["kept"]


def test_the_page_draws_the_rows_with_their_partitions_and_opens_one_in_place(client: Client, spread: str) -> None:
    html = client.get(f"/clusters/local/topics/{spread}/messages/", {"limit": "5"}).content.decode()
    assert 'id="messages"' in html
    assert html.count('class="message-row"') == 5
    assert '<div class="muted small">p1</div>' in html
    assert 'rel="next"' in html
    assert "newest first" in html
    expanded = client.get(f"/clusters/local/topics/{spread}/partitions/0/offsets/0/", {"part": "expanded"})
    assert expanded.status_code == 200
    body = expanded.content.decode()
    assert body.lstrip().startswith("<tr")
    assert 'class="expanded-row"' in body
    assert "&quot;n&quot;: 0" in body
    empty = create_topic(unique("merged-empty"), partitions=2)
    assert (
        "No messages: the topic is empty." in client.get(f"/clusters/local/topics/{empty}/messages/").content.decode()
    )
