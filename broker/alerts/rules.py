"""Alert rules over what the console already knows of a cluster, and the life of an alert.

A rule names a kind (what it watches), the subjects it applies to (a glob over group, topic or broker names), a
threshold and a ``for`` duration. Each round, :func:`breaches` says which subjects break the rule now, from the
round's facts (the groups' lag and statuses the lag sampler read, the replication snapshot the replication watch
took): no request of its own. :func:`step` then moves each subject along: breaking for the first time makes it
pending; pending for ``for_s`` makes it fire; a firing subject that no longer breaks resolves. Facts that were not
known this round (a cluster that did not answer) change nothing: an alert neither fires nor resolves on silence.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from broker.connect.connectors import Connector
from broker.errors import InvalidInput
from broker.groups.forecast import Forecast
from broker.groups.lag import GroupLag
from broker.groups.lag_status import format_duration
from broker.messages.transactions import OpenTransaction
from broker.replication.health import Replication

# kind -> (what its subjects are, the unit of its threshold, what it says), in the order a form offers them.
KINDS: dict[str, tuple[str, str, str]] = {
    "consumer_lag": ("group", "records", "a group's lag (summed over the partitions of its matching topics) over N"),
    "consumer_lag_time": ("group", "seconds", "a group's oldest unread record older than N seconds"),
    "lag_status": ("group", "", "a group's lag status one of the chosen (Burrow's STOP, STALL, REWIND, WARN)"),
    "catch_up_time": ("group", "seconds", "a group that would take more than N seconds to catch up, or never"),
    "retention_risk": ("group", "seconds", "a group's oldest unread record deleted by retention within N seconds"),
    "offline_partitions": ("topic", "partitions", "a topic with more than N partitions without a leader"),
    "under_replicated": ("topic", "partitions", "a topic with more than N partitions missing an in-sync replica"),
    "under_min_isr": ("topic", "partitions", "a topic with more than N partitions under min.insync.replicas"),
    "broker_gone": ("broker", "", "a broker that holds replicas or was registered, not registered now"),
    "throughput_low": ("topic", "messages/s", "a topic written at N messages a second or less (0: nothing written)"),
    "connector_failed": ("connector", "tasks", "a connector FAILED, or more than N of its tasks FAILED"),
    "disk_used": ("broker", "percent", "a broker whose log dirs' volume is more than N percent full"),
    "cluster_unreachable": (
        "cluster",
        "",
        "the cluster does not answer the lag sampler's round (every broker down or refused)",
    ),
    "controller_changed": (
        "controller",
        "seconds",
        "the active controller changed (or none is active) within the last N seconds (0: 5 minutes)",
    ),
    "hanging_transaction": (
        "topic",
        "seconds",
        "a transaction open on a topic's partition, silent for more than N seconds (0: the brokers' "
        "transaction.max.timeout.ms); says whether its coordinator forgot it (hanging)",
    ),
}
CONTROLLER_WINDOW_S = 300.0  # controller_changed with threshold 0
SEVERITIES = ("critical", "warning", "info")
LAG_STATUSES = ("WARN", "STOP", "STALL", "REWIND")


@dataclass(frozen=True)
class Rule:
    id: int
    name: str
    kind: str
    threshold: float = 0
    for_s: float = 0
    match: str = "*"  # glob over the subject's name: a group id, a topic, a broker id
    topics: str = "*"  # group kinds: the topics whose partitions count
    statuses: tuple[str, ...] = ("STOP", "STALL", "REWIND")  # lag_status: the statuses that break it

    @property
    def subject_type(self) -> str:
        return KINDS[self.kind][0]


def check_rule(kind: Any, threshold: Any, for_s: Any, match: Any, topics: Any, statuses: Any) -> dict[str, Any]:
    """A rule's fields as given (a form, a JSON body), checked: the kind known, numbers that are numbers and not
    negative, globs that are text, statuses among Burrow's. Returns them typed; raises InvalidInput."""
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}, not {str(kind)[:40]!r}.")
    numbers = {}
    for name, value, default in (("threshold", threshold, 0), ("for_s", for_s, 0)):
        if value is None or value == "":
            value = default
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InvalidInput(f"{name} must be a number, not {str(value)[:40]!r}.") from None
        if not number >= 0 or number > 10**15:
            raise InvalidInput(f"{name} must be a number from 0 up, not {str(value)[:40]!r}.")
        numbers[name] = number
    globs = {}
    for name, value in (("match", match), ("topics", topics)):
        text = "*" if value in (None, "") else value
        if not isinstance(text, str) or len(text) > 249 or any(ord(c) < 32 for c in text):
            raise InvalidInput(f"{name} must be a name or a glob such as orders-* (up to 249 characters).")
        globs[name] = text.strip() or "*"
    chosen: tuple[str, ...] = ("STOP", "STALL", "REWIND")
    if statuses not in (None, "", []):
        items = statuses.split(",") if isinstance(statuses, str) else statuses
        if not isinstance(items, list | tuple) or not all(isinstance(s, str) for s in items):
            raise InvalidInput("statuses must be a list of lag statuses.")
        chosen = tuple(dict.fromkeys(s.strip().upper() for s in items if s.strip()))
        unknown = [s for s in chosen if s not in LAG_STATUSES]
        if unknown or not chosen:
            raise InvalidInput(f"statuses must be among {', '.join(LAG_STATUSES)}, not {', '.join(unknown)[:80]!r}.")
    return {"kind": kind, **numbers, **globs, "statuses": chosen}


