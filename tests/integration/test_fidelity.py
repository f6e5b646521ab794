"""The bytes as written (issue 27): what the console's API says and stores, checked through independent clients
(kcat, built on librdkafka, and plain kafka-python consumers) against the real test cluster.

- read_committed single messages and downloads refuse what a read_committed consumer is not given: records at or
  above the last stable offset (behind an open transaction), aborted records;
- the produce API keeps headers exactly as sent and stores a key without ``key_format`` as text, while the
  produce page's ``name=value`` lines stay text lines (stripped, # comments skipped);
- find-by-key ``auto`` finds keys kcat placed with librdkafka's fnv1a (Sarama's hash), murmur2_random (Java's)
  and consistent_random (librdkafka's default, CRC32), and a miss suggests ``partitioner=all``.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from broker.local import launcher
from broker.messages.partitioners import placements
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


def kcat_read(topic: str, isolation: str = "read_committed", partition: int | None = None) -> list[dict[str, Any]]:
    """Every record kcat is given from the beginning to the end (-e), as its -J JSON lines (partition, offset,
    key, payload, headers as [name, value, name, value, ...])."""
    where = ["-p", str(partition)] if partition is not None else []
    options = ["-X", f"isolation.level={isolation}", "-X", "socket.timeout.ms=10000"]
    done = subprocess.run(
        ["kcat", "-C", "-b", BOOTSTRAP, "-t", topic, *where, "-o", "beginning", "-e", "-J", "-q", *options],
        capture_output=True,
        check=True,
        timeout=60,
    )
    return [json.loads(line) for line in done.stdout.decode("utf-8", "surrogateescape").splitlines() if line.strip()]


def transactional_producer() -> KafkaProducer:
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=unique("fidelity-tx"))
    producer.init_transactions()
    return producer


# ---------------------------------------------------------------- 1. read_committed above the LSO


@pytest.fixture
def behind_open(kafka_cluster: launcher.ClusterLayout) -> Iterator[str]:
    """One partition: 0 committed, 1 its marker, 2 plain, 3-4 aborted with the marker at 5, 6 a transaction left
    open (the LSO stays at 6), 7 a plain record after it, 8 a record of another producer's transaction that
    committed (its marker at 9): 7 and 8 are above the LSO."""
    name = create_topic(unique("fid-lso"), partitions=1)
    stays_open, other = transactional_producer(), transactional_producer()
    try:
        stays_open.begin_transaction()
        stays_open.send(name, key=b"k", value=b"committed", partition=0)
        stays_open.flush()
        stays_open.commit_transaction()
        produce(name, [(b"k", b"plain-below")], partition=0)
        stays_open.begin_transaction()
        stays_open.send(name, key=b"k", value=b"aborted-0", partition=0)
        stays_open.send(name, key=b"k", value=b"aborted-1", partition=0)
        stays_open.flush()
        stays_open.abort_transaction()
        stays_open.begin_transaction()
        stays_open.send(name, key=b"k", value=b"open", partition=0)
        stays_open.flush()
        produce(name, [(b"k", b"plain-above")], partition=0)
        other.begin_transaction()
        other.send(name, key=b"k", value=b"committed-above", partition=0)
        other.flush()
        other.commit_transaction()
        yield name
    finally:
        stays_open.close(timeout=5)
        other.close(timeout=5)


def test_read_committed_downloads_refuse_what_a_read_committed_consumer_is_not_given(
    client: Client, behind_open: str
) -> None:
    name = behind_open
    base = f"/api/clusters/local/topics/{name}/partitions/0/messages"
    everything = client.get(base, {"limit": 50}).json()
    by_offset = {m["offset"]: m for m in everything["messages"]}
    labels = [(m["offset"], m["transaction"], m["control"]) for m in everything["messages"]]
    assert everything["last_stable_offset"] == 6, labels
    assert (by_offset[7]["value"], by_offset[7]["transaction"]) == ("plain-above", None)
    assert (by_offset[8]["value"], by_offset[8]["transaction"]) == ("committed-above", "committed")

    # What independent read_committed consumers are given: kcat (librdkafka) and kafka-python.
    seen_by_kcat = [(r["offset"], r["payload"]) for r in kcat_read(name)]
    assert seen_by_kcat == [(0, "committed"), (2, "plain-below")]
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), isolation_level="read_committed")
    try:
        tp = TopicPartition(name, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen: list[int] = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            seen += [r.offset for r in consumer.poll(timeout_ms=300).get(tp, [])]
    finally:
        consumer.close()
    assert seen == [0, 2]
    page = client.get(base, {"limit": 50, "isolation": "read_committed"}).json()
    assert [m["offset"] for m in page["messages"]] == seen

    committed = {"isolation": "read_committed"}
    for offset in range(10):
        download = client.get(f"{base}/{offset}", {"download": "value", **committed})
        single = client.get(f"{base}/{offset}", committed)
        if offset in seen:
            assert download.status_code == 200, (offset, download.content)
            assert download.content == by_offset[offset]["value"].encode()
            assert single.status_code == 200
            assert single.json()["value"] == by_offset[offset]["value"]
            continue
        assert download.status_code == 404, (offset, download.content)
        assert single.status_code == 404, (offset, single.content)
        assert download.json()["message"] == f"Nothing to download: {single.json()['message']}"
        message = download.json()["message"]
        if offset in (7, 8):
            assert "last stable offset (6)" in message
            assert "read_committed consumer is not given it" in message
        elif offset in (3, 4):
            assert "aborted transaction" in message
        elif offset == 6:
            assert "still open" in message
        else:
            assert "marker" in message
    # Read as written (read_uncommitted, the default), every record downloads.
    assert client.get(f"{base}/7", {"download": "value"}).content == b"plain-above"
    assert client.get(f"{base}/8", {"download": "value"}).content == b"committed-above"
    assert client.get(f"{base}/7").json()["value"] == "plain-above"


# ---------------------------------------------------------------- 2. produce: the bytes as sent


HEADERS = [
    ["#trace", "  two spaces  "],
    ["tabs", "\tx\t"],
    ["empty", ""],
    ["dup", "first"],
    [" spaced name ", "v"],
    ["dup", "second"],
    ["a=b", "line\nbreak"],
]


def test_the_produce_api_keeps_headers_exactly_and_a_key_without_format_as_text(client: Client) -> None:
    name = create_topic(unique("fid-produce"), partitions=1)
    api = f"/api/clusters/local/topics/{name}/produce/"
    sent = client.post(
        api, json.dumps({"key": "k-ü 1", "value": "v", "headers": HEADERS}), content_type="application/json"
    )
    assert sent.status_code == 201, sent.content
    as_object = client.post(
        api,
        json.dumps({"key": "  spaced key  ", "value": "w", "headers": {"#only": " x "}}),
        content_type="application/json",
    )
    assert as_object.status_code == 201, as_object.content
    no_key = client.post(api, json.dumps({"value": "nokey"}), content_type="application/json")
    assert no_key.status_code == 201
    null_key = client.post(api, json.dumps({"key": None, "value": "nullkey"}), content_type="application/json")
    assert null_key.status_code == 201
    base64_values = client.post(
        api,
        json.dumps({"key": "b", "value": "z", "headers": [["#bin", "AP8g"]], "header_format": "base64"}),
        content_type="application/json",
    )
    assert base64_values.status_code == 201, base64_values.content

    # What the broker holds, as kcat reads it (-J: headers as a flat [name, value, ...] list).
    held = kcat_read(name)
    assert [r["offset"] for r in held] == [0, 1, 2, 3, 4]
    first = held[0]
    assert first["key"] == "k-ü 1"
    assert first["headers"] == [x for pair in HEADERS for x in pair]
    assert (held[1]["key"], held[1]["headers"]) == ("  spaced key  ", ["#only", " x "])
    assert held[2]["key"] is None
    assert held[3]["key"] is None
    # And byte for byte, as a plain kafka-python consumer reads them.
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","))
    try:
        tp = TopicPartition(name, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        records: list[Any] = []
        deadline = time.monotonic() + 20
        while len(records) < 5 and time.monotonic() < deadline:
            records += consumer.poll(timeout_ms=500).get(tp, [])
    finally:
        consumer.close()
    assert records[0].key == "k-ü 1".encode()
    assert [(n, v) for n, v in records[0].headers] == [(n, v.encode()) for n, v in HEADERS]
    assert records[2].key is None
    assert records[4].headers == [("#bin", b"\x00\xff ")]

    # A header item that is not a pair of texts, or has no name, is refused with a readable 400.
    for bad in ([["only-name"]], [["n", 1]], [["", "v"]], ["n=v"]):
        refused = client.post(api, json.dumps({"value": "x", "headers": bad}), content_type="application/json")
        assert refused.status_code == 400, bad
        assert "headers: item 1" in refused.json()["message"]


def test_the_produce_page_reads_header_lines_as_text(client: Client) -> None:
    """The page's text area stays as documented: one name=value per line, names and values stripped, blank
    lines and # comments skipped, a name may repeat."""
    name = create_topic(unique("fid-form"), partitions=1)
    page = client.post(
        f"/clusters/local/topics/{name}/produce/",
        {
            "key": "page key",
            "key_format": "text",
            "value": "v",
            "value_format": "text",
            "headers": "  trace = abc  \n\n# a comment\ndup=1\ndup=2\n",
            "header_format": "text",
        },
    )
    assert page.status_code == 200
    assert b'id="produced"' in page.content
    held = kcat_read(name)
    assert [(r["key"], r["headers"]) for r in held] == [("page key", ["trace", "abc", "dup", "1", "dup", "2"])]


