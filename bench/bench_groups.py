"""The full lag table of 1,000 consumer groups (then 5,000) through the console.

Reference in the same run: Kafka's own `kafka-consumer-groups --describe --all-groups`
(org.apache.kafka.tools.consumer.group.ConsumerGroupCommand from the same jars the embedded
cluster runs, JVM start included, as a user runs it). The figure is console / tool, for the
API (every group, every partition, with lag in time and status) and for the list page.

Then a group on a transactional topic (issue 27): one that read every record, so that only a commit or
abort marker stands before the end of each partition, as exactly-once pipelines leave their groups. Its
page (API) against, in the same run, the page of a group of the same size on a plain topic and the topic
listing; the groups listing, which holds it, against the topic listing too.
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
TX_TOPIC = "bench-groups-tx"
TX_GROUP = "bench-tx-group"
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


def ensure_transactional_group(admin: KafkaAdminClient) -> None:
    """TX_TOPIC written by a transactional producer (per partition: 100 records committed, then on
    partition 1 ten more aborted), and TX_GROUP committed at the last marker of each partition."""
    from contextlib import suppress

    from kafka import KafkaProducer
    from kafka.admin import OffsetSpec

    with suppress(TopicAlreadyExistsError):
        admin.create_topics([NewTopic(TX_TOPIC, PARTITIONS, 1)])
    admin.wait_for_topics([TX_TOPIC], timeout_ms=60_000)
    tps = [TopicPartition(TX_TOPIC, p) for p in range(PARTITIONS)]
    ends = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
    if sum(o.offset for o in ends.values()) == 0:
        producer = KafkaProducer(bootstrap_servers=bootstrap(), transactional_id="bench-groups-tx")
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(100 * PARTITIONS):
            producer.send(TX_TOPIC, value=b"step %d" % i, partition=i % PARTITIONS)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(10):
            producer.send(TX_TOPIC, value=b"undone %d" % i, partition=1)
        producer.abort_transaction()
        producer.close()
        ends = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
    offsets = {tp: OffsetAndMetadata(ends[tp].offset - 1, "", -1) for tp in tps}  # at the last marker
    for attempt in range(30):
        try:
            admin.alter_group_offsets(TX_GROUP, offsets)
            break
        except (CoordinatorNotAvailableError, NotCoordinatorError):
            time.sleep(0.5 + attempt * 0.1)


def transactional_case(admin: KafkaAdminClient) -> dict[str, Any]:
    ensure_transactional_group(admin)
    with console_server(",".join(bootstrap())) as url:

        def get(path: str) -> Any:
            def call() -> None:
                with urllib.request.urlopen(url + path, timeout=300) as response:  # noqa: S310 - loopback
                    assert response.status == 200
                    response.read()

            return call

        # Interleaved rounds, so that a busy moment of the machine falls on every side.
        calls = {
            "tx_group_page": get(f"/api/clusters/local/groups/{TX_GROUP}/"),
            "plain_group_page": get(f"/api/clusters/local/groups/{PREFIX}00000/"),
            "topic_list": get("/api/clusters/local/topics/"),
            "group_list": get("/api/clusters/local/groups/"),
        }
        for call in calls.values():
            call()  # warm-up
        samples: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(RUNS):
            for name, call in calls.items():
                started = time.perf_counter()
                call()
                samples[name].append(time.perf_counter() - started)
    median = {name: statistics.median(found) for name, found in samples.items()}
    return {
        "groups_on_cluster": len(admin.list_groups()),
        "console_tx_group_page_s": round(median["tx_group_page"], 3),
        "reference_plain_group_page_s": round(median["plain_group_page"], 3),
        "reference_topic_list_s": round(median["topic_list"], 3),
        "console_group_list_s": round(median["group_list"], 3),
        "ratio_tx_group_page_to_plain_group_page": round(median["tx_group_page"] / median["plain_group_page"], 2),
        "ratio_tx_group_page_to_topic_list": round(median["tx_group_page"] / median["topic_list"], 2),
        "ratio_group_list_to_topic_list": round(median["group_list"] / median["topic_list"], 2),
    }


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
        result["groups_transactional"] = transactional_case(admin)
        print(result["groups_transactional"], flush=True)
    finally:
        admin.close()
    write_result("group_lag", result)
    return result