@dataclass(frozen=True)
class Breach:
    subject: str  # the group id, topic or broker id the rule is broken by
    value: float  # what was measured (the lag, the seconds, the partitions; 1 for a status or a broker gone)
    text: str  # one line for people


@dataclass(frozen=True)
class Facts:
    """What one round knows of a cluster. None: not known this round (the cluster did not answer)."""

    at_ms: int
    groups: list[GroupLag] | None = None
    statuses: dict[str, tuple[str, str]] = field(default_factory=dict)  # group -> (worst partition status, reason)
    replication: Replication | None = None
    # Brokers seen before (registered, or holding replicas), which a snapshot without them shows gone: a stopped
    # broker of a ZooKeeper-mode cluster leaves the registry, and a cluster without topics names no replica.
    known_brokers: frozenset[int] = frozenset()
    forecasts: dict[str, Forecast] | None = None  # group -> its forecast (catch_up_time, retention_risk)
    topic_rates: dict[str, float] | None = None  # topic -> messages a second since the previous look
    connectors: list[Connector] | None = None  # every connector of the cluster's Connect clusters, with status
    # broker -> (the fullest of its log dirs' volumes, in percent; that log dir's path); brokers that do not say
    # how big their volumes are (before Kafka 3.3) are left out.
    disks: dict[int, tuple[float, str]] | None = None
    # Whether the round reached the cluster (None: not a round that tried), and why not: cluster_unreachable.
    cluster: str = ""
    reachable: bool | None = None
    unreachable_reason: str = ""
    # Since when the active controller (the replication snapshot's) is the one this console knows (None: since
    # before the console first looked), and the one before it: controller_changed.
    controller_since_ms: int | None = None
    controller_before: int | None = None
    # Transactions open on partitions for longer than the lowest threshold of the round's rules (the brokers'
    # transaction.max.timeout.ms for 0), with that limit in ms: hanging_transaction.
    open_transactions: list[OpenTransaction] | None = None
    open_limit_ms: int = 0


# Partition kinds: the PartitionReplicas property that marks a partition, and how a breach says it.
_PARTITION_KINDS = {
    "offline_partitions": ("offline", "without a leader"),
    "under_replicated": ("under_replicated", "missing an in-sync replica"),
    "under_min_isr": ("under_min_isr", "under min.insync.replicas"),
}


def _matches(name: str, glob: str) -> bool:
    return glob in ("", "*") or fnmatch.fnmatchcase(name, glob)


