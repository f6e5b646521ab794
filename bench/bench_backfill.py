"""Backfilling web events: 10 million through ``python -m broker.demo web --backfill``'s code path.

In one run, into fresh topics of 6 partitions (replicas: min(3, brokers), or BENCH_BACKFILL_REPLICAS):

- the backfill (``broker.demo.web.backfill``: events made, encoded as lz4 record batches and sent
  with acks=1 by one process per core) writes COUNT events spread over the last 24 hours;
- the reference, Kafka's own ``kafka-producer-perf-test`` (org.apache.kafka.tools.ProducerPerformance
  from the jars the cluster runs), writes COUNT records of the events' mean value size with lz4 and
  acks=1 (its figure is its own: JVM start left out). Its records are random capital letters, which
  lz4 hardly compresses, while the events shrink to about a third; so it runs a second time with
  ``--payload-file``, drawing its records from 50,000 of the generator's events (same bytes, no keys),
  and a third time so, with batches as large as the backfill's (batch.size 1 MiB, linger.ms 50) where
  its defaults make batches of 16 KiB;
- and, for scale, kafka-python's KafkaProducer sends the same kind of events (made by the same
  generator, lz4, acks=1), a smaller number of them.

The figure is backfill events/s over perf-test records/s (each run). COUNT is 10,000,000, or
BENCH_BACKFILL_EVENTS.
The topics are deleted afterwards (10 million records take a few GB with three replicas).
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import time
from typing import Any

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from bench.common import BASE_PORT, BENCH_VAR, write_result
from broker.demo import web
from broker.local.launcher import JARS, check_java

COUNT = int(os.environ.get("BENCH_BACKFILL_EVENTS", "10000000"))
KAFKA_PYTHON_COUNT = 300_000
PARTITIONS = 6
SPAN_MS = 24 * 3600 * 1000
USERS = 100_000
LARGE_BATCHES = ("batch.size=1048576", "linger.ms=50", "buffer.memory=134217728")


def bootstrap() -> list[str]:
    return [f"127.0.0.1:{BASE_PORT + b}" for b in range(3)]


def fresh_topic(admin: KafkaAdminClient, name: str, replicas: int) -> str:
    topic = f"{name}-{time.strftime('%Y%m%d%H%M%S')}"
    admin.create_topics([NewTopic(topic, PARTITIONS, replicas)])
    admin.wait_for_topics([topic], timeout_ms=60_000)
    from broker.topics.changes import settled_everywhere

    settled_everywhere(admin, [topic], 60, PARTITIONS)
    return topic


def sample_values(count: int = 200_000) -> list[bytes]:
    """Values of the generator's events over a day."""
    traffic = web.WebTraffic(seed=1, users=USERS)
    now = int(time.time() * 1000)
    return [value for _, _, value in traffic.events(count, now - SPAN_MS, now)]


