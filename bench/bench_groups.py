"""The full lag table of 1,000 consumer groups (then 5,000) through the console.

Reference in the same run: Kafka's own `kafka-consumer-groups --describe --all-groups`
(org.apache.kafka.tools.consumer.group.ConsumerGroupCommand from the same jars the embedded
cluster runs, JVM start included, as a user runs it). The figure is console / tool, for the
API (every group, every partition, with lag in time and status) and for the list page.
"""

from __future__ import annotations

import statistics
import subprocess
import time
import urllib.request
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import CoordinatorNotAvailableError, NotCoordinatorError, TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata

from bench.common import BASE_PORT, console_server, write_result
from broker.local.launcher import JARS, check_java

TOPIC = "bench-groups"
PARTITIONS = 3
PREFIX = "bench-group-"
SIZES = (1000, 5000)
RUNS = 5


def bootstrap() -> list[str]:
    return [f"127.0.0.1:{BASE_PORT + b}" for b in range(3)]


def ensure_groups(admin: KafkaAdminClient, count: int) -> None:
    from contextlib import suppress

    from kafka import KafkaProducer
    from kafka.admin import OffsetSpec

    with suppress(TopicAlreadyExistsError):
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    admin.wait_for_topics([TOPIC], timeout_ms=60_000)
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    if sum(o.offset for o in admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST)).values()) == 0:
        producer = KafkaProducer(bootstrap_servers=bootstrap(), linger_ms=20)
        for i in range(300 * PARTITIONS):
            producer.send(TOPIC, value=b"task %d" % i, partition=i % PARTITIONS)
        producer.close()
    existing = {g["group_id"] for g in admin.list_groups() if g["group_id"].startswith(PREFIX)}
    started = time.perf_counter()
    for i in range(count):
        group = f"{PREFIX}{i:05d}"
        if group not in existing:
            offsets = {
                TopicPartition(TOPIC, p): OffsetAndMetadata((i * 7 + p) % 300, "", -1) for p in range(PARTITIONS)
            }
            for attempt in range(30):  # the first group makes Kafka create __consumer_offsets
                try:
                    admin.alter_group_offsets(group, offsets)
                    break
                except (CoordinatorNotAvailableError, NotCoordinatorError):
                    time.sleep(0.5 + attempt * 0.1)
    print(f"{count} groups ready in {time.perf_counter() - started:.0f} s", flush=True)


def tool_seconds() -> float:
    java = check_java()
    started = time.perf_counter()
    result = subprocess.run(
        [
            java,
            "-Xmx512m",
            "-cp",
            str(JARS / "*"),
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--bootstrap-server",
            ",".join(bootstrap()),
            "--describe",
            "--all-groups",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"kafka-consumer-groups failed: {result.stderr[-500:]}")
    return elapsed


def timed(fn: Any) -> list[float]:
    fn()  # warm-up
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def settled_admin(brokers: int = 3, timeout: float = 60) -> KafkaAdminClient:
    """An admin client that knows every broker: one made while the cluster still starts may lack some
    (and fail with UnknownBrokerIdError when a partition's leader is one of them)."""
    deadline = time.monotonic() + timeout
    while True:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap(), bootstrap_timeout_ms=10_000, request_timeout_ms=60_000)
        if len(admin.describe_cluster()["brokers"]) >= brokers or time.monotonic() > deadline:
            return admin
        admin.close()
        time.sleep(1)


def run() -> dict[str, Any]:
    admin = settled_admin()
    result: dict[str, Any] = {"runs": RUNS, "partitions_per_group": PARTITIONS}
    try:
        for size in SIZES:
            ensure_groups(admin, size)
            groups_now = len(admin.list_groups())
            tool = timed(tool_seconds) if size == SIZES[0] else [tool_seconds()]
            with console_server(",".join(bootstrap())) as url:

                def get(path: str) -> None:
                    with urllib.request.urlopen(url + path, timeout=300) as response:  # noqa: S310 - loopback
                        assert response.status == 200
                        response.read()

                api = timed(lambda: get("/api/clusters/local/groups/"))
                page = timed(lambda: get("/clusters/local/groups/?sort=lag&dir=desc"))
            median = {
                name: statistics.median(samples) for name, samples in (("tool", tool), ("api", api), ("page", page))
            }
            result[f"groups_{size}"] = {
                "groups_on_cluster": groups_now,
                "reference_kafka_consumer_groups_describe_all_s": round(median["tool"], 2),
                "console_api_s": round(median["api"], 2),
                "console_page_s": round(median["page"], 2),
                "ratio_api_to_tool": round(median["api"] / median["tool"], 2),
                "ratio_page_to_tool": round(median["page"] / median["tool"], 2),
            }
            print(result[f"groups_{size}"], flush=True)
    finally:
        admin.close()
    write_result("group_lag", result)
    return result
