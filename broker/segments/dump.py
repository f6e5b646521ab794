"""``python -m broker.segments dump``: what Kafka's ``kafka-dump-log`` (DumpLogSegments) prints, line for
line where the information is the same, read by this package instead of a JVM.

Files are dispatched by suffix as the tool does: ``.log`` (and KRaft ``.checkpoint`` snapshots) list their
batches, and with ``--deep-iteration`` their records; ``.index`` and ``.timeindex`` list their entries
and check them against the segment's ``.log``; ``.snapshot`` and ``.txnindex`` list their entries.
Reports the tool writes to stderr (index mismatches, time index errors, non-consecutive offsets) come at
the end, as its do. Where the tool would die on damage (a cut-off or zero-filled tail, a failed index
sanity check), this prints what it found on stderr and goes on with the next file.

A ``.log`` is printed by ``logpass`` (one pass over its batches) with the lines of ``loglines`` (a fast
path for ordinary v2 batches); with ``--deep-iteration``, a large one into a file or a pipe is dumped on
every core by ``parallel``, to exactly the same output.

``--json`` prints the same as JSON lines instead: one object per batch, record, index entry, side-file
entry and finding, each with its ``file`` and ``type``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from broker.segments.findings import Finding
from broker.segments.indexes import (
    check_offset_index,
    check_time_index,
    dump_offset_index,
    dump_time_index,
    log_lookups,
    offset_index_mismatch_lines,
    read_offset_index,
    read_time_index,
    sanity_check,
    time_index_error_lines,
)
from broker.segments.logfile import STOP_PREALLOCATED, LogReader, segment_base_offset
from broker.segments.loglines import text
from broker.segments.logpass import LineOptions, LogPass, run_pass
from broker.segments.model import Record

NO_LIMIT = 2**31 - 1  # the tool's default --max-bytes (Integer.MAX_VALUE)
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024


@dataclass(frozen=True)
class DumpOptions:
    """kafka-dump-log's options, by the same names (``--print-data-log`` implies deep iteration)."""

    deep_iteration: bool = False
    print_data_log: bool = False
    index_sanity_check: bool = False
    verify_index_only: bool = False
    skip_record_metadata: bool = False
    max_bytes: int = NO_LIMIT
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    json: bool = False
    # Processes dumping one large .log with --deep-iteration (see parallel.py). None: one per CPU when the
    # output is a file or a pipe and nothing else runs in this process (the CLI), else one.
    jobs: int | None = None
    # --offsets-decoder / --transaction-log-decoder: keys and payloads of __consumer_offsets or
    # __transaction_state records decoded as the tool does (either implies --print-data-log; offsets wins).
    offsets_decoder: bool = False
    transaction_log_decoder: bool = False

    @property
    def decoder(self) -> str | None:
        if self.offsets_decoder:
            return "offsets"
        return "transaction" if self.transaction_log_decoder else None

    @property
    def print_data(self) -> bool:
        return self.print_data_log or self.decoder is not None

    @property
    def deep(self) -> bool:
        return self.deep_iteration or self.print_data


@dataclass
class _Reports:
    """What the tool prints on stderr after every file, gathered per file in the order they come."""

    index_mismatches: list[str] = field(default_factory=list)
    time_index_errors: list[str] = field(default_factory=list)
    non_consecutive: list[str] = field(default_factory=list)


class _Out:
    """Lines to stdout and stderr, or JSON objects to stdout."""

    def __init__(self, out: TextIO, err: TextIO, as_json: bool) -> None:
        self.out, self.err, self.as_json = out, err, as_json

    def line(self, text: str) -> None:
        if not self.as_json:
            self.out.write(text + "\n")

    def error(self, text: str) -> None:
        if not self.as_json:
            self.err.write(text + "\n")

    def obj(self, kind: str, file: str, **values: Any) -> None:
        if self.as_json:
            self.out.write(json.dumps({"type": kind, "file": file, **values}, default=_jsonable) + "\n")

    def finding(self, f: Finding) -> None:
        if self.as_json:
            self.obj("finding", f.file, **{k: v for k, v in f.as_dict().items() if k != "file"})
        else:
            where = f" at byte {f.position}" if f.position is not None else ""
            self.err.write(f"{f.file}{where}: {f.message}\n")


