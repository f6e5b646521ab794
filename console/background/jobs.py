"""Analytics jobs: submitted from a page or the API, queued in the database, run each in a process of
its own (``manage.py run_job ID``), followed by every viewer through the job's row.

- :func:`do_submit` checks the request against Kafka before anything starts (unknown topics, an empty
  or too fine range), stores the job as queued and calls :func:`dispatch`.
- :func:`dispatch` starts queued jobs while fewer than KAZAMI_ANALYTICS_MAX_JOBS run. Any console
  process or finishing job may call it; a file lock makes one of them decide at a time. It also
  notices jobs whose process died and marks them failed.
- The job process (:func:`execute`) starts Spark, writes progress to the job's row as Spark's tasks
  finish, watches the row for a cancel request, stores the result, and dispatches the next job.
  It is started in a session of its own, so it outlives the page and the console process that
  started it; a cancel that it does not honour within CANCEL_GRACE seconds kills its process group.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections, transaction
from django.utils import timezone

from analytics.events import BUCKETS
from analytics.reports import REPORTS
from analytics.runner import JobCancelled, JobResult, JobSpec, check_spec, run_lag_report, run_report
from analytics.spark import SparkSettings, SparkUnavailable, check_spark, first_line
from broker.errors import InvalidInput, KazamiError, NotFound
from broker.messages.ranges import TopicRanges, get_offset_ranges, get_ranges
from broker.processes import running
from broker.times import parse_time
from console.config.clusters import get_configs, get_connection
from console.models import AnalyticsJob, AnalyticsResult, LagSample

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]  # where manage.py is
CANCEL_GRACE = 20.0  # seconds a running job has to stop after a cancel before its processes are killed
PROGRESS_EVERY = 0.5  # seconds between progress writes


def jobs_dir() -> Path:
    path = Path(settings.VAR_DIR) / "analytics"
    path.mkdir(parents=True, exist_ok=True)
    return path


# --- what a job asks ------------------------------------------------------------------------------


def check_job_request(data: Mapping[str, Any]) -> JobSpec:
    """A JobSpec from the API's JSON or a page's form; raises InvalidInput naming the bad field."""
    report = str(data.get("report") or "")
    if report not in REPORTS:
        raise InvalidInput(f"report must be one of {', '.join(REPORTS)}, not {report[:40]!r}.")
    if report == "lag":
        return JobSpec(
            report=report,
            topics=(),
            bucket="total",
            from_ms=_time(data.get("from"), "from"),
            to_ms=_time(data.get("to"), "to"),
            groups=tuple(_names(data.get("groups"), "groups")),
        )
    topics = data.get("topics")
    if isinstance(topics, str):
        topics = [t.strip() for t in topics.replace("\n", ",").split(",")]
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise InvalidInput("topics must be a list of topic names.")
    topics = list(dict.fromkeys(t.strip() for t in topics if t.strip()))
    if not topics:
        raise InvalidInput("Choose at least one topic.")
    bucket = str(data.get("bucket") or "hour")
    if bucket not in BUCKETS:
        raise InvalidInput(f"bucket must be one of {', '.join(BUCKETS)}, not {bucket[:40]!r}.")
    top_n = data.get("top_n", 20)
    try:
        top_n = int(top_n)
    except (TypeError, ValueError):
        raise InvalidInput("top_n must be a whole number.") from None
    return JobSpec(
        report=report,
        topics=tuple(topics),
        bucket=bucket,
        from_ms=_time(data.get("from"), "from"),
        to_ms=_time(data.get("to"), "to"),
        approximate=_flag(data.get("approximate")),
        top_n=top_n,
    )


Offsets = dict[tuple[str, int], tuple[int, int | None]]


def check_offsets(data: Mapping[str, Any], spec: JobSpec) -> Offsets | None:
    """The offset range a request names instead of (or within) its time range, or None for every offset.

    The API gives ``{"offsets": {topic: {partition: [start, end or null]}}}``; the form gives text such
    as ``0:100-200, 1:500-`` (partitions of the one topic chosen) or ``orders/0:100-200``. Raises
    InvalidInput naming what is wrong."""
    value = data.get("offsets")
    if value is None or value == "" or value == {}:
        return None
    wanted: Offsets = {}
    if isinstance(value, dict):
        for topic, partitions in value.items():
            if not isinstance(partitions, dict):
                raise InvalidInput("offsets must map each topic to {partition: [start, end or null]}.")
            for partition, bounds in partitions.items():
                wanted[(str(topic), _whole(partition, "partition"))] = _bounds(bounds)
    elif isinstance(value, str):
        for item in (i.strip() for i in value.replace("\n", ",").split(",")):
            if item:
                wanted.update(_offset_item(item, spec))
    else:
        raise InvalidInput("offsets must be an object or text like 0:100-200.")
    strangers = sorted({t for t, _ in wanted} - set(spec.topics))
    if strangers:
        raise InvalidInput(f"offsets name {', '.join(strangers)}, which is not among the chosen topics.")
    return wanted


def _offset_item(item: str, spec: JobSpec) -> Offsets:
    where, _, span = item.partition(":")
    topic, _, partition = where.rpartition("/")
    if not topic:
        if len(spec.topics) != 1:
            raise InvalidInput(f"Offsets {item!r}: with several topics, write topic/partition:start-end.")
        topic = spec.topics[0]
    start, dash, end = span.partition("-")
    if not dash:
        raise InvalidInput(f"Offsets {item!r}: write partition:start-end (end may be left out: to the end).")
    return {
        (topic, _whole(partition, "partition")): (
            _whole(start, "start offset"),
            _whole(end, "end offset") if end.strip() else None,
        )
    }


def _bounds(value: Any) -> tuple[int, int | None]:
    if not isinstance(value, list) or len(value) != 2:
        raise InvalidInput("Each partition's offsets are [start, end or null].")
    return _whole(value[0], "start offset"), None if value[1] is None else _whole(value[1], "end offset")


def _whole(value: Any, name: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, not {str(value)[:40]!r}.") from None
    if number < 0:
        raise InvalidInput(f"{name} must not be negative.")
    return number


def _ranges(cluster: str, spec: JobSpec, offsets: Offsets | None) -> TopicRanges:
    """What a job reads: the named offsets (filtered on time when it has a range too), or its time range."""
    conn = get_connection(cluster)
    return (
        get_offset_ranges(conn, offsets) if offsets else get_ranges(conn, list(spec.topics), spec.from_ms, spec.to_ms)
    )


def _stored_offsets(params: dict[str, Any]) -> Offsets | None:
    rows = params.get("offsets")
    return {(t, p): (start, end) for t, p, start, end in rows} if rows else None


def _names(value: Any, name: str) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = value.replace("\n", ",").split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{name} must be a list of names.")
    return list(dict.fromkeys(v.strip() for v in value if v.strip()))


def _time(value: Any, name: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be an ISO-8601 date-time, epoch milliseconds or null.")
    return parse_time(value, name)


def _flag(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("1", "true", "on", "yes"))


def spec_of(job: AnalyticsJob) -> JobSpec:
    p = job.params
    return JobSpec(
        report=job.report,
        topics=tuple(p["topics"]),
        bucket=p["bucket"],
        from_ms=p.get("from_ms"),
        to_ms=p.get("to_ms"),
        approximate=bool(p.get("approximate")),
        top_n=int(p.get("top_n", 20)),
        groups=tuple(p.get("groups", [])),
    )


def params_of(spec: JobSpec) -> dict[str, Any]:
    return {
        "topics": list(spec.topics),
        "bucket": spec.bucket,
        "from_ms": spec.from_ms,
        "to_ms": spec.to_ms,
        "approximate": spec.approximate,
        "top_n": spec.top_n,
        "groups": list(spec.groups),
    }


# --- submitting and queueing ---------------------------------------------------------------------


def do_submit(cluster: str, spec: JobSpec, user: Any, offsets: Offsets | None = None) -> AnalyticsJob:
    """Check ``spec`` against the cluster and queue it; starts it at once when a slot is free.

    Raises SparkUnavailable (Spark cannot run here), TopicNotFound, InvalidInput (a bad range, too
    many points), ClusterUnavailable.
    """
    check_spark()
    if spec.report == "lag":
        check_spec(spec, settings.KAZAMI_ANALYTICS_MAX_POINTS)
        _check_history(cluster, spec.groups)
    else:
        ranges = _ranges(cluster, spec, offsets)
        check_spec(spec, settings.KAZAMI_ANALYTICS_MAX_POINTS, ranges.first_time_ms)
    params = params_of(spec)
    if offsets:
        params["offsets"] = [[t, p, start, end] for (t, p), (start, end) in sorted(offsets.items())]
    job = AnalyticsJob.objects.create(
        cluster=cluster,
        report=spec.report,
        params=params,
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


def lag_samples(cluster: str, spec: JobSpec) -> list[tuple[Any, ...]]:
    """The samples the lag report reads: (group, topic, partition, at_ms, lag, lag_ms, status)."""
    found = LagSample.objects.filter(cluster=cluster)
    if spec.groups:
        found = found.filter(group__in=spec.groups)
    if spec.from_ms is not None:
        found = found.filter(at__gte=datetime.fromtimestamp(spec.from_ms / 1000, UTC))
    if spec.to_ms is not None:
        found = found.filter(at__lt=datetime.fromtimestamp(spec.to_ms / 1000, UTC))
    rows = found.values_list("group", "topic", "partition", "at", "lag", "lag_ms", "status")
    return [
        (g, t, p, int(at.timestamp() * 1000), lag, lag_ms, st) for g, t, p, at, lag, lag_ms, st in rows.iterator(5000)
    ]


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
                status=AnalyticsJob.RUNNING, started_at=timezone.now(), stage="starting Spark"
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
            _finish(job.pk, AnalyticsJob.FAILED, error="The job's process ended without a result (see its log).")
        elif job.cancel_requested_at and now - job.cancel_requested_at > timedelta(seconds=CANCEL_GRACE):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(job.pid, signal.SIGKILL)
            _finish(job.pk, AnalyticsJob.CANCELLED, error="Cancelled: its processes were stopped.")


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


def _finish(job_id: int, status: str, **fields: Any) -> None:
    AnalyticsJob.objects.filter(pk=job_id, status=AnalyticsJob.RUNNING).update(
        status=status, finished_at=timezone.now(), **fields
    )


# --- the job process ------------------------------------------------------------------------------


def spark_settings(app_name: str) -> SparkSettings:
    """The console's Spark settings (KAZAMI_SPARK_*) for a job or the live query called ``app_name``."""
    return SparkSettings(
        master=settings.KAZAMI_SPARK_MASTER,
        driver_memory=settings.KAZAMI_SPARK_DRIVER_MEMORY,
        shuffle_partitions=settings.KAZAMI_SPARK_SHUFFLE_PARTITIONS,
        ui=settings.KAZAMI_SPARK_UI,
        app_name=app_name,
        driver_host=settings.KAZAMI_SPARK_DRIVER_HOST,
    )


