"""A cluster's alert rules as a Prometheus alerting-rules file, over the metrics the console serves at /metrics
(kazami_consumer_lag, kazami_consumer_lag_seconds, kazami_consumer_group_status, kazami_partitions_offline,
kazami_partitions_under_replicated, kazami_partitions_under_min_isr, kazami_broker_up), for teams that alert
in Prometheus rather than through the console. The file is YAML; every string in it is written as a JSON string,
which YAML reads as the same double-quoted scalar."""

from __future__ import annotations

import json
import re

from broker.alerts.rules import Rule

# Which metric and label each kind reads, and how a subject's rows are combined.
_GROUP_KINDS = {
    "consumer_lag": ("sum", "kazami_consumer_lag"),
    "consumer_lag_time": ("max", "kazami_consumer_lag_seconds"),
}
_TOPIC_KINDS = {
    "offline_partitions": "kazami_partitions_offline",
    "under_replicated": "kazami_partitions_under_replicated",
    "under_min_isr": "kazami_partitions_under_min_isr",
}


def glob_regex(glob: str) -> str:
    """A glob (``*`` any run, ``?`` one character) as the RE2 expression Prometheus matches whole values with."""
    return "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob or "*")


def _matcher(label: str, glob: str) -> str:
    if glob in ("", "*"):
        return ""
    if not any(c in glob for c in "*?"):
        return f",{label}={json.dumps(glob)}"
    return f",{label}=~{json.dumps(glob_regex(glob))}"


def expression(cluster: str, rule: Rule) -> str | None:
    """The PromQL of ``rule`` on ``cluster``; None for a kind the metrics cannot express."""
    selector = f"cluster={json.dumps(cluster)}"
    threshold = f"{rule.threshold:g}"
    if rule.kind in _GROUP_KINDS:
        how, metric = _GROUP_KINDS[rule.kind]
        labels = selector + _matcher("group", rule.match) + _matcher("topic", rule.topics)
        return f"{how} by (cluster, group) ({metric}{{{labels}}}) > {threshold}"
    if rule.kind == "lag_status":
        # The group status metric has levels (0 OK, 1 WARN, 2 ERR: STOP, STALL or REWIND somewhere).
        level = 1 if "WARN" in rule.statuses else 2
        return f"kazami_consumer_group_status{{{selector}{_matcher('group', rule.match)}}} >= {level}"
    if rule.kind in _TOPIC_KINDS:
        return f"{_TOPIC_KINDS[rule.kind]}{{{selector}{_matcher('topic', rule.match)}}} > {threshold}"
    if rule.kind == "broker_gone":
        return f"kazami_broker_up{{{selector}{_matcher('broker', rule.match)}}} == 0"
    return None


def rules_file(cluster: str, rules: list[tuple[Rule, str]]) -> str:
    """The alerting-rules file of ``rules`` (each with its severity) on ``cluster``."""
    lines = ["groups:", f"  - name: {json.dumps(f'kazami-{cluster}')}", "    rules:"]
    written = 0
    for rule, severity in rules:
        expr = expression(cluster, rule)
        if expr is None:
            continue
        written += 1
        lines += [
            f"      - alert: {json.dumps(re.sub(r'[^A-Za-z0-9_]+', '_', rule.name).strip('_') or f'rule_{rule.id}')}",
            f"        expr: {json.dumps(expr)}",
            f"        for: {json.dumps(f'{int(rule.for_s)}s')}",
            "        labels:",
            f"          severity: {json.dumps(severity)}",
            f"          kazami_rule: {json.dumps(rule.name)}",
            "        annotations:",
            f"          summary: {json.dumps(f'{rule.name} ({rule.kind}) on {cluster}')}",
        ]
    if not written:
        lines[-1] = "    rules: []"
    return "\n".join(lines) + "\n"