def perf_test(topic: str, count: int, payload: list[str], props: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run kafka-producer-perf-test with ``payload`` (its options: a record size or a payload file) and
    producer ``props`` beyond lz4 and acks=1; returns its final figures."""
    result = subprocess.run(
        [
            check_java(),
            "-Xmx1g",
            "-cp",
            str(JARS / "*"),
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            topic,
            "--num-records",
            str(count),
            "--throughput",
            "-1",
            *payload,
            "--producer-props",
            f"bootstrap.servers={','.join(bootstrap())}",
            "compression.type=lz4",
            "acks=1",
            *props,
        ],
        capture_output=True,
        text=True,
        timeout=3600,
        check=True,
    )
    final = [line for line in result.stdout.splitlines() if re.match(rf"{count} records sent", line)]
    match = re.search(r"([\d.]+) records/sec \(([\d.]+) MB/sec\)", final[-1] if final else "")
    if not match:
        raise RuntimeError(f"unexpected perf-test output: {result.stdout[-2000:]}")
    return {"records_per_s": round(float(match[1])), "mb_per_s": float(match[2]), "summary": final[-1]}


def kafka_python_producer(topic: str, count: int) -> dict[str, Any]:
    """The same events, made the same way, sent through kafka-python's KafkaProducer (lz4, acks=1)."""
    traffic = web.WebTraffic(seed=2, users=USERS)
    keys = traffic.keys
    producer = KafkaProducer(
        bootstrap_servers=bootstrap(), acks=1, compression_type="lz4", linger_ms=5, batch_size=256 * 1024
    )
    now = int(time.time() * 1000)
    started = time.perf_counter()
    sent = 0
    chunks = 20
    for chunk in range(chunks):
        low = now - SPAN_MS + SPAN_MS * chunk // chunks
        high = now - SPAN_MS + SPAN_MS * (chunk + 1) // chunks
        for ts, user, value in traffic.events(count // chunks, low, high):
            producer.send(topic, key=keys[user], value=value, timestamp_ms=ts)
            sent += 1
    producer.flush(timeout=600)
    seconds = time.perf_counter() - started
    producer.close()
    return {"events": sent, "seconds": round(seconds, 2), "events_per_s": round(sent / seconds)}


def run(count: int = COUNT) -> dict[str, Any]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(), bootstrap_timeout_ms=10_000, request_timeout_ms=60_000)
    replicas = int(os.environ.get("BENCH_BACKFILL_REPLICAS", min(3, len(admin.describe_cluster()["brokers"]))))
    workers = max(1, min(os.cpu_count() or 1, 4))
    values = sample_values()
    record_size = round(statistics.fmean(len(v) for v in values))
    payloads = BENCH_VAR / "backfill-payloads.txt"
    payloads.parent.mkdir(parents=True, exist_ok=True)
    payloads.write_bytes(b"\n".join(values[:50_000]))
    topics = []
    try:
        topics.append(ours := fresh_topic(admin, "bench-backfill", replicas))
        written = web.backfill(bootstrap(), ours, count, SPAN_MS, seed=3, users=USERS, workers=workers)
        topics.append(theirs := fresh_topic(admin, "bench-perf-test", replicas))
        reference = perf_test(theirs, count, ["--record-size", str(record_size)])
        topics.append(theirs := fresh_topic(admin, "bench-perf-test-events", replicas))
        same_payloads = perf_test(theirs, count, ["--payload-file", str(payloads)])
        topics.append(theirs := fresh_topic(admin, "bench-perf-test-large-batches", replicas))
        large_batches = perf_test(theirs, count, ["--payload-file", str(payloads)], LARGE_BATCHES)
        topics.append(slow := fresh_topic(admin, "bench-kafka-python", replicas))
        baseline = kafka_python_producer(slow, min(count, KAFKA_PYTHON_COUNT))
    finally:
        if topics:
            admin.delete_topics(topics)
        admin.close()
        payloads.unlink(missing_ok=True)
    result = {
        "events": count,
        "partitions": PARTITIONS,
        "replicas": replicas,
        "workers": workers,
        "record_size_bytes": record_size,
        "backfill_s": round(written.seconds, 2),
        "backfill_events_per_s": round(written.rate),
        "reference_perf_test_records_per_s": reference["records_per_s"],
        "reference_perf_test": reference,
        "reference_perf_test_event_payloads_records_per_s": same_payloads["records_per_s"],
        "reference_perf_test_event_payloads": same_payloads,
        "reference_perf_test_large_batches_records_per_s": large_batches["records_per_s"],
        "reference_perf_test_large_batches": large_batches,
        "reference_kafka_python_producer": baseline,
        "ratio_backfill_to_perf_test": round(written.rate / reference["records_per_s"], 2),
        "ratio_backfill_to_perf_test_event_payloads": round(written.rate / same_payloads["records_per_s"], 2),
        "ratio_backfill_to_perf_test_large_batches": round(written.rate / large_batches["records_per_s"], 2),
        "ratio_kafka_python_to_perf_test": round(baseline["events_per_s"] / reference["records_per_s"], 2),
    }
    write_result("backfill", result)
    return result