def execute(job_id: int, spark: Any = None, cancelled: threading.Event | None = None) -> AnalyticsJob:
    """Run job ``job_id`` (already marked running) to its end and store how it ended; never raises for
    the job's own failures. ``spark``: a session to use (tests share one), else one is started.
    ``cancelled``: set by the caller to cancel (the job's row is watched for a cancel request too)."""
    job = get_job(job_id)
    cancelled = cancelled or threading.Event()
    stop_watching = threading.Event()
    watcher = threading.Thread(target=_watch_cancel, args=(job_id, cancelled, stop_watching), daemon=True)
    watcher.start()
    try:
        _run(job, spark, cancelled)
    except JobCancelled as exc:
        _finish(job_id, AnalyticsJob.CANCELLED, error=str(exc), stage="")
    except KazamiError as exc:
        _finish(job_id, AnalyticsJob.FAILED, error=explained(str(exc)), stage="")
    except Exception as exc:
        log.exception("analytics job %s failed", job_id)
        _finish(job_id, AnalyticsJob.FAILED, error=first_line(exc), stage="")
    finally:
        stop_watching.set()
        watcher.join(timeout=2)
    return get_job(job_id)


def _run(job: AnalyticsJob, spark: Any, cancelled: threading.Event) -> None:
    from analytics.source import kafka_options

    spec = spec_of(job)
    if spec.report == "lag":
        _run_lag(job, spec, spark, cancelled)
        return
    config = get_configs()[job.cluster]
    ranges = _ranges(job.cluster, spec, _stored_offsets(job.params))
    if ranges.records and spark is None:
        spark = _start_spark(job)
    if cancelled.is_set():
        raise JobCancelled("Cancelled before Spark started reading.")
    AnalyticsJob.objects.filter(pk=job.pk).update(stage="reading", input_rows=ranges.records)
    _store(
        job,
        run_report(
            spark,
            spec,
            kafka_options(config, jobs_dir() / "scratch") if ranges.records else {},
            ranges,
            group=f"kazami-job-{job.pk}",
            progress=_progress_of(job),
            cancelled=cancelled,
        ),
    )


