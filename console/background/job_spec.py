"""What an analytics job asks (console.background.jobs queues it, console.background.job_process runs it): the
report, its topics or groups, the time range or the offsets it reads, its bucket and options; checked from the
API's JSON or a page's form, and kept in the job's row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analytics.events import BUCKETS
from analytics.reports import REPORTS
from analytics.runner import PROFILE, SQL, JobSpec
from analytics.sql import check_sql
from broker.errors import InvalidInput
from broker.messages.ranges import TopicRanges, get_offset_ranges, get_ranges
from broker.times import parse_time
from broker.topics.read import check_topic_name
from console.config.clusters import get_connection
from console.models import AnalyticsJob
from console.params import INT32_MAX, INT64_MAX

# (topic, partition) -> (start offset, end offset or None for the end)
Offsets = dict[tuple[str, int], tuple[int, int | None]]


def check_job_request(data: Mapping[str, Any]) -> JobSpec:
    """A JobSpec from the API's JSON or a page's form; raises InvalidInput naming the bad field."""
    report = str(data.get("report") or "")
    if report not in REPORTS and report not in (SQL, PROFILE):
        raise InvalidInput(f"report must be one of {', '.join((*REPORTS, SQL, PROFILE))}, not {report[:40]!r}.")
    if report == SQL:
        return _sql_request(data)
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
    for topic in topics:
        try:
            check_topic_name(topic)
        except InvalidInput as exc:
            raise InvalidInput(f"topics: {topic[:60]!r} is not a topic name. {exc}") from None
    if report == PROFILE:
        if len(topics) != 1:
            raise InvalidInput("A profile is of one topic: topics must name exactly one.")
        return JobSpec(
            report=PROFILE,
            topics=tuple(topics),
            bucket="hour",
            from_ms=_time(data.get("from"), "from"),
            to_ms=_time(data.get("to"), "to"),
        )
    bucket = str(data.get("bucket") or "hour")
    if bucket not in BUCKETS:
        raise InvalidInput(f"bucket must be one of {', '.join(BUCKETS)}, not {bucket[:40]!r}.")
    top_n = data.get("top_n", 20)
    try:
        top_n = int(top_n)
    except (TypeError, ValueError, OverflowError):
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


def _sql_request(data: Mapping[str, Any]) -> JobSpec:
    """A SQL job: its query checked to only read (analytics.sql.check_sql), its tables the topics it names."""
    text = data.get("sql")
    if not isinstance(text, str):
        raise InvalidInput("sql must be the query's text.")
    query = check_sql(text)
    for topic in query.topics:
        try:
            check_topic_name(topic)
        except InvalidInput as exc:
            raise InvalidInput(f"The query reads `{topic[:60]}`, which is not a topic name. {exc}") from None
    return JobSpec(
        report=SQL,
        topics=query.topics,
        bucket="total",
        from_ms=_time(data.get("from"), "from"),
        to_ms=_time(data.get("to"), "to"),
        sql=query.sql,
    )


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
                wanted[(str(topic), _whole(partition, "partition", INT32_MAX))] = _bounds(bounds)
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
        (topic, _whole(partition, "partition", INT32_MAX)): (
            _whole(start, "start offset"),
            _whole(end, "end offset") if end.strip() else None,
        )
    }


def _bounds(value: Any) -> tuple[int, int | None]:
    if not isinstance(value, list) or len(value) != 2:
        raise InvalidInput("Each partition's offsets are [start, end or null].")
    return _whole(value[0], "start offset"), None if value[1] is None else _whole(value[1], "end offset")


def _whole(value: Any, name: str, maximum: int = INT64_MAX) -> int:
    """A whole number in 0..maximum (int64 for offsets, int32 for partitions, as Kafka carries them)."""
    try:
        number = int(str(value).strip())
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, not {str(value)[:40]!r}.") from None
    if number < 0:
        raise InvalidInput(f"{name} must not be negative.")
    if number > maximum:
        raise InvalidInput(f"{name} must be at most {maximum}.")
    return number


def ranges_of(cluster: str, spec: JobSpec, offsets: Offsets | None) -> TopicRanges:
    """What a job reads: the named offsets (filtered on time when it has a range too), or its time range."""
    conn = get_connection(cluster)
    return (
        get_offset_ranges(conn, offsets) if offsets else get_ranges(conn, list(spec.topics), spec.from_ms, spec.to_ms)
    )


def stored_offsets(params: dict[str, Any]) -> Offsets | None:
    """The offsets a job's row keeps (:func:`params_of`), or None for every offset."""
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
        return parse_time(str(value), name)
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be an ISO-8601 date-time, epoch milliseconds or null.")
    return parse_time(value, name)


def _flag(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("1", "true", "on", "yes"))


def job_reads(job: AnalyticsJob) -> tuple[str, list[str]]:
    """What ``job`` reads, for who may see it: ("group", its groups) for a lag report (none: every group), else
    ("topic", its topics; a query's tables)."""
    if job.report == "lag":
        return "group", [str(g) for g in job.params.get("groups") or []]
    return "topic", [str(t) for t in job.params.get("topics") or []]


def spec_of(job: AnalyticsJob) -> JobSpec:
    """What ``job``'s row asks (kept by :func:`params_of`)."""
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
        sql=str(p.get("sql", "")),
    )


def params_of(spec: JobSpec, offsets: Offsets | None = None) -> dict[str, Any]:
    """What a job's row keeps of ``spec`` and its ``offsets`` (read back by :func:`spec_of` and
    :func:`stored_offsets`)."""
    params: dict[str, Any] = {
        "topics": list(spec.topics),
        "bucket": spec.bucket,
        "from_ms": spec.from_ms,
        "to_ms": spec.to_ms,
        "approximate": spec.approximate,
        "top_n": spec.top_n,
        "groups": list(spec.groups),
    }
    if spec.sql:
        params["sql"] = spec.sql
    if offsets:
        params["offsets"] = [[t, p, start, end] for (t, p), (start, end) in sorted(offsets.items())]
    return params
