"""Lag status and history for the pages: Burrow's rules over the stored samples, with lag at request time."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Min, Q, Sum
from django.utils import timezone

from broker.groups.commit_log import Key
from broker.groups.forecast import Forecast, Point, forecast
from broker.groups.lag import GroupLag
from broker.groups.lag_status import GroupVerdict, Observation, Rules, evaluate_group, severity
from console.models import CommitRing, CommitWatch, LagSample

RANGES = {"15m": timedelta(minutes=15), "1h": timedelta(hours=1), "6h": timedelta(hours=6), "24h": timedelta(hours=24)}


def rules() -> Rules:
    return Rules(window=settings.KAZAMI_LAG_WINDOW, allowed_lag=settings.KAZAMI_LAG_ALLOWED)


def verdicts(cluster: str, groups: list[GroupLag]) -> dict[str, GroupVerdict]:
    """Each group's status from its recent samples (one query for all groups) and its lag now."""
    if not groups:
        return {}
    r = rules()
    span = timedelta(seconds=settings.KAZAMI_LAG_SAMPLE_INTERVAL * (r.window + 2))
    since = timezone.now() - span * 3
    history: dict[str, dict[tuple[str, int], list[Observation]]] = defaultdict(lambda: defaultdict(list))
    ids = {g.group_id for g in groups}
    samples = (
        LagSample.objects.filter(cluster=cluster, at__gte=since, committed__isnull=False, log_end__isnull=False)
        .order_by("at")
        .values_list("group", "topic", "partition", "at", "committed", "log_end")
    )
    for group, topic, partition, at, committed, log_end in samples.iterator(chunk_size=5000):
        if group in ids and committed is not None and log_end is not None:
            history[group][(topic, partition)].append(Observation(int(at.timestamp() * 1000), committed, log_end))
    now_ms = int(timezone.now().timestamp() * 1000)
    frozen = [
        (g.group_id, p.topic, p.partition, p.committed)
        for g in groups
        for p in g.partitions
        if p.committed is not None
        and (p.lag or 0) > r.allowed_lag
        and (seen := history[g.group_id].get((p.topic, p.partition)))
        and all(o.committed == p.committed for o in seen)
    ]
    moved = _first_seen(cluster, frozen) if frozen else {}
    rings, read_to = rings_by_group(cluster, ids)
    result = {}
    for g in groups:
        parts = {
            (p.topic, p.partition): history[g.group_id].get((p.topic, p.partition), [])
            for p in g.partitions
            if p.committed is not None
        }
        # Lag now is what waits for the group: a marker after its last record is not lag (see waiting_end).
        ends = {(p.topic, p.partition): p.waiting_end for p in g.partitions if p.waiting_end is not None}
        # What is read now joins the history only when the offset moved since the last sample: a frozen
        # offset must keep the time of its last sample, or a stopped consumer would never look stopped.
        # (Its lag is still taken now, from the log ends.)
        for p in g.partitions:
            key = (p.topic, p.partition)
            if p.committed is not None and p.log_end is not None:
                seen = parts[key]
                if not seen or seen[-1].committed != p.committed:
                    parts[key] = [*seen, Observation(g.fetched_at_ms, p.committed, p.log_end)]
        # Where the offsets topic holds a full window of the group's commits, those are judged instead (Burrow's
        # ring; see console/background/commit_watch.py): a commit read now but not yet by the watch joins it.
        from_commits = set()
        recent: dict[tuple[str, int], list[int]] = {}  # the log ends read lately (Burrow's broker offsets)
        for p in g.partitions:
            key = (p.topic, p.partition)
            ring = rings.get(g.group_id, {}).get(key)
            if p.committed is None or p.log_end is None or not ring or len(ring) < r.window:
                continue
            if ring[-1].committed != p.committed:
                ring = [*ring, Observation(max(g.fetched_at_ms, ring[-1].at_ms), p.committed, p.log_end)]
            parts[key] = ring[-r.window :]
            from_commits.add(key)
            recent[key] = [o.log_end for o in history[g.group_id].get(key, [])[-r.window :]] + [p.log_end]
        consumed = {(p.topic, p.partition) for p in g.partitions if p.member_id}
        result[g.group_id] = evaluate_group(
            parts, now_ms, ends, r, consumed, moved.get(g.group_id), from_commits, read_to, recent
        )
    return result