def _run_lag(job: AnalyticsJob, spec: JobSpec, spark: Any, cancelled: threading.Event) -> None:
    samples = lag_samples(job.cluster, spec)
    AnalyticsJob.objects.filter(pk=job.pk).update(stage="reading", input_rows=len(samples))
    if samples and spark is None:
        spark = _start_spark(job)
    if cancelled.is_set():
        raise JobCancelled("Cancelled before Spark started.")
    gap_ms = int(3 * settings.KAZAMI_LAG_SAMPLE_INTERVAL * 1000)
    _store(job, run_lag_report(spark, spec, samples, gap_ms, f"kazami-job-{job.pk}", _progress_of(job), cancelled))


def _progress_of(job: AnalyticsJob) -> Any:
    """A progress callback writing to the job's row at most every PROGRESS_EVERY seconds."""
    last = [0.0]

    def progress(fraction: float, stage: str) -> None:
        now = time.monotonic()
        if fraction < 1.0 and now - last[0] < PROGRESS_EVERY:
            return
        last[0] = now
        close_old_connections()
        AnalyticsJob.objects.filter(pk=job.pk, status=AnalyticsJob.RUNNING).update(
            progress=round(fraction, 4), stage=stage[:255]
        )

    return progress


def _store(job: AnalyticsJob, result: JobResult) -> None:
    """Keep ``result``'s rows and mark the job succeeded with its figures."""
    with transaction.atomic():
        AnalyticsResult.objects.update_or_create(job_id=job.pk, defaults={"rows": result.rows})
        _finish(
            job.pk,
            AnalyticsJob.SUCCEEDED,
            progress=1.0,
            stage="",
            input_rows=result.input_rows,
            input_bytes=result.input_bytes,
            malformed=result.malformed,
            summary=result.summary,
            notes=result.notes,
        )


