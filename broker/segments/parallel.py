"""A deep dump of a large ``.log`` on every core: the file is cut at batch boundaries into as many ranges
as there are processes; this process dumps the first range straight to the output while forked children
dump the others into temporary files, which are then copied out in order. The output, the findings and
the reports (non-consecutive offsets across a cut included) are exactly those of one pass.

Why this holds: each child starts in the state one pass would be in at its cut (the tool's batch
position is the cut itself, the last batch offset is read from the batch before the cut), and each
range's pass checks, when it reaches the next cut, that it got there in exactly that state (see
``logpass.run_pass``). Where it did not (damage stepped over, a cut that was no boundary after all), it
reads on to where one pass stops, and the later children's work is thrown away. A child that fails has
its range dumped here instead. Memory stays bounded: the children's output goes through files.

Only on systems with ``fork`` (children start in a fraction of a millisecond with everything loaded).
"""

from __future__ import annotations

import io
import os
import pickle
import shutil
import signal
import struct
import tempfile
from collections.abc import Callable
from typing import BinaryIO, NoReturn, TextIO

from broker.segments.logfile import DEFAULT_MAX_BATCH_BYTES
from broker.segments.logpass import LineOptions, LogPass, merge, run_pass

# Below this, a range is not worth a process: forking and copying cost a few milliseconds.
MIN_RANGE_BYTES = 8 * 1024 * 1024
_WINDOW = 4096  # bytes read at a time while stepping over batch headers
_HEAD = struct.Struct(">qiiBIhi")  # base offset, length, leader epoch or crc, magic, crc, attributes, last delta
_COPY_CHUNK = 1024 * 1024