def _jsonable(value: object) -> object:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def dump(files: list[str], options: DumpOptions, out: TextIO, err: TextIO) -> int:
    """Dump each of ``files`` to ``out`` (and the tool's reports to ``err``); returns the exit status: 0,
    or 1 when any file could not be read at all or held damage."""
    sink = _Out(out, err, options.json)
    reports = _Reports()
    damaged = False
    for name in files:
        sink.line(f"Dumping {name}")
        suffix = os.path.splitext(name)[1]
        try:
            if suffix in (".log", ".checkpoint"):
                damaged |= _dump_log(name, options, sink, reports)
            elif suffix == ".index":
                damaged |= _dump_index(name, options, sink, reports)
            elif suffix == ".timeindex":
                damaged |= _dump_time_index(name, options, sink, reports)
            elif suffix == ".snapshot":
                damaged |= _dump_snapshot(name, sink)
            elif suffix == ".txnindex":
                damaged |= _dump_txn_index(name, sink)
            else:
                sink.error(f"Ignoring unknown file {name}")
        except OSError as exc:
            sink.error(f"{name}: cannot be read: {exc.strerror or exc}")
            sink.obj("error", name, message=str(exc))
            damaged = True
    for line in (*reports.index_mismatches, *reports.time_index_errors, *reports.non_consecutive):
        sink.error(line)
    return 1 if damaged else 0


# ---------------------------------------------------------------- .log


def _dump_log(name: str, options: DumpOptions, sink: _Out, reports: _Reports) -> bool:
    base = segment_base_offset(name)
    if name.endswith(".log"):
        sink.line(f"Log starting offset: {base if base is not None else _leading_number(name)}")
    else:
        from broker.segments import parse_kraft_snapshot_name

        snapshot = parse_kraft_snapshot_name(os.path.basename(name))
        if os.path.basename(name) == "bootstrap.checkpoint":
            sink.line("KRaft bootstrap snapshot")
        elif snapshot is not None:
            sink.line(f"Snapshot end offset: {snapshot.end_offset}, epoch: {snapshot.epoch}")
    limit = None if options.max_bytes >= NO_LIMIT else options.max_bytes
    if sink.as_json:
        return _dump_log_json(name, options, limit, sink, reports)
    lines = LineOptions(options.deep, options.print_data, options.skip_record_metadata, options.decoder)
    result: LogPass | None = None
    if options.deep and limit is None:
        jobs = _jobs(options, sink.out)
        if jobs > 1:
            from broker.segments.parallel import dump_in_parallel

            result = dump_in_parallel(name, jobs, sink.out, lines)
    if result is None:
        result = run_pass(name, sink.out.write, lines, end=limit)
    trailing = result.invalid_bytes_at_end
    if trailing > 0 and limit is None and result.stop_reason != STOP_PREALLOCATED:
        sink.line(f"Found {trailing} invalid bytes at the end of {os.path.basename(name)}")
    for f in result.findings:
        sink.finding(f)
    _report_skipped(name, result.skipped, reports)
    return bool(result.findings) or (trailing > 0 and result.stop_reason != STOP_PREALLOCATED)


def _jobs(options: DumpOptions, out: TextIO) -> int:
    """How many processes dump one large .log: ``options.jobs``, or by default one per CPU this process may
    use when the output is a file or a pipe and no other thread runs (forking a threaded process is
    unsafe), else one."""
    if options.jobs is not None:
        return options.jobs
    try:
        out.fileno()
    except (OSError, ValueError, AttributeError):
        return 1
    if threading.active_count() > 1 or not hasattr(os, "fork"):
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _report_skipped(name: str, skipped: list[tuple[int, int]], reports: _Reports) -> None:
    if skipped:
        reports.non_consecutive.append(f"Non-consecutive offsets in {os.path.abspath(name)}")
        reports.non_consecutive += [f"  {first} is followed by {second}" for first, second in reversed(skipped)]


def _dump_log_json(name: str, options: DumpOptions, limit: int | None, sink: _Out, reports: _Reports) -> bool:
    """``--json``: one object per batch and, with --deep-iteration, per record."""
    findings: list[Finding] = []
    reader = LogReader(name, end=limit, findings=findings)
    previous = -1
    skipped: list[tuple[int, int]] = []
    for batch in reader:
        sink.obj("batch", name, **{k: v for k, v in batch.as_dict().items() if k != "file"})
        if options.deep:
            records, trouble = batch.records()
            findings.extend(trouble)
            for record in records:
                if previous != -1 and record.offset != previous + 1:
                    skipped.append((previous, record.offset))
                previous = record.offset
                sink.obj("record", name, **_record_json(record, options))
    trailing = reader.invalid_bytes_at_end
    for f in findings:
        sink.finding(f)
    _report_skipped(name, skipped, reports)
    return bool(findings) or (trailing > 0 and reader.stop_reason != STOP_PREALLOCATED)


def _leading_number(name: str) -> str:
    stem = os.path.basename(name).split(".")[0]
    return stem if stem.isdigit() else "unknown (the file name is not a base offset)"


