"""Alerts, evaluated where their facts are read: the group rules after each lag sample (the lag and statuses the
sampler just read), the replication rules after each look of the replication watch (its snapshot), both in the
process that holds the sampler's lease, with no request of their own. What breaks, fires and resolves is kept in
the database (AlertState, AlertEvent), so a restart neither loses a firing alert nor sends it twice; each event
is sent to the rule's channels (AlertDelivery), tried again with back-off when the target does not take it.

The pure parts (which subjects break a rule, when a breach fires, what is posted) are broker.alerts'.
"""

from __future__ import annotations

import fnmatch
import logging
import threading
import time
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from broker.alerts import deliver
from broker.alerts.rules import KINDS, Facts, Rule, Track, breaches, step
from broker.cluster.logdirs import describe_log_dirs
from broker.connect.connectors import ConnectClient, Connector, list_all
from broker.errors import KazamiError
from broker.groups.lag import GroupLag
from broker.messages.transactions import OpenTransaction, find_hanging
from broker.replication.health import Replication
from broker.topics.read import retention_ms_of
from console.config.clusters import get_connection
from console.config.connect import connect_configs
from console.models import AlertDelivery, AlertEvent, AlertRule, AlertSilence, AlertState, ReplicationEvent
from console.present.lag import group_forecasts, verdicts

log = logging.getLogger(__name__)

# The rules every cluster gets the first time it is evaluated (admins may change them; a deleted one is kept
# disabled, so that it is not made again).
BUILTIN = (
    ("Offline partitions", "offline_partitions", "critical"),
    ("Broker gone", "broker_gone", "critical"),
    ("Failed connectors", "connector_failed", "critical"),  # on a cluster with a Connect cluster configured
    ("Cluster unreachable", "cluster_unreachable", "critical"),
)
# Deliveries tried in one go at the most (the rest wait for the next round).
BATCH = 50
_delivering = threading.Lock()
# The brokers each cluster was seen with, in this process (what "gone" is measured against).
_seen_brokers: dict[str, set[int]] = {}


def spec(rule: AlertRule) -> Rule:
    return Rule(
        id=rule.pk,
        name=rule.name,
        kind=rule.kind,
        threshold=rule.threshold,
        for_s=rule.for_s,
        match=rule.match or "*",
        topics=rule.topics or "*",
        statuses=tuple(rule.statuses) or ("STOP", "STALL", "REWIND"),
    )


def ensure_builtin(cluster: str) -> None:
    have = set(AlertRule.objects.filter(cluster=cluster, builtin=True).values_list("kind", flat=True))
    for name, kind, severity in BUILTIN:
        if kind in CONNECT_KINDS and not connect_configs(cluster):
            continue
        if kind not in have and not AlertRule.objects.filter(cluster=cluster, name=name).exists():
            AlertRule.objects.create(
                cluster=cluster,
                name=name,
                kind=kind,
                severity=severity,
                builtin=True,
                created_at=timezone.now(),
                created_by="kazami",
            )


# Which round evaluates which kinds: the lag sampler's, the replication watch's, the throughput look's.
LAG_KINDS = (
    "consumer_lag",
    "consumer_lag_time",
    "lag_status",
    "catch_up_time",
    "retention_risk",
    "cluster_unreachable",
)
REPLICATION_KINDS = ("offline_partitions", "under_replicated", "under_min_isr", "broker_gone", "controller_changed")
THROUGHPUT_KINDS = ("throughput_low",)
CONNECT_KINDS = ("connector_failed",)
DISK_KINDS = ("disk_used",)
TRANSACTION_KINDS = ("hanging_transaction",)
# Open transactions for hanging_transaction rules: asked (DescribeProducers of every partition's leader, then
# the coordinators of the open ones) at most once per this many seconds.
TRANSACTIONS_MAX_AGE_S = 60.0
_open: dict[str, tuple[float, int | None, tuple[list[OpenTransaction], int] | None]] = {}
# The active controller each cluster was last seen with, since when, and the one before (controller_changed).
_controllers: dict[str, tuple[int | None, int | None, int | None]] = {}
# Brokers' log dirs for disk rules: asked (one DescribeLogDirs a broker) at most once per this many seconds.
DISKS_MAX_AGE_S = 60.0
_disks: dict[str, tuple[float, dict[int, tuple[float, str]]]] = {}
# Topics' retention.ms for the forecasts of retention_risk rules: asked at most once per this many seconds.
RETENTION_MAX_AGE_S = 600.0
_retention: dict[str, tuple[float, dict[str, int]]] = {}


