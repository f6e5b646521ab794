"""Write the records of a file (broker.transfer.records.parse) into a topic: exactly-once where the cluster allows it
(a transactional producer, a transaction every checkpoint), in the file's order, at a rate if asked."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import kafka.errors

from broker.client.connection import ClusterConnection
from broker.errors import ClusterUnavailable, InvalidInput, KazamiError
from broker.transfer.copy import Writer, target_partition
from broker.transfer.progress import Pace, Reporter, RunProgress
from broker.transfer.records import Record

__all__ = ["ImportProgress", "check_partitions", "run_import"]


@dataclass
class ImportProgress(RunProgress):
    saved: int = 0  # records written at the last checkpoint: a resumed import starts after them
    not_sent: int = 0  # records with neither key nor value: the Python client sends no such record

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "saved": self.saved, "not_sent": self.not_sent}


def check_partitions(records: list[Record], partitions: int, keep_partition: bool) -> None:
    """With ``keep_partition``, every record's partition must exist in the topic; raises InvalidInput naming the
    first record that names one it does not have."""
    if not keep_partition:
        return
    for number, r in enumerate(records, start=1):
        if r.partition is not None and r.partition >= partitions:
            raise InvalidInput(
                f"Record {number} is for partition {r.partition}, and the topic has {partitions}: import without "
                "keep_partition, or add partitions first."
            )


def run_import(
    target: ClusterConnection,
    topic: str,
    records: list[Record],
    partitions: int,
    keep_partition: bool,
    keep_timestamp: bool,
    rate: float | None,
    transactional_id: str | None,
    cancel: threading.Event | None = None,
    on_progress: Callable[[ImportProgress], None] | None = None,
    progress_every_s: float = 0.5,
) -> ImportProgress:
    progress = ImportProgress(total=len(records))
    writer: Writer | None = Writer(target, "import", transactional_id)
    progress.guarantee = "exactly-once" if writer is not None and writer.transactional else "at-least-once"
    pace = Pace(rate)
    report = Reporter(progress, pace, on_progress, progress_every_s)
    try:
        for r in records:
            if cancel is not None and cancel.is_set():
                progress.stopped = "cancelled"
                break
            assert writer is not None
            sent = writer.send(
                topic,
                r.key,
                r.value,
                r.headers,
                target_partition(r.key, r.partition if keep_partition else None, partitions),
                r.timestamp if keep_timestamp else None,
            )
            if not sent:
                progress.not_sent += 1
                continue
            progress.written += 1
            if pace.one_more(progress.written):
                writer.checkpoint()
                progress.saved = progress.written
            report()
        if writer is not None:
            writer.close()
            writer = None
            progress.saved = progress.written
    except (kafka.errors.KafkaError, KazamiError) as exc:
        progress.error = str(exc) or type(exc).__name__
        if isinstance(exc, KazamiError) and not isinstance(exc, ClusterUnavailable):
            raise
    finally:
        if writer is not None:
            writer.abandon()
        progress.done = True
        report(force=True)
    return progress
