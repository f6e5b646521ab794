"""Alert rules as a Prometheus alerting-rules file: valid YAML, one rule each, PromQL over the console's metrics."""

from __future__ import annotations

import re

import yaml

from broker.alerts.prometheus import glob_regex, rules_file
from broker.alerts.rules import Rule


def test_globs_become_whole_value_regexes() -> None:
    assert glob_regex("orders-*") == r"orders\-.*"
    assert glob_regex("g?.x") == r"g.\.x"
    assert re.fullmatch(glob_regex("orders-*"), "orders-app")
    assert not re.fullmatch(glob_regex("orders-*"), "my-orders-app")


def test_the_rules_file() -> None:
    text = rules_file(
        "prod",
        [
            (
                Rule(1, "Lag of orders", "consumer_lag", threshold=1000, for_s=120, match="orders-*", topics="orders"),
                "critical",
            ),
            (Rule(2, "Late", "consumer_lag_time", threshold=300, match="billing"), "warning"),
            (Rule(3, "Stopped", "lag_status", statuses=("STOP", "STALL")), "warning"),
            (Rule(4, "Warned", "lag_status", statuses=("WARN",)), "info"),
            (Rule(5, "Offline partitions", "offline_partitions"), "critical"),
            (Rule(6, "Broker gone", "broker_gone", match="2"), "critical"),
        ],
    )
    parsed = yaml.safe_load(text)
    [group] = parsed["groups"]
    assert group["name"] == "kazami-prod"
    rules = {r["alert"]: r for r in group["rules"]}
    assert rules["Lag_of_orders"]["expr"] == (
        'sum by (cluster, group) (kazami_consumer_lag{cluster="prod",group=~"orders\\\\-.*",topic="orders"}) > 1000'
    )
    assert rules["Lag_of_orders"]["for"] == "120s"
    assert rules["Lag_of_orders"]["labels"] == {"severity": "critical", "kazami_rule": "Lag of orders"}
    assert (
        rules["Late"]["expr"]
        == 'max by (cluster, group) (kazami_consumer_lag_seconds{cluster="prod",group="billing"}) > 300'
    )
    assert rules["Stopped"]["expr"] == 'kazami_consumer_group_status{cluster="prod"} >= 2'
    assert rules["Warned"]["expr"] == 'kazami_consumer_group_status{cluster="prod"} >= 1'
    assert rules["Offline_partitions"]["expr"] == 'kazami_partitions_offline{cluster="prod"} > 0'
    assert rules["Broker_gone"]["expr"] == 'kazami_broker_up{cluster="prod",broker="2"} == 0'


def test_no_rule_is_an_empty_list() -> None:
    assert yaml.safe_load(rules_file("c", [])) == {"groups": [{"name": "kazami-c", "rules": []}]}
