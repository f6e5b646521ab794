"""Every cluster's offsets topic, followed for the lag statuses (broker.groups.commit_reader), by the process that
holds the lag sampler's lease: the sampler pumps it in each round (with the log ends it just read) and every few
seconds in between. The rings of commits go to the database (CommitRing) for every console process's pages, with
how far the topic was read (CommitWatch): a ring counts only up to that moment, so a reader that fell behind or
died never makes a live group look stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from broker.errors import KazamiError
from broker.groups.commit_log import Key, Rings
from broker.groups.commit_reader import CommitReader
from broker.groups.lag import GroupLag
from console.config.clusters import get_configs, get_connection
from console.models import CommitRing, CommitWatch
from console.present.lag import stored

log = logging.getLogger(__name__)

_readers: dict[str, CommitReader] = {}


def enabled() -> bool:
    return bool(settings.KAZAMI_LAG_FROM_COMMITS)


def _reader(cluster: str) -> CommitReader:
    conn = get_connection(cluster).background
    reader = _readers.get(cluster)
    if reader is not None and reader.conn is not conn:  # the cluster's configuration changed
        reader.close()
        reader = None
    if reader is None:
        rings = Rings(window=settings.KAZAMI_LAG_WINDOW)
        rings.load(stored(cluster))  # where the last lease holder left them
        reader = _readers[cluster] = CommitReader(conn, rings)
    return reader


def pump(cluster: str, groups: Iterable[GroupLag] | None = None, wait_ms: int = 300) -> int:
    """Read the cluster's new commits (first noting the log ends in ``groups``, as the sampler read them) and
    store the rings that changed; how many changed."""
    if not enabled():
        return 0
    try:
        reader = _reader(cluster)
    except KazamiError as exc:
        log.info("commit watch: cluster %s skipped: %s", cluster, exc)
        return 0
    if groups is not None:
        reader.note_ends(
            {
                (p.topic, p.partition): end
                for g in groups
                for p in g.partitions
                if (end := p.waiting_end if p.waiting_end is not None else p.log_end) is not None
            }
        )
    started = timezone.now()  # what was committed before this moment is read by the pump below
    changed = reader.pump(wait_ms=wait_ms)
    _save(cluster, reader, changed, started)
    return len(changed)


def pump_all() -> int:
    """One pump of every configured cluster the sampler has already read once (between the sampler's rounds); how
    many rings changed."""
    return sum(pump(name, wait_ms=0) for name in get_configs() if name in _readers)


def stop_all() -> None:
    """This process lost the lease (or stops): close the readers; the next holder starts from the stored rings."""
    for reader in _readers.values():
        reader.close()
    _readers.clear()


def _save(cluster: str, reader: CommitReader, changed: set[Key], read_at: datetime) -> None:
    now = timezone.now()
    kept = [key for key in changed if key in reader.rings.rings]
    gone = [key for key in changed if key not in reader.rings.rings]
    if kept:
        rows = [
            CommitRing(
                cluster=cluster,
                group=group,
                topic=topic,
                partition=partition,
                commits=[[o.at_ms, o.committed, o.log_end] for o in reader.rings.get((group, topic, partition))],
                updated_at=now,
            )
            for group, topic, partition in kept
        ]
        CommitRing.objects.bulk_create(
            rows,
            batch_size=500,
            update_conflicts=True,
            unique_fields=["cluster", "group", "topic", "partition"],
            update_fields=["commits", "updated_at"],
        )
    for i in range(0, len(gone), 200):
        wanted = Q()
        for group, topic, partition in gone[i : i + 200]:
            wanted |= Q(group=group, topic=topic, partition=partition)
        CommitRing.objects.filter(wanted, cluster=cluster).delete()
    CommitWatch.objects.update_or_create(
        cluster=cluster, defaults={"read_at": read_at if reader.reading else None, "failure": reader.failure or ""}
    )


def prune(now: datetime) -> int:
    """Rings of partitions no commit reached within the lag retention (groups deleted or long gone)."""
    cutoff = now - timedelta(hours=settings.KAZAMI_LAG_RETENTION_HOURS)
    deleted, _ = CommitRing.objects.filter(updated_at__lt=cutoff).delete()
    return deleted