def after_lag_sample(cluster: str, groups: list[GroupLag], now: datetime) -> list[AlertEvent]:
    """The group rules of ``cluster`` over the groups the lag sampler just read."""
    ensure_builtin(cluster)
    rules = _enabled(cluster, LAG_KINDS + CONNECT_KINDS)
    if not rules:
        return []
    statuses: dict[str, tuple[str, str]] = {}
    if any(r.kind == "lag_status" for r in rules):
        for group, verdict in verdicts(cluster, groups).items():
            worst = verdict.worst
            statuses[group] = (worst.status, worst.reason) if worst is not None else (verdict.status, verdict.reason)
    forecasts = None
    if any(r.kind in ("catch_up_time", "retention_risk") for r in rules):
        topics = sorted({p.topic for g in groups for p in g.partitions})
        retention = _retention_of(cluster, topics) if any(r.kind == "retention_risk" for r in rules) else {}
        forecasts = group_forecasts(cluster, groups, retention)
    connectors = _connectors(cluster) if any(r.kind in CONNECT_KINDS for r in rules) else None
    facts = Facts(
        at_ms=_ms(now),
        groups=groups,
        statuses=statuses,
        forecasts=forecasts,
        connectors=connectors,
        cluster=cluster,
        reachable=True,
    )
    return _evaluate(cluster, rules, facts, now)


def after_failed_sample(cluster: str, reason: str, now: datetime) -> list[AlertEvent]:
    """The lag sampler's round could not read ``cluster``: its cluster_unreachable rules (and nothing else: the
    other rules neither fire nor resolve on silence)."""
    ensure_builtin(cluster)
    rules = _enabled(cluster, ("cluster_unreachable",))
    if not rules:
        return []
    facts = Facts(at_ms=_ms(now), cluster=cluster, reachable=False, unreachable_reason=reason)
    return _evaluate(cluster, rules, facts, now)


def _connectors(cluster: str) -> list[Connector] | None:
    """Every connector of the cluster's Connect clusters with its status (one request each), or None when one
    of them did not answer: its connectors' alerts then neither fire nor resolve."""
    clients = [ConnectClient(c) for c in connect_configs(cluster).values()]
    if not clients:
        return None
    found = list_all(clients)
    return None if found.unanswered else found.connectors


def _retention_of(cluster: str, topics: list[str]) -> dict[str, int]:
    """The topics' retention.ms, asked of the cluster at most every RETENTION_MAX_AGE_S (one DescribeConfigs)."""
    kept = _retention.get(cluster)
    if kept is not None and time.monotonic() - kept[0] < RETENTION_MAX_AGE_S and set(topics) <= set(kept[1]):
        return kept[1]
    found = retention_ms_of(get_connection(cluster).background, topics)
    _retention[cluster] = (time.monotonic(), found)
    return found


