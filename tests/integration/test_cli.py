"""The ``kazami`` command line (console/cli/) against the session's real cluster, run as the installed console
script (``.venv/bin/kazami``, put there by ``make install``) in a process of its own with the console's
settings (the environment tests/conftest.py sets). Its ``--json`` answers are parsed and checked against what
kafka-python wrote and read; its tables and exit codes as a person or a script meets them."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from tests.conftest import BOOTSTRAP, KRAFT
from tests.integration.kafka_helpers import admin, create_topic, produce, unique

pytestmark = [pytest.mark.kafka]

KAZAMI = Path(sys.executable).parent / "kazami"


def kazami(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    assert KAZAMI.exists(), f"{KAZAMI} is missing: `make install` puts the console script there"
    return subprocess.run([str(KAZAMI), *args], capture_output=True, text=True, timeout=timeout, check=False)


def answer(*args: str) -> Any:
    done = kazami("--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def lines(*args: str, code: int = 0) -> list[dict[str, Any]]:
    done = kazami("--json", *args)
    assert done.returncode == code, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module")
def orders(kafka_cluster: Any) -> tuple[str, list[tuple[int, int, bytes, bytes]]]:
    """A topic of 3 partitions with 30 records (key k<i % 5>, a JSON value, one header), 10 a partition;
    returns it and [(partition, offset, key, value)] as Kafka placed them."""
    topic = create_topic(unique("cli"), partitions=3)
    written = []
    for p in range(3):
        records = [
            (b"k%d" % (i % 5), b'{"n": %d, "p": %d, "note": "%s"}' % (i, p, b"needle" if i == 7 else b"hay"))
            for i in range(10)
        ]
        placed = produce(topic, records, partition=p, headers=[("trace", b"t-1")])
        written += [(part, off, k, v) for (part, off), (k, v) in zip(placed, records, strict=True)]
    return topic, written


def test_topics_and_a_topics_partitions(orders: tuple[str, list[Any]]) -> None:
    topic, _ = orders
    listed = {t["name"]: t for t in answer("topics")}
    assert listed[topic]["partitions"] == 3
    assert listed[topic]["messages"] == 30
    detail = answer("topic", topic)
    assert [(p["partition"], p["start_offset"], p["end_offset"]) for p in detail["partitions"]] == [
        (0, 0, 10),
        (1, 0, 10),
        (2, 0, 10),
    ]
    table = kazami("topics")
    assert table.returncode == 0
    assert table.stdout.splitlines()[0].split()[:3] == ["TOPIC", "PARTITIONS", "REPLICAS"]
    row = next(line for line in table.stdout.splitlines() if line.startswith(topic + " "))
    assert row.split()[1:4] == ["3", "3", "30"]


def test_get_first_and_last_give_the_records_written(orders: tuple[str, list[Any]]) -> None:
    topic, written = orders
    partition, offset, key, value = written[13]  # partition 1, offset 3
    got = answer("get", topic, str(partition), str(offset))
    assert (got["partition"], got["offset"], got["key"]["data"], got["value"]["data"]) == (
        partition,
        offset,
        key.decode(),
        value.decode(),
    )
    assert got["value_kind"] == "json"
    assert got["headers"] == [{"name": "trace", "value": {"encoding": "utf-8", "data": "t-1"}}]
    assert (got["prev_offset"], got["next_offset"]) == (2, 4)
    assert [(r["partition"], r["offset"]) for r in lines("first", topic)] == [(0, 0), (1, 0), (2, 0)]
    assert [(r["partition"], r["offset"]) for r in lines("last", topic, "2", "-n", "3")] == [(2, 7), (2, 8), (2, 9)]
    whole = kazami("get", topic, "1", "3")
    assert whole.returncode == 0
    assert "value      (json" in whole.stdout
    assert '"note": "hay"' in whole.stdout
    assert "header     trace = t-1" in whole.stdout


def test_find_by_key_and_search_match_what_was_written(orders: tuple[str, list[Any]]) -> None:
    topic, written = orders
    with_key = sorted((p, o) for p, o, k, _ in written if k == b"k2")
    found = lines("find", topic, "k2", "--partitioner", "all")
    assert sorted((r["partition"], r["offset"]) for r in found) == with_key
    assert lines("find", topic, "no-such-key", "--partitioner", "all", code=1) == []
    needles = sorted((p, o) for p, o, _, v in written if b"needle" in v)
    assert len(needles) == 3
    matched = lines("search", topic, 'value.note == "needle"')
    assert sorted((r["partition"], r["offset"]) for r in matched) == needles
    assert lines("search", topic, 'value contains "nothing-like-this"', code=1) == []
    people = kazami("search", topic, "value.n >= 8", "--partition", "0")
    assert people.returncode == 0
    assert [line.split()[0] for line in people.stdout.splitlines()] == ["0:8", "0:9"]
    assert "2 matched of 10 records read" in people.stderr


def test_tail_shows_what_arrives_after_it_started(orders: tuple[str, list[Any]]) -> None:
    """Records are written every half second from before the tail starts until it ends: it shows two that
    came after it started, in order, and none of the 30 from before."""
    topic, _ = orders
    stop = threading.Event()

    def writing() -> None:
        for i in range(120):
            if stop.wait(0.5):
                return
            produce(topic, [(b"new", b"arrived %03d" % i)], partition=0)

    writer = threading.Thread(target=writing)
    writer.start()
    try:
        arrived = lines("tail", topic, "--count", "2", "--seconds", "50")
    finally:
        stop.set()
        writer.join()
    assert [r["key"]["data"] for r in arrived] == ["new", "new"]
    first, second = (int(r["value"]["data"].split()[1]) for r in arrived)
    assert second == first + 1
    assert arrived[1]["offset"] == arrived[0]["offset"] + 1


def test_groups_and_lag_as_kafka_tells_them(orders: tuple[str, list[Any]]) -> None:
    topic, _ = orders
    group = unique("cli-group")
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), group_id=group, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(3)]
        consumer.assign(tps)
        consumer.commit({tp: OffsetAndMetadata(4, "", -1) for tp in tps})
    finally:
        consumer.close()
    ends = answer("topic", topic)["partitions"]
    lag = answer("lag", group)
    assert lag["group_id"] == group
    by_partition = {p["partition"]: p for p in lag["partitions"] if p["topic"] == topic}
    assert {p: (r["committed_offset"], r["lag"]) for p, r in by_partition.items()} == {
        e["partition"]: (4, e["end_offset"] - 4) for e in ends
    }
    assert group in {g["group_id"] for g in answer("groups")}
    table = kazami("lag", group)
    assert table.returncode == 0
    assert table.stdout.startswith(f"{group}: ")


def test_errors_say_what_and_exit_with_their_kind(orders: tuple[str, list[Any]]) -> None:
    topic, _ = orders
    missing = kazami("topic", unique("no-such-topic"))
    assert missing.returncode == 3
    assert "kazami:" in missing.stderr
    assert missing.stdout == ""
    past = kazami("get", topic, "0", "999")
    assert past.returncode == 3
    assert "there is no message at 999" in past.stderr
    bad_query = kazami("search", topic, "value ===")
    assert bad_query.returncode == 2
    assert bad_query.stderr.startswith("kazami: ")
    nowhere = kazami("--cluster", "nowhere", "topics")
    assert nowhere.returncode == 3
    assert "nowhere" in nowhere.stderr
    usage = kazami("get", topic)
    assert usage.returncode == 2
    assert "usage:" in usage.stderr


def test_zookeeper_or_a_clear_refusal(kafka_cluster: Any) -> None:
    if KRAFT:
        refused = kazami("zk", "ls", "/")
        assert refused.returncode == 5
        assert "KRaft" in refused.stderr
        return
    client = admin()
    try:
        brokers = sorted(str(b["broker_id"]) for b in client.describe_cluster()["brokers"])
    finally:
        client.close()
    ids = answer("zk", "ls", "/brokers/ids")
    assert sorted(ids["children"]) == brokers
    node = kazami("zk", "get", f"/brokers/ids/{brokers[0]}")
    assert node.returncode == 0
    assert '"endpoints"' in node.stdout
