"""Export a topic's records as a file, streamed: JSON Lines (byte for byte, see records), CSV, or an Avro container
file, one chunk at a time as the search's reader walks the ranges, so a whole partition never sits in memory."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from typing import Any

from broker.client.connection import ClusterConnection
from broker.messages.log import Message
from broker.messages.scan import ScanRange, scan
from broker.transfer.records import Record, csv_header, csv_row, to_json_line

__all__ = ["AVRO_SCHEMA", "CHUNK", "export_avro", "export_lines"]

CHUNK = 500  # records per chunk of the stream


def as_record(message: Message) -> Record:
    return Record(
        message.key,
        message.value,
        tuple(message.headers),
        message.partition,
        message.offset,
        message.timestamp,
        message.timestamp_type,
    )


def export_lines(
    conn: ClusterConnection,
    topic: str,
    ranges: list[ScanRange],
    fmt: str,
    predicate: Callable[[Message], bool],
    shown: Callable[[Message], Message],
    max_records: int,
    isolation: str = "read_uncommitted",
) -> Iterator[str]:
    """The file's text in chunks: CSV's header first; every record of ``ranges`` ``predicate`` passes, as
    ``shown`` gives it (masked for the caller), up to ``max_records``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n") if fmt == "csv" else None
    if writer is not None:
        writer.writerow(csv_header())
    for count, message in enumerate(
        scan(
            conn,
            topic,
            ranges,
            predicate,
            max_scan=2**62,
            max_matches=max_records,
            deadline_s=3600,
            isolation=isolation,
        ),
        start=1,
    ):
        record = as_record(shown(message))
        if writer is not None:
            writer.writerow(csv_row(record))
        else:
            buffer.write(to_json_line(record, topic))
            buffer.write("\n")
        if count % CHUNK == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


# The records of an Avro export: each record's bytes and where and when it was, as an Avro container file holds them
# (readable by any Avro tool: `avro-tools tojson`, fastavro, Spark's avro source).
AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "KafkaRecord",
    "namespace": "kazami.export",
    "fields": [
        {"name": "topic", "type": "string"},
        {"name": "partition", "type": "int"},
        {"name": "offset", "type": "long"},
        {"name": "timestamp", "type": ["null", "long"], "default": None},
        {"name": "timestamp_type", "type": ["null", "string"], "default": None},
        {"name": "key", "type": ["null", "bytes"], "default": None},
        {"name": "value", "type": ["null", "bytes"], "default": None},
        {
            "name": "headers",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Header",
                    "fields": [{"name": "name", "type": "string"}, {"name": "value", "type": ["null", "bytes"]}],
                },
            },
            "default": [],
        },
    ],
}


def export_avro(
    conn: ClusterConnection,
    topic: str,
    ranges: list[ScanRange],
    predicate: Callable[[Message], bool],
    shown: Callable[[Message], Message],
    max_records: int,
    isolation: str = "read_uncommitted",
) -> Iterator[bytes]:
    """The records as an Avro object container file (deflate blocks of CHUNK records), in chunks of bytes."""
    from fastavro import parse_schema
    from fastavro.write import Writer

    buffer = io.BytesIO()
    writer = Writer(buffer, parse_schema(AVRO_SCHEMA), codec="deflate", sync_interval=1024 * 1024)
    found = scan(
        conn, topic, ranges, predicate, max_scan=2**62, max_matches=max_records, deadline_s=3600, isolation=isolation
    )
    for count, message in enumerate(found, start=1):
        m = shown(message)
        writer.write(
            {
                "topic": topic,
                "partition": m.partition,
                "offset": m.offset,
                "timestamp": m.timestamp,
                "timestamp_type": m.timestamp_type,
                "key": m.key,
                "value": m.value,
                "headers": [{"name": n, "value": v} for n, v in m.headers],
            }
        )
        if count % CHUNK == 0:
            writer.flush()
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    writer.flush()
    yield buffer.getvalue()
