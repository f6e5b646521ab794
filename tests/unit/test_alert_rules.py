"""Alert rules over a round's facts, and the life of an alert (pending, firing, resolved), with no cluster."""

from __future__ import annotations

import pytest

from broker.alerts.rules import Breach, Facts, Rule, Track, breaches, check_rule, step
from broker.errors import InvalidInput
from broker.groups.lag import GroupLag, PartitionLag
from broker.replication.health import PartitionReplicas, Replication


def group(gid: str, *parts: tuple[str, int, int | None, int, int | None]) -> GroupLag:
    """(topic, partition, committed, log end, lag_ms) per partition."""
    return GroupLag(
        gid,
        "Empty",
        "consumer",
        "",
        [],
        [PartitionLag(t, p, c, e, None, None, None, lag_ms=ms) for t, p, c, e, ms in parts],
    )


def test_consumer_lag_sums_the_matching_topics_of_the_matching_groups() -> None:
    facts = Facts(
        at_ms=0,
        groups=[
            group("orders-app", ("orders", 0, 10, 110, 5000), ("orders", 1, 0, 30, 900), ("audit", 0, 0, 1000, 1)),
            group("billing", ("orders", 0, 100, 110, 10)),
            group("never", ("orders", 0, None, 110, None)),  # no commit: not a consumer of it yet
        ],
    )
    rule = Rule(1, "lag", "consumer_lag", threshold=100, match="*", topics="orders")
    found = breaches(rule, facts)
    assert found is not None
    assert set(found) == {"orders-app"}
    assert found["orders-app"].value == 130  # 100 + 30, not the 1000 of audit
    assert breaches(Rule(1, "lag", "consumer_lag", threshold=130, topics="orders"), facts) == {}
    assert set(breaches(Rule(1, "lag", "consumer_lag", threshold=5, match="bill*"), facts) or {}) == {"billing"}
    late = breaches(Rule(2, "late", "consumer_lag_time", threshold=4), facts) or {}
    assert set(late) == {"orders-app"}
    assert late["orders-app"].value == 5.0
    assert "5 s old" in late["orders-app"].text


def test_lag_status_breaks_on_the_chosen_statuses_only() -> None:
    facts = Facts(
        at_ms=0,
        groups=[group("a", ("t", 0, 1, 5, 1)), group("b", ("t", 0, 1, 5, 1))],
        statuses={"a": ("STOP", "not moved for 5 min"), "b": ("WARN", "lag grew")},
    )
    found = breaches(Rule(3, "status", "lag_status"), facts) or {}
    assert set(found) == {"a"}
    assert found["a"].text == "a is STOP: not moved for 5 min"
    assert set(breaches(Rule(3, "status", "lag_status", statuses=("WARN",)), facts) or {}) == {"b"}


def test_replication_kinds_count_partitions_per_topic_and_brokers_gone() -> None:
    snapshot = Replication(
        brokers={0: True, 1: False},
        controller=0,
        partitions=[
            PartitionReplicas("orders", 0, None, (1,), ()),
            PartitionReplicas("orders", 1, 0, (0, 1, 2), (0,), min_isr=2),
            PartitionReplicas("audit", 0, 0, (0,), (0,)),
        ],
    )
    facts = Facts(at_ms=0, replication=snapshot)
    assert {k: b.value for k, b in (breaches(Rule(4, "off", "offline_partitions"), facts) or {}).items()} == {
        "orders": 1
    }
    assert set(breaches(Rule(5, "ur", "under_replicated"), facts) or {}) == {"orders"}
    assert (breaches(Rule(5, "ur", "under_replicated", threshold=2), facts) or {}) == {}  # 2 partitions, not > 2
    assert set(breaches(Rule(6, "isr", "under_min_isr"), facts) or {}) == {"orders"}
    # Broker 1 is registered but not alive; broker 2 holds a replica and was never seen registered.
    assert set(breaches(Rule(7, "gone", "broker_gone"), facts) or {}) == {"1", "2"}
    assert set(breaches(Rule(7, "gone", "broker_gone", match="2"), facts) or {}) == {"2"}
    # A broker seen before that left the registry and holds no replica (a cluster without topics) is gone too.
    empty = Replication(brokers={0: True}, controller=0, partitions=[])
    assert set(
        breaches(Rule(7, "gone", "broker_gone"), Facts(0, replication=empty, known_brokers=frozenset({0, 3}))) or {}
    ) == {"3"}


