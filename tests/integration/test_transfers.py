"""Moving data against the real cluster (issue 32): copies keeping partitions or placed by key, read back by plain
consumers and kcat; export and import round-tripping every byte; a bad import line refused with its number; who may
do it; tasks with progress, cancel and resume."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any
from unittest.mock import ANY

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from broker.local import launcher
from broker.schemas.registry import Registry, RegistryConfig
from broker.schemas.wire import frame
from console.models import AuditEntry
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]

Row = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes], ...], int]


@pytest.fixture
def operator(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in("operator")


def write_source(topic: str, partitions: int, per_partition: int) -> None:
    """Keys (some null), values (some null), repeated headers and set timestamps, in every partition. The
    timestamps are recent: records older than the topic's retention (7 days) roll segments and are deleted."""
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all", linger_ms=5)
    base = (int(time.time()) - 3600) * 1000
    for p in range(partitions):
        for i in range(per_partition):
            key = None if i % 7 == 3 else b"user-%d" % (i % 11)
            # A null value needs a key here: the Python client sends no record with neither.
            value = None if i % 13 == 5 and key is not None else b'{"n":%d,"p":%d}' % (i, p)
            headers = [("trace", b"t%d" % i), ("trace", b"again"), ("bin", bytes([i % 256, 0, 255]))]
            producer.send(topic, key=key, value=value, headers=headers, partition=p, timestamp_ms=base + i)
    producer.flush()
    producer.close()


def read_all(topic: str) -> dict[int, list[Row]]:
    """Every record per partition, in order, as a plain read_committed consumer reads it (to the high watermark)."""
    consumer = KafkaConsumer(
        bootstrap_servers=BOOTSTRAP.split(","), enable_auto_commit=False, isolation_level="read_committed"
    )
    try:
        partitions = sorted(consumer.partitions_for_topic(topic) or [])
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        # Up to the high watermarks: a transaction just committed may not have its markers written yet (the last
        # stable offset, a read_committed consumer's end, still behind them).
        uncommitted = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), isolation_level="read_uncommitted")
        try:
            ends = uncommitted.end_offsets(tps)
        finally:
            uncommitted.close()
        found: dict[int, list[Row]] = {p: [] for p in partitions}
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                found[tp.partition] += [(r.key, r.value, tuple(r.headers), r.timestamp) for r in records]
        return found
    finally:
        consumer.close()


def wait_task(client: Client, task: int, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body: dict[str, Any] = client.get(f"/api/tasks/{task}/").json()
        if body["finished"]:
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.3)


def copy(client: Client, topic: str, body: dict[str, Any]) -> dict[str, Any]:
    started = client.post(f"/api/clusters/local/topics/{topic}/copy/", body, "application/json")
    assert started.status_code == 202, started.content
    assert started["Location"] == f"/api/tasks/{started.json()['id']}/"
    return wait_task(client, started.json()["id"])


def test_a_copy_keeping_partitions_gives_the_same_records_per_partition_in_order(operator: Client) -> None:
    source = create_topic(unique("cp-src"), partitions=3)
    target = create_topic(unique("cp-dst"), partitions=3)
    write_source(source, 3, 200)
    # A record with neither key nor value (kcat -Z sends an empty one as null), which kafka-python cannot send: the
    # copy writes the source's batches whole, so it is copied too.
    subprocess.run(["kcat", "-P", "-b", BOOTSTRAP, "-t", source, "-p", "2", "-Z", "-K:"], input=b":\n", check=True)
    # A transaction aborted in the source: a read_committed consumer is not given its record, nor is the copy.
    aborting = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=unique("cp-abort"))
    aborting.init_transactions()
    aborting.begin_transaction()
    aborting.send(source, key=b"aborted", value=b"never", partition=1)
    aborting.flush()
    aborting.abort_transaction()
    aborting.close()
    assert (None, None, (), ANY) in read_all(source)[2]

    dry = copy(operator, source, {"to_topic": target, "dry_run": True})
    assert dry["status"] == "succeeded"
    assert (dry["progress"]["read"], dry["progress"]["written"]) == (602, 601)
    assert len(dry["progress"]["samples"]) == 10
    assert read_all(target) == {0: [], 1: [], 2: []}  # a dry run writes nothing

    done = copy(operator, source, {"to_topic": target})
    assert done["status"] == "succeeded", done
    assert done["progress"]["guarantee"] == "exactly-once"
    assert (done["progress"]["read"], done["progress"]["written"]) == (602, 601)
    assert done["progress"]["whole_batches"] > 0
    assert done["progress"]["not_sent_count"] == 0
    assert read_all(target) == read_all(source)
    audit = AuditEntry.objects.filter(action="topic.copy", outcome="done").order_by("-at").first()
    assert audit is not None
    assert f"copied (exactly-once) 601 of 602 records read to local/{target}" in audit.result