def after_throughput_look(cluster: str, topic_rates: dict[str, float], now: datetime) -> list[AlertEvent]:
    """The throughput rules of ``cluster`` over the rates the throughput look just measured."""
    rules = _enabled(cluster, THROUGHPUT_KINDS + DISK_KINDS + TRANSACTION_KINDS)
    if not rules:
        return []
    disks = _disks_of(cluster) if any(r.kind in DISK_KINDS for r in rules) else None
    held = [r for r in rules if r.kind in TRANSACTION_KINDS]
    found = _open_of(cluster, min(r.threshold for r in held)) if held else None
    facts = Facts(
        at_ms=_ms(now),
        topic_rates=topic_rates,
        disks=disks,
        open_transactions=found[0] if found is not None else None,
        open_limit_ms=found[1] if found is not None else 0,
    )
    return _evaluate(cluster, rules, facts, now)


def _open_of(cluster: str, least_s: float) -> tuple[list[OpenTransaction], int] | None:
    """The transactions open for longer than ``least_s`` seconds (0: the brokers' transaction.max.timeout.ms) on
    the cluster's partitions and that limit in ms, asked at most every TRANSACTIONS_MAX_AGE_S; None when the
    cluster did not answer."""
    limit = int(least_s * 1000) if least_s > 0 else None
    kept = _open.get(cluster)
    if kept is not None and kept[1] == limit and time.monotonic() - kept[0] < TRANSACTIONS_MAX_AGE_S:
        return kept[2]
    try:
        report = find_hanging(get_connection(cluster).background, None, limit)
        found: tuple[list[OpenTransaction], int] | None = (report.candidates, report.max_timeout_ms)
    except KazamiError:
        found = None
    _open[cluster] = (time.monotonic(), limit, found)
    return found


def _disks_of(cluster: str) -> dict[int, tuple[float, str]] | None:
    """Each broker's fullest log-dir volume (percent, path), asked at most every DISKS_MAX_AGE_S; None when the
    cluster did not answer."""
    kept = _disks.get(cluster)
    if kept is not None and time.monotonic() - kept[0] < DISKS_MAX_AGE_S:
        return kept[1]
    try:
        found = describe_log_dirs(get_connection(cluster).background)
    except KazamiError:
        return None
    fullest: dict[int, tuple[float, str]] = {}
    for broker in found:
        for d in broker.log_dirs:
            if d.total_bytes and d.usable_bytes is not None and d.error is None:
                share = 100.0 * (d.total_bytes - d.usable_bytes) / d.total_bytes
                if broker.broker not in fullest or share > fullest[broker.broker][0]:
                    fullest[broker.broker] = (share, d.path)
    _disks[cluster] = (time.monotonic(), fullest)
    return fullest


def after_replication_look(cluster: str, snapshot: Replication) -> list[AlertEvent]:
    """The replication rules of ``cluster`` over the replication watch's new snapshot."""
    ensure_builtin(cluster)
    rules = _enabled(cluster, REPLICATION_KINDS)
    if not rules:
        return []
    now = datetime.fromtimestamp(snapshot.fetched_at_ms / 1000, tz=timezone.get_current_timezone())
    seen = _seen_brokers.setdefault(cluster, set())
    seen.update(snapshot.brokers)
    # A broker gone before a restart is still known: its state says so.
    gone_before = AlertState.objects.filter(rule__cluster=cluster, rule__kind="broker_gone").values_list(
        "subject", flat=True
    )
    known = frozenset(seen | {int(b) for b in gone_before if b.isdigit()})
    since, before = _controller_facts(cluster, snapshot)
    facts = Facts(
        at_ms=snapshot.fetched_at_ms,
        replication=snapshot,
        known_brokers=known,
        controller_since_ms=since,
        controller_before=before,
    )
    return _evaluate(cluster, rules, facts, now)


def _controller_facts(cluster: str, snapshot: Replication) -> tuple[int | None, int | None]:
    """(since when the active controller is, the one before it) as this process saw them, from the last change
    the replication watch stored when it first looks (a restart does not make a change of the old one)."""
    kept = _controllers.get(cluster)
    if kept is None:
        last = (
            ReplicationEvent.objects.filter(cluster=cluster, kind="controller_changed")
            .order_by("-at", "-id")
            .values_list("at", "details")
            .first()
        )
        if last is not None and last[1].get("to") == snapshot.controller:
            kept = (snapshot.controller, _ms(last[0]), last[1].get("from"))
        else:
            kept = (snapshot.controller, None, None)
    controller, since, before = kept
    if snapshot.controller != controller:
        controller, since, before = snapshot.controller, snapshot.fetched_at_ms, controller
    _controllers[cluster] = (controller, since, before)
    return since, before


