"""The replication watch: every few seconds, one console process compares each cluster's replication with
what it saw last (broker.replication.health.diff) and stores the changes as events, the timeline the replication
page shows and ``GET /api/clusters/<c>/events/`` returns.

It runs beside the lag sampler, in the process that holds the sampler's lease, so several console
processes never store an event twice. Events older than ``KAZAMI_EVENT_RETENTION_HOURS`` are deleted.

On a ZooKeeper-mode cluster it also holds watches on Kafka's registry (broker.zk.watch): a broker's
registration going or coming, a controller election, a topic assigned, a reassignment asked. Such a change
makes it look at once (and again shortly after, while the controller spreads the new metadata), so the
events arrive within a moment of ZooKeeper's notice rather than at the next round; those events say so in
their details (``via``). KRaft clusters have no ZooKeeper: they are compared every round only.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.utils import timezone

from broker.errors import KazamiError
from broker.replication.health import Event, Replication, diff, get_replication
from broker.zk.client import zookeeper_address
from broker.zk.watch import RegistryWatch
from console.background import alerts
from console.background.lag_sampler import acquire_lease
from console.config.clusters import get_configs, get_connection
from console.models import ReplicationEvent

log = logging.getLogger(__name__)

# A snapshot older than this is no baseline: changes since then may have come and gone unseen.
STALE_MS = 30_000
# The last snapshot seen of each cluster, in this process.
_last: dict[str, Replication] = {}
_lock = threading.Lock()
_LISTED_FIRST = {
    "topic_created": 1,
    "topic_deleted": 1,
    "controller_changed": 2,
    "broker_registered": 3,
    "broker_gone": 3,
}
# After a ZooKeeper watch fired, the cluster is looked at again after these many seconds: the brokers'
# metadata follows the registry by a moment (the controller sends it out).
FOLLOW_UPS_S = (0.4, 1.2, 3.0)


def observe(cluster: str, via: str | None = None) -> list[Event]:
    """Take a snapshot of ``cluster``, store what changed since the last one, and return those events.
    The first snapshot of a process has nothing to compare with. ``via``: what made this look (a ZooKeeper
    watch), kept in the events' details. Raises ClusterUnavailable."""
    conn = get_connection(cluster).background  # apart from the pages' calls
    if via is not None:
        conn.reads.forget()  # told of a change: an answer kept from before it would hide it
    snapshot = get_replication(conn)
    with _lock:
        before = _last.get(cluster)
        if before is not None and snapshot.fetched_at_ms <= before.fetched_at_ms:
            return []  # an answer shared with an earlier caller: nothing new
        if before is not None and snapshot.fetched_at_ms - before.fetched_at_ms > STALE_MS:
            before = None  # a look from long ago (this process just took the lease over): no baseline
        _last[cluster] = snapshot
    try:
        alerts.after_replication_look(cluster, snapshot)
    except Exception:  # an alert rule must never stop the watch
        log.exception("alerts: the replication rules of %s failed", cluster)
    events = diff(before, snapshot) if before is not None else []
    if via is not None:
        events = [replace(e, details={**e.details, "via": via}) for e in events]
    # Stored last, so listed first among the events of one look (newest first): a broker stopping moves
    # hundreds of partitions, and the broker's own event must not sink below them.
    events.sort(key=lambda e: _LISTED_FIRST.get(e.kind, 0))
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


def events_of(
    cluster: str,
    since: datetime | None = None,
    limit: int = 200,
    kinds: list[str] | None = None,
    topic: str | None = None,
) -> list[ReplicationEvent]:
    """The cluster's timeline, newest first; only ``kinds`` and ``topic`` when given."""
    found = ReplicationEvent.objects.filter(cluster=cluster)
    if since is not None:
        found = found.filter(at__gt=since)
    if kinds:
        found = found.filter(kind__in=kinds)
    if topic:
        found = found.filter(topic=topic)
    return list(found.order_by("-at", "-id")[:limit])


# ---------------------------------------------------------------- ZooKeeper watches