def test_a_copy_registering_schemas_writes_the_ids_the_targets_registry_gave(
    operator: Client, schema_registry: str
) -> None:
    registry = Registry(RegistryConfig(url=schema_registry, timeout=15))
    source = create_topic(unique("cp-avro"), partitions=1)
    target = create_topic(unique("cp-avro-dst"), partitions=1)
    name = f"Probe_{source.replace('-', '_')}"
    text = json.dumps({"type": "record", "name": name, "fields": [{"name": "n", "type": "long"}]})
    source_id, _ = registry.register(f"{source}-value", text)
    bodies = [b"\x02", b"\x04", b"\x06"]  # Avro longs 1, 2 and 3
    produce(source, [(b"k", frame(source_id, body)) for body in bodies] + [(b"plain", b"not in the wire format")])
    refused = operator.post(
        f"/api/clusters/local/topics/{source}/copy/", {"to_topic": target, "schemas": "rewrite"}, "application/json"
    )
    assert refused.status_code == 400
    assert "schemas must be" in refused.json()["message"]

    done = copy(operator, source, {"to_topic": target, "schemas": "register"})
    assert done["status"] == "succeeded", done
    assert done["progress"]["whole_batches"] == 0  # each record's id looked at
    registered = registry.schema_by_subject(f"{target}-value")
    assert json.loads(registered.text) == json.loads(text)
    values = [value for _, value, *_ in read_all(target)[0]]
    assert values == [frame(registered.id or -1, body) for body in bodies] + [b"not in the wire format"]


def test_a_range_and_a_filter_and_a_copy_placed_by_key_as_javas_partitioner_places_it(operator: Client) -> None:
    source = create_topic(unique("cp-keys"), partitions=2)
    write_source(source, 2, 100)
    target = create_topic(unique("cp-five"), partitions=5)
    done = copy(
        operator,
        source,
        {"to_topic": target, "keep_partition": False, "from": {"offset": 10}, "to": {"offsets": {"1": 50}}},
    )
    assert done["progress"]["written"] == 90 + 40
    copied = read_all(target)
    # Where Kafka's Java producer puts each key: kcat's murmur2_random is that partitioner.
    reference = create_topic(unique("cp-ref"), partitions=5)
    keys = sorted({k for rows in copied.values() for k, *_ in rows if k is not None})
    subprocess.run(
        ["kcat", "-P", "-b", BOOTSTRAP, "-t", reference, "-K:", "-X", "partitioner=murmur2_random"],
        input=b"".join(k + b":x\n" for k in keys),
        check=True,
        timeout=60,
    )
    java = {k: p for p, rows in read_all(reference).items() for k, *_ in rows}
    for p, rows in copied.items():
        for key, *_ in rows:
            if key is not None:
                assert java[key] == p, (key, p)
    assert sum(len(rows) for rows in copied.values()) == 130

    filtered = create_topic(unique("cp-filter"), partitions=2)
    done = copy(operator, source, {"to_topic": filtered, "filter": "value.n >= 95"})
    assert (done["progress"]["read"], done["progress"]["written"]) == (200, 8)  # n 95..99 minus the null values