# ---------------------------------------------------------------- 4. find-by-key: the partitioners kcat has


KCAT_PARTITIONERS = {"fnv1a": "fnv1a", "murmur2_random": "murmur2", "consistent_random": "crc32"}


def test_find_by_key_auto_finds_keys_every_default_partitioner_placed(client: Client) -> None:
    name = create_topic(unique("fid-keys"), partitions=6)
    keys = {kcat_name: [f"{kcat_name}-user-{i}" for i in range(40)] for kcat_name in KCAT_PARTITIONERS}
    timeout = ["-X", "socket.timeout.ms=10000"]
    for kcat_name, names in keys.items():
        subprocess.run(
            ["kcat", "-P", "-b", BOOTSTRAP, "-t", name, "-K:", "-X", f"partitioner={kcat_name}", *timeout],
            input="".join(f"{k}:from-{k}\n" for k in names).encode(),
            check=True,
            timeout=60,
        )
    # Where kcat put each key, read back with kcat itself.
    placed_by_kcat = {r["key"]: r["partition"] for r in kcat_read(name, "read_uncommitted")}
    assert len(placed_by_kcat) == 120
    for kcat_name, ours in KCAT_PARTITIONERS.items():
        # The console's hash gives every key the partition librdkafka gave it.
        assert all(placements(k.encode(), 6)[ours] == placed_by_kcat[k] for k in keys[kcat_name]), kcat_name

    # The keys only FNV-1a places where they are: auto read neither murmur2's nor CRC32's partition for them.
    only_fnv = [
        k
        for k in keys["fnv1a"]
        if placed_by_kcat[k] not in (placements(k.encode(), 6)["murmur2"], placements(k.encode(), 6)["crc32"])
    ]
    assert len(only_fnv) >= 10

    api = f"/api/clusters/local/topics/{name}/find-key/"
    found = 0
    for kcat_name, ours in KCAT_PARTITIONERS.items():
        for key in keys[kcat_name]:
            body = client.get(api, {"key": key}).json()
            assert [(m["partition"], m["value"]) for m in body["messages"]] == [(placed_by_kcat[key], f"from-{key}")]
            assert ours in body["found_in"][str(placed_by_kcat[key])]
            assert body["searched"] == sorted(set(body["placements"].values()))
            assert body["suggestion"] is None
            found += 1
    assert found == 120

    # A miss says what the page offers: every partition, with partitioner=all.
    missing = client.get(api, {"key": "nobody-wrote-this"}).json()
    assert missing["messages"] == []
    assert "partitioner=all" in missing["suggestion"]
    assert (
        f"/api/clusters/local/topics/{name}/find-key/?key=nobody-wrote-this&partitioner=all" in (missing["suggestion"])
    )
    one = client.get(api, {"key": only_fnv[0], "partitioner": "murmur2"}).json()
    assert one["messages"] == []
    assert "the murmur2 partitioner puts it" in one["suggestion"]
    everywhere = client.get(api, {"key": only_fnv[0], "partitioner": "all"}).json()
    assert [m["partition"] for m in everywhere["messages"]] == [placed_by_kcat[only_fnv[0]]]
    assert everywhere["suggestion"] is None
    fnv_only = client.get(api, {"key": only_fnv[0], "partitioner": "fnv1a"}).json()
    assert fnv_only["searched"] == [placed_by_kcat[only_fnv[0]]]
    assert "FNV-1a" in fnv_only["reason"]
    html = client.get(f"/clusters/local/topics/{name}/find-key/", {"key": only_fnv[0]}).content.decode()
    assert f"Found in partition {placed_by_kcat[only_fnv[0]]}: where fnv1a puts it." in html
