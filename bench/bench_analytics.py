"""PV/UU and CTR on Spark over 1 and 10 million web events, against reading the same topic at all.

For each size (1,000,000 and 10,000,000 events, or the comma-separated counts of
BENCH_ANALYTICS_EVENTS), in one run:

- the backfill (``broker.demo.web.backfill``) writes the events, spread over 24 hours, into a fresh
  topic (6 partitions, replicas min(3, brokers), lz4);
- **count**: Spark counts the topic's records through its Kafka source (``analytics.source.read_range``,
  the session the jobs use): the ceiling of this path, since every report reads that way;
- **read**: Spark reads every record's value through the same source and adds up their sizes: the
  least a report does (a bare count never turns a record into a row with its value, so it is faster);
- **parse**: Spark reads and parses every record as the jobs do and counts the events (no report):
  with **read**, where a job's time goes (reading, parsing, the rest is aggregating and collecting);
- **job**: PV/UU and CTR together over the topic by hour, through the real job path
  (``analytics.runner.run_reports``: one read, exact distinct counts);
- **separately**: the same two reports one job each (``run_report``, what the console runs);
- **kafka-python**: one Python process reads the topic with kafka-python and computes PV/UU and CTR
  in memory (``json`` and dicts of sets); its figures are compared with the job's, so the bench also
  checks that the job's results are exact;
- **connect**: the job and the two reports again, through a Spark Connect server (``analytics.server``,
  started once for the run, warmed up, the way ``make run`` runs jobs) from a session of its own, over the
  same topic: ``ratio_<size>_connect_job_to_job`` is its rate over the local session's (set
  BENCH_ANALYTICS_CONNECT=0 to leave it out);
- **perf test**: Kafka's own ``kafka-consumer-perf-test`` (org.apache.kafka.tools.ConsumerPerformance
  from the jars the cluster runs) reads the topic: the floor of reading at all.

Rates are events (records) a second of each measurement's own wall time. The Spark session is started
once, before everything, and its start time is reported apart; a warm-up (a count and the job over the
first topic) runs before the first measurement, so the JVM's JIT does not count against the first size.
The figures the aim is stated in: ``ratio_<size>_job_time_to_count_time`` (aim: at most 1.5) and
``ratio_<size>_job_to_kafka_python`` (aim: at least 5). The topics are deleted afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TypeVar

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

from bench.bench_backfill import bootstrap, fresh_topic
from bench.common import BENCH_VAR, SLOT, write_result
from broker.demo import web
from broker.local.launcher import JARS, check_java
from broker.messages.ranges import TopicRanges

CONNECT = os.environ.get("BENCH_ANALYTICS_CONNECT", "1") != "0"
CONNECT_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")
SPARK_PORT = 15302 + 10 * SLOT  # beside the report_time benchmark's (15202) and the tests' (15102)
COUNTS = tuple(int(n) for n in os.environ.get("BENCH_ANALYTICS_EVENTS", "1000000,10000000").split(",") if n)
SPAN_MS = 24 * 3600 * 1000
USERS = 100_000
BUCKET = "hour"
HOUR_MS = 3_600_000
REQUIRED = {
    "page_view": ("ts", "user_id", "session_id", "url"),
    "impression": ("ts", "impression_id", "ad_id", "campaign_id", "user_id", "url"),
    "click": ("ts", "impression_id", "ad_id", "campaign_id", "user_id"),
    "share": ("ts", "user_id", "url", "network"),
}
T = TypeVar("T")


def label(count: int) -> str:
    """``1m`` for a million, ``500k`` for half of one."""
    return f"{count // 1_000_000}m" if count % 1_000_000 == 0 else f"{count // 1000}k"


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()``'s result and the seconds it took."""
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def rate(count: int, seconds: float) -> int:
    return round(count / seconds) if seconds > 0 else 0


