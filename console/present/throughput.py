"""Throughput for the pages and the API, from the stored samples (console/background/throughput.py): the latest
round's rates (the cluster, its busiest topics, its brokers) and the last hour's, for charts."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from console.models import ThroughputSample

BUSIEST = 10  # topics shown on the overview


def _latest_round(cluster: str) -> datetime | None:
    """When the latest round measured the cluster, if recent (three sampling intervals): an older one is not now."""
    since = timezone.now() - timedelta(seconds=settings.KAZAMI_LAG_SAMPLE_INTERVAL * 3 + 5)
    row = (
        ThroughputSample.objects.filter(cluster=cluster, kind="cluster", at__gte=since)
        .order_by("-at")
        .values_list("at", flat=True)
        .first()
    )
    return row


def _rate(row: ThroughputSample) -> dict[str, Any]:
    return {"messages_in_per_s": round(row.messages_per_s, 2), "bytes_in_per_s": _rounded(row.bytes_per_s)}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def cluster_throughput(cluster: str, topics: int | None = BUSIEST) -> dict[str, Any] | None:
    """The latest round: ``messages_in_per_s``, ``bytes_in_per_s`` (None: not known this round), ``measured_at``
    (ISO), ``interval_s``, ``topics`` (the busiest first, ``topics`` of them; None: all written to) and ``brokers``;
    None before two rounds were made (or when the last one is old)."""
    at = _latest_round(cluster)
    if at is None:
        return None
    rows = list(ThroughputSample.objects.filter(cluster=cluster, at=at))
    total = next(r for r in rows if r.kind == "cluster")
    busiest = sorted((r for r in rows if r.kind == "topic"), key=lambda r: (-r.messages_per_s, r.name))
    brokers = sorted((r for r in rows if r.kind == "broker"), key=lambda r: int(r.name))
    return {
        **_rate(total),
        "measured_at": at.isoformat(),
        "interval_s": round(total.seconds, 1),
        "topics": [{"topic": r.name, **_rate(r)} for r in (busiest if topics is None else busiest[:topics])],
        "brokers": [{"broker": int(r.name), **_rate(r), "disk_bytes": r.disk_bytes} for r in brokers],
    }


def topic_throughput(cluster: str, topic: str) -> dict[str, Any] | None:
    """The topic's rates in the latest round (0 when nothing was written to it then); None when not measured."""
    at = _latest_round(cluster)
    if at is None:
        return None
    row = ThroughputSample.objects.filter(cluster=cluster, kind="topic", name=topic, at=at).first()
    if row is None:
        return {"messages_in_per_s": 0.0, "bytes_in_per_s": 0.0, "measured_at": at.isoformat()}
    return {**_rate(row), "measured_at": at.isoformat()}


def history(
    cluster: str, kind: str = "cluster", name: str = "", window: timedelta = timedelta(hours=1)
) -> dict[str, Any]:
    """The rates of the last ``window`` as a chart series: ``times`` (epoch ms), ``messages`` and ``bytes`` per
    second. For a topic, a round that wrote nothing to it counts 0 (idle topics have no rows)."""
    since = timezone.now() - window
    rounds = list(
        ThroughputSample.objects.filter(cluster=cluster, kind="cluster", at__gte=since)
        .order_by("at")
        .values_list("at", "messages_per_s", "bytes_per_s")
    )
    if kind == "cluster":
        points = rounds
    else:
        mine = {
            at: (m, b)
            for at, m, b in ThroughputSample.objects.filter(
                cluster=cluster, kind=kind, name=name, at__gte=since
            ).values_list("at", "messages_per_s", "bytes_per_s")
        }
        points = [(at, *mine.get(at, (0.0, 0.0))) for at, _, _ in rounds]
    return {
        "times": [int(at.timestamp() * 1000) for at, _, _ in points],
        "messages": [round(m, 2) for _, m, _ in points],
        "bytes": [_rounded(b) for _, _, b in points],
        "step_ms": int(settings.KAZAMI_LAG_SAMPLE_INTERVAL * 1000),
    }
