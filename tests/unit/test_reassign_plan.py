"""Reassignment proposals and plans without a cluster: balance, racks, Kafka's JSON, refusals."""

from __future__ import annotations

from collections import Counter

import pytest

from broker.errors import InvalidInput, TopicNotFound
from broker.replication.reassign import assign, check_plan, parse_plan, plan_json, propose_moves, rack_alternated


def test_leaders_and_followers_spread_evenly_and_replicas_never_repeat() -> None:
    replicas = assign(12, [1, 2, 3, 4], 3)
    assert all(len(set(r)) == 3 for r in replicas)
    assert Counter(r[0] for r in replicas) == {1: 3, 2: 3, 3: 3, 4: 3}  # leaders
    assert Counter(b for r in replicas for b in r) == {1: 9, 2: 9, 3: 9, 4: 9}  # every replica
    # Followers of consecutive partitions differ once the round-robin wraps (the shift grows).
    assert replicas[0][1:] != replicas[4][1:]


def test_a_factor_above_the_brokers_chosen_is_refused() -> None:
    with pytest.raises(InvalidInput, match="needs at least 3 brokers; 2 chosen"):
        assign(3, [1, 2], 3)


def test_racks_alternate_so_replicas_land_on_different_racks() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    order = rack_alternated([1, 2, 3, 4, 5, 6], racks)
    assert order == [1, 3, 5, 2, 4, 6]
    for replicas in assign(6, order, 3):
        assert len({racks[b] for b in replicas}) == 3
    assert rack_alternated([3, 1, 2], {}) == [1, 2, 3]


def test_a_proposal_counts_the_bytes_each_new_replica_copies() -> None:
    topics = [
        {
            "name": "t",
            "partitions": [
                {"partition_index": 0, "replica_nodes": [0, 1]},
                {"partition_index": 1, "replica_nodes": [1, 0]},
            ],
        }
    ]
    proposal = propose_moves(topics, [2, 3], {}, {("t", 0): 1000, ("t", 1): 500})
    assert {m.proposed for m in proposal.moves} == {(2, 3), (3, 2)}
    assert [m.bytes_to_move for m in proposal.moves] == [2000, 1000]  # two new replicas each
    assert proposal.bytes_to_move == 3000
    assert proposal.as_dict()["plan"]["partitions"][0]["topic"] == "t"
    again = propose_moves(topics, [2, 3], {}, {})
    assert again.plan() == proposal.plan()  # the same proposal when asked again
    wider = propose_moves(topics, [0, 1, 2], {}, {}, factor=3)
    assert all(len(m.proposed) == 3 for m in wider.moves)


def test_kafkas_json_round_trips_and_bad_plans_say_what_is_wrong() -> None:
    plan = {("t", 0): [1, 2], ("t", 1): [2, 3]}
    assert parse_plan(plan_json(plan)) == plan
    for document, message in [
        ("{", "not JSON"),
        ("[]", "reassignment JSON"),
        ('{"partitions": []}', "moves no partition"),
        ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]}', "broker 1 is listed twice"),
        ('{"partitions": [{"topic": "t", "partition": -1, "replicas": [1]}]}', "partition must be"),
        ('{"partitions": [{"topic": "t", "partition": 0, "replicas": []}]}', "non-empty list"),
        (
            '{"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}, '
            '{"topic": "t", "partition": 0, "replicas": [2]}]}',
            "in the plan twice",
        ),
    ]:
        with pytest.raises(InvalidInput, match=message):
            parse_plan(document)


def test_a_plan_naming_what_the_cluster_lacks_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(InvalidInput, match="no broker 9 in this cluster"):
        check_plan({("t", 0): [1, 9]}, {0, 1, 2}, {"t": 1})
    with pytest.raises(InvalidInput, match="4 replicas asked, but the cluster has 3 brokers"):
        check_plan({("t", 0): [0, 1, 2, 3]}, {0, 1, 2}, {"t": 1})
    with pytest.raises(InvalidInput, match="there is no partition 5"):
        check_plan({("t", 5): [0]}, {0}, {"t": 2})
    with pytest.raises(TopicNotFound):
        check_plan({("nope", 0): [0]}, {0}, {"t": 1})