# -- the kafka-python baseline -------------------------------------------------------------------


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def kafka_python_reports(ranges: TopicRanges) -> dict[str, Any]:
    """Read every record of ``ranges`` with one kafka-python consumer and compute PV/UU and CTR by hour in
    memory. Returns {"pv_uu": {(bucket_ms, url or None): (pv, uu)}, "ctr": {(bucket_ms, campaign, ad or
    None): (impressions, clicks)}, "unmatched": {campaign: clicks}, "malformed": {reason: n}, "records": n}."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap(),
        group_id=None,
        enable_auto_commit=False,
        max_partition_fetch_bytes=4 * 1024 * 1024,
        fetch_max_bytes=32 * 1024 * 1024,
        max_poll_records=10_000,
    )
    ends = {TopicPartition(p.topic, p.partition): p.end for p in ranges.partitions if p.records}
    consumer.assign(list(ends))
    for p in ranges.partitions:
        if p.records:
            consumer.seek(TopicPartition(p.topic, p.partition), p.start)
    views: Counter[tuple[int, str | None]] = Counter()
    users: defaultdict[tuple[int, str | None], set[str]] = defaultdict(set)
    first: dict[str, tuple[int, int, str, str]] = {}  # impression id -> (ts, bucket, campaign, ad)
    clicks: Counter[str] = Counter()
    click_campaign: dict[str, str] = {}
    malformed: Counter[str] = Counter()
    records = 0
    loads = json.loads
    try:
        while ends:
            for tp, batch in consumer.poll(timeout_ms=1000).items():
                end = ends.get(tp)
                if end is None:
                    continue
                for record in batch:
                    if record.offset >= end:
                        break
                    records += 1
                    try:
                        event = loads(record.value) if record.value else None
                    except ValueError:
                        event = None
                    if not isinstance(event, dict):
                        malformed["not_json"] += 1
                        continue
                    kind = event.get("type")
                    needs = REQUIRED.get(kind) if isinstance(kind, str) else None
                    if needs is None:
                        malformed["unknown_type"] += 1
                        continue
                    ts = _whole(event["ts"]) if "ts" in event else None
                    if ts is None or any(event.get(name) is None for name in needs):
                        malformed["missing_field"] += 1
                        continue
                    bucket = ts - ts % HOUR_MS
                    if kind == "page_view":
                        user = event["user_id"]
                        for key in ((bucket, event["url"]), (bucket, None)):
                            views[key] += 1
                            users[key].add(user)
                    elif kind == "impression":
                        iid = event["impression_id"]
                        seen = first.get(iid)
                        if seen is None or ts < seen[0]:
                            first[iid] = (ts, bucket, event["campaign_id"], event["ad_id"])
                    elif kind == "click":
                        iid = event["impression_id"]
                        clicks[iid] += 1
                        campaign = event["campaign_id"]
                        if iid not in click_campaign or campaign < click_campaign[iid]:
                            click_campaign[iid] = campaign
                if batch and batch[-1].offset >= end - 1:
                    del ends[tp]
    finally:
        consumer.close()
    table: defaultdict[tuple[int, str, str | None], list[int]] = defaultdict(lambda: [0, 0])
    for iid, (_, bucket, campaign, ad) in first.items():
        ad_keys: tuple[tuple[int, str, str | None], ...] = ((bucket, campaign, ad), (bucket, campaign, None))
        for ad_key in ad_keys:
            table[ad_key][0] += 1
            table[ad_key][1] += clicks.get(iid, 0)
    unmatched: Counter[str] = Counter()
    for iid, n in clicks.items():
        if iid not in first:
            unmatched[click_campaign[iid]] += n
    return {
        "pv_uu": {key: (n, len(users[key])) for key, n in views.items()},
        "ctr": {key: (v[0], v[1]) for key, v in table.items()},
        "unmatched": dict(unmatched),
        "malformed": dict(malformed),
        "records": records,
    }


# -- Kafka's own consumer perf test ----------------------------------------------------------------


def consumer_perf_test(topic: str, count: int) -> dict[str, Any]:
    """Run kafka-consumer-perf-test over ``count`` records of ``topic``; returns its figures: records a
    second over its whole run (``records_per_s``, group join included) and while fetching
    (``fetch_records_per_s``), MB a second, and its output line."""
    result = subprocess.run(
        [
            check_java(),
            "-Xmx1g",
            "-cp",
            str(JARS / "*"),
            "org.apache.kafka.tools.ConsumerPerformance",
            "--bootstrap-server",
            ",".join(bootstrap()),
            "--topic",
            topic,
            "--messages",
            str(count),
            "--timeout",
            "60000",
            "--group",
            f"bench-perf-{uuid.uuid4().hex[:8]}",
        ],
        capture_output=True,
        text=True,
        timeout=3600,
        check=True,
    )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    header = next((line for line in lines if line.startswith("start.time")), "")
    values = lines[-1] if lines else ""
    names = [n.strip() for n in header.split(",")]
    fields = [v.strip() for v in values.split(",")]
    if not header or len(names) != len(fields):
        raise RuntimeError(f"unexpected consumer perf-test output: {result.stdout[-2000:]}")
    figures = dict(zip(names, fields, strict=True))
    return {
        "records": int(figures["data.consumed.in.nMsg"]),
        "records_per_s": round(float(figures["nMsg.sec"])),
        "fetch_records_per_s": round(float(figures["fetch.nMsg.sec"])),
        "mb_per_s": float(figures["MB.sec"]),
        "rebalance_ms": int(figures["rebalance.time.ms"]),
        "summary": values,
    }


# -- Spark -----------------------------------------------------------------------------------------


def spark_count(spark: Any, kafka: dict[str, str], ranges: TopicRanges) -> int:
    """The records of ``ranges`` counted through Spark's Kafka source, as the jobs read them."""
    from analytics.source import read_range

    spark.sparkContext.setJobGroup(f"bench-count-{uuid.uuid4().hex[:8]}", "count", interruptOnCancel=True)
    return int(read_range(spark, kafka, ranges, None, None).count())