def breaches(rule: Rule, facts: Facts) -> dict[str, Breach] | None:
    """The subjects that break ``rule`` now, or None when this round does not know (the facts it needs are
    missing): states then stay as they are."""
    kind = rule.kind
    if kind in ("catch_up_time", "retention_risk"):
        if facts.forecasts is None:
            return None
        return {
            b.subject: b
            for group, ahead in facts.forecasts.items()
            if _matches(group, rule.match)
            for b in _ahead(rule, group, ahead)
        }
    if kind == "connector_failed":
        if facts.connectors is None:
            return None
        found = {}
        for c in facts.connectors:
            if _matches(c.name, rule.match) and (c.state == "FAILED" or c.failed_tasks > rule.threshold):
                subject = f"{c.connect}/{c.name}"
                what = "FAILED" if c.state == "FAILED" else f"{c.failed_tasks} of {len(c.tasks)} tasks FAILED"
                found[subject] = Breach(subject, c.failed_tasks, f"connector {c.name} on {c.connect}: {what}")
        return found
    if kind == "disk_used":
        if facts.disks is None:
            return None
        return {
            str(b): Breach(str(b), full, f"broker {b}: the volume of {path} is {full:.1f}% full")
            for b, (full, path) in sorted(facts.disks.items())
            if full > rule.threshold and _matches(str(b), rule.match)
        }
    if kind == "throughput_low":
        if facts.topic_rates is None:
            return None
        return {
            topic: Breach(topic, rate, f"{topic} is written at {rate:,.2f} messages a second")
            for topic, rate in facts.topic_rates.items()
            if rate <= rule.threshold and _matches(topic, rule.match)
        }
    if kind == "cluster_unreachable":
        if facts.reachable is None:
            return None
        if facts.reachable or not _matches(facts.cluster, rule.match):
            return {}
        return {
            facts.cluster: Breach(
                facts.cluster, 1, f"cluster {facts.cluster} does not answer: {facts.unreachable_reason}"
            )
        }
    if kind == "hanging_transaction":
        if facts.open_transactions is None:
            return None
        return _open_transactions(rule, facts.open_transactions, facts.open_limit_ms)
    if KINDS[kind][0] == "group":
        if facts.groups is None:
            return None
        return {b.subject: b for g in facts.groups if _matches(g.group_id, rule.match) for b in _group(rule, g, facts)}
    if facts.replication is None:
        return None
    if kind == "controller_changed":
        window_ms = (rule.threshold or CONTROLLER_WINDOW_S) * 1000
        active = facts.replication.controller
        if active is None:
            return {"none": Breach("none", -1, "no active controller")}
        since = facts.controller_since_ms
        if since is None or facts.at_ms - since >= window_ms:
            return {}
        before = "none" if facts.controller_before is None else str(facts.controller_before)
        text = f"the active controller changed from {before} to {active}"
        return {str(active): Breach(str(active), active, text)}
    if kind == "broker_gone":
        snapshot = facts.replication
        known = set(snapshot.brokers) | {r for p in snapshot.partitions for r in p.replicas} | facts.known_brokers
        return {
            str(b): Breach(str(b), 1, f"broker {b} is not registered with the cluster")
            for b in sorted(known)
            if not snapshot.brokers.get(b, False) and _matches(str(b), rule.match)
        }
    attribute, what = _PARTITION_KINDS[kind]
    counts: dict[str, int] = {}
    for p in facts.replication.partitions:
        if getattr(p, attribute) and _matches(p.topic, rule.match):
            counts[p.topic] = counts.get(p.topic, 0) + 1
    return {
        topic: Breach(topic, n, f"{topic}: {n} partition{'s' if n != 1 else ''} {what}")
        for topic, n in counts.items()
        if n > rule.threshold
    }


def _group(rule: Rule, g: GroupLag, facts: Facts) -> list[Breach]:
    parts = [p for p in g.partitions if p.committed is not None and _matches(p.topic, rule.topics)]
    if not parts:
        return []
    if rule.kind == "consumer_lag":
        lag = sum(p.lag or 0 for p in parts)
        if lag > rule.threshold:
            return [Breach(g.group_id, lag, f"{g.group_id} is {lag:,} records behind (over {rule.threshold:,.0f})")]
        return []
    if rule.kind == "consumer_lag_time":
        ages = [p.lag_ms for p in parts if p.lag_ms is not None]
        age_s = max(ages) / 1000 if ages else 0
        if age_s > rule.threshold:
            late = format_duration(int(age_s * 1000))
            return [Breach(g.group_id, age_s, f"{g.group_id}'s oldest unread record is {late} old")]
        return []
    status, reason = facts.statuses.get(g.group_id, ("", ""))
    if status in rule.statuses:
        return [Breach(g.group_id, 1, f"{g.group_id} is {status}: {reason}" if reason else f"{g.group_id} is {status}")]
    return []


