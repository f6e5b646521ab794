"""The words a ZooKeeper watch uses for a change of Kafka's registry, and when the replication watch looks
at a cluster because of one (first at once, then the follow-ups)."""

from __future__ import annotations

import pytest

from broker.zk.watch import describe_children, describe_data
from console.background.replication_watch import FOLLOW_UPS_S, _Watches


def test_broker_registrations_are_told_by_id_in_numeric_order() -> None:
    told = describe_children("/brokers/ids", ["0", "1", "10", "2"], ["0", "2", "11", "3"])
    assert told is not None
    assert told.split("; ") == [
        "broker 3 registered",
        "broker 11 registered",
        "broker 1's registration went away",
        "broker 10's registration went away",
    ]


def test_topics_and_other_children() -> None:
    assert describe_children("/brokers/topics", ["a"], ["a", "b"]) == "topic 'b' assigned"
    assert describe_children("/isr_change_notification", ["x"], []) == "/isr_change_notification/x deleted"
    assert describe_children("/brokers/ids", ["1"], ["1"]) is None


def test_controller_and_reassignment_data() -> None:
    assert (
        describe_data("/controller", b'{"brokerid":1}', None) == "the controller znode went away (an election follows)"
    )
    assert describe_data("/controller", None, b'{"brokerid":2}') == "a controller was elected"
    assert describe_data("/controller", b"x", b"x") is None
    assert describe_data("/admin/reassign_partitions", None, b"{}") == "a reassignment was asked"
    assert describe_data("/admin/reassign_partitions", b"{}", None) == "a reassignment finished"


def test_a_told_cluster_is_looked_at_at_once_then_at_each_follow_up() -> None:
    w = _Watches()
    assert w.next_due(0.0) is None
    assert w.take(0.0) == {}
    w.tell("local", "broker 1's registration went away")
    w.tell("local", "the controller znode went away (an election follows)")
    assert w.wake.is_set()
    why = "zookeeper: broker 1's registration went away; the controller znode went away (an election follows)"
    assert w.take(100.0) == {"local": why}
    assert w.take(100.0) == {}  # told once, looked at once
    for after in FOLLOW_UPS_S:
        assert w.next_due(100.0 + after - 0.1) == pytest.approx(0.1)
        assert w.take(100.0 + after - 0.1) == {}
        assert w.take(100.0 + after) == {"local": why}
    assert w.next_due(200.0) is None


def test_a_new_tell_replaces_the_follow_ups_of_an_older_one() -> None:
    w = _Watches()
    w.tell("a", "first")
    w.take(0.0)
    w.tell("a", "second")
    assert w.take(0.2) == {"a": "zookeeper: second"}
    assert w.take(0.2 + FOLLOW_UPS_S[0]) == {"a": "zookeeper: second"}