def _start_spark(job: AnalyticsJob) -> Any:
    from analytics.spark import start_session

    spark = start_session(spark_settings(f"kazami job {job.pk} {job.report}"))
    url = spark.sparkContext.uiWebUrl
    AnalyticsJob.objects.filter(pk=job.pk).update(spark_ui_url=url or "", stage="reading")
    return spark


def _watch_cancel(job_id: int, cancelled: threading.Event, stop: threading.Event) -> None:
    """Set ``cancelled`` once the job's row says someone asked to cancel it."""
    while not stop.wait(0.5):
        try:
            if AnalyticsJob.objects.filter(pk=job_id).exclude(cancel_requested_at=None).exists():
                cancelled.set()
                return
        except Exception:  # noqa: BLE001, S112 - the database is busy: look again next time
            continue
        finally:
            close_old_connections()


def explained(error: str) -> str:
    """A job's error with what it most likely means, when Spark's words leave that to the reader."""
    if "TimeoutException" in error and "Kafka" not in error:
        return f"Kafka did not answer Spark in time (are the brokers up?): {error}"
    return error


def run_job_process(job_id: int) -> int:
    """The body of ``manage.py run_job``: SIGTERM cancels as the cancel button does; the next queued job
    starts after."""
    job = get_job(job_id)
    if job.status != AnalyticsJob.RUNNING:
        return 0
    cancelled = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: cancelled.set())
    AnalyticsJob.objects.filter(pk=job_id).update(pid=os.getpid())
    try:
        execute(job_id, cancelled=cancelled)
    finally:
        with contextlib.suppress(Exception):
            dispatch()
    return 0


__all__ = [
    "SparkUnavailable",
    "check_job_request",
    "dispatch",
    "do_cancel",
    "do_submit",
    "execute",
    "get_job",
]