def _enabled(cluster: str, kinds: tuple[str, ...]) -> list[AlertRule]:
    return list(AlertRule.objects.filter(cluster=cluster, enabled=True, kind__in=kinds).prefetch_related("channels"))


def _ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.get_current_timezone())


def silenced(silences: list[AlertSilence], rule: AlertRule, subject: str) -> bool:
    """Whether one of ``silences`` (the active ones of the rule's cluster) holds back ``rule``'s ``subject``."""
    return any(
        (s.rule_id is None or s.rule_id == rule.pk) and fnmatch.fnmatchcase(subject, s.subject or "*") for s in silences
    )


def active_silences(cluster: str, now: datetime) -> list[AlertSilence]:
    return list(AlertSilence.objects.filter(cluster=cluster, starts_at__lte=now, ends_at__gt=now))


def _evaluate(cluster: str, rules: list[AlertRule], facts: Facts, now: datetime) -> list[AlertEvent]:
    events: list[AlertEvent] = []
    silences = active_silences(cluster, now)
    for rule in rules:
        found = breaches(spec(rule), facts)
        if found is None:
            continue
        with transaction.atomic():
            stored = {s.subject: s for s in AlertState.objects.select_for_update().filter(rule=rule)}
            tracks = {
                subject: Track(_ms(s.breaking_since), _ms(s.firing_since) if s.firing_since else None, s.value, s.text)
                for subject, s in stored.items()
            }
            kept, changes = step(spec(rule), tracks, found, facts.at_ms)
            AlertState.objects.filter(rule=rule).exclude(subject__in=list(kept)).delete()
            for subject, track in kept.items():
                AlertState.objects.update_or_create(
                    rule=rule,
                    subject=subject[:255],
                    defaults={
                        "breaking_since": _at(track.breaking_since_ms),
                        "firing_since": _at(track.firing_since_ms) if track.firing_since_ms is not None else None,
                        "value": track.value,
                        "text": track.text[:500],
                    },
                )
            for change in changes:
                event = AlertEvent.objects.create(
                    rule=rule,
                    cluster=cluster,
                    rule_name=rule.name,
                    kind=rule.kind,
                    severity=rule.severity,
                    subject=change.subject[:255],
                    state=change.state,
                    at=now,
                    since=_at(change.since_ms),
                    value=change.value,
                    text=change.text[:500],
                    silenced=silenced(silences, rule, change.subject),
                )
                if not event.silenced:
                    AlertDelivery.objects.bulk_create(
                        [AlertDelivery(event=event, channel=c, next_at=now) for c in rule.channels.all()]
                    )
                events.append(event)
    return events


def link(cluster: str, kind: str, subject: str) -> str:
    """The page of what an alert is about, with KAZAMI_PUBLIC_URL before it (no link without that setting)."""
    base = settings.KAZAMI_PUBLIC_URL.rstrip("/")
    if not base:
        return ""
    subject_type = KINDS.get(kind, ("cluster", "", ""))[0]
    try:
        if subject_type == "group":
            path = reverse("group-detail", kwargs={"cluster": cluster, "group": subject})
        elif subject_type == "topic":
            path = reverse("topic-detail", kwargs={"cluster": cluster, "topic": subject})
        elif subject_type == "connector" and "/" in subject:
            connect, name = subject.split("/", 1)
            path = reverse("connector-detail", kwargs={"cluster": cluster, "connect_name": connect, "name": name})
        elif subject_type == "broker" and subject.isdigit():
            path = reverse("broker-logdirs", kwargs={"cluster": cluster, "broker": int(subject)})
        else:
            path = reverse("cluster-overview", kwargs={"cluster": cluster})
    except NoReverseMatch:
        path = reverse("cluster-overview", kwargs={"cluster": cluster})
    return base + path