def dump_in_parallel(path: str, jobs: int, out: TextIO, options: LineOptions) -> LogPass | None:
    """Dump ``path`` to ``out`` with up to ``jobs`` processes (this one included), as ``run_pass`` over the
    whole file would; ``None``, having written nothing, when the file is too small to be worth it or no
    cut can be found."""
    if not hasattr(os, "fork"):
        return None
    size = os.path.getsize(path)
    parts = min(jobs, size // MIN_RANGE_BYTES)
    if parts < 2:
        return None
    cuts = find_cuts(path, size, parts)
    if not cuts:
        return None
    encoding, errors = _encoding(out)
    ranges = [(0, None), *cuts]
    children: list[_Child] = []
    try:
        try:
            for k in range(1, len(ranges)):
                children.append(_Child.start(path, ranges, k, options, encoding, errors))
        except OSError:  # no more processes or temporary files: one pass, then
            return None
        result = run_pass(path, out.write, options, stop_at=cuts[0][0], stop_last_offset=cuts[0][1])
        for k, child in enumerate(children, start=1):
            if not result.landed:
                break
            part = child.result()
            if part is None:  # the child failed: its range is dumped here
                part = _range_pass(path, ranges, k, options, out.write)
            else:
                child.copy_to(out, encoding, errors)
            result = merge(result, part)
    finally:
        for child in children:
            child.discard()
    return result


def find_cuts(path: str, size: int, parts: int) -> list[tuple[int, int | None]]:
    """Up to ``parts - 1`` batch boundaries, the first at or after each ``k / parts`` of the file, each
    with the last offset of the batch before it; found by stepping over the entry headers (a few
    thousand reads of 4 KiB for 100 MB of ordinary batches). Stops at anything one pass would not step
    over the same way, returning the cuts found until then."""
    targets = [size * k // parts for k in range(1, parts)]
    cuts: list[tuple[int, int | None]] = []
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        window = b""
        window_at = 0
        last: int | None = None
        while targets and size - pos >= _HEAD.size:
            if pos >= targets[0]:
                cuts.append((pos, last))
                while targets and targets[0] <= pos:  # one batch can span several targets: one cut
                    targets.pop(0)
                continue
            off = pos - window_at
            if off < 0 or off + _HEAD.size > len(window):
                window, window_at, off = os.pread(fd, _WINDOW, pos), pos, 0
                if len(window) < _HEAD.size:
                    break
            base_offset, length, _, magic, _, _, last_delta = _HEAD.unpack_from(window, off)
            total = 12 + length
            if magic > 2 or length < 14 or total > DEFAULT_MAX_BATCH_BYTES or pos + total > size:
                break
            last = base_offset + last_delta if magic == 2 else base_offset
            pos += total
    finally:
        os.close(fd)
    return cuts


def _range_pass(
    path: str, ranges: list[tuple[int, int | None]], k: int, options: LineOptions, write: Callable[[str], object]
) -> LogPass:
    """The pass over range ``k``: from its cut, in the state one pass has there, to the next cut."""
    start, last = ranges[k]
    stop, stop_last = ranges[k + 1] if k + 1 < len(ranges) else (None, None)
    return run_pass(
        path,
        write,
        options,
        start=start,
        previous_last_offset=last,
        stop_at=stop,
        stop_last_offset=stop_last,
    )


def _encoding(out: TextIO) -> tuple[str, str]:
    """How the children encode their text: as ``out`` does when it writes to a binary stream (its bytes
    are then copied as they are), else as UTF-8 (read back and written as text)."""
    if getattr(out, "buffer", None) is not None and out.encoding:
        return out.encoding, out.errors or "strict"
    return "utf-8", "strict"


class _Child:
    """A forked process dumping one range into a temporary file, its ``LogPass`` pickled into a pipe."""

    def __init__(self, pid: int, pipe: int, output: BinaryIO) -> None:
        self.pid, self.pipe, self.output = pid, pipe, output
        self.done = False

    @classmethod
    def start(
        cls, path: str, ranges: list[tuple[int, int | None]], k: int, options: LineOptions, encoding: str, errors: str
    ) -> _Child:
        output = tempfile.TemporaryFile()  # noqa: SIM115 - closed by discard(), after the copy
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child process (its work is checked through the parent)
            try:
                os.close(read_end)
                _run_child(path, ranges, k, options, output, encoding, errors, write_end)
            finally:
                os._exit(1)  # never back into the parent's code
        os.close(write_end)
        return cls(pid, read_end, output)

    def result(self) -> LogPass | None:
        """The child's pass once it has finished; ``None`` if it failed."""
        chunks = []
        while chunk := os.read(self.pipe, 1 << 16):
            chunks.append(chunk)
        os.close(self.pipe)
        _, status = os.waitpid(self.pid, 0)
        self.done = True
        if status != 0 or not chunks:
            return None
        part: LogPass = pickle.loads(b"".join(chunks))  # noqa: S301 - our own child's
        return part

    def copy_to(self, out: TextIO, encoding: str, errors: str) -> None:
        """Write the child's output to ``out``: the bytes as they are when ``out`` writes to a binary
        stream, else read back as text."""
        self.output.seek(0)
        buffer = getattr(out, "buffer", None)
        if buffer is not None:
            out.flush()
            shutil.copyfileobj(self.output, buffer, _COPY_CHUNK)
            return
        reader = io.TextIOWrapper(self.output, encoding=encoding, errors=errors, newline="")
        while chunk := reader.read(_COPY_CHUNK):
            out.write(chunk)
        reader.detach()

    def discard(self) -> None:
        """Stop the child if it still runs (its work is not wanted) and drop its file."""
        if not self.done:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            os.close(self.pipe)
            self.done = True
        self.output.close()


def _run_child(
    path: str,
    ranges: list[tuple[int, int | None]],
    k: int,
    options: LineOptions,
    output: BinaryIO,
    encoding: str,
    errors: str,
    pipe: int,
) -> NoReturn:  # pragma: no cover - runs in the child
    """The child's whole life: dump range ``k`` into ``output``, send the pass back, and exit without
    running anything of the parent's (no atexit handlers, no flushing of its buffers)."""
    status = 1
    try:
        text = io.TextIOWrapper(output, encoding=encoding, errors=errors, newline="")
        part = _range_pass(path, ranges, k, options, text.write)
        text.flush()
        payload = pickle.dumps(part)
        view = memoryview(payload)
        while view:
            view = view[os.write(pipe, view) :]
        status = 0
    except BaseException:  # noqa: BLE001 - any failure: the parent dumps this range itself
        status = 1
    finally:
        os._exit(status)