def spark_read(spark: Any, kafka: dict[str, str], ranges: TopicRanges) -> int:
    """The bytes of the values of ``ranges``, each value read through Spark's Kafka source."""
    from pyspark.sql import functions as F

    from analytics.source import read_range

    spark.sparkContext.setJobGroup(f"bench-read-{uuid.uuid4().hex[:8]}", "read", interruptOnCancel=True)
    row = read_range(spark, kafka, ranges, None, None).agg(F.sum(F.length("value"))).first()
    return int(row[0] or 0) if row else 0


def spark_parse(spark: Any, kafka: dict[str, str], ranges: TopicRanges) -> int:
    """The valid events of ``ranges``, each record read and parsed as the jobs parse it (no report)."""
    from pyspark.sql import functions as F

    from analytics import events
    from analytics.source import read_range

    spark.sparkContext.setJobGroup(f"bench-parse-{uuid.uuid4().hex[:8]}", "parse", interruptOnCancel=True)
    parsed = events.parse(read_range(spark, kafka, ranges, None, None), BUCKET, ())
    return int(parsed.where(F.col("reason").isNull()).count())


def job(spark: Any, topic: str, kafka: dict[str, str], ranges: TopicRanges) -> list[Any]:
    """PV/UU and CTR by hour over ``topic`` in one job (analytics.runner.run_reports)."""
    from analytics.runner import JobSpec, run_reports

    specs = [JobSpec("pv_uu", (topic,), bucket=BUCKET), JobSpec("ctr", (topic,), bucket=BUCKET)]
    return run_reports(spark, specs, kafka, ranges, f"bench-job-{uuid.uuid4().hex[:8]}")


def separately(spark: Any, topic: str, kafka: dict[str, str], ranges: TopicRanges, report: str) -> Any:
    from analytics.runner import JobSpec, run_report

    return run_report(spark, JobSpec(report, (topic,), bucket=BUCKET), kafka, ranges, f"bench-{report}")


def same_results(results: list[Any], baseline: dict[str, Any]) -> dict[str, bool]:
    """Whether the job's PV/UU and CTR rows, unmatched clicks and malformed counts equal the baseline's."""
    pv_uu, ctr = results

    def ms(text: str) -> int:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)

    got_pv = {(ms(r["bucket_start"]), r["url"]): (r["pv"], r["uu"]) for r in pv_uu.rows}
    got_ctr = {(ms(r["bucket_start"]), r["campaign_id"], r["ad_id"]): (r["impressions"], r["clicks"]) for r in ctr.rows}
    return {
        "pv_uu": got_pv == baseline["pv_uu"],
        "ctr": got_ctr == baseline["ctr"],
        "unmatched_clicks": ctr.summary.get("unmatched_by_campaign") == baseline["unmatched"],
        "malformed": pv_uu.malformed == baseline["malformed"],
        "records": pv_uu.input_rows == baseline["records"],
    }


