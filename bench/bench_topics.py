"""The topic list with 2,000 topics, through the console.

Reference in the same run: a bare kafka-python admin client fetching the same columns the
straightforward batched way: metadata for every topic, earliest and latest offsets per
leader, log-dir sizes per broker, and min.insync.replicas of every topic in one
DescribeConfigs. The console asks min.insync.replicas only of topics whose ISR has shrunk
(a full ISR cannot be under its minimum), which is why it is faster than the reference: on
this machine that one request for 2,000 topics costs the broker more than all the others.
The figure is console p50 / reference p50. It also reports the requests per listing, which
must not grow with the number of topics.
"""

from __future__ import annotations

import time
import urllib.request
from collections import Counter
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic, OffsetSpec

from bench.common import BASE_PORT, console_server, summarize_ms, time_calls, write_result

TOPICS = 2000
PREFIX = "bench-list-"
SAMPLES = 30


def bootstrap() -> list[str]:
    return [f"127.0.0.1:{BASE_PORT + b}" for b in range(3)]


def ensure_topics(admin: KafkaAdminClient) -> None:
    existing = {t for t in admin.list_topics() if t.startswith(PREFIX)}
    missing = [f"{PREFIX}{i:04d}" for i in range(TOPICS) if f"{PREFIX}{i:04d}" not in existing]
    started = time.perf_counter()
    for chunk in range(0, len(missing), 200):
        names = missing[chunk : chunk + 200]
        admin.create_topics([NewTopic(n, 1, 1) for n in names])
    if missing:
        admin.wait_for_topics(missing, timeout_ms=600_000)
        print(f"created {len(missing)} topics in {time.perf_counter() - started:.0f} s", flush=True)


def run() -> dict[str, Any]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(), bootstrap_timeout_ms=10_000, request_timeout_ms=120_000)
    try:
        ensure_topics(admin)

        def bare() -> None:
            topics = admin.describe_topics()
            tps = [TopicPartition(t["name"], p["partition_index"]) for t in topics for p in t["partitions"]]
            admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.EARLIEST))
            admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
            brokers = [b["broker_id"] for b in admin.describe_cluster()["brokers"]]
            admin.describe_log_dirs(
                topic_partitions={t["name"]: [p["partition_index"] for p in t["partitions"]] for t in topics},
                brokers=brokers,
            )
            admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, t["name"], ["min.insync.replicas"]) for t in topics],
                config_filter="all",
            )

        bare_samples = time_calls(bare, SAMPLES, warmup=2)
        topic_count = len(admin.list_topics())
    finally:
        admin.close()

    requests = _requests_per_listing()
    with console_server(",".join(bootstrap())) as url:

        def get(path: str) -> None:
            with urllib.request.urlopen(url + path, timeout=60) as response:  # noqa: S310 - loopback
                assert response.status == 200
                response.read()

        page_samples = time_calls(
            lambda: get("/clusters/local/topics/?per_page=50&sort=messages&dir=desc"), SAMPLES, warmup=2
        )
        api_samples = time_calls(lambda: get("/api/clusters/local/topics/"), SAMPLES, warmup=2)

    bare_s, api_s, page_s = summarize_ms(bare_samples), summarize_ms(api_samples), summarize_ms(page_samples)
    result = {
        "topics": topic_count,
        "samples": SAMPLES,
        "admin_calls_per_listing": requests,
        "reference_bare_kafka_python_batched_calls": bare_s,
        "console_page_sorted_by_messages": page_s,
        "console_api_all_topics": api_s,
        "ratio_page_p50_to_bare_p50": round(page_s["p50_ms"] / bare_s["p50_ms"], 2),
        "ratio_api_p50_to_bare_p50": round(api_s["p50_ms"] / bare_s["p50_ms"], 2),
        "ratio_api_p99_to_bare_p99": round(api_s["p99_ms"] / bare_s["p99_ms"], 2),
    }
    write_result("topic_list", result)
    return result


def _requests_per_listing() -> dict[str, int]:
    """Admin calls one listing makes, counted in this process (the same code the console runs)."""
    from broker.client.config import ClusterConfig
    from broker.client.connection import ClusterConnection
    from broker.topics import read as topics

    calls: Counter[str] = Counter()
    originals = {}
    for name in (
        "describe_topics",
        "list_partition_offsets",
        "describe_log_dirs",
        "describe_configs",
        "describe_cluster",
    ):
        original = getattr(KafkaAdminClient, name)
        originals[name] = original

        def counted(self: Any, *args: Any, _n: str = name, _o: Any = original, **kwargs: Any) -> Any:
            calls[_n] += 1
            return _o(self, *args, **kwargs)

        setattr(KafkaAdminClient, name, counted)
    conn = ClusterConnection(ClusterConfig("bench", tuple(bootstrap()), timeout=60))
    try:
        topics.get_topics(conn)
    finally:
        for name, original in originals.items():
            setattr(KafkaAdminClient, name, original)
        conn.close()
    return dict(calls)