def test_a_round_without_the_facts_a_rule_needs_decides_nothing() -> None:
    assert breaches(Rule(1, "lag", "consumer_lag"), Facts(at_ms=0)) is None
    assert breaches(Rule(1, "gone", "broker_gone"), Facts(at_ms=0, groups=[])) is None
    tracks = {"g": Track(0, 1000, 5, "x")}
    kept, changes = step(Rule(1, "lag", "consumer_lag"), tracks, None, 99_000)
    assert kept == tracks
    assert changes == []


def test_an_alert_waits_for_its_for_duration_fires_once_and_resolves_once() -> None:
    rule = Rule(1, "lag", "consumer_lag", threshold=10, for_s=30)
    breach = {"g": Breach("g", 50, "g is 50 behind")}
    tracks, changes = step(rule, {}, breach, 1_000)
    assert changes == []
    assert tracks["g"] == Track(1_000, None, 50, "g is 50 behind")  # pending
    tracks, changes = step(rule, tracks, breach, 20_000)
    assert changes == []
    tracks, changes = step(rule, tracks, breach, 31_000)
    assert [(c.subject, c.state, c.since_ms) for c in changes] == [("g", "firing", 1_000)]
    tracks, changes = step(rule, tracks, breach, 60_000)
    assert changes == []  # firing already: not sent again
    tracks, changes = step(rule, tracks, {}, 70_000)
    assert [(c.subject, c.state, c.since_ms) for c in changes] == [("g", "resolved", 31_000)]
    assert tracks == {}
    # A breach that goes before its for duration never fires, and nothing resolves.
    tracks, _ = step(rule, {}, breach, 0)
    tracks, changes = step(rule, tracks, {}, 10_000)
    assert (tracks, changes) == ({}, [])


def test_rule_fields_are_checked() -> None:
    assert check_rule("consumer_lag", "100", 0, "orders-*", None, None)["threshold"] == 100.0
    assert check_rule("lag_status", 0, 0, "*", "*", "stop, stall")["statuses"] == ("STOP", "STALL")
    for bad in (
        ("no_such_kind", 0, 0, "*", "*", None),
        ("consumer_lag", "lots", 0, "*", "*", None),
        ("consumer_lag", -1, 0, "*", "*", None),
        ("consumer_lag", 1, "nan", "*", "*", None),
        ("consumer_lag", 1, 0, 42, "*", None),
        ("lag_status", 1, 0, "*", "*", ["OK"]),
    ):
        with pytest.raises(InvalidInput):
            check_rule(*bad)


def test_forecast_kinds_catch_up_time_and_retention_risk() -> None:
    from broker.groups.forecast import Forecast, RetentionRisk

    facts = Facts(
        at_ms=0,
        forecasts={
            "slow": Forecast(5000, 10, 20, 500.0, 60, None),
            "never": Forecast(900, 30, 10, None, 60, RetentionRisk("orders", 2, 120.0, None)),
            "done": Forecast(0, 10, 10, 0.0, 60, None),
            "fast": Forecast(100, 10, 110, 1.0, 60, None),
        },
    )
    late = breaches(Rule(1, "late", "catch_up_time", threshold=300), facts) or {}
    assert set(late) == {"slow", "never"}
    assert late["slow"].value == 500.0
    assert "8 min 20 s to catch up" in late["slow"].text
    assert "does not gain" in late["never"].text
    risky = breaches(Rule(2, "risk", "retention_risk"), facts) or {}
    assert set(risky) == {"never"}
    assert "orders-2 is deleted by retention in 2 min" in risky["never"].text
    assert breaches(Rule(2, "risk", "retention_risk", threshold=60), facts) == {}  # 120 s away: beyond 60 s
    assert breaches(Rule(2, "risk", "retention_risk"), Facts(at_ms=0, groups=[])) is None  # no forecasts this round


def test_throughput_low_reads_the_rates_of_the_look() -> None:
    facts = Facts(at_ms=0, topic_rates={"orders": 0.0, "clicks": 120.5, "audit": 0.4})
    assert set(breaches(Rule(1, "quiet", "throughput_low"), facts) or {}) == {"orders"}
    assert set(breaches(Rule(1, "quiet", "throughput_low", threshold=1, match="a*"), facts) or {}) == {"audit"}
    assert breaches(Rule(1, "quiet", "throughput_low"), Facts(at_ms=0)) is None