def stored(cluster: str, groups: Iterable[str] | None = None) -> dict[Key, list[Observation]]:
    """The stored rings of the cluster (of ``groups`` only, when given), oldest commit first."""
    rows = CommitRing.objects.filter(cluster=cluster)
    names = None if groups is None else list(groups)
    found: dict[Key, list[Observation]] = {}
    chunks = [None] if names is None else [names[i : i + 500] for i in range(0, len(names), 500)]
    for chunk in chunks:
        query = rows if chunk is None else rows.filter(group__in=chunk)
        for group, topic, partition, commits in query.values_list("group", "topic", "partition", "commits"):
            found[(group, topic, partition)] = [Observation(int(a), int(c), int(e)) for a, c, e in commits]
    return found


def read_to_ms(cluster: str) -> int | None:
    """Up to when (epoch ms) the cluster's rings hold every commit, or None when they cannot be trusted now: never
    read, the topic not readable, or the reader silent for longer than three sampler rounds."""
    if not settings.KAZAMI_LAG_FROM_COMMITS:
        return None
    watch = CommitWatch.objects.filter(cluster=cluster).values_list("read_at", flat=True).first()
    if watch is None:
        return None
    if timezone.now() - watch > timedelta(seconds=settings.KAZAMI_LAG_SAMPLE_INTERVAL * 3 + 5):
        return None
    return int(watch.timestamp() * 1000)


GroupRings = dict[str, dict[tuple[str, int], list[Observation]]]


def rings_by_group(cluster: str, groups: Iterable[str]) -> tuple[GroupRings, int]:
    """The groups' rings ({group: {(topic, partition): commits}}) and up to when they are complete; empty when
    they cannot be trusted now (see read_to_ms)."""
    read_to = read_to_ms(cluster)
    if read_to is None:
        return {}, 0
    by_group: dict[str, dict[tuple[str, int], list[Observation]]] = defaultdict(dict)
    for (group, topic, partition), commits in stored(cluster, groups).items():
        by_group[group][(topic, partition)] = commits
    return by_group, read_to


def _first_seen(cluster: str, frozen: list[tuple[str, str, int, int]]) -> dict[str, dict[tuple[str, int], int]]:
    """For partitions whose committed offset did not move in the history a verdict loads ((group, topic,
    partition, offset)), when the lag sampler first saw that offset: the time it last moved, from the whole stored
    history (a few queries of up to 100 partitions each), so that a reason says how long it has truly not moved."""
    found: dict[str, dict[tuple[str, int], int]] = defaultdict(dict)
    for i in range(0, len(frozen), 100):
        chunk = frozen[i : i + 100]
        wanted = Q()
        for group, topic, partition, offset in chunk:
            wanted |= Q(group=group, topic=topic, partition=partition, committed=offset)
        rows = (
            LagSample.objects.filter(wanted, cluster=cluster)
            .values("group", "topic", "partition")
            .annotate(first=Min("at"))
        )
        for row in rows:
            found[row["group"]][(row["topic"], row["partition"])] = int(row["first"].timestamp() * 1000)
    return found


def history_series(cluster: str, group: str, window: str) -> dict[str, Any]:
    """Chart data: total lag and lag per partition over ``window`` (a key of RANGES), oldest first."""
    since = timezone.now() - RANGES[window]
    rows = (
        LagSample.objects.filter(cluster=cluster, group=group, at__gte=since)
        .order_by("at")
        .values_list("at", "topic", "partition", "lag")
    )
    times: list[int] = []
    totals: dict[int, int] = {}
    per: dict[str, dict[int, int | None]] = defaultdict(dict)
    for at, topic, partition, lag in rows.iterator(chunk_size=5000):
        ms = int(at.timestamp() * 1000)
        if ms not in totals:
            times.append(ms)
            totals[ms] = 0
        totals[ms] += lag or 0
        per[f"{topic}-{partition}"][ms] = lag
    return {
        "times": times,
        "total": [totals[t] for t in times],
        "partitions": {name: [values.get(t) for t in times] for name, values in sorted(per.items())},
    }


@dataclass(frozen=True)
class TopicConsumer:
    """A group with committed offsets on a topic: its lag there (summed over the topic's partitions), the age of
    its oldest unread record there, and the worst status of those partitions."""

    group_id: str
    state: str
    members: int
    partitions: int  # of the topic, with an offset of the group
    lag: int | None  # None when no partition's lag is known
    lag_ms: int | None
    status: str
    reason: str
    unknown_lag: int = 0  # partitions of the topic with an offset of the group whose lag is not known now

    def as_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "state": self.state,
            "members": self.members,
            "partitions": self.partitions,
            "lag": self.lag,
            "lag_ms": self.lag_ms,
            "status": self.status,
            "reason": self.reason,
            "unknown_lag_partitions": self.unknown_lag,
        }