def _open_transactions(rule: Rule, found: list[OpenTransaction], limit_ms: int) -> dict[str, Breach]:
    """Per topic: its partitions a transaction holds open past the rule's threshold (or ``limit_ms``, the
    brokers' limit, for 0)."""
    least = rule.threshold * 1000 if rule.threshold > 0 else limit_ms
    by_topic: dict[str, list[OpenTransaction]] = {}
    for t in found:
        if t.silent_ms >= least and _matches(t.topic, rule.match):
            by_topic.setdefault(t.topic, []).append(t)
    breached = {}
    for topic, held in sorted(by_topic.items()):
        oldest = max(held, key=lambda t: t.silent_ms)
        hanging = sum(t.hanging for t in held)
        who = f"producer {oldest.producer.producer_id}" + (
            f" ({oldest.transactional_id})" if oldest.transactional_id else ""
        )
        text = (
            f"{topic}: a transaction holds {len(held)} partition{'s' if len(held) != 1 else ''} open, the oldest "
            f"(partition {oldest.partition}, {who}) silent for {format_duration(oldest.silent_ms)}"
            + (f"; {hanging} hanging (its coordinator forgot it: abort it)" if hanging else "")
        )
        breached[topic] = Breach(topic, len(held), text)
    return breached


def _ahead(rule: Rule, group: str, ahead: Forecast) -> list[Breach]:
    if rule.kind == "catch_up_time":
        if ahead.lag <= 0:
            return []
        if ahead.catch_up_s is None:
            return [Breach(group, 0, f"{group} does not gain: {ahead.lag:,} behind, read no faster than written")]
        if ahead.catch_up_s > rule.threshold:
            late = format_duration(int(ahead.catch_up_s * 1000))
            return [Breach(group, ahead.catch_up_s, f"{group} would take {late} to catch up ({ahead.lag:,} behind)")]
        return []
    risk = ahead.retention_risk
    if risk is None or (rule.threshold > 0 and risk.deleted_in_s > rule.threshold):
        return []
    when = format_duration(int(risk.deleted_in_s * 1000))
    text = f"{group}: the oldest unread record of {risk.topic}-{risk.partition} is deleted by retention in {when}"
    return [
        Breach(group, risk.deleted_in_s, text + (" (unread)" if risk.catch_up_s is None else ", before it is read"))
    ]


@dataclass(frozen=True)
class Track:
    """What is kept of a subject that breaks a rule: since when it breaks, and since when it fires (None:
    pending, not firing yet)."""

    breaking_since_ms: int
    firing_since_ms: int | None = None
    value: float = 0
    text: str = ""


@dataclass(frozen=True)
class Transition:
    subject: str
    state: str  # "firing" or "resolved"
    since_ms: int  # when it started breaking (firing) or fired (resolved)
    value: float
    text: str


def step(
    rule: Rule, tracks: dict[str, Track], found: dict[str, Breach] | None, now_ms: int
) -> tuple[dict[str, Track], list[Transition]]:
    """Move each subject of ``rule`` one round on: the tracks to keep and what fired or resolved. ``found`` None
    (this round does not know) keeps every track as it is."""
    if found is None:
        return dict(tracks), []
    kept: dict[str, Track] = {}
    changes: list[Transition] = []
    for subject, breach in found.items():
        before = tracks.get(subject)
        since = before.breaking_since_ms if before is not None else now_ms
        firing = before.firing_since_ms if before is not None else None
        if firing is None and now_ms - since >= rule.for_s * 1000:
            firing = now_ms
            changes.append(Transition(subject, "firing", since, breach.value, breach.text))
        kept[subject] = Track(since, firing, breach.value, breach.text)
    for subject, before in tracks.items():
        if subject not in found and before.firing_since_ms is not None:
            text = f"resolved: {before.text}" if before.text else "resolved"
            changes.append(Transition(subject, "resolved", before.firing_since_ms, before.value, text))
    return kept, changes
