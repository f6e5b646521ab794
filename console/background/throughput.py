"""Throughput samples: at every round of the lag sampler (its lease holder only), one look at each cluster's end
offsets and replica sizes (broker.topics.throughput); the rates since the previous look are stored per topic,
per broker and for the cluster. The first round after a start has nothing to compare with and stores nothing."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from broker.errors import KazamiError
from broker.topics.throughput import Look, Rates, look, rates
from console.background import alerts
from console.config.clusters import get_configs, get_connection
from console.models import ThroughputSample

log = logging.getLogger(__name__)
# The previous look at each cluster, in this process.
_last: dict[str, Look] = {}
# A look costs what a topics listing costs: at most one every this many seconds, however often the lag is sampled.
MIN_INTERVAL_S = 5.0


def sample_once(now: datetime | None = None, min_interval_s: float = MIN_INTERVAL_S) -> dict[str, int]:
    """Look at every configured cluster (not looked at in the last ``min_interval_s``) and store the rates since
    the previous look; {cluster: rows stored}."""
    now = now or timezone.now()
    stored = {}
    for name in get_configs():
        previous = _last.get(name)
        if previous is not None and now.timestamp() * 1000 - previous.at_ms < min_interval_s * 1000:
            continue
        try:
            seen = look(get_connection(name).background)
        except KazamiError as exc:
            log.info("throughput: cluster %s skipped: %s", name, exc)
            continue
        before, _last[name] = _last.get(name), seen
        measured = rates(before, seen) if before is not None else None
        if measured is not None:
            stored[name] = store(name, measured, now)
            try:
                alerts.after_throughput_look(name, {t: r.messages_per_s for t, r in measured.topics.items()}, now)
            except Exception:  # an alert rule must never stop the sampling
                log.exception("alerts: the throughput rules of %s failed", name)
    cutoff = now - timedelta(hours=settings.KAZAMI_LAG_RETENTION_HOURS)
    ThroughputSample.objects.filter(at__lt=cutoff).delete()
    return stored


def store(cluster: str, measured: Rates, at: datetime) -> int:
    rows = [
        ThroughputSample(
            cluster=cluster,
            kind="cluster",
            name="",
            at=at,
            seconds=measured.seconds,
            messages_per_s=measured.total.messages_per_s,
            bytes_per_s=measured.total.bytes_per_s,
        )
    ]
    rows += [
        ThroughputSample(
            cluster=cluster,
            kind="topic",
            name=topic,
            at=at,
            seconds=measured.seconds,
            messages_per_s=rate.messages_per_s,
            bytes_per_s=rate.bytes_per_s,
        )
        for topic, rate in measured.topics.items()
        if rate.messages_per_s > 0  # an idle topic writes no row: no row at a round's time means none written
    ]
    rows += [
        ThroughputSample(
            cluster=cluster,
            kind="broker",
            name=str(broker),
            at=at,
            seconds=measured.seconds,
            messages_per_s=rate.messages_per_s,
            bytes_per_s=rate.bytes_per_s,
            disk_bytes=rate.disk_bytes,
        )
        for broker, rate in measured.brokers.items()
    ]
    ThroughputSample.objects.bulk_create(rows, batch_size=1000)
    return len(rows)
