"""The live analytics query of each cluster: started and stopped from the analytics page, run in a
process of its own (``manage.py run_live CLUSTER``), its figures stored for the pages to push.

The LiveQuery row says whether the query should run (``wanted``). :func:`supervise` (called by the
live pages as they refresh) starts its process again when it should run and its process is gone,
say after a crash or a kill: the query resumes from its checkpoint in var/analytics/live/, and since
the figures it writes are whole counts replacing the stored ones (analytics/live.py), nothing is
counted twice. Stopping asks the process to stop its query; one that does not within STOP_GRACE
seconds is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from analytics.live import ALL, KEY_FIELDS, METRIC_FIELDS, Figure
from analytics.spark import check_spark, first_line
from broker.errors import AlreadyExists, InvalidInput, KazamiError
from broker.topics import read as topics
from broker.topics.changes import do_create_topic
from console.background.job_process import spark_settings
from console.background.jobs import alive, jobs_dir, spawn_command
from console.config.clusters import get_configs, get_connection
from console.models import LiveFigure, LiveQuery
from console.present.masking import masked_fields

STOP_GRACE = 15.0


def live_dir(cluster: str) -> Path:
    path = jobs_dir() / "live" / cluster
    path.mkdir(parents=True, exist_ok=True)
    return path


def get_live(cluster: str) -> LiveQuery:
    return LiveQuery.objects.get_or_create(cluster=cluster)[0]


def do_start_live(cluster: str, topic_names: list[str], user: Any) -> LiveQuery:
    """Start the cluster's live query over ``topic_names`` (checked to exist). Raises SparkUnavailable,
    TopicNotFound, InvalidInput (no topic, or one runs already over other topics)."""
    check_spark()
    names = list(dict.fromkeys(t.strip() for t in topic_names if t.strip()))
    if not names:
        raise InvalidInput("Choose at least one topic for the live query.")
    conn = get_connection(cluster)
    for name in names:
        topics.get_topic_partitions(conn, name)  # TopicNotFound for an unknown one
    live = get_live(cluster)
    if live.wanted and alive(live.pid):
        if live.topics == names:
            return live
        raise InvalidInput(f"The live query already runs over {', '.join(live.topics)}: stop it first.")
    if live.topics and live.topics != names:
        # Another set of topics: the old checkpoint's offsets would not fit the new subscription.
        _clear_checkpoint(cluster)
    LiveQuery.objects.filter(cluster=cluster).update(
        wanted=True,
        topics=names,
        status=LiveQuery.STARTING,
        started_by=user.get_username() if getattr(user, "is_authenticated", False) else "anonymous",
        started_at=timezone.now(),
        error="",
        restarts=0,
    )
    _spawn(cluster)
    return get_live(cluster)


def do_stop_live(cluster: str) -> LiveQuery:
    """Ask the live query to stop (its process stops the query and exits)."""
    live = get_live(cluster)
    LiveQuery.objects.filter(cluster=cluster).update(wanted=False)
    if live.pid and alive(live.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(live.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        while alive(live.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if alive(live.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(live.pid, signal.SIGKILL)
    LiveQuery.objects.filter(cluster=cluster).update(status=LiveQuery.STOPPED, pid=None)
    return get_live(cluster)


def supervise(cluster: str) -> LiveQuery:
    """Start the query's process again when it should run and its process is gone (it resumes from its
    checkpoint); mark it stopped when it should not run."""
    live = get_live(cluster)
    if live.wanted and not alive(live.pid):
        LiveQuery.objects.filter(cluster=cluster, wanted=True).update(
            status=LiveQuery.STARTING, restarts=live.restarts + 1, pid=None
        )
        _spawn(cluster)
        live.refresh_from_db()
    elif not live.wanted and live.status != LiveQuery.STOPPED and not alive(live.pid):
        LiveQuery.objects.filter(cluster=cluster).update(status=LiveQuery.STOPPED, pid=None)
        live.refresh_from_db()
    return live


def _spawn(cluster: str) -> None:
    pid = spawn_command(["run_live", cluster], live_dir(cluster) / "live.log")
    LiveQuery.objects.filter(cluster=cluster).update(pid=pid)


def _clear_checkpoint(cluster: str) -> None:
    import shutil

    shutil.rmtree(live_dir(cluster) / "checkpoint", ignore_errors=True)


def store(cluster: str, found: list[Figure]) -> None:
    """Replace the stored figures with ``found`` (whole counts) and drop those past retention."""
    close_old_connections()
    if found:
        LiveFigure.objects.bulk_create(
            [
                LiveFigure(
                    cluster=cluster,
                    minute_ms=f.minute_ms,
                    metric=f.metric,
                    key=f.key[:512],
                    count=f.count,
                    users=f.users,
                )
                for f in found
            ],
            update_conflicts=True,
            unique_fields=["cluster", "minute_ms", "metric", "key"],
            update_fields=["count", "users"],
            batch_size=500,
        )
    horizon = int((timezone.now() - timedelta(hours=settings.KAZAMI_ANALYTICS_LIVE_HOURS)).timestamp() * 1000)
    LiveFigure.objects.filter(cluster=cluster, minute_ms__lt=horizon).delete()
    LiveQuery.objects.filter(cluster=cluster).update(last_batch_at=timezone.now())


def drop_unmasked(cluster: str, masked: dict[str, str]) -> int:
    """Delete the stored figures whose keys come from a field masking now hides (``masked``: field ->
    replacement), kept before the rules said so; the query counts those fields under the replacement from
    now on. Returns how many were deleted."""
    deleted = 0
    for metric, field in METRIC_FIELDS.items():
        if field in masked:
            stale = LiveFigure.objects.filter(cluster=cluster, metric=metric).exclude(key__in=[ALL, masked[field]])
            deleted += stale.delete()[0]
    return deleted


def run_live_process(cluster: str) -> int:
    """The body of ``manage.py run_live``: runs the query until it should stop (SIGTERM, or the row says
    so), then stops it cleanly so its checkpoint is whole."""
    from analytics.live import progress_of, start_query
    from analytics.source import kafka_options
    from analytics.spark import start_session

    live = get_live(cluster)
    if not live.wanted:
        return 0
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    LiveQuery.objects.filter(cluster=cluster).update(pid=os.getpid())
    try:
        config = get_configs()[cluster]
        output = settings.KAZAMI_ANALYTICS_LIVE_TOPIC or None
        if output:
            with contextlib.suppress(AlreadyExists):
                do_create_topic(get_connection(cluster), output, 1, min(3, _brokers(cluster)))
        masked = masked_fields(cluster, live.topics, KEY_FIELDS)
        drop_unmasked(cluster, masked)
        spark = start_session(spark_settings(f"kazami live {cluster}"))
        query = start_query(
            spark,
            kafka_options(config, live_dir(cluster) / "scratch"),
            live.topics,
            str(live_dir(cluster) / "checkpoint"),
            lambda found: store(cluster, found),
            output,
            masked=masked,
        )
        LiveQuery.objects.filter(cluster=cluster).update(status=LiveQuery.RUNNING, error="")
        while not stop.wait(1.0):
            if query.exception() is not None:
                raise query.exception()  # type: ignore[misc]
            close_old_connections()
            if not LiveQuery.objects.filter(cluster=cluster, wanted=True).exists():
                break
            LiveQuery.objects.filter(cluster=cluster).update(progress=progress_of(query))
        query.stop()
        LiveQuery.objects.filter(cluster=cluster).update(status=LiveQuery.STOPPED, pid=None)
    except KazamiError as exc:
        LiveQuery.objects.filter(cluster=cluster).update(status=LiveQuery.FAILED, wanted=False, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - the query's failure is shown on the page
        LiveQuery.objects.filter(cluster=cluster).update(status=LiveQuery.FAILED, wanted=False, error=first_line(exc))
    return 0


def _brokers(cluster: str) -> int:
    from broker.cluster.overview import get_overview

    return len(get_overview(get_connection(cluster)).brokers)
