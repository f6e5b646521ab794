"""Running reports: plan the offsets, read them once, parse once, aggregate, collect.

Knows Spark and Kafka, nothing of Django: the console's job process (console/background/job_process.py) calls
:func:`run_report` with callbacks for progress and a cancel flag, and stores what it returns;
:func:`run_reports` computes several reports over the same records, PV/UU, CTR and shares over one
read (analytics.reports.onepass). Malformed records are counted per reason in the same pass that
aggregates (Spark's observed metrics), so a report reads its records once.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from analytics import events
from analytics.formats import Formats, decode
from analytics.present import natural_key
from analytics.reports import EVENT_REPORTS, REPORTS, Options, finish, one_pass, onepass
from analytics.source import read_range
from analytics.spark import first_line, is_remote
from broker.errors import InvalidInput, KazamiError
from broker.messages.ranges import TopicRanges

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class JobCancelled(KazamiError):
    """Someone cancelled the job; Spark's jobs for it were cancelled."""


class JobFailed(KazamiError):
    """Spark failed the job; the message is the cause, not the JVM's stack."""


@dataclass(frozen=True)
class JobSpec:
    """What to compute: a report over topics in [from_ms, to_ms) (None: open), by bucket."""

    report: str
    topics: tuple[str, ...]
    bucket: str = "hour"
    from_ms: int | None = None
    to_ms: int | None = None
    approximate: bool = False
    top_n: int = 20
    groups: tuple[str, ...] = ()  # the lag report: these groups (none: every group)
    sql: str = ""  # the SQL job: its query, checked (analytics.sql.check_sql); ``topics`` are its tables

    def options(self, partitions: int = 0) -> Options:
        return Options(approximate=self.approximate, top_n=self.top_n, partitions=partitions)


@dataclass
class JobResult:
    rows: list[dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)
    input_rows: int = 0
    input_bytes: int = 0
    malformed: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


Progress = Callable[[float, str], None]
SQL = "sql"  # the job kind of a query over topics (analytics.sql), beside the reports
PROFILE = "profile"  # the job kind of a topic's profile (analytics.profile)
NOTHING = "No records in the chosen range: there was nothing to count."
# Records per partition of the events' shuffle (analytics.reports.onepass): few enough that a partition's
# hash aggregations stay in memory, many enough that a task's start does not count.
RECORDS_PER_PARTITION = 500_000


def check_spec(spec: JobSpec, max_points: int, first_time_ms: int | None = None, now_ms: int | None = None) -> None:
    """Raise InvalidInput for a spec no job should start with: unknown report or bucket, no topic, ``from``
    not before ``to``, or more buckets than ``max_points`` over the range (an open start counts from
    ``first_time_ms``, the first record's time, when known)."""
    if spec.report not in REPORTS and spec.report not in (SQL, PROFILE):
        raise InvalidInput(f"Unknown report {spec.report!r}; reports: {', '.join((*REPORTS, SQL, PROFILE))}.")
    if spec.bucket not in events.BUCKETS:
        raise InvalidInput(f"Unknown bucket {spec.bucket!r}; buckets: {', '.join(events.BUCKETS)}.")
    if spec.from_ms is not None and spec.to_ms is not None and spec.from_ms >= spec.to_ms:
        raise InvalidInput(f"'from' ({iso(spec.from_ms)}) must be before 'to' ({iso(spec.to_ms)}).")
    if spec.report == "lag":
        return  # the lag report reads the console's samples: no topic, no buckets
    if spec.report == SQL:
        if not spec.sql:
            raise InvalidInput("Write a query, e.g. SELECT count(*) FROM `my-topic`.")
        return  # its tables are the topics it names, read whole or over the range; no buckets
    if spec.report == PROFILE:
        if len(spec.topics) != 1:
            raise InvalidInput("A profile is of one topic: choose one.")
        return  # always by hour, however long the range: its hours are a few numbers each
    if not spec.topics:
        raise InvalidInput("Choose at least one topic.")
    if not 1 <= spec.top_n <= 1000:
        raise InvalidInput("top_n must be between 1 and 1000.")
    unit = events.BUCKETS[spec.bucket]
    start = spec.from_ms if spec.from_ms is not None else first_time_ms
    if unit is None or start is None:
        return
    end = spec.to_ms if spec.to_ms is not None else (now_ms if now_ms is not None else int(time.time() * 1000))
    points = (end - start) // unit[1] + 1
    if points > max_points:
        raise InvalidInput(
            f"{spec.bucket} buckets from {iso(start)} to {iso(end)} make {points:,} points, more than the "
            f"{max_points:,} a report may draw: choose a larger bucket or a shorter range."
        )


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_report(
    spark: SparkSession,
    spec: JobSpec,
    kafka: dict[str, str],
    ranges: TopicRanges,
    group: str,
    progress: Progress | None = None,
    cancelled: threading.Event | None = None,
    formats: Formats | None = None,
) -> JobResult:
    """Compute ``spec`` over the records of ``ranges`` (read with Kafka source ``kafka`` options) as Spark
    job group ``group``. ``progress(fraction, stage)`` is called as Spark's tasks finish; setting
    ``cancelled`` cancels Spark's jobs. ``formats``: how topics in a schema registry's wire format are
    decoded (analytics.formats.plan_formats; None: every topic is JSON). Raises JobCancelled, JobFailed."""
    return run_reports(spark, [spec], kafka, ranges, group, progress, cancelled, formats)[0]


