"""Analytics jobs: submitted from a page or the API, queued in the database, run each in a process of
its own (``manage.py run_job ID``), followed by every viewer through the job's row.

This module is the queue. What a job asks is checked in console.background.job_spec; what its process runs,
in console.background.job_process.

- :func:`do_submit` checks the request against Kafka before anything starts (unknown topics, an empty
  or too fine range), stores the job as queued and calls :func:`dispatch`.
- :func:`dispatch` starts queued jobs while fewer than KAZAMI_ANALYTICS_MAX_JOBS run. Any console
  process or finishing job may call it; a file lock makes one of them decide at a time. It also
  notices jobs whose process died and marks them failed.
- The job process (console.background.job_process.execute) starts Spark, writes progress to the job's
  row as Spark's tasks finish, watches the row for a cancel request, stores the result, and dispatches
  the next job. It is started in a session of its own, so it outlives the page and the console process
  that started it; a cancel that it does not honour within CANCEL_GRACE seconds kills its process group.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from analytics.runner import JobSpec, check_spec
from analytics.spark import check_jobs
from broker.errors import InvalidInput, NotFound
from broker.processes import running
from console.background.job_spec import Offsets, params_of, ranges_of
from console.models import AnalyticsJob, LagSample

REPO = Path(__file__).resolve().parents[2]  # where manage.py is
CANCEL_GRACE = 20.0  # seconds a running job has to stop after a cancel before its processes are killed


def jobs_dir() -> Path:
    path = Path(settings.VAR_DIR) / "analytics"
    path.mkdir(parents=True, exist_ok=True)
    return path


def do_submit(cluster: str, spec: JobSpec, user: Any, offsets: Offsets | None = None) -> AnalyticsJob:
    """Check ``spec`` against the cluster and queue it; starts it at once when a slot is free.

    Raises SparkUnavailable (Spark cannot run here), TopicNotFound, InvalidInput (a bad range, too
    many points), ClusterUnavailable.
    """
    check_jobs(settings.KAZAMI_SPARK_REMOTE)
    if spec.report == "lag":
        check_spec(spec, settings.KAZAMI_ANALYTICS_MAX_POINTS)
        _check_history(cluster, spec.groups)
    else:
        ranges = ranges_of(cluster, spec, offsets)
        check_spec(spec, settings.KAZAMI_ANALYTICS_MAX_POINTS, ranges.first_time_ms)
    job = AnalyticsJob.objects.create(
        cluster=cluster,
        report=spec.report,
        params=params_of(spec, offsets),
        created_by=user if getattr(user, "is_authenticated", False) else None,
        username=user.get_username() if getattr(user, "is_authenticated", False) else "anonymous",
        created_at=timezone.now(),
    )
    dispatch()
    job.refresh_from_db()
    return job


def _check_history(cluster: str, groups: tuple[str, ...]) -> None:
    """Raise NotFound naming the groups the console has never sampled on ``cluster``."""
    if not groups:
        return
    known = set(LagSample.objects.filter(cluster=cluster, group__in=groups).values_list("group", flat=True).distinct())
    missing = [g for g in groups if g not in known]
    if missing:
        raise NotFound(f"The console has no lag history of {', '.join(repr(g) for g in missing)} on {cluster}.")


def get_job(job_id: int) -> AnalyticsJob:
    """Raises NotFound."""
    try:
        return AnalyticsJob.objects.get(pk=job_id)
    except AnalyticsJob.DoesNotExist:
        raise NotFound(f"No analytics job {job_id}.") from None


@contextlib.contextmanager
def _dispatch_lock() -> Iterator[None]:
    with open(jobs_dir() / "dispatch.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def dispatch(spawn: bool = True) -> list[int]:
    """Mark dead jobs failed, kill cancelled ones past their grace, and start queued jobs (oldest first)
    while fewer than KAZAMI_ANALYTICS_MAX_JOBS run. Returns the ids started."""
    started: list[int] = []
    with _dispatch_lock():
        reap()
        running = AnalyticsJob.objects.filter(status=AnalyticsJob.RUNNING).count()
        free = settings.KAZAMI_ANALYTICS_MAX_JOBS - running
        for job in AnalyticsJob.objects.filter(status=AnalyticsJob.QUEUED).order_by("created_at", "id")[: max(free, 0)]:
            claimed = AnalyticsJob.objects.filter(pk=job.pk, status=AnalyticsJob.QUEUED).update(
                status=AnalyticsJob.RUNNING,
                started_at=timezone.now(),
                stage="opening a Spark session" if settings.KAZAMI_SPARK_REMOTE else "starting Spark",
            )
            if not claimed:
                continue
            if spawn:
                AnalyticsJob.objects.filter(pk=job.pk).update(pid=_spawn(job.pk))
            started.append(job.pk)
    return started


def _spawn(job_id: int) -> int:
    return spawn_command(["run_job", str(job_id)], jobs_dir() / f"job-{job_id}.log")


def spawn_command(command: list[str], log_path: Path) -> int:
    """Start ``manage.py <command>`` in a session of its own (it outlives this process, and a kill of its
    process group ends it whole), its output appended to ``log_path``; returns its pid."""
    with open(log_path, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, str(REPO / "manage.py"), *command],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: it outlives the console, and cancel can end it whole
        )
    # Collect its exit status when it ends, so it does not linger as a zombie of this console process.
    threading.Thread(target=process.wait, daemon=True, name=f"wait-{process.pid}").start()
    return process.pid


def alive(pid: int | None) -> bool:
    """True when ``pid`` is a job or live-query process of this console that still runs."""
    return running(pid, b"manage.py")


def reap() -> None:
    """Running jobs whose process is gone become failed; cancelled ones past CANCEL_GRACE are killed."""
    now = timezone.now()
    for job in AnalyticsJob.objects.filter(status=AnalyticsJob.RUNNING).exclude(pid=None):
        if job.pid is None or not alive(job.pid):
            finish(job.pk, AnalyticsJob.FAILED, error="The job's process ended without a result (see its log).")
        elif job.cancel_requested_at and now - job.cancel_requested_at > timedelta(seconds=CANCEL_GRACE):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(job.pid, signal.SIGKILL)
            finish(job.pk, AnalyticsJob.CANCELLED, error="Cancelled: its processes were stopped.")


def do_cancel(job: AnalyticsJob) -> AnalyticsJob:
    """Cancel a queued job at once; ask a running one to stop (its process cancels Spark's jobs).
    Raises InvalidInput for a finished job."""
    if job.finished:
        raise InvalidInput(f"Job {job.pk} has already {job.status}.")
    if AnalyticsJob.objects.filter(pk=job.pk, status=AnalyticsJob.QUEUED).update(
        status=AnalyticsJob.CANCELLED, finished_at=timezone.now(), error="Cancelled before it started."
    ):
        job.refresh_from_db()
        return job
    AnalyticsJob.objects.filter(pk=job.pk, cancel_requested_at=None).update(cancel_requested_at=timezone.now())
    job.refresh_from_db()
    return job


def finish(job_id: int, status: str, **fields: Any) -> None:
    """A running job ended with ``status`` (and ``fields``); a job no longer running is left as it is."""
    AnalyticsJob.objects.filter(pk=job_id, status=AnalyticsJob.RUNNING).update(
        status=status, finished_at=timezone.now(), **fields
    )
