"""`python -m broker.segments dump` on a segment of 100 MB and more, uncompressed and lz4, with no
options (batches), `--deep-iteration` (records) and `--deep-iteration --print-data-log` (keys and values).

Reference in the same run: Kafka's own `kafka-dump-log` (kafka.tools.DumpLogSegments from the jars the
embedded cluster runs, `java -cp 'jars/*'`) with the same options on the same file, JVM start included.
Both are timed as whole processes writing to /dev/null, as a user piping the output, best of three,
alternated; the figure is the tool's time over ours (above 1: ours is faster; the aim is 2 or more). Our
dump uses every CPU this process may use (``dump_processes``). Before the timing, each pair is run once
into files and their stdout (byte for byte) and stderr (line for line, the JVM's log4j warnings aside)
compared: ``outputs_identical`` says whether they were.

The segments are written here, without a cluster, by kafka-python's ``MemoryRecordsBuilder`` as an
idempotent producer writes them: batches of 200 to 500 records with a key, a JSON value of 100 to 200
bytes and two headers; one file uncompressed (100 MiB on disk) and one lz4 (100 MiB of records before
compression). They are kept in var/bench/segments/ and reused while their description file matches.
"""

from __future__ import annotations

import filecmp
import json
import os
import random
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kafka.record.memory_records import MemoryRecordsBuilder

from bench.common import BENCH_VAR, REPO, write_result
from broker.local import launcher

SEGMENTS = BENCH_VAR / "segments"
TARGET_BYTES = 100 * 1024 * 1024
CODECS = {"none": 0, "lz4": 3}
OPTION_SETS: dict[str, list[str]] = {
    "batches": [],
    "deep": ["--deep-iteration"],
    "data": ["--deep-iteration", "--print-data-log"],
}
RUNS = 3
# Bumped whenever the records written change, so that files of an older layout are written again.
LAYOUT = 1
T0 = 1_764_000_000_000
PRODUCER_ID, PRODUCER_EPOCH = 4242, 0
PAGES = ("/", "/search", "/cart", "/checkout", "/account", *(f"/products/{n}" for n in range(40)))
EVENTS = ("page_view", "click", "add_to_cart", "search", "purchase")