def test_connector_failed_breaks_on_a_failed_connector_or_failed_tasks() -> None:
    from broker.connect.connectors import Connector, TaskState

    def connector(name: str, state: str, tasks: list[str]) -> Connector:
        return Connector(
            "main", name, "sink", state, None, None, tuple(TaskState(i, t, None) for i, t in enumerate(tasks))
        )

    facts = Facts(
        at_ms=0,
        connectors=[
            connector("ok", "RUNNING", ["RUNNING", "RUNNING"]),
            connector("dead", "FAILED", []),
            connector("half", "RUNNING", ["RUNNING", "FAILED"]),
        ],
    )
    found = breaches(Rule(1, "failed", "connector_failed"), facts) or {}
    assert set(found) == {"main/dead", "main/half"}
    assert found["main/half"].text == "connector half on main: 1 of 2 tasks FAILED"
    assert set(breaches(Rule(1, "failed", "connector_failed", threshold=1), facts) or {}) == {"main/dead"}
    assert breaches(Rule(1, "failed", "connector_failed"), Facts(at_ms=0)) is None


def test_disk_used_breaks_over_the_share() -> None:
    facts = Facts(at_ms=0, disks={0: (91.5, "/data/kafka-0"), 1: (40.0, "/data/kafka-1")})
    found = breaches(Rule(1, "disk", "disk_used", threshold=85), facts) or {}
    assert set(found) == {"0"}
    assert found["0"].text == "broker 0: the volume of /data/kafka-0 is 91.5% full"
    assert breaches(Rule(1, "disk", "disk_used", threshold=85), Facts(at_ms=0)) is None


def test_controller_changed_breaks_for_its_window_after_a_change_and_while_none_is_active() -> None:
    def look(at_ms: int, controller: int | None, since: int | None = None, before: int | None = None) -> Facts:
        snapshot = Replication(brokers={1: True, 2: True}, controller=controller, partitions=[])
        return Facts(at_ms=at_ms, replication=snapshot, controller_since_ms=since, controller_before=before)

    rule = Rule(1, "controller", "controller_changed", threshold=60)
    found = breaches(rule, look(100_000, 2, since=70_000, before=1)) or {}
    assert set(found) == {"2"}
    assert found["2"].text == "the active controller changed from 1 to 2"
    assert breaches(rule, look(130_000, 2, since=70_000)) == {}  # its window is over
    assert breaches(rule, look(0, 2)) == {}  # the same since the console first looked
    assert set(breaches(rule, look(0, None)) or {}) == {"none"}
    default = Rule(1, "controller", "controller_changed")  # 0: five minutes
    assert set(breaches(default, look(299_000, 3, since=0)) or {}) == {"3"}
    assert breaches(rule, Facts(at_ms=0)) is None


def test_hanging_transaction_breaks_per_topic_past_the_threshold_and_names_the_hanging_ones() -> None:
    from broker.messages.transactions import ActiveProducer, OpenTransaction

    def held(topic: str, partition: int, silent_ms: int, hanging: bool) -> OpenTransaction:
        producer = ActiveProducer(7, 0, 3, 0, 0, 10)
        return OpenTransaction(topic, partition, producer, silent_ms, "tx-1", "Ongoing", hanging, "")

    found_open = [held("orders", 0, 30_000, False), held("orders", 1, 90_000, True), held("audit", 0, 5_000, False)]
    facts = Facts(at_ms=0, open_transactions=found_open, open_limit_ms=60_000)
    found = breaches(Rule(1, "held", "hanging_transaction", threshold=10), facts) or {}
    assert set(found) == {"orders"}
    assert found["orders"].value == 2
    assert "oldest (partition 1, producer 7 (tx-1)) silent for 1 min 30 s; 1 hanging" in found["orders"].text
    at_limit = breaches(Rule(1, "held", "hanging_transaction"), facts) or {}  # 0: the brokers' limit
    assert {t: b.value for t, b in at_limit.items()} == {"orders": 1}
    assert breaches(Rule(1, "held", "hanging_transaction"), Facts(at_ms=0)) is None


def test_cluster_unreachable_breaks_on_a_round_that_could_not_reach_the_cluster_only() -> None:
    rule = Rule(1, "down", "cluster_unreachable")
    down = Facts(at_ms=0, cluster="prod", reachable=False, unreachable_reason="no broker answered within 5 s")
    found = breaches(rule, down) or {}
    assert found["prod"].text == "cluster prod does not answer: no broker answered within 5 s"
    assert breaches(rule, Facts(at_ms=0, cluster="prod", reachable=True)) == {}
    assert breaches(rule, Facts(at_ms=0)) is None  # a round that did not try decides nothing
    assert breaches(Rule(1, "down", "cluster_unreachable", match="staging-*"), down) == {}
