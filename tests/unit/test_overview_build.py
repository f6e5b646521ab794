from __future__ import annotations

from typing import Any

from broker.cluster import build_overview
from broker.config import ClusterConfig
from broker.connection import ClusterConnection


def partition(index: int, leader: int, replicas: list[int], isr: list[int]) -> dict[str, Any]:
    return {"partition_index": index, "leader_id": leader, "replica_nodes": replicas, "isr_nodes": isr}


def cluster(brokers: list[int], controller: int) -> dict[str, Any]:
    return {
        "cluster_id": "abc",
        "controller_id": controller,
        "brokers": [{"broker_id": b, "host": "h", "port": 9000 + b, "rack": None} for b in brokers],
    }


def test_it_counts_partitions_by_health_and_separates_internal_topics() -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",)))
    topics = [
        {
            "name": "a",
            "is_internal": False,
            "partitions": [partition(0, 1, [1, 2], [1, 2]), partition(1, 2, [2, 3], [2])],
        },
        {"name": "b", "is_internal": False, "partitions": [partition(0, -1, [3], [])]},
        {"name": "__consumer_offsets", "is_internal": True, "partitions": [partition(0, 1, [1], [1])]},
    ]
    o = build_overview(conn, cluster([1, 2], controller=2), topics, "3.9-IV0")
    assert (o.topics, o.internal_topics, o.partitions) == (2, 1, 4)
    assert o.under_replicated == 2  # a-1 lost a replica; b-0 has no ISR at all
    assert o.offline == 1
    assert o.controller == 2
    assert [b.is_controller for b in o.brokers] == [False, True, False]


def test_a_broker_that_stopped_is_still_listed_as_down_with_its_last_address() -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",)))
    build_overview(conn, cluster([1, 2, 3], controller=1), [], None)
    o = build_overview(conn, cluster([1, 2], controller=1), [], None)
    down = [b for b in o.brokers if not b.alive]
    assert [(b.id, b.address) for b in down] == [(3, "h:9003")]
    assert o.brokers_up == 2
    assert o.as_dict()["brokers"][2] == {
        "id": 3,
        "host": "h",
        "port": 9003,
        "rack": None,
        "alive": False,
        "answering": False,
        "is_controller": False,
    }


def test_a_replica_on_a_broker_never_seen_shows_as_down_without_address() -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",)))
    o = build_overview(
        conn, cluster([1], controller=-1), [{"name": "x", "partitions": [partition(0, 1, [1, 7], [1])]}], None
    )
    assert o.controller is None
    assert [(b.id, b.alive, b.address) for b in o.brokers] == [(1, True, "h:9001"), (7, False, "not registered")]
