"""One pass of the text dump over the batches of a ``.log`` file, from any batch boundary on, and what it
leaves behind: the lines go to a writer as they come; the findings, the non-consecutive offsets and the
state a pass carries from batch to batch come back in a ``LogPass``.

A pass can start where another stopped and be told where the next one starts (``stop_at``); ``merge``
then joins their results into what one pass over both would have given. That is how ``parallel`` cuts a
large file into ranges dumped by separate processes, and why everything a pass carries over (the tool's
batch position, the last record offset, the last batch offset) is explicit here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from broker.segments.findings import Finding
from broker.segments.logfile import LogReader
from broker.segments.loglines import Decode, batch_line, record_line, v2_record_lines


@dataclass(frozen=True)
class LineOptions:
    """What the dump prints for each batch: its records (``--deep-iteration``), their keys and payloads
    (``--print-data-log``), and those without the record's metadata (``--skip-record-metadata``)."""

    deep: bool = False
    print_data: bool = False
    skip_metadata: bool = False
    decoder: str | None = None  # "offsets" or "transaction": keys and payloads as those decoders show them

    @property
    def decode(self) -> Decode | None:
        if self.decoder is None:
            return None
        from broker.segments.decoders import offsets_key_payload, transaction_key_payload

        return offsets_key_payload if self.decoder == "offsets" else transaction_key_payload


@dataclass
class LogPass:
    """What a pass printed and found, and where it left off.

    ``valid`` is the tool's position for the next batch line (the bytes of every batch printed since the
    start of the file); ``previous`` the offset of the last record printed (-1 for none yet: the dump's
    check for non-consecutive offsets starts from it); ``first_record`` the offset of the first record
    this pass printed; ``last_batch_offset`` the last offset of the last batch read (the reader's check
    for offsets going backwards starts from it). ``skipped`` holds the pairs of non-consecutive record
    offsets, in order. ``landed`` says the pass stopped at ``stop_at`` exactly, in the state one pass
    over the file would be in there, so that a pass started there carries on correctly; otherwise it read
    on to where one pass would have stopped, which ``stop_reason`` and ``invalid_bytes_at_end`` describe.
    """

    valid: int
    previous: int = -1
    first_record: int | None = None
    last_batch_offset: int | None = None
    skipped: list[tuple[int, int]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    landed: bool = False
    stop_reason: str | None = None
    invalid_bytes_at_end: int = 0


def run_pass(
    path: str,
    write: Callable[[str], object],
    options: LineOptions,
    start: int = 0,
    end: int | None = None,
    previous_last_offset: int | None = None,
    stop_at: int | None = None,
    stop_last_offset: int | None = None,
) -> LogPass:
    """Dump the batches of ``path`` from byte ``start`` (a batch boundary) to ``end`` (the end of the
    file when ``None``) through ``write``, each batch's lines in one call.

    ``previous_last_offset`` is the last offset of the batch before ``start``, for a pass that carries on
    from another. With ``stop_at``, the pass stops after the batch that ends exactly there, provided the
    state is then what one pass from the file's start would have (every entry before it printed, and
    ``stop_last_offset`` the last offset read): ``landed`` is then true. If the batches do not end there
    (it was no boundary, or damage was stepped over), the pass reads on to the end as one pass would.
    """
    findings: list[Finding] = []
    reader = LogReader(path, start, end, findings, previous_last_offset=previous_last_offset)
    result = LogPass(valid=start, last_batch_offset=previous_last_offset, findings=findings)
    fast = options.deep and not options.skip_metadata and options.decoder is None
    decode = options.decode
    valid = start
    previous = -1
    first: int | None = None
    skipped = result.skipped
    for batch in reader:  # after a break, the reader's file is closed as its iterator goes
        lines = [batch_line(batch, valid)]
        if options.deep:
            done = v2_record_lines(batch, options.print_data, previous, lines, skipped) if fast else None
            if done is not None:
                previous, batch_first = done
                if first is None:
                    first = batch_first
            else:
                records, trouble = batch.records()
                findings.extend(trouble)
                for record in records:
                    if first is None:
                        first = record.offset
                    if previous != -1 and record.offset != previous + 1:
                        skipped.append((previous, record.offset))
                    previous = record.offset
                    lines.append(record_line(batch, record, options.print_data, options.skip_metadata, decode))
        lines.append("")
        write("\n".join(lines))
        valid += batch.size
        result.last_batch_offset = batch.last_offset
        if stop_at is not None and reader.position >= stop_at:
            if reader.position == stop_at == valid and batch.last_offset == stop_last_offset:
                result.landed = True
                break
            stop_at = None  # not where one pass would be: read on as one pass does
    result.valid, result.previous, result.first_record = valid, previous, first
    if not result.landed:
        result.stop_reason = reader.stop_reason
        result.invalid_bytes_at_end = reader.invalid_bytes_at_end
    return result


def merge(before: LogPass, after: LogPass) -> LogPass:
    """``before`` and ``after`` (a pass that started where ``before`` landed) as one pass over both: the
    non-consecutive offsets across the boundary included, which neither could see."""
    skipped = list(before.skipped)
    if after.first_record is not None and before.previous != -1 and after.first_record != before.previous + 1:
        skipped.append((before.previous, after.first_record))
    skipped += after.skipped
    return LogPass(
        valid=after.valid,
        previous=after.previous if after.first_record is not None else before.previous,
        first_record=before.first_record if before.first_record is not None else after.first_record,
        last_batch_offset=after.last_batch_offset,
        skipped=skipped,
        findings=before.findings + after.findings,
        landed=after.landed,
        stop_reason=after.stop_reason,
        invalid_bytes_at_end=after.invalid_bytes_at_end,
    )