def alert_json(event: AlertEvent) -> dict[str, Any]:
    """What a webhook is sent for ``event`` (and what the API lists)."""
    subject_type = KINDS[event.kind][0] if event.kind in KINDS else "channel"  # a test names its channel
    return {
        "rule": event.rule_name,
        "rule_id": event.rule_id,
        "state": event.state,
        "severity": event.severity,
        "cluster": event.cluster,
        "kind": event.kind,
        subject_type: event.subject,
        "subject": event.subject,
        "value": event.value,
        "since": event.since.isoformat(),
        "at": event.at.isoformat(),
        "link": link(event.cluster, event.kind, event.subject),
        "text": event.text,
        "silenced": event.silenced,
    }


def deliver_due(now: datetime | None = None) -> int:
    """Send what is due (new events, and failed ones whose back-off is over); returns how many were taken.
    One thread of the process delivers at a time (the sampler and the watch both call this)."""
    if not _delivering.acquire(blocking=False):
        return 0
    try:
        now = now or timezone.now()
        due = list(
            AlertDelivery.objects.filter(next_at__lte=now)
            .select_related("event", "channel")
            .order_by("next_at")[:BATCH]
        )
        taken = 0
        for d in due:
            taken += _try(d, timezone.now())
        return taken
    finally:
        _delivering.release()


def smtp() -> deliver.Smtp:
    return deliver.Smtp(
        host=settings.KAZAMI_SMTP_HOST,
        port=settings.KAZAMI_SMTP_PORT,
        tls=settings.KAZAMI_SMTP_TLS,
        user=settings.KAZAMI_SMTP_USER,
        password=settings.KAZAMI_SMTP_PASSWORD,
        sender=settings.KAZAMI_SMTP_FROM,
    )


def _try(d: AlertDelivery, now: datetime) -> int:
    d.attempts += 1
    try:
        if d.channel.kind == "email":
            deliver.send_mail(smtp(), list(d.channel.to), alert_json(d.event))
        else:
            deliver.send(d.channel.url, d.channel.format, alert_json(d.event), settings.KAZAMI_ALERT_PRIVATE_TARGETS)
    except deliver.DeliveryFailed as exc:
        d.error = str(exc)[:500]
        if d.attempts >= settings.KAZAMI_ALERT_ATTEMPTS:
            d.next_at = None
            d.error = f"gave up after {d.attempts} attempts: {d.error}"[:500]
        else:
            d.next_at = now + timedelta(seconds=5 * 2 ** (d.attempts - 1))
        d.save(update_fields=["attempts", "error", "next_at"])
        log.info("alert delivery %s to %s failed: %s", d.event_id, d.channel.name, d.error)
        return 0
    d.delivered_at, d.next_at, d.error = now, None, ""
    d.save(update_fields=["attempts", "error", "next_at", "delivered_at"])
    return 1


def send_test(channel: Any, cluster: str, username: str) -> AlertDelivery:
    """A test alert to ``channel`` now, kept in the history; the delivery says whether it was taken."""
    now = timezone.now()
    event = AlertEvent.objects.create(
        cluster=cluster,
        rule_name="test",
        kind="test",
        severity="info",
        subject=channel.name,
        state=AlertEvent.TEST,
        at=now,
        since=now,
        text=f"A test from Kazami, sent by {username}: this channel works.",
    )
    delivery = AlertDelivery.objects.create(event=event, channel=channel, next_at=None)
    delivery.attempts = 0
    _try(delivery, now)
    if delivery.delivered_at is None:  # a test is not tried again: its answer is the point
        delivery.next_at = None
        delivery.save(update_fields=["next_at"])
    return delivery