def _record_json(record: Record, options: DumpOptions) -> dict[str, Any]:
    data: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestamp_type": record.timestamp_type,
        "key_size": record.key_size,
        "value_size": record.value_size,
        "sequence": record.sequence,
        "header_keys": record.header_keys,
    }
    if record.crc is not None:
        data.update(crc=record.crc, crc_valid=record.crc_valid)
    if record.control_type is not None:
        data.update(control_type=record.control_type, coordinator_epoch=record.coordinator_epoch)
    if options.print_data and record.control_type is None:
        decode = LineOptions(decoder=options.decoder).decode
        if decode is not None:
            key, payload = decode(record.key, record.value, record.offset)
        else:
            key = None if record.key is None else text(record.key)
            payload = None if record.value is None else text(record.value)
        data.update(key=key, payload=payload)
    return data


# ---------------------------------------------------------------- indexes


def _log_of(index_path: str) -> str:
    directory, base = os.path.split(os.path.abspath(index_path))
    return os.path.join(directory, base.split(".")[0] + ".log")


def _batch_summaries(log_path: str, findings: list[Finding]) -> Iterator[tuple[int, int, int, int]]:
    for batch in LogReader(log_path, findings=findings):
        yield batch.position, batch.base_offset, batch.last_offset, batch.max_timestamp


def _dump_index(name: str, options: DumpOptions, sink: _Out, reports: _Reports) -> bool:
    index = read_offset_index(name)
    damaged = _report(index.findings, sink)
    if options.index_sanity_check and index.slots:
        failed = sanity_check(index)
        for f in failed:
            sink.finding(f)
        if failed:
            return True
    for line in dump_offset_index(
        index, name=name, verify_only=options.verify_index_only, index_sanity_check=options.index_sanity_check
    ):
        sink.line(line)
    if index.slots == 0 or options.index_sanity_check:
        return damaged
    log_findings: list[Finding] = []
    batch_at, _ = log_lookups(_batch_summaries(_log_of(name), log_findings))
    checks = check_offset_index(index, batch_at)
    for check in checks:
        sink.obj("index_entry", name, offset=check.offset, position=check.position, ok=check.ok)
    mismatches = offset_index_mismatch_lines(checks, name)
    reports.index_mismatches += mismatches
    return damaged or bool(mismatches)


def _dump_time_index(name: str, options: DumpOptions, sink: _Out, reports: _Reports) -> bool:
    index = read_time_index(name)
    damaged = _report(index.findings, sink)
    if options.index_sanity_check:
        failed = sanity_check(index)
        for f in failed:
            sink.finding(f)
        if failed:
            return True
    for line in dump_time_index(
        index, name=name, verify_only=options.verify_index_only, index_sanity_check=options.index_sanity_check
    ):
        sink.line(line)
    if options.index_sanity_check:
        return damaged
    offsets_path = _log_of(name)[: -len(".log")] + ".index"
    offsets = read_offset_index(offsets_path) if os.path.exists(offsets_path) else None
    _, batch_holding = log_lookups(_batch_summaries(_log_of(name), []), offsets)
    checks = check_time_index(index, batch_holding)
    for check in checks:
        sink.obj("timeindex_entry", name, timestamp=check.timestamp, offset=check.offset, ok=check.ok)
    errors = time_index_error_lines(checks, name)
    reports.time_index_errors += errors
    return damaged or bool(errors)


def _report(findings: list[Finding], sink: _Out) -> bool:
    for f in findings:
        sink.finding(f)
    return bool(findings)


# ---------------------------------------------------------------- side files


def _dump_snapshot(name: str, sink: _Out) -> bool:
    from broker.segments import dump_producer_snapshot, producer_snapshot_error_lines, read_producer_snapshot

    snapshot = read_producer_snapshot(name)
    for line in dump_producer_snapshot(snapshot):
        sink.line(line)
    for entry in snapshot.entries:
        sink.obj("producer", name, **_fields(entry))
    for line in producer_snapshot_error_lines(snapshot):
        sink.error(line)
    return _report(snapshot.findings, sink)


def _dump_txn_index(name: str, sink: _Out) -> bool:
    from broker.segments import dump_txn_index, read_txn_index

    index = read_txn_index(name)
    for line in dump_txn_index(index):
        sink.line(line)
    for entry in index.entries:
        sink.obj("aborted_transaction", name, **_fields(entry))
    return _report(index.findings, sink)


def _fields(entry: object) -> dict[str, Any]:
    """A dataclass's or named tuple's fields."""
    as_dict: Callable[[], dict[str, Any]] | None = getattr(entry, "_asdict", None)
    if as_dict is not None:
        return dict(as_dict())
    names = getattr(entry, "__dataclass_fields__", {})
    return {n: getattr(entry, n) for n in names}
