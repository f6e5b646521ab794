"""The process an analytics job runs in (``manage.py run_job ID``, started by console.background.jobs): it opens a
session on the warm Spark (KAZAMI_SPARK_REMOTE, a Spark Connect server) or starts a Spark of its own, calls
analytics.runner, writes progress to the job's row as Spark's tasks finish, watches the row for a
cancel request, stores the result, and dispatches the next queued job."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import close_old_connections, transaction

from analytics.formats import Formats, page_values, plan_formats
from analytics.runner import PROFILE, SQL, JobCancelled, JobResult, JobSpec, run_lag_report, run_report
from analytics.spark import SparkSettings, first_line
from broker.errors import KazamiError
from broker.messages.ranges import TopicRanges
from console.background.job_spec import ranges_of, spec_of, stored_offsets
from console.background.jobs import dispatch, finish, get_job, jobs_dir
from console.config.clusters import get_configs, get_connection
from console.config.registry import registry_for
from console.models import AnalyticsJob, AnalyticsResult, LagSample

log = logging.getLogger(__name__)

PROGRESS_EVERY = 0.5  # seconds between progress writes


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
    session = _Session(job, spark)
    try:
        _run(job, session, cancelled)
    except JobCancelled as exc:
        finish(job_id, AnalyticsJob.CANCELLED, error=str(exc), stage="")
    except KazamiError as exc:
        finish(job_id, AnalyticsJob.FAILED, error=explained(str(exc)), stage="")
    except Exception as exc:
        log.exception("analytics job %s failed", job_id)
        finish(job_id, AnalyticsJob.FAILED, error=first_line(exc), stage="")
    finally:
        stop_watching.set()
        watcher.join(timeout=2)
        session.close()
    return get_job(job_id)


class _Session:
    """The job's Spark, opened when first needed (a job with nothing to read needs none): the one given (tests
    share one), a session of its own on the warm Spark (closed after the job, so the server forgets it at once),
    or a Spark started for the job. A session on the warm Spark is asked for at once, in a thread of its own,
    while the job plans what it reads (about a second and a half of each job's start otherwise spent after)."""

    def __init__(self, job: AnalyticsJob, given: Any) -> None:
        self.job, self.given = job, given
        self.opened: Any = None
        self._early: tuple[threading.Thread, list[Any]] | None = None
        if given is None and settings.KAZAMI_SPARK_REMOTE:
            found: list[Any] = []
            thread = threading.Thread(target=self._open, args=(found,), daemon=True, name="spark-session")
            thread.start()
            self._early = (thread, found)

    @staticmethod
    def _open(found: list[Any]) -> None:
        from analytics.spark import connect_session

        try:
            found.append(connect_session(settings.KAZAMI_SPARK_REMOTE))
        except BaseException as exc:  # noqa: BLE001 - raised again by get(), in the job's thread
            found.append(exc)

    def get(self) -> Any:
        if self.given is not None:
            return self.given
        if self.opened is None:
            self.opened = _start_spark(self.job, self._take_early())
        return self.opened

    def _take_early(self) -> Any:
        """The session asked for early (raising what asking raised), or None when none was."""
        if self._early is None:
            return None
        thread, found = self._early
        self._early = None
        thread.join()
        if isinstance(found[0], BaseException):
            raise found[0]
        return found[0]

    def close(self) -> None:
        if self._early is not None:  # asked for, never used: a job with nothing to read
            with contextlib.suppress(BaseException):
                self.opened = self._take_early()
        if self.opened is not None and settings.KAZAMI_SPARK_REMOTE:
            with contextlib.suppress(Exception):
                self.opened.stop()


def _run(job: AnalyticsJob, session: _Session, cancelled: threading.Event) -> None:
    spec = spec_of(job)
    if spec.report == "lag":
        _run_lag(job, spec, session, cancelled)
        return
    if spec.report == SQL:
        _run_sql(job, spec, session, cancelled)
        return
    if spec.report == PROFILE:
        _run_profile(job, spec, session, cancelled)
        return
    ready = _prepare(job, spec, session, cancelled)
    _store(
        job,
        run_report(
            ready.spark,
            spec,
            ready.kafka,
            ready.ranges,
            group=f"kazami-job-{job.pk}",
            progress=_progress_of(job),
            cancelled=cancelled,
            formats=ready.formats,
        ),
    )


@dataclass(frozen=True)
class _Ready:
    """What a job over topics has before Spark reads: its ranges, the formats of its topics, its session and
    the Kafka source's options (no session nor options when nothing is to be read, unless the job needs them)."""

    ranges: TopicRanges
    formats: Formats | None
    spark: Any
    kafka: dict[str, str]


def _prepare(
    job: AnalyticsJob, spec: JobSpec, session: _Session, cancelled: threading.Event, always: bool = False
) -> _Ready:
    """The ranges planned, the formats of the topics in a schema registry's wire format fetched (before Spark
    reads, or the reason there are none: SchemaUnavailable fails the job), the session taken (``always``: even
    for empty ranges), a last look at cancel, and the stage set to reading."""
    from analytics.source import kafka_options

    ranges = ranges_of(job.cluster, spec, stored_offsets(job.params))
    formats = _formats(job.cluster, ranges) if ranges.records else None
    reads = always or bool(ranges.records)
    spark: Any = session.get() if reads else None
    if cancelled.is_set():
        raise JobCancelled("Cancelled before Spark started reading.")
    AnalyticsJob.objects.filter(pk=job.pk).update(stage="reading", input_rows=ranges.records)
    kafka = kafka_options(get_configs()[job.cluster], jobs_dir() / "scratch") if reads else {}
    return _Ready(ranges, formats, spark, kafka)


def _run_sql(job: AnalyticsJob, spec: JobSpec, session: _Session, cancelled: threading.Event) -> None:
    """A SQL job: each topic it names read over its range as a table (its JSON fields inferred from a sample,
    here, while Spark reads nothing yet), at most KAZAMI_SQL_MAX_ROWS rows kept, stopped after KAZAMI_SQL_TIMEOUT
    s."""
    from analytics.sql import Query, run_sql, sample_schemas

    ready = _prepare(job, spec, session, cancelled, always=True)
    schemas = sample_schemas(ready.ranges, page_values(get_connection(job.cluster)), ready.formats)
    result = run_sql(
        ready.spark,
        Query(spec.sql, spec.topics),
        ready.kafka,
        ready.ranges,
        schemas,
        group=f"kazami-job-{job.pk}",
        max_rows=settings.KAZAMI_SQL_MAX_ROWS,
        timeout_s=settings.KAZAMI_SQL_TIMEOUT,
        from_ms=spec.from_ms,
        to_ms=spec.to_ms,
        formats=ready.formats,
        progress=_progress_of(job),
        cancelled=cancelled,
    )
    _store(job, result)


def _run_profile(job: AnalyticsJob, spec: JobSpec, session: _Session, cancelled: threading.Event) -> None:
    """A topic's profile (analytics.profile) over its range; no Spark when the range holds no record."""
    from analytics.profile import run_profile

    ready = _prepare(job, spec, session, cancelled)
    result = run_profile(
        ready.spark,
        spec.topics[0],
        ready.kafka,
        ready.ranges,
        group=f"kazami-job-{job.pk}",
        from_ms=spec.from_ms,
        to_ms=spec.to_ms,
        formats=ready.formats,
        progress=_progress_of(job),
        cancelled=cancelled,
    )
    _store(job, result)


def _formats(cluster: str, ranges: TopicRanges) -> Formats:
    return plan_formats(ranges, page_values(get_connection(cluster)), registry_for(cluster))


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


def _run_lag(job: AnalyticsJob, spec: JobSpec, session: _Session, cancelled: threading.Event) -> None:
    samples = lag_samples(job.cluster, spec)
    AnalyticsJob.objects.filter(pk=job.pk).update(stage="reading", input_rows=len(samples))
    spark: Any = session.get() if samples else None
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
        finish(
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


def _start_spark(job: AnalyticsJob, opened: Any = None) -> Any:
    """``opened`` (a session on the warm Spark already asked for), or a new session: on the warm Spark, or a
    Spark of the job's own."""
    from analytics.spark import connect_session, start_session

    url: str | None
    if settings.KAZAMI_SPARK_REMOTE:
        spark = opened if opened is not None else connect_session(settings.KAZAMI_SPARK_REMOTE)
        url = settings.KAZAMI_SPARK_UI_URL
    else:
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