def topic_consumers(cluster: str, groups: list[GroupLag], topic: str) -> list[TopicConsumer]:
    """The groups of ``groups`` (one listing of every group: the batched read the groups page makes) that have
    committed offsets on ``topic``, the most behind first."""
    reading = [g for g in groups if any(p.topic == topic and p.committed is not None for p in g.partitions)]
    judged = verdicts(cluster, reading)
    found = []
    for g in reading:
        mine = [p for p in g.partitions if p.topic == topic and p.committed is not None]
        lags = [p.lag for p in mine if p.lag is not None]
        ages = [p.lag_ms for p in mine if p.lag_ms is not None]
        marks = [v for v in judged[g.group_id].partitions if v.topic == topic]
        worst = max(marks, key=lambda v: (severity(v.status), v.current_lag or 0), default=None)
        found.append(
            TopicConsumer(
                group_id=g.group_id,
                state=g.state,
                members=len(g.members),
                partitions=len(mine),
                lag=sum(lags) if lags else None,
                lag_ms=max(ages) if ages else None,
                status=worst.status if worst is not None else "NOT_EVALUATED",
                reason=worst.reason if worst is not None else "",
                unknown_lag=len(mine) - len(lags),
            )
        )
    found.sort(key=lambda c: (-(c.lag or 0), c.group_id))
    return found


@dataclass(frozen=True)
class TopicReaders:
    """What the lag sampler's latest sample says of a topic: how many groups had committed offsets on it, and
    their lag there, summed (None when no partition's lag was known)."""

    groups: int
    lag: int | None


def readers_by_topic(cluster: str) -> tuple[dict[str, TopicReaders], Any]:
    """Each topic's consuming groups and total lag from the lag sampler's latest sample of ``cluster`` (two
    queries of the console's database, no request to Kafka), and the time of that sample. ({}, None) when the
    sampler has stored nothing lately (it is off, or the cluster was unreachable): the topics list then says
    it does not know, rather than showing an old figure as current."""
    since = timezone.now() - timedelta(seconds=settings.KAZAMI_LAG_SAMPLE_INTERVAL * 3 + 5)
    latest = LagSample.objects.filter(cluster=cluster, at__gte=since).aggregate(latest=Max("at"))["latest"]
    if latest is None:
        return {}, None
    rows = (
        LagSample.objects.filter(cluster=cluster, at=latest, committed__isnull=False)
        .values("topic")
        .annotate(groups=Count("group", distinct=True), lag=Sum("lag"))
    )
    return {r["topic"]: TopicReaders(groups=r["groups"], lag=r["lag"]) for r in rows}, latest


def group_forecast(cluster: str, group: GroupLag, retention_ms: dict[str, int]) -> Forecast | None:
    """The group's forecast (broker.groups.forecast) from its samples of the last few minutes (six sampler
    intervals, at least a minute) and its offsets now."""
    return group_forecasts(cluster, [group], retention_ms).get(group.group_id)


def group_forecasts(cluster: str, groups: list[GroupLag], retention_ms: dict[str, int]) -> dict[str, Forecast]:
    """:func:`group_forecast` of each of ``groups`` (those with enough history), their samples read in a few
    queries of up to 500 groups each."""
    window = timedelta(seconds=max(60.0, settings.KAZAMI_LAG_SAMPLE_INTERVAL * 6))
    since = timezone.now() - window
    history: dict[str, dict[tuple[str, int], list[Point]]] = defaultdict(lambda: defaultdict(list))
    ids = [g.group_id for g in groups]
    for i in range(0, len(ids), 500):
        rows = (
            LagSample.objects.filter(
                cluster=cluster,
                group__in=ids[i : i + 500],
                at__gte=since,
                committed__isnull=False,
                log_end__isnull=False,
            )
            .order_by("at")
            .values_list("group", "topic", "partition", "at", "committed", "log_end")
        )
        for group_id, topic, partition, at, committed, log_end in rows.iterator(chunk_size=5000):
            if committed is not None and log_end is not None:
                history[group_id][(topic, partition)].append(Point(int(at.timestamp() * 1000), committed, log_end))
    found = {}
    for group in groups:
        mine = history[group.group_id]
        for p in group.partitions:
            if p.committed is not None and p.log_end is not None:
                points = mine[(p.topic, p.partition)]
                if not points or points[-1].at_ms < group.fetched_at_ms:
                    points.append(Point(group.fetched_at_ms, p.committed, p.log_end))
        lag_ms = {(p.topic, p.partition): p.lag_ms for p in group.partitions}
        ahead = forecast(dict(mine), lag_ms, retention_ms)
        if ahead is not None:
            found[group.group_id] = ahead
    return found