class Connected:
    """A session on the run's Spark Connect server. PySpark decides per call whether it builds Connect's or a
    classic session's columns from the process's environment (SPARK_CONNECT_MODE_ENABLED), which a Connect
    session sets: that environment is kept aside and put back only while this session is used, so the local
    session's measurements run as in a process of their own."""

    def __init__(self, remote: str) -> None:
        from analytics.spark import connect_session

        before = {k: os.environ.get(k) for k in CONNECT_ENV}
        self.session, self.session_s = timed(lambda: connect_session(remote))
        self.env = {k: os.environ[k] for k in CONNECT_ENV if k in os.environ}
        _put_back(before)

    @contextlib.contextmanager
    def used(self) -> Iterator[Any]:
        before = {k: os.environ.get(k) for k in CONNECT_ENV}
        os.environ.update(self.env)
        try:
            yield self.session
        finally:
            _put_back(before)

    def stop(self) -> None:
        with self.used() as session, contextlib.suppress(Exception):
            session.stop()


def _put_back(env: dict[str, str | None]) -> None:
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def through_connect(connected: Connected, fn: Callable[[Any], T]) -> tuple[T, float]:
    with connected.used() as session:
        return timed(lambda: fn(session))


def one_size(
    spark: Any,
    admin: KafkaAdminClient,
    replicas: int,
    count: int,
    warm_up: bool,
    connected: Connected | None = None,
) -> tuple[dict[str, Any], dict[str, float]]:
    """Every measurement over a fresh topic of ``count`` events; returns (details, summary figures)."""
    from analytics.source import kafka_options
    from broker.client.config import ClusterConfig
    from broker.client.connection import ClusterConnection
    from broker.messages.ranges import get_ranges

    name = label(count)
    topic = fresh_topic(admin, f"bench-analytics-{name}", replicas)
    config = ClusterConfig(name="bench", bootstrap_servers=bootstrap(), timeout=10)
    conn = ClusterConnection(config)
    try:
        written = web.backfill(bootstrap(), topic, count, SPAN_MS, seed=9, users=USERS, workers=os.cpu_count() or 1)
        ranges = get_ranges(conn, [topic], None, None)
        kafka = kafka_options(config, BENCH_VAR / "scratch")
        warm: dict[str, float] = {}
        if warm_up:
            _, warm["count_s"] = timed(lambda: spark_count(spark, kafka, ranges))
            _, warm["job_s"] = timed(lambda: job(spark, topic, kafka, ranges))
        counted, count_s = timed(lambda: spark_count(spark, kafka, ranges))
        _, read_s = timed(lambda: spark_read(spark, kafka, ranges))
        _, parse_s = timed(lambda: spark_parse(spark, kafka, ranges))
        results, job_s = timed(lambda: job(spark, topic, kafka, ranges))
        _, pv_uu_s = timed(lambda: separately(spark, topic, kafka, ranges, "pv_uu"))
        _, ctr_s = timed(lambda: separately(spark, topic, kafka, ranges, "ctr"))
        remote: dict[str, Any] = {}
        if connected is not None:
            if warm_up:
                remote["warm_up_s"] = round(through_connect(connected, lambda c: job(c, topic, kafka, ranges))[1], 2)
            found, remote["job_s"] = through_connect(connected, lambda c: job(c, topic, kafka, ranges))
            _, remote["pv_uu_alone_s"] = through_connect(
                connected, lambda c: separately(c, topic, kafka, ranges, "pv_uu")
            )
            _, remote["ctr_alone_s"] = through_connect(connected, lambda c: separately(c, topic, kafka, ranges, "ctr"))
            remote["same_rows_as_local"] = [r.rows for r in found] == [r.rows for r in results]
        baseline, baseline_s = timed(lambda: kafka_python_reports(ranges))
        perf = consumer_perf_test(topic, ranges.records)
    finally:
        conn.close()
        admin.delete_topics([topic])
    records = ranges.records
    pv_uu = results[0]
    details = {
        "events": records,
        "backfill_s": round(written.seconds, 2),
        "mean_record_bytes": round(pv_uu.input_bytes / max(1, pv_uu.input_rows), 1),
        "spark_count": counted,
        "count_s": round(count_s, 2),
        "count_events_per_s": rate(records, count_s),
        "read_s": round(read_s, 2),
        "read_events_per_s": rate(records, read_s),
        "parse_s": round(parse_s, 2),
        "parse_events_per_s": rate(records, parse_s),
        # Where the job's time goes: reading the records, parsing them, and the rest (aggregating, collecting).
        "job_time_shares": {
            "read": round(read_s / job_s, 2),
            "parse": round(max(0.0, parse_s - read_s) / job_s, 2),
            "aggregate_and_collect": round(max(0.0, job_s - parse_s) / job_s, 2),
        },
        "job_s": round(job_s, 2),
        "job_events_per_s": rate(records, job_s),
        "pv_uu_alone_s": round(pv_uu_s, 2),
        "ctr_alone_s": round(ctr_s, 2),
        "separately_events_per_s": rate(records, pv_uu_s + ctr_s),
        "kafka_python_s": round(baseline_s, 2),
        "kafka_python_events_per_s": rate(records, baseline_s),
        "perf_test": perf,
        "same_results_as_kafka_python": same_results(results, baseline),
        "rows": {"pv_uu": len(pv_uu.rows), "ctr": len(results[1].rows)},
        "connect": {
            **{k: round(v, 2) if isinstance(v, float) else v for k, v in remote.items()},
            **(
                {
                    "job_events_per_s": rate(records, remote["job_s"]),
                    "separately_events_per_s": rate(records, remote["pv_uu_alone_s"] + remote["ctr_alone_s"]),
                }
                if remote
                else {}
            ),
        },
        "warm_up_s": {k: round(v, 2) for k, v in warm.items()},
    }
    summary = {
        f"job_{name}_events_per_s": details["job_events_per_s"],
        f"reference_{name}_count_events_per_s": details["count_events_per_s"],
        f"reference_{name}_read_events_per_s": details["read_events_per_s"],
        f"reference_{name}_kafka_python_events_per_s": details["kafka_python_events_per_s"],
        f"reference_{name}_perf_test_records_per_s": perf["fetch_records_per_s"],
        f"separately_{name}_events_per_s": details["separately_events_per_s"],
        f"ratio_{name}_job_time_to_count_time": round(job_s / count_s, 2),
        f"ratio_{name}_job_time_to_read_time": round(job_s / read_s, 2),
        f"ratio_{name}_job_to_kafka_python": round(baseline_s / job_s, 2),
        f"ratio_{name}_job_to_perf_test": round(
            perf["fetch_records_per_s"] and records / job_s / perf["fetch_records_per_s"], 3
        ),
        f"ratio_{name}_count_to_perf_test": round(records / count_s / perf["fetch_records_per_s"], 3),
    }
    if remote:
        summary[f"connect_job_{name}_events_per_s"] = rate(records, remote["job_s"])
        summary[f"connect_separately_{name}_events_per_s"] = details["connect"]["separately_events_per_s"]
        summary[f"ratio_{name}_connect_job_to_job"] = round(job_s / remote["job_s"], 2)
    return details, summary


