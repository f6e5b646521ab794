"""Write the records of a file (broker.transfer.records.parse) into a topic: exactly-once where the cluster allows it
(a transactional producer, a transaction every checkpoint), in the file's order, at a rate if asked."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import kafka.errors

from broker.client.connection import ClusterConnection
from broker.errors import ClusterUnavailable, InvalidInput, KazamiError
from broker.transfer.copy import CHECKPOINT_RECORDS, CHECKPOINT_S, Writer, target_partition
from broker.transfer.records import Record

__all__ = ["ImportProgress", "check_partitions", "run_import"]


@dataclass
class ImportProgress:
    total: int = 0
    written: int = 0
    saved: int = 0  # records written at the last checkpoint: a resumed import starts after them
    not_sent: int = 0  # records with neither key nor value: the Python client sends no such record
    guarantee: str = ""
    done: bool = False
    stopped: str | None = None
    error: str | None = None
    elapsed: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "written": self.written,
            "saved": self.saved,
            "not_sent": self.not_sent,
            "guarantee": self.guarantee,
            "done": self.done,
            "stopped": self.stopped,
            "error": self.error,
            "elapsed_s": round(self.elapsed, 3),
            "records_per_s": round(self.written / self.elapsed, 1) if self.elapsed > 0 else None,
        }


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
    started = time.monotonic()
    last_report = last_checkpoint = started
    since = 0
    writer: Writer | None = Writer(target, "import", transactional_id)
    progress.guarantee = "exactly-once" if writer is not None and writer.transactional else "at-least-once"
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
            since += 1
            if rate:
                ahead = started + progress.written / rate - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
            now = time.monotonic()
            if since >= CHECKPOINT_RECORDS or now - last_checkpoint >= CHECKPOINT_S:
                writer.checkpoint()
                progress.saved, last_checkpoint, since = progress.written, now, 0
            if on_progress is not None and now - last_report >= progress_every_s:
                last_report = now
                progress.elapsed = now - started
                on_progress(progress)
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
        progress.elapsed = time.monotonic() - started
        if on_progress is not None:
            on_progress(progress)
    return progress
