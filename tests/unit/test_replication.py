"""Replication snapshots and the events two of them give, from raw answers (no Kafka)."""

from __future__ import annotations

from typing import Any

from broker.replication.health import build_replication, diff


def cluster(alive: list[int], fenced: tuple[int, ...] = ()) -> dict[str, Any]:
    return {"brokers": [{"broker_id": b, "is_fenced": b in fenced} for b in alive]}


def topic(name: str, *parts: tuple[int, list[int], list[int]]) -> dict[str, Any]:
    return {
        "name": name,
        "partitions": [
            {"partition_index": i, "leader_id": leader, "replica_nodes": replicas, "isr_nodes": isr}
            for i, (leader, replicas, isr) in enumerate(parts)
        ],
    }


def test_flags_and_broker_loads() -> None:
    r = build_replication(
        cluster([0, 1, 2], fenced=(2,)),
        [topic("a", (0, [0, 1, 2], [0, 1]), (1, [0, 1, 2], [0, 1, 2]), (-1, [2], []))],
        {"a": 2},
        controller=100,
    )
    a0, a1, a2 = r.partitions
    assert (a0.under_replicated, a0.under_min_isr, a0.not_preferred) == (True, False, False)
    assert (a1.healthy, a1.not_preferred, a1.preferred_leader) == (True, True, 0)
    assert (a2.offline, a2.under_min_isr) == (True, True)
    assert [p.partition for p in r.troubled] == [0, 2]
    assert r.counts() == {
        "partitions": 3,
        "offline": 1,
        "under_replicated": 2,
        "under_min_isr": 1,
        "not_preferred_leader": 1,
    }
    assert [(b.id, b.alive, b.leads, b.follows, b.out_of_isr) for b in r.loads()] == [
        (0, True, 1, 1, 0),
        (1, True, 1, 1, 0),
        (2, False, 0, 3, 2),
    ]
    assert r.as_dict()["partitions"][0]["isr"] == [0, 1]


def test_a_broker_stopping_and_returning_gives_the_walkthroughs_events_in_order() -> None:
    before = build_replication(cluster([0, 1, 2]), [topic("t", (1, [1, 2, 0], [0, 1, 2]))], {}, controller=1)
    gone = build_replication(cluster([0, 1, 2], fenced=(1,)), [topic("t", (2, [1, 2, 0], [0, 2]))], {}, controller=2)
    back = build_replication(cluster([0, 1, 2]), [topic("t", (2, [1, 2, 0], [0, 1, 2]))], {}, controller=2)
    events = diff(before, gone)
    assert [e.kind for e in events] == ["broker_gone", "controller_changed", "leader_changed", "isr_shrank"]
    assert events[0].text == "Broker 1 fenced"
    assert events[2].text == "t-0: leader 1 → 2"
    assert events[3].text == "t-0: ISR shrank to [0, 2] (1 out)"
    assert (events[3].topic, events[3].partition, events[3].details["removed"]) == ("t", 0, [1])
    again = diff(gone, back)
    assert [e.kind for e in again] == ["broker_registered", "isr_expanded"]
    assert again[1].text == "t-0: ISR expanded to [0, 1, 2] (1 back)"
    assert diff(back, back) == []


def test_topics_created_and_deleted_and_a_partition_going_offline() -> None:
    before = build_replication(cluster([0]), [topic("old", (0, [0], [0]))], {}, None)
    after = build_replication(cluster([0]), [topic("new", (-1, [0], []))], {}, None)
    assert [e.text for e in diff(before, after)] == ["Topic new created (1 partition)", "Topic old deleted"]
    offline = build_replication(cluster([0]), [topic("old", (-1, [0], []))], {}, None)
    assert [e.text for e in diff(before, offline)] == [
        "old-0: leader 0 → none (offline)",
        "old-0: ISR shrank to [none] (0 out)",
    ]