class _Watches:
    """The registry watches of the ZooKeeper-mode clusters, held by the process that holds the lease, and
    what they told since the last round."""

    def __init__(self) -> None:
        self.wake = threading.Event()  # set when a watch told something (or to end the wait early)
        self._held: dict[str, RegistryWatch] = {}
        self._told: dict[str, str] = {}  # cluster -> what its watch told last, not looked at yet
        self._due: dict[str, tuple[list[float], str]] = {}  # cluster -> (when to look again, why)
        self._lock = threading.Lock()

    def ensure(self, names: list[str]) -> None:
        """Hold a watch for each ZooKeeper-mode cluster among ``names`` whose ZooKeeper is known (the mode
        and address learnt by the rounds' own requests), and none for the others."""
        for name in list(self._held):
            if name not in names:
                self.drop(name)
        for name in names:
            conn = get_connection(name)
            address = None
            if conn.mode() == "zookeeper":
                with contextlib.suppress(KazamiError):  # learnt from the controller's settings if not configured
                    address = zookeeper_address(conn)
            held = self._held.get(name)
            auth, sasl = tuple(conn.config.zookeeper_auth_data()), conn.config.zookeeper_sasl_options()
            if held is not None and (held.address, held.auth, held.sasl) == (address, auth, sasl):
                continue
            self.drop(name)
            if address:
                watch = RegistryWatch(address, partial(self.tell, name), auth, sasl)
                self._held[name] = watch
                watch.start()

    def watching(self, name: str) -> bool:
        held = self._held.get(name)
        return held is not None and held.watching

    def drop(self, name: str | None = None) -> None:
        """Stop the watch of ``name`` (of every cluster when None) and forget what it told and the follow-up
        looks it asked for: a process that lost the lease must not keep a look due (it would wait 0 s for it,
        again and again, without the lease to take it)."""
        with self._lock:
            names = [name] if name is not None else list({*self._held, *self._told, *self._due})
            for n in names:
                self._told.pop(n, None)
                self._due.pop(n, None)
        for n in names:
            held = self._held.pop(n, None)
            if held is not None:
                threading.Thread(target=held.stop, daemon=True).start()

    def tell(self, cluster: str, what: str) -> None:
        with self._lock:
            before = self._told.get(cluster)
            self._told[cluster] = f"{before}; {what}" if before else what
        self.wake.set()

    def take(self, now: float) -> dict[str, str]:
        """The clusters to look at now because of a watch (told, or a follow-up look due), with why."""
        with self._lock:
            told, self._told = self._told, {}
            for cluster, what in told.items():
                self._due[cluster] = ([now + s for s in FOLLOW_UPS_S], f"zookeeper: {what}")
            looks = {c: f"zookeeper: {w}" for c, w in told.items()}
            for cluster, (times, why) in list(self._due.items()):
                if cluster not in looks and times and times[0] <= now:
                    looks[cluster] = why
                    times.pop(0)
                if not times:
                    del self._due[cluster]
        return looks

    def next_due(self, now: float) -> float | None:
        """Seconds until the next follow-up look, if one is due."""
        with self._lock:
            firsts = [times[0] for times, _ in self._due.values() if times]
        return max(0.0, min(firsts) - now) if firsts else None


watches = _Watches()


def watch_round(names: list[str], polled: bool) -> list[Event]:
    """One round of the watch: the clusters a ZooKeeper watch asked to look at (and, when ``polled``,
    every other one), each observed once. Returns the events stored."""
    looks = watches.take(time.monotonic())
    found: list[Event] = []
    for name in names:
        if name not in looks and not polled:
            continue
        try:
            found += observe(name, via=looks.get(name))
        except KazamiError as exc:
            log.info("replication watch: cluster %s skipped: %s", name, exc)
    return found


WATCHED_STRETCH = 4  # polls of clusters ZooKeeper watches, once they find nothing: up to this many intervals apart


def run_forever(stop: threading.Event, acquire: Callable[[], bool] = acquire_lease) -> None:
    """Look at the clusters every ``KAZAMI_REPLICATION_INTERVAL`` while this process holds the lease (and at
    once when a ZooKeeper watch tells). Without the lease it asks again only after a whole interval: it
    never waits less than that for a lease it did not get (an earlier version waited 0 s and spun). While
    ZooKeeper watches every cluster and the polls find nothing, they come up to WATCHED_STRETCH intervals apart."""
    rounds = 0
    next_poll = 0.0
    calm = 0  # polls in a row that found nothing while ZooKeeper watched every cluster
    while not stop.is_set():
        watches.wake.clear()  # a watch telling during the round ends the wait below at once
        now = time.monotonic()
        polled = now >= next_poll
        if polled:
            # Set before the round, whatever it meets (no lease, an error): the next poll is an interval away.
            next_poll = now + settings.KAZAMI_REPLICATION_INTERVAL
        holds = False
        try:
            if not acquire():
                watches.drop()
                calm = 0
            else:
                holds = True
                names = list(get_configs())
                found = watch_round(names, polled)
                alerts.deliver_due()
                if polled:
                    watches.ensure(names)
                    rounds += 1
                    if rounds % 100 == 0:
                        prune()
                    calm = calm + 1 if not found and names and all(watches.watching(n) for n in names) else 0
                    # Watched by ZooKeeper, a change is told at once: polls, for what no znode tells (an ISR
                    # shrinking), come less often while they find nothing, up to WATCHED_STRETCH intervals apart.
                    next_poll = now + settings.KAZAMI_REPLICATION_INTERVAL * min(2**calm, WATCHED_STRETCH)
        except Exception:
            calm = 0
            log.exception("replication watch round failed")
        due = watches.next_due(time.monotonic()) if holds else None
        wait = max(0.0, next_poll - time.monotonic())
        watches.wake.wait(min(wait, due) if due is not None else wait)


_thread: threading.Thread | None = None
_stop = threading.Event()


def start() -> None:
    """Start the watch thread in this process (once), with the lag sampler (same setting, same lease)."""
    global _thread
    if _thread is None and settings.KAZAMI_LAG_SAMPLER:
        _thread = threading.Thread(target=run_forever, args=(_stop,), name="replication-watch", daemon=True)
        _thread.start()
