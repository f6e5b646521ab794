"""The lag sampler: every interval, one console process stores every group's lag per partition.

Several console processes may run against one database; a lease in that database decides
which one samples (it renews its lease each round; if it dies, another takes over when the
lease expires). Samples older than the retention are deleted as new ones arrive.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from broker.errors import KazamiError
from broker.groups.lag import GroupLag, get_groups
from console.background import alerts, commit_watch, throughput
from console.config.clusters import get_configs, get_connection
from console.models import LagSample, Lease
from console.present.lag import verdicts

log = logging.getLogger(__name__)
LEASE = "lag-sampler"
COMMIT_PUMP_S = 2.0  # how often the lease holder reads new commits between rounds (each read is a database write)
COMMIT_PUMP_IDLE_S = 16.0  # the longest pause between reads while no group commits (it doubles from COMMIT_PUMP_S)
OWNER = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def acquire_lease(owner: str = OWNER, seconds: float | None = None, now: datetime | None = None) -> bool:
    """True when ``owner`` holds the sampler's lease now (taken or renewed), False when another holds it."""
    now = now or timezone.now()
    until = now + timedelta(seconds=seconds or settings.KAZAMI_LAG_SAMPLE_INTERVAL * 3)
    with transaction.atomic():
        taken = Lease.objects.filter(name=LEASE).filter(models_q_free(owner, now)).update(owner=owner, expires_at=until)
        if taken:
            return True
        if Lease.objects.filter(name=LEASE).exists():
            return False
        try:
            with transaction.atomic():
                Lease.objects.create(name=LEASE, owner=owner, expires_at=until)
        except IntegrityError:
            return False
        return True


def models_q_free(owner: str, now: datetime):  # type: ignore[no-untyped-def]
    from django.db.models import Q

    return Q(owner=owner) | Q(expires_at__lt=now)


def store(cluster: str, groups: list[GroupLag], at: datetime) -> int:
    """Store one sample per group and partition, with the status the console judges it to have now (the
    lag report counts time in each status); returns how many rows were written."""
    judged = verdicts(cluster, groups)
    statuses = {(g, v.topic, v.partition): v.status for g, verdict in judged.items() for v in verdict.partitions}
    rows = [
        LagSample(
            cluster=cluster,
            group=g.group_id,
            topic=p.topic,
            partition=p.partition,
            at=at,
            committed=p.committed,
            log_end=p.log_end,
            lag=p.lag,
            lag_ms=p.lag_ms,
            status=statuses.get((g.group_id, p.topic, p.partition), ""),
        )
        for g in groups
        for p in g.partitions
    ]
    LagSample.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def prune(now: datetime) -> int:
    cutoff = now - timedelta(hours=settings.KAZAMI_LAG_RETENTION_HOURS)
    deleted, _ = LagSample.objects.filter(at__lt=cutoff).delete()
    return deleted


def sample_once(now: datetime | None = None) -> dict[str, int]:
    """Sample every configured cluster once (unreachable ones are skipped); {cluster: rows stored}."""
    now = now or timezone.now()
    stored = {}
    for name in get_configs():
        try:
            groups = get_groups(get_connection(name).background)  # apart from the pages' calls
        except KazamiError as exc:
            log.info("lag sampler: cluster %s skipped: %s", name, exc)
            try:
                alerts.after_failed_sample(name, str(exc), now)
            except Exception:  # an alert rule must never stop the sampling
                log.exception("alerts: the cluster rules of %s failed", name)
            continue
        commit_watch.pump(name, groups)  # before the statuses are judged and stored
        stored[name] = store(name, groups, now)
        try:
            alerts.after_lag_sample(name, groups, now)
        except Exception:  # an alert rule must never stop the sampling
            log.exception("alerts: the group rules of %s failed", name)
    prune(now)
    commit_watch.prune(now)
    alerts.deliver_due()
    return stored


def run_forever(stop: threading.Event, acquire: Callable[[], bool] = acquire_lease) -> None:
    """Sample at every interval while this process holds the lease (and ask for it once an interval when not);
    in between, the holder reads new commits from the offsets topics every COMMIT_PUMP_S seconds while groups commit,
    and up to COMMIT_PUMP_IDLE_S apart while none does."""
    while not stop.is_set():
        holding = False
        try:
            holding = acquire()
            if holding:
                sample_once()
                throughput.sample_once()
            else:
                commit_watch.stop_all()
        except Exception:
            log.exception("lag sampler round failed")
        next_round = time.monotonic() + settings.KAZAMI_LAG_SAMPLE_INTERVAL
        pause = COMMIT_PUMP_S
        while holding and commit_watch.enabled() and not stop.is_set() and next_round - time.monotonic() > pause:
            if stop.wait(pause):
                break
            changed = 0
            try:
                changed = commit_watch.pump_all()
            except Exception:
                log.exception("commit watch failed")
            # Groups committing: read again soon; nobody committing: less and less often (an idle console).
            pause = COMMIT_PUMP_S if changed else min(pause * 2, COMMIT_PUMP_IDLE_S)
        stop.wait(max(0.0, next_round - time.monotonic()))
    commit_watch.stop_all()


_thread: threading.Thread | None = None
_stop = threading.Event()


def start() -> None:
    """Start the sampler thread in this process (once); the ASGI app calls it when serving."""
    global _thread
    if _thread is None and settings.KAZAMI_LAG_SAMPLER:
        _thread = threading.Thread(target=run_forever, args=(_stop,), name="lag-sampler", daemon=True)
        _thread.start()
