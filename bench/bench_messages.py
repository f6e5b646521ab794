"""A page of 50 messages at a random offset of a 1,000,000-message topic, through the console.

Reference in the same run: a bare kafka-python consumer (created once, as a tool that keeps its
connection would) doing assign / seek / poll for the same 50 messages at the same offsets. The
figure is console p50 / bare p50 (and p99 / p99): what metadata, offsets, decoding, JSON or
HTML and HTTP add to the fetch itself. The three are measured interleaved: each offset is read
by the bare consumer, the API and the page in turn (the order rotating), so that on a shared
machine all three meet the same load.
"""

from __future__ import annotations

import random
import time
import urllib.request
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic, OffsetSpec

from bench.common import BASE_PORT, console_server, ratios, summarize_ms, write_result

TOPIC = "bench-1m"
PARTITIONS = 6
MESSAGES = 1_000_000
PAGE = 50
SAMPLES = 200


def bootstrap() -> list[str]:
    return [f"127.0.0.1:{BASE_PORT + b}" for b in range(3)]


def ensure_topic() -> dict[int, int]:
    """The topic with at least MESSAGES messages; returns {partition: end offset}."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(), bootstrap_timeout_ms=10_000, request_timeout_ms=60_000)
    try:
        if TOPIC not in admin.list_topics():
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
            admin.wait_for_topics([TOPIC], timeout_ms=60_000)
        ends = _ends(admin)
        missing = MESSAGES - sum(ends.values())
        if missing > 0:
            started = time.perf_counter()
            producer = KafkaProducer(
                bootstrap_servers=bootstrap(), acks=1, linger_ms=50, batch_size=256 * 1024, compression_type="lz4"
            )
            body = b'{"user_id":"u%05d","event":"view","page":"/products/%d","ms":%d}'
            for i in range(missing):
                producer.send(TOPIC, key=b"u%05d" % (i % 50_000), value=body % (i % 50_000, i % 997, i))
            producer.flush(timeout=600)
            producer.close()
            print(f"filled {missing} messages in {time.perf_counter() - started:.0f} s", flush=True)
            ends = _ends(admin)
        return ends
    finally:
        admin.close()


def _ends(admin: KafkaAdminClient) -> dict[int, int]:
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    answer = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
    return {tp.partition: o.offset for tp, o in answer.items()}


def run() -> dict[str, Any]:
    ends = ensure_topic()
    rng = random.Random(42)
    targets = []
    for _ in range(SAMPLES + 5):
        p = rng.randrange(PARTITIONS)
        targets.append((p, rng.randrange(0, max(1, ends[p] - PAGE))))

    consumer = KafkaConsumer(bootstrap_servers=bootstrap(), enable_auto_commit=False, fetch_max_wait_ms=100)

    def bare(p: int, offset: int) -> None:
        tp = TopicPartition(TOPIC, p)
        consumer.assign([tp])
        consumer.seek(tp, offset)
        got = 0
        while got < PAGE:
            got += len(consumer.poll(timeout_ms=1000, max_records=PAGE - got).get(tp, []))

    try:
        with console_server(",".join(bootstrap())) as url:

            def api(p: int, offset: int) -> None:
                path = f"/api/clusters/local/topics/{TOPIC}/partitions/{p}/messages?offset={offset}&limit={PAGE}"
                with urllib.request.urlopen(url + path, timeout=30) as response:  # noqa: S310 - loopback
                    assert response.status == 200
                    response.read()

            def html(p: int, offset: int) -> None:
                path = f"/clusters/local/topics/{TOPIC}/partitions/{p}/?offset={offset}&limit={PAGE}"
                with urllib.request.urlopen(url + path, timeout=30) as response:  # noqa: S310 - loopback
                    assert response.status == 200
                    response.read()

            bare_samples, api_samples, page_samples = _interleaved([bare, api, html], targets)
    finally:
        consumer.close()

    bare_s, api_s, page_s = summarize_ms(bare_samples), summarize_ms(api_samples), summarize_ms(page_samples)
    result = {
        "topic_messages": sum(ends.values()),
        "partitions": PARTITIONS,
        "page_size": PAGE,
        "samples": SAMPLES,
        "reference_bare_kafka_python_fetch": bare_s,
        "console_api": api_s,
        "console_page": page_s,
        **ratios("api", api_s, bare_s),
        **ratios("page", page_s, bare_s),
    }
    write_result("message_page", result)
    return result


def _interleaved(fns: list[Any], targets: list[tuple[int, int]]) -> list[list[float]]:
    """Each of ``fns`` timed on every target after the first five (a warm-up), in turn, the order rotating
    from one target to the next; the samples of each, in seconds."""
    for p, o in targets[:5]:
        for fn in fns:
            fn(p, o)
    samples: list[list[float]] = [[] for _ in fns]
    for i, (p, o) in enumerate(targets[5:]):
        for k in range(len(fns)):
            which = (i + k) % len(fns)
            started = time.perf_counter()
            fns[which](p, o)
            samples[which].append(time.perf_counter() - started)
    return samples
