from __future__ import annotations

from typing import Any

from broker.client.config import ClusterConfig
from broker.client.connection import ClusterConnection
from broker.cluster.overview import Identity, build_overview


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
    o = build_overview(conn, cluster([1, 2], controller=2), topics, Identity("zookeeper", "3.9-IV0"))
    assert (o.topics, o.internal_topics, o.partitions) == (2, 1, 4)
    assert o.under_replicated == 2  # a-1 lost a replica; b-0 has no ISR at all
    assert o.offline == 1
    assert o.controller == 2
    assert [b.is_controller for b in o.brokers] == [False, True, False]


def test_leader_balance_counts_what_each_broker_leads_against_what_it_is_preferred_for() -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",)))
    topics = [
        {
            "name": "a",
            "is_internal": False,
            "partitions": [
                partition(0, 1, [1, 2, 3], [1, 2, 3]),  # on its preferred leader
                partition(1, 3, [2, 3, 1], [3, 1]),  # broker 2 failed over: 3 leads in its place
                partition(2, 3, [3, 1, 2], [3, 1, 2]),
                partition(3, -1, [2], []),  # offline: nobody leads it, and it is not "off preferred" either
            ],
        },
    ]
    o = build_overview(conn, cluster([1, 2, 3], controller=1), topics, Identity("zookeeper"))
    assert o.not_preferred == 1
    assert [(b.id, b.leaders, b.preferred, b.replicas) for b in o.brokers] == [(1, 1, 1, 3), (2, 0, 2, 4), (3, 2, 1, 3)]
    assert o.as_dict()["not_on_preferred_leader"] == 1
    assert o.as_dict()["brokers"][2]["preferred_leader_of"] == 1


def test_a_broker_that_stopped_is_still_listed_as_down_with_its_last_address() -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",)))
    build_overview(conn, cluster([1, 2, 3], controller=1), [], Identity("zookeeper"))
    o = build_overview(conn, cluster([1, 2], controller=1), [], Identity("zookeeper"))
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
        "fenced": False,
        "is_controller": False,
        "leaders": 0,
        "preferred_leader_of": 0,
        "replicas": 0,
    }


def test_a_replica_on_a_broker_never_seen_shows_as_down_without_address() -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",)))
    o = build_overview(
        conn, cluster([1], controller=-1), [{"name": "x", "partitions": [partition(0, 1, [1, 7], [1])]}], Identity(None)
    )
    assert o.controller is None
    assert [(b.id, b.alive, b.address) for b in o.brokers] == [(1, True, "h:9001"), (7, False, "not registered")]


def test_on_kraft_the_controller_is_the_quorum_leader_not_the_broker_describe_cluster_names() -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",), zookeeper_connect="zk:2181"))
    identity = Identity("kraft", "4.3-IV0", {"metadata.version": 30}, controller=101, controller_is_broker=False)
    o = build_overview(conn, cluster([0, 1, 2], controller=1), [], identity)
    assert o.controller == 101
    assert not any(b.is_controller for b in o.brokers)  # a separate controller: no broker wears the badge
    body = o.as_dict()
    assert body["mode"] == "kraft"
    assert body["controller"] == {"id": 101, "is_broker": False}
    assert (body["version"], body["protocol_version"]) == ("4.3", "4.3-IV0")
    assert body["features"] == {"metadata.version": 30}
    assert body["zookeeper_ignored"] == "zk:2181"  # configured, but a KRaft cluster has no ZooKeeper


def test_a_combined_kraft_node_that_leads_the_quorum_is_marked_as_controller() -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",)))
    identity = Identity("kraft", "3.9-IV0", controller=2, controller_is_broker=True)
    o = build_overview(conn, cluster([0, 1, 2], controller=0), [], identity)
    assert [b.id for b in o.brokers if b.is_controller] == [2]
    assert o.zookeeper_ignored is None


def test_a_fenced_kraft_broker_is_down_though_still_registered() -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",)))
    answer = cluster([0, 1, 2], controller=0)
    answer["brokers"][2]["is_fenced"] = True
    o = build_overview(conn, answer, [], Identity("kraft", controller=100))
    assert [(b.id, b.alive, b.fenced) for b in o.brokers] == [(0, True, False), (1, True, False), (2, False, True)]
    assert o.brokers_down == 1
    assert o.brokers[2].address == "h:9002"


def test_a_broker_back_after_a_restart_is_not_silent_any_more() -> None:
    conn = ClusterConnection(ClusterConfig("t", ("h:1",)))
    build_overview(conn, cluster([0, 1, 2], controller=0), [], Identity("zookeeper"))
    conn.mark_silent(2)  # it timed out while stopping
    build_overview(conn, cluster([0, 1], controller=0), [], Identity("zookeeper"))
    assert conn.is_silent(2)
    conn.mark_silent(1)  # silent though registered all along (frozen): stays silent
    build_overview(conn, cluster([0, 1, 2], controller=0), [], Identity("zookeeper"))
    assert not conn.is_silent(2)
    assert conn.is_silent(1)