def test_export_then_import_round_trips_every_byte_and_a_bad_line_is_refused(operator: Client) -> None:
    source = create_topic(unique("ex-src"), partitions=2)
    write_source(source, 2, 60)
    exported = operator.get(f"/api/clusters/local/topics/{source}/export/", {"format": "jsonl"})
    assert exported.status_code == 200
    assert exported["Content-Disposition"] == f'attachment; filename="{source}.jsonl"'
    text = b"".join(exported.streaming_content).decode()  # type: ignore[attr-defined]
    lines = text.splitlines()
    assert len(lines) == 120
    assert json.loads(lines[0])["headers"][0] == {"name": "trace", "value": "t0", "encoding": "text"}

    avro = operator.get(f"/api/clusters/local/topics/{source}/export/", {"format": "avro", "partitions": "1"})
    assert avro.status_code == 200
    import io

    import fastavro

    read_back: list[Any] = list(fastavro.reader(io.BytesIO(b"".join(avro.streaming_content))))  # type: ignore[attr-defined]
    assert [
        (r["key"], r["value"], [(h["name"], h["value"]) for h in r["headers"]], r["timestamp"]) for r in read_back
    ] == [(k, v, list(h), t) for k, v, h, t in read_all(source)[1]]

    target = create_topic(unique("ex-dst"), partitions=2)
    upload = SimpleUploadedFile("records.jsonl", text.encode())
    preview = operator.post(
        f"/api/clusters/local/topics/{target}/import/", {"file": upload, "dry_run": "true", "keep_partition": "true"}
    )
    assert preview.status_code == 200, preview.content
    assert preview.json()["records"] == 120
    upload = SimpleUploadedFile("records.jsonl", text.encode())
    started = operator.post(
        f"/api/clusters/local/topics/{target}/import/",
        {"file": upload, "keep_partition": "true", "keep_timestamp": "true"},
    )
    assert started.status_code == 202, started.content
    done = wait_task(operator, started.json()["id"])
    assert done["status"] == "succeeded", done
    assert read_all(target) == read_all(source)

    bad = "\n".join([lines[0], "{broken", lines[1], '{"value": "x", "value_encoding": "base64"}'])
    refused = operator.post(
        f"/api/clusters/local/topics/{target}/import/", {"file": SimpleUploadedFile("bad.jsonl", bad.encode())}
    )
    assert refused.status_code == 400
    body = refused.json()
    assert body["message"].startswith("2 lines cannot be imported; nothing was written. First: line 2: not JSON")
    assert [b["line"] for b in body["fields"]["bad_lines"]] == [2, 4]
    assert sum(len(rows) for rows in read_all(target).values()) == 120  # nothing more was written


def test_who_may_move_data_and_what_bad_requests_get(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None
) -> None:
    source = create_topic(unique("mv-who"), partitions=1)
    viewer, operator = logged_in("viewer"), logged_in("operator")
    refused = viewer.post(f"/api/clusters/local/topics/{source}/copy/", {"to_topic": "x"}, "application/json")
    assert refused.status_code == 403
    for body, status, words in (
        ({}, 400, "to_topic is required"),
        ({"to_topic": source}, 400, "cannot be copied onto itself"),
        ({"to_topic": "no-such-topic-here"}, 404, "no-such-topic-here"),
        ({"to_topic": "x", "from": {"offset": -1}}, 400, "from"),
        ({"to_topic": "x", "rate": 0}, 400, "rate"),
        ({"to_topic": "x", "filter": "value.n >>> 1"}, 400, "filter"),
        ({"to_topic": "x", "to_cluster": "nowhere"}, 404, "nowhere"),
    ):
        answer = operator.post(f"/api/clusters/local/topics/{source}/copy/", body, "application/json")
        assert answer.status_code == status, (body, answer.content)
        assert words in answer.json()["message"], (body, answer.json())
    narrow = create_topic(unique("mv-narrow"), partitions=1)
    wide = create_topic(unique("mv-wide"), partitions=3)
    produce(wide, [(None, b"x")], partition=2)
    too_few = operator.post(f"/api/clusters/local/topics/{wide}/copy/", {"to_topic": narrow}, "application/json")
    assert too_few.status_code == 400
    assert "keep_partition false" in too_few.json()["message"]
    assert operator.get("/api/tasks/999999/").status_code == 404
    assert operator.get(f"/api/clusters/local/topics/{source}/export/", {"format": "xml"}).status_code == 400
    assert operator.post(f"/api/clusters/local/topics/{source}/import/", {}).status_code == 400


def test_a_copy_at_a_rate_can_be_cancelled_and_resumed_from_its_saved_position(operator: Client) -> None:
    source = create_topic(unique("cp-slow"), partitions=1)
    target = create_topic(unique("cp-slow-dst"), partitions=1)
    write_source(source, 1, 300)
    started = operator.post(
        f"/api/clusters/local/topics/{source}/copy/", {"to_topic": target, "rate": 50}, "application/json"
    ).json()
    time.sleep(2.5)
    cancelled = operator.post(f"/api/tasks/{started['id']}/cancel/")
    assert cancelled.status_code == 200
    first = wait_task(operator, started["id"])
    assert first["status"] == "cancelled", first
    saved = first["progress"]["saved_positions"]["0"]
    assert 0 < saved < 300
    assert sum(len(r) for r in read_all(target).values()) == saved  # exactly-once: what was saved, no more
    resumed = operator.post(f"/api/tasks/{started['id']}/resume/")
    assert resumed.status_code == 202, resumed.content
    second = wait_task(operator, resumed.json()["id"])
    assert second["status"] == "succeeded"
    assert second["resumed_from"] == started["id"]
    assert read_all(target) == read_all(source)