def record_rows(rng: random.Random, count: int, first: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    """``count`` records as a web shop's event producer sends them: keyed by user, a JSON event of 100 to
    200 bytes, a trace id and the producing service in headers."""
    rows = []
    for n in range(first, first + count):
        user = rng.randrange(50_000)
        value = {
            "event": rng.choice(EVENTS),
            "user": f"u{user:05d}",
            "page": rng.choice(PAGES),
            "session": f"{rng.getrandbits(48):012x}",
            "ms": T0 + n // 8,
            "pad": "x" * rng.randrange(0, 80),
        }
        rows.append(
            (
                b"u%05d" % user,
                json.dumps(value, separators=(",", ":")).encode(),
                [("trace", b"%016x" % rng.getrandbits(64)), ("service", b"web-frontend")],
            )
        )
    return rows


def write_segment(path: Path, codec: int) -> dict[str, Any]:
    """A segment of v2 batches holding at least TARGET_BYTES of records (on disk when uncompressed,
    before compression otherwise), written to a temporary name and renamed when complete."""
    rng = random.Random(f"kazami-segments-{LAYOUT}")
    partial = path.with_name(path.name + ".partial")
    offset = records = raw_bytes = batches = 0
    sequence = 0
    with open(partial, "wb") as f:
        while raw_bytes < TARGET_BYTES:
            count = rng.randrange(200, 501)
            builder = MemoryRecordsBuilder(
                magic=2,
                compression_type=codec,
                batch_size=1 << 22,
                producer_id=PRODUCER_ID,
                producer_epoch=PRODUCER_EPOCH,
                base_sequence=sequence,
            )
            for i, (key, value, headers) in enumerate(record_rows(rng, count, offset)):
                assert builder.append(T0 + (offset + i) // 8, key, value, headers) is not None
                raw_bytes += len(key) + len(value) + 40
            builder.close()
            batch = bytearray(builder.buffer())
            struct.pack_into(">q", batch, 0, offset)  # the base offset is outside the CRC
            struct.pack_into(">i", batch, 12, 7)  # so is the partition leader epoch the broker sets
            f.write(batch)
            offset += count
            sequence += count
            records += count
            batches += 1
    if codec == 0:
        raw_bytes = partial.stat().st_size
    partial.replace(path)
    return {"layout": LAYOUT, "bytes": path.stat().st_size, "records": records, "batches": batches}


def ensure_segment(name: str, codec: int) -> tuple[Path, dict[str, Any]]:
    """The segment of ``codec`` under var/bench/segments/<name>/, written unless a complete one of this
    layout is there."""
    folder = SEGMENTS / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "00000000000000000000.log"
    described = folder / "segment.json"
    if path.exists() and described.exists():
        info: dict[str, Any] = json.loads(described.read_text())
        if info.get("layout") == LAYOUT and info.get("bytes") == path.stat().st_size:
            return path, info
    started = time.perf_counter()
    info = write_segment(path, codec)
    described.write_text(json.dumps(info) + "\n")
    print(f"wrote {path} ({info['bytes']} bytes) in {time.perf_counter() - started:.0f} s", flush=True)
    return path, info


def ours_command(path: Path, options: list[str]) -> list[str]:
    return [sys.executable, "-m", "broker.segments", "dump", str(path), *options]


def tool_command(java: str, path: Path, options: list[str]) -> list[str]:
    return [java, "-cp", launcher.classpath(), "kafka.tools.DumpLogSegments", "--files", str(path), *options]


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=900)
    return time.perf_counter() - started


def same_output(ours: list[str], tool: list[str], scratch: Path) -> bool:
    """Run both once into files and compare stdout byte for byte and stderr line for line (the tool's
    log4j warnings aside)."""
    outputs = {}
    for who, command in (("ours", ours), ("tool", tool)):
        out, err = scratch / f"{who}.out", scratch / f"{who}.err"
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            subprocess.run(command, cwd=REPO, stdout=stdout, stderr=stderr, check=True, timeout=900)
        lines = [line for line in err.read_text().splitlines() if not line.startswith("log4j:")]
        outputs[who] = (out, lines)
    same = filecmp.cmp(outputs["ours"][0], outputs["tool"][0], shallow=False)
    same = same and outputs["ours"][1] == outputs["tool"][1]
    for who in outputs:
        (scratch / f"{who}.out").unlink()
        (scratch / f"{who}.err").unlink()
    return same


def run() -> dict[str, Any]:
    java = launcher.check_java()
    result: dict[str, Any] = {
        "runs": RUNS,
        "statistic": "best of the runs; whole processes, output to /dev/null",
        "dump_processes": len(os.sched_getaffinity(0)),
        "files": {},
        "outputs_identical": {},
    }
    for name, codec in CODECS.items():
        path, info = ensure_segment(name, codec)
        result["files"][name] = {"path": str(path.relative_to(REPO)), "codec": name, **info}
        for label, options in OPTION_SETS.items():
            ours, tool = ours_command(path, options), tool_command(java, path, options)
            result["outputs_identical"][f"{name}_{label}"] = same_output(ours, tool, path.parent)
            ours_s, tool_s = [], []
            for _ in range(RUNS):  # alternated, so that both see the same machine
                ours_s.append(timed(ours))
                tool_s.append(timed(tool))
            result[f"{name}_{label}_dump_s"] = round(min(ours_s), 3)
            result[f"{name}_{label}_reference_kafka_dump_log_s"] = round(min(tool_s), 3)
            result[f"ratio_{name}_{label}_kafka_dump_log_to_dump"] = round(min(tool_s) / min(ours_s), 2)
            print(
                f"{name} {' '.join(options) or '(no options)'}: dump {min(ours_s):.2f} s, kafka-dump-log"
                f" {min(tool_s):.2f} s, ratio {min(tool_s) / min(ours_s):.2f},"
                f" identical: {result['outputs_identical'][f'{name}_{label}']}",
                flush=True,
            )
    write_result("segments_dump", result)
    return result