def run_reports(
    spark: SparkSession,
    specs: list[JobSpec],
    kafka: dict[str, str],
    ranges: TopicRanges,
    group: str,
    progress: Progress | None = None,
    cancelled: threading.Event | None = None,
    formats: Formats | None = None,
) -> list[JobResult]:
    """Compute every report of ``specs`` (reports over events, all over the same topics, range and bucket)
    over the records of ``ranges`` as Spark job group ``group``; returns their results in the order of
    ``specs``. The reports one pass computes (exact PV/UU, CTR, shares) share one read of the records;
    each other one (keywords, approximate PV/UU) reads them again. ``progress`` and ``cancelled`` as for
    :func:`run_report`, and ``formats``. Raises InvalidInput for specs that do not share their records, JobCancelled,
    JobFailed."""
    if not specs:
        return []
    first = specs[0]
    for spec in specs:
        if spec.report not in EVENT_REPORTS:
            raise InvalidInput(f"{spec.report!r} is not a report over events.")
        if (spec.topics, spec.bucket, spec.from_ms, spec.to_ms) != (
            first.topics,
            first.bucket,
            first.from_ms,
            first.to_ms,
        ):
            raise InvalidInput("Reports computed together need the same topics, range and bucket.")
    if ranges.records == 0:
        return [JobResult(rows=[], notes=[NOTHING]) for _ in specs]
    partitions = max(
        int(spark.conf.get("spark.sql.shuffle.partitions") or 1), -(-ranges.records // RECORDS_PER_PARTITION)
    )
    together = [i for i, spec in enumerate(specs) if one_pass(spec.report, spec.options())]
    reads = [(together, True)] if together else []
    reads += [([i], False) for i in range(len(specs)) if i not in together]
    results: dict[int, JobResult] = {}
    for n, (read, one) in enumerate(reads):
        chosen = [specs[i] for i in read]
        step = _scaled(progress, n, len(reads))
        found = _run_read(
            spark, chosen, one, kafka, ranges, f"{group}-{n}", partitions, group, step, cancelled, formats
        )
        results.update(zip(read, found, strict=True))
    if progress:
        progress(1.0, "done")
    return [results[i] for i in range(len(specs))]


def _run_read(
    spark: SparkSession,
    specs: list[JobSpec],
    together: bool,
    kafka: dict[str, str],
    ranges: TopicRanges,
    name: str,
    partitions: int,
    group: str,
    progress: Progress | None,
    cancelled: threading.Event | None,
    formats: Formats | None = None,
) -> list[JobResult]:
    """One read of the records for ``specs``: one report, or (``together``) the one-pass reports."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    first = specs[0]
    reports = [spec.report for spec in specs]
    optional = ("keyword",) if "keywords" in reports else ()
    records = decode(read_range(spark, kafka, ranges, first.from_ms, first.to_ms), formats)
    parsed = events.parse(records, first.bucket, optional)
    seen = Observation(f"input-{name}")
    counted = parsed.observe(
        seen,
        F.count(F.lit(1)).alias("rows"),
        F.coalesce(F.sum("bytes"), F.lit(0)).alias("bytes"),
        *[F.count_if(F.col("reason") == reason).alias(reason) for reason in events.REASONS],
    )
    valid = counted.where(F.col("reason").isNull())
    if together:
        result = onepass.transform(valid, reports, partitions)
    else:
        result = REPORTS[first.report].transform(valid, first.options(partitions))
    description = f"{', '.join(reports)} over {', '.join(first.topics)}"
    collected = collect(spark, result, group, description, progress, cancelled, ranges.records)
    metrics = seen.get
    out = []
    for spec in specs:
        module = REPORTS[spec.report]
        if together:
            columns = onepass.COLUMNS[spec.report]
            mine = [{c: r[c] for c in columns} for r in collected if r["report"] == spec.report]
        else:
            mine = collected
        rows, summary = finish(spec.report, [_shaped(r, module.COLUMNS) for r in mine])
        rows.sort(key=_order(getattr(module, "ORDER", module.COLUMNS)))
        notes = formats.notes() if formats else []
        if spec.approximate and spec.report == "pv_uu":
            notes.append("UU is approximate (HyperLogLog, about 1% relative error).")
        if not metrics["rows"]:
            notes.append(NOTHING)
        elif not rows:
            notes.append("No events of this report's kind in the chosen range.")
        out.append(
            JobResult(
                rows=rows,
                summary=summary,
                input_rows=int(metrics["rows"]),
                input_bytes=int(metrics["bytes"]),
                malformed={reason: int(metrics[reason]) for reason in events.REASONS if metrics[reason]},
                notes=notes,
            )
        )
    return out


def _scaled(progress: Progress | None, done: int, total: int) -> Progress | None:
    """``progress`` for read ``done`` of ``total``: its fractions as a share of the whole."""
    if progress is None or total == 1:
        return progress

    def scaled(fraction: float, stage: str) -> None:
        progress((done + min(fraction, 0.99)) / total, stage)

    return scaled


def run_lag_report(
    spark: SparkSession,
    spec: JobSpec,
    samples: list[tuple[Any, ...]],
    gap_ms: int,
    group: str,
    progress: Progress | None = None,
    cancelled: threading.Event | None = None,
) -> JobResult:
    """The lag report over ``samples`` (rows of analytics.reports.lag.SAMPLES_SCHEMA, read by the caller
    from the console's history). Raises JobCancelled, JobFailed."""
    from analytics.reports import Options, lag

    if not samples:
        return JobResult(rows=[], notes=["No lag samples in the chosen range: there was nothing to report."])
    frame = spark.createDataFrame(samples, lag.SAMPLES_SCHEMA)
    result = lag.transform(frame, Options(gap_ms=gap_ms))
    collected = collect(spark, result, group, "lag report", progress, cancelled)
    rows = []
    for r in collected:
        row = {name: r.get(name) for name in lag.COLUMNS}
        row["last_at"] = iso(int(row["last_at"])) if row["last_at"] is not None else None
        row["mean_lag"] = float(row["mean_lag"]) if row["mean_lag"] is not None else None
        rows.append(row)
    rows.sort(key=lambda r: (r["group"], r["topic"], r["partition"]))
    if progress:
        progress(1.0, "done")
    return JobResult(rows=rows, input_rows=len(samples))


def collect(
    spark: SparkSession,
    frame: Any,
    group: str,
    description: str,
    progress: Progress | None,
    cancelled: threading.Event | None,
    records: int = 0,
) -> list[dict[str, Any]]:
    """``frame``'s rows, computed under tag (Spark Connect) or job group (a classic session) ``group`` with progress
    (``records``: how many records the first stage reads, for its label) and cancel; raises JobCancelled or
    JobFailed (the cause in one line)."""
    stages = StageProgress(progress, records)
    if is_remote(spark):
        watcher: _Watcher = _RemoteWatcher(spark, group, stages, cancelled)
    else:
        spark.sparkContext.setJobGroup(group, description, interruptOnCancel=True)
        watcher = _Watcher(spark, group, stages, cancelled)
    watcher.start()
    try:
        collected = [row.asDict() for row in frame.collect()]
    except Exception as exc:  # noqa: BLE001 - py4j, gRPC and Spark raise their own kinds
        if cancelled is not None and cancelled.is_set():
            raise JobCancelled("Cancelled: Spark's jobs for it were stopped.") from None
        raise JobFailed(first_line(exc)) from None
    finally:
        watcher.stop()
    if cancelled is not None and cancelled.is_set():
        raise JobCancelled("Cancelled as Spark finished: its result was not kept.")
    return collected


def _shaped(row: dict[str, Any], columns: tuple[str, ...]) -> dict[str, Any]:
    out = {name: row.get(name) for name in columns}
    if "bucket_start" in out:
        ms = out["bucket_start"]
        out["bucket_start"] = None if ms is None else iso(int(ms))
    ctr = out.get("ctr")
    if ctr is not None:
        out["ctr"] = float(ctr)
    if "matched" in row:
        out["matched"] = row["matched"]
    return out


def _order(columns: tuple[str, ...]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """Rows in a stable order: by bucket (total first), then the columns in order (nulls first, numbers as numbers,
    text in natural order: /p2 before /p10)."""

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(natural_key(row.get(c)) for c in columns)

    return key


@dataclass(frozen=True)
class Stage:
    """One Spark stage of a job as progress sees it."""

    stage_id: int
    tasks: int
    completed: int
    done: bool


class StageProgress:
    """Spark's stages of one collect as a fraction done and a stage named for people: "planning" before Spark has
    a stage, "reading N of M records" while the first stage (the Kafka read, most of the work) runs, then
    "aggregating" while the stages after it run, and "collecting" once they are done. The fraction never goes
    back, though stages appear as Spark plans them."""

    READ_SHARE = 0.85  # of the whole, the first stage's

    def __init__(self, progress: Progress | None, records: int = 0) -> None:
        self.progress, self.records, self.best = progress, records, 0.0

    def update(self, stages: list[Stage]) -> None:
        if self.progress is None:
            return
        fraction, stage = self.judge(sorted(stages, key=lambda s: s.stage_id))
        self.best = max(self.best, min(fraction, 0.99))
        self.progress(self.best, stage)

    def judge(self, stages: list[Stage]) -> tuple[float, str]:
        if not stages:
            return 0.0, "planning"
        first, rest = stages[0], stages[1:]
        read = 1.0 if first.done else (first.completed / first.tasks if first.tasks else 0.0)
        tasks = sum(s.tasks for s in rest)
        after = sum(s.completed for s in rest) / tasks if tasks else 0.0
        if not first.done:
            stage = f"reading {int(self.records * read):,} of {self.records:,} records" if self.records else "reading"
        elif rest and not all(s.done for s in rest):
            stage = "aggregating"
        else:
            stage = "collecting"
        return self.READ_SHARE * read + (1 - self.READ_SHARE - 0.05) * after, stage


class _Watcher(threading.Thread):
    """Polls a classic session's status tracker for the group's stages (to ``stages``) and cancels the group
    when asked."""

    def __init__(
        self, spark: SparkSession, group: str, stages: StageProgress, cancelled: threading.Event | None
    ) -> None:
        super().__init__(daemon=True, name=f"watch-{group}")
        self.spark, self.group, self.stages, self.cancelled = spark, group, stages, cancelled
        self.done = threading.Event()

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=5)

    def run(self) -> None:
        sc = self.spark.sparkContext
        tracker = sc.statusTracker()
        cancel_sent = False
        while not self.done.wait(0.3):
            if self.cancelled is not None and self.cancelled.is_set() and not cancel_sent:
                sc.cancelJobGroup(self.group)
                cancel_sent = True
            try:
                seen = []
                for job_id in tracker.getJobIdsForGroup(self.group):
                    job = tracker.getJobInfo(job_id)
                    for stage_id in job.stageIds if job else []:
                        info = tracker.getStageInfo(stage_id)
                        if info is not None:
                            tasks, completed = info.numTasks, info.numCompletedTasks
                            seen.append(Stage(stage_id, tasks, completed, bool(tasks) and completed >= tasks))
                if seen:
                    self.stages.update(seen)
            except Exception:  # noqa: BLE001, S112 - the context is stopping; progress is best effort
                continue


class _RemoteWatcher(_Watcher):
    """For a Spark Connect session: tags the operations of this thread with the group, hears the server's progress
    reports, and interrupts the tagged operations when asked to cancel."""

    def __init__(
        self, spark: SparkSession, group: str, stages: StageProgress, cancelled: threading.Event | None
    ) -> None:
        super().__init__(spark, group, stages, cancelled)
        spark.addTag(group)  # tags belong to the thread that runs the operations: this one
        spark.registerProgressHandler(cast(Any, self.heard))
        stages.update([])  # "planning" from the start, said from this thread as every later report is

    def heard(self, stages: Any, inflight_tasks: int, operation_id: Any, done: bool) -> None:
        self.stages.update([Stage(s.stage_id, s.num_tasks, s.num_completed_tasks, bool(s.done)) for s in stages or []])

    def stop(self) -> None:
        super().stop()
        self.spark.removeProgressHandler(cast(Any, self.heard))
        self.spark.removeTag(self.group)

    def run(self) -> None:
        while not self.done.wait(0.3):
            if self.cancelled is not None and self.cancelled.is_set():
                # A server that is gone fails the collect by itself.
                with contextlib.suppress(Exception):
                    self.spark.interruptTag(self.group)
                return