def test_a_connect_sinks_dead_letters_are_surveyed_and_redriven_to_their_origin(
    connect_worker: str, clusters_reset: None
) -> None:
    from console.config import connect
    from tests.integration.connect_files import worker_folder
    from tests.integration.kafka_helpers import until

    connect.reset_for_tests()
    admin = logged_in("admin")
    origin = create_topic(unique("dl-origin"), partitions=2)
    dlq = create_topic(unique("dl-queue"), partitions=1)
    name = unique("dl-sink")
    config = {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": "1",
        "topics": origin,
        "file": str(worker_folder() / f"{name}.txt"),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    made = admin.post(
        "/api/clusters/local/connectors/", {"connect": "local", "name": name, "config": config}, "application/json"
    )
    assert made.status_code == 201, made.content
    try:
        producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all")
        for p in range(2):
            for i in range(5):
                good = i % 2 == 0
                value = b'{"ok": %d}' % i if good else b"not json %d" % i  # the sink's converter fails on these
                producer.send(origin, key=b"k%d" % i, value=value, partition=p, headers=[("mine", b"kept")])
        producer.flush()
        producer.close()
        until("the dead letters", lambda: sum(len(r) for r in read_all(dlq).values()) == 4, timeout=90)

        surveyed = admin.get(f"/api/clusters/local/topics/{dlq}/dead-letters/").json()
        assert surveyed["scheme"] == "kafka-connect"
        assert sorted((o["topic"], o["partition"], o["count"]) for o in surveyed["origins"]) == [
            (origin, 0, 2),
            (origin, 1, 2),
        ]
        assert surveyed["origins"][0]["samples"][0]["value"].startswith("not json")
        assert surveyed["origins"][0]["errors"]  # what Connect said went wrong
    finally:
        admin.delete(f"/api/clusters/local/connectors/local/{name}/")

    before = {p: len(rows) for p, rows in read_all(origin).items()}
    started = admin.post(
        f"/api/clusters/local/topics/{dlq}/redrive/",
        {"origins": [{"topic": origin, "partition": 1}]},
        "application/json",
    )
    assert started.status_code == 202, started.content
    done = wait_task(admin, started.json()["id"])
    assert done["status"] == "succeeded", done
    assert done["progress"]["by_origin"] == {f"{origin}/1": 2}
    after = read_all(origin)
    assert {p: len(rows) for p, rows in after.items()} == {0: before[0], 1: before[1] + 2}
    sent_back = after[1][-2:]
    assert [(k, v) for k, v, _, _ in sent_back] == [(b"k1", b"not json 1"), (b"k3", b"not json 3")]
    assert all(h == (("mine", b"kept"),) for _, _, h, _ in sent_back)  # Connect's error headers left out


def test_the_move_data_page_starts_a_copy_and_its_task_page_follows_it(operator: Client) -> None:
    source = create_topic(unique("pg-src"), partitions=1)
    target = create_topic(unique("pg-dst"), partitions=1)
    write_source(source, 1, 30)
    page = operator.get(f"/clusters/local/topics/{source}/move/")
    assert page.status_code == 200
    html = page.content.decode()
    for part in ('id="export"', 'id="copy"', 'id="import"', 'id="dead-letters"', 'aria-current="page">Move data'):
        assert part in html
    started = operator.post(
        f"/clusters/local/topics/{source}/move/",
        {"action": "copy", "to_topic": target, "to_cluster": "local", "keep_partition": "on", "keep_timestamp": "on"},
    )
    assert started.status_code == 302
    task_url = started["Location"]
    task = int(task_url.rstrip("/").rsplit("/", 1)[1])
    assert wait_task(operator, task)["status"] == "succeeded"
    shown = operator.get(task_url).content.decode()
    assert 'id="task-status">succeeded' in shown
    assert "30 records copied of 30 read" in shown
    assert read_all(target) == read_all(source)
    bad = operator.post(f"/clusters/local/topics/{source}/move/", {"action": "copy", "to_topic": source})
    assert bad.status_code == 400
    assert "cannot be copied onto itself" in bad.content.decode()
    viewer = logged_in("viewer").get(f"/clusters/local/topics/{source}/move/").content.decode()
    assert 'id="export"' in viewer
    assert 'id="copy"' not in viewer
