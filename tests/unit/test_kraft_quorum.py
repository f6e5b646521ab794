"""The KRaft pieces that need no cluster: naming metadata.version levels and reading a DescribeQuorum answer."""

from __future__ import annotations

from typing import Any

import pytest

from broker.cluster.quorum import NotKRaft, metadata_version_name, parse_quorum, release_of


def test_metadata_version_levels_are_named_as_kafka_names_them() -> None:
    assert metadata_version_name(21) == "3.9-IV0"
    assert metadata_version_name(30) == "4.3-IV0"
    assert metadata_version_name(None) is None
    assert metadata_version_name(99) == "4.4 or later (metadata.version 99)"
    assert release_of("4.3-IV0") == "4.3"
    assert release_of("4.4 or later (metadata.version 99)") == "4.4"
    assert release_of(None) is None


def answer(leader: int = 101) -> dict[str, Any]:
    def replica(rid: int, leo: int, fetch: int = 1_700_000_000_000) -> dict[str, Any]:
        return {
            "replica_id": rid,
            "replica_directory_id": None,
            "log_end_offset": leo,
            "last_fetch_timestamp": fetch,
            "last_caught_up_timestamp": fetch,
        }

    return {
        "topics": [
            {
                "topic_name": "__cluster_metadata",
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_id": leader,
                        "leader_epoch": 3,
                        "high_watermark": 500,
                        "current_voters": [replica(102, 480), replica(100, 500), replica(101, 500)],
                        "observers": [replica(0, 500), replica(1, -1, -1)],
                        "error": None,
                    }
                ],
            }
        ],
        "nodes": [{"node_id": 100, "listeners": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9192}]}],
    }


def test_a_quorum_answer_gives_leader_voters_observers_and_their_lag() -> None:
    q = parse_quorum(answer(), broker_ids={0, 1, 2})
    assert (q.leader_id, q.leader_epoch, q.high_watermark) == (101, 3, 500)
    assert [(r.id, r.lag) for r in q.voters] == [(100, 0), (101, 0), (102, 20)]
    assert [(r.id, r.log_end_offset, r.lag, r.last_fetch) for r in q.observers] == [
        (0, 500, 0, 1_700_000_000_000),
        (1, None, None, None),  # a broker that never fetched says -1: unknown, not a lag of 501
    ]
    assert not q.leader_is_broker
    assert (q.role_of(101), q.role_of(100), q.role_of(0)) == ("leader", "follower", "observer")
    node = q.node(100)
    assert node is not None
    assert node.address == "127.0.0.1:9192"
    assert q.max_lag == 20
    assert [r.id for r in q.voters + q.observers if q.silent(r)] == [1]  # never fetched
    assert q.address_of(100) == "127.0.0.1:9192"
    assert q.address_of(0) is None
    body = q.as_dict()
    assert body["voters"][2] == {
        "id": 102,
        "log_end_offset": 480,
        "lag": 20,
        "last_fetch": 1_700_000_000_000,
        "last_caught_up": 1_700_000_000_000,
        "directory_id": None,
    }


def test_a_combined_node_leading_the_quorum_is_a_broker_too() -> None:
    assert parse_quorum(answer(leader=1), broker_ids={0, 1, 2}).leader_is_broker


def test_an_answer_without_the_metadata_log_is_refused_clearly() -> None:
    with pytest.raises(NotKRaft, match="no metadata log"):
        parse_quorum({"topics": []}, broker_ids=set())


def test_a_replica_far_behind_the_newest_fetch_is_silent_and_brokers_get_their_addresses() -> None:
    raw = answer()
    raw["topics"][0]["partitions"][0]["current_voters"][0]["last_fetch_timestamp"] = 1_700_000_000_000 - 6_000
    q = parse_quorum(raw, broker_ids={0, 1}, broker_addresses={0: "h:9092"})
    assert [r.id for r in q.voters if q.silent(r)] == [102]
    assert q.address_of(0) == "h:9092"
