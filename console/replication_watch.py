"""The replication watch: every few seconds, one console process compares each cluster's replication with
what it saw last (broker.replication.diff) and stores the changes as events, the timeline the replication
page shows and ``GET /api/clusters/<c>/events/`` returns.

It runs beside the lag sampler, in the process that holds the sampler's lease, so several console
processes never store an event twice. Events older than ``KAZAMI_EVENT_RETENTION_HOURS`` are deleted.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from broker.errors import KazamiError
from broker.replication import Event, Replication, diff, get_replication
from console.clusters import get_configs, get_connection
from console.models import ReplicationEvent
from console.sampler import acquire_lease

log = logging.getLogger(__name__)

# A snapshot older than this is no baseline: changes since then may have come and gone unseen.
STALE_MS = 30_000
# The last snapshot seen of each cluster, in this process.
_last: dict[str, Replication] = {}
_lock = threading.Lock()


def observe(cluster: str) -> list[Event]:
    """Take a snapshot of ``cluster``, store what changed since the last one, and return those events.
    The first snapshot of a process has nothing to compare with. Raises ClusterUnavailable."""
    snapshot = get_replication(get_connection(cluster))
    with _lock:
        before = _last.get(cluster)
        if before is not None and snapshot.fetched_at_ms <= before.fetched_at_ms:
            return []  # an answer shared with an earlier caller: nothing new
        if before is not None and snapshot.fetched_at_ms - before.fetched_at_ms > STALE_MS:
            before = None  # a look from long ago (this process just took the lease over): no baseline
        _last[cluster] = snapshot
    events = diff(before, snapshot) if before is not None else []
    if events:
        ReplicationEvent.objects.bulk_create(
            [
                ReplicationEvent(
                    cluster=cluster,
                    at=datetime.fromtimestamp(e.at_ms / 1000, tz=timezone.get_current_timezone()),
                    kind=e.kind,
                    text=e.text[:500],
                    topic=e.topic or "",
                    partition=e.partition,
                    broker=e.broker,
                    details=e.details,
                )
                for e in events
            ]
        )
    return events


def forget(cluster: str | None = None) -> None:
    """Drop the remembered snapshots (tests start from a clean slate)."""
    with _lock:
        if cluster is None:
            _last.clear()
        else:
            _last.pop(cluster, None)


def prune(now: datetime | None = None) -> int:
    cutoff = (now or timezone.now()) - timedelta(hours=settings.KAZAMI_EVENT_RETENTION_HOURS)
    deleted, _ = ReplicationEvent.objects.filter(at__lt=cutoff).delete()
    return deleted


def events_of(cluster: str, since: datetime | None = None, limit: int = 200) -> list[ReplicationEvent]:
    """The cluster's timeline, newest first."""
    found = ReplicationEvent.objects.filter(cluster=cluster)
    if since is not None:
        found = found.filter(at__gt=since)
    return list(found.order_by("-at", "-id")[:limit])


def run_forever(stop: threading.Event) -> None:
    rounds = 0
    while not stop.is_set():
        try:
            if acquire_lease():
                for name in get_configs():
                    try:
                        observe(name)
                    except KazamiError as exc:
                        log.info("replication watch: cluster %s skipped: %s", name, exc)
                rounds += 1
                if rounds % 100 == 0:
                    prune()
        except Exception:
            log.exception("replication watch round failed")
        stop.wait(settings.KAZAMI_REPLICATION_INTERVAL)


_thread: threading.Thread | None = None
_stop = threading.Event()


def start() -> None:
    """Start the watch thread in this process (once), with the lag sampler (same setting, same lease)."""
    global _thread
    if _thread is None and settings.KAZAMI_LAG_SAMPLER:
        _thread = threading.Thread(target=run_forever, args=(_stop,), name="replication-watch", daemon=True)
        _thread.start()
