"""The web events the reports read, parsed from Kafka records, and why a record is not one.

An event is a JSON object with a ``type`` and the fields its type needs (docs/analytics.md, "Web events").
A record that is not such an event is malformed, for one reason of :data:`REASONS`; the reports
leave it out and the job counts it, so a bad record never fails a job:

- ``not_json``: no value, or a value that is not a JSON object;
- ``unknown_type``: ``type`` missing or not one of :data:`EVENT_TYPES`;
- ``missing_field``: a field its type needs is missing or null, or ``ts`` is not a whole number
  (a JSON integer, or a string of digits).

Fields are read as text (a number in a text field is kept as its JSON text), so one parse serves
every type and every report. Parsing takes about a third of a job's time, 1.4 times as long as
reading the records from Kafka (bench/results/analytics.json): each record is parsed once, and the
optional fields only when a report needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

EVENT_TYPES = ("page_view", "impression", "click", "share")
# What each type needs; ``keyword`` and ``referrer`` may be absent or null (a page that is no search
# result, a visit with no referrer).
REQUIRED: dict[str, tuple[str, ...]] = {
    "page_view": ("ts", "user_id", "session_id", "url"),
    "impression": ("ts", "impression_id", "ad_id", "campaign_id", "user_id", "url"),
    "click": ("ts", "impression_id", "ad_id", "campaign_id", "user_id"),
    "share": ("ts", "user_id", "url", "network"),
}
OPTIONAL = ("referrer", "keyword")
FIELDS = ("type", *sorted({f for fields in REQUIRED.values() for f in fields} | set(OPTIONAL)))
NOT_JSON, UNKNOWN_TYPE, MISSING_FIELD = "not_json", "unknown_type", "missing_field"
REASONS = (NOT_JSON, UNKNOWN_TYPE, MISSING_FIELD)

# Bucket name -> (unit, length in ms); None: one bucket over everything.
BUCKETS: dict[str, tuple[str, int] | None] = {
    "minute": ("minute", 60_000),
    "hour": ("hour", 3_600_000),
    "day": ("day", 86_400_000),
    "total": None,
}


def reason_column() -> Column:
    """Why the record in column ``value``, its fields parsed into columns of their names (``ts`` as text),
    is not an event (one of REASONS), or null when it is one."""
    from pyspark.sql import functions as F

    kind = F.col("type")
    ts_number = F.expr("try_cast(ts AS BIGINT)")
    missing_by_type = None
    for name, fields in REQUIRED.items():
        missing = F.lit(False)
        for field in fields:
            missing = missing | F.col(field).isNull()
        missing = missing | ts_number.isNull()
        branch = (kind == name) & missing
        missing_by_type = branch if missing_by_type is None else (missing_by_type | branch)
    assert missing_by_type is not None
    # A value that is no JSON object parses as all nulls, as does an object without a type: which of the
    # two it is is asked of the rare records without a type only.
    text = F.col("value").cast("string")
    an_object = F.regexp_like(text, F.lit(r"^\s*\{")) & F.try_parse_json(text).isNotNull()
    return (
        F.when(kind.isNull() & ~an_object, F.lit(NOT_JSON))
        .when(kind.isNull() | ~kind.isin(*EVENT_TYPES), F.lit(UNKNOWN_TYPE))
        .when(missing_by_type, F.lit(MISSING_FIELD))
    )


def parse(records: DataFrame, bucket: str, optional: tuple[str, ...] = OPTIONAL) -> DataFrame:
    """Kafka records (columns ``key``, ``value``, ``timestamp``; ``size`` when decoded by analytics.formats)
    -> one row per record with ``reason``
    (null for an event), ``bytes`` (key and value sizes), the event's fields, ``ts`` as a number and
    ``bucket_start`` (the start of its bucket in epoch ms, buckets aligned in UTC; null for ``total``).

    ``optional``: which of OPTIONAL to parse and keep (all by default); every field a type needs is
    always parsed, since a record missing one is malformed."""
    from pyspark.sql import functions as F

    fields = tuple(name for name in FIELDS if name not in OPTIONAL or name in optional)
    # ``json_tuple`` reads the named fields of an object as text in one parse of the record: 23% less time
    # than ``from_json`` into a struct of text fields (3M events: 4.0 s against 5.2 s of parsing, over
    # 4.3 s of reading them). Its columns are a generator's output, so the filters on ``reason`` above it
    # read them and never parse again.
    # Records decoded from a registry's wire format (analytics.formats) carry their size as written.
    size = (
        F.col("size")
        if "size" in records.columns
        else F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))
    )
    parsed = records.select(
        "value",
        size.alias("bytes"),
        F.json_tuple(F.col("value").cast("string"), *fields).alias(*fields),
    )
    unit = BUCKETS[bucket]
    ts = F.expr("try_cast(ts AS BIGINT)")
    # Buckets are aligned on the epoch, so in UTC: the same as truncating the time, for less work.
    bucket_start = (ts - F.pmod(ts, F.lit(unit[1]))) if unit else F.lit(None).cast("bigint")
    return parsed.select(
        reason_column().alias("reason"),
        "bytes",
        *[name for name in fields if name != "ts"],
        ts.alias("ts"),
        bucket_start.alias("bucket_start"),
    )
