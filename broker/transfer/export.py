"""Export a topic's records as a file, streamed: JSON Lines (byte for byte, see records) or CSV, one chunk of
lines at a time as the search's reader walks the ranges, so a whole partition never sits in memory."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator

from broker.client.connection import ClusterConnection
from broker.messages.log import Message
from broker.messages.scan import ScanRange, scan
from broker.transfer.records import Record, csv_header, csv_row, to_json_line

__all__ = ["CHUNK", "export_lines"]

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