def run(counts: tuple[int, ...] = COUNTS) -> dict[str, Any]:
    from analytics import server
    from analytics.spark import SparkSettings, start_session

    admin = KafkaAdminClient(bootstrap_servers=bootstrap(), bootstrap_timeout_ms=10_000, request_timeout_ms=60_000)
    replicas = int(os.environ.get("BENCH_BACKFILL_REPLICAS", min(3, len(admin.describe_cluster()["brokers"]))))
    settings = SparkSettings(app_name="kazami bench analytics")
    spark, session_s = timed(lambda: start_session(settings))
    sizes: dict[str, Any] = {}
    figures: dict[str, Any] = {}
    connected: Connected | None = None
    server_s = 0.0
    server_data = BENCH_VAR / "spark-connect"
    try:
        if CONNECT:
            state, server_s = timed(
                lambda: server.start(
                    server_data, port=SPARK_PORT, settings=SparkSettings(ui=False), echo=lambda _: None
                )
            )
            connected = Connected(state.remote(server_data.resolve()))
        for i, count in enumerate(counts):
            details, summary = one_size(spark, admin, replicas, count, warm_up=i == 0, connected=connected)
            sizes[label(count)] = details
            figures.update(summary)
    finally:
        if connected is not None:
            connected.stop()
        if CONNECT:
            server.stop(server_data, echo=lambda _: None)
        spark.stop()
        admin.close()
    result = {
        "partitions": 6,
        "replicas": replicas,
        "bucket": BUCKET,
        "spark_master": settings.master,
        "spark_shuffle_partitions": settings.shuffle_partitions,
        "spark_session_start_s": round(session_s, 2),
        **({"connect_server_start_s": round(server_s, 2)} if CONNECT else {}),
        **figures,
        "sizes": sizes,
    }
    write_result("analytics", result)
    return result
