"""Our segment reader against Kafka's own kafka-dump-log (from the project's Kafka jars), on segments the
real cluster wrote: every codec, headers, tombstones, idempotent and transactional producers (commit
and abort markers, .txnindex, producer snapshots), rolled and active segments, a compacted topic."""

from __future__ import annotations

import io
import re
import subprocess
import time
from pathlib import Path

import pytest
from kafka import KafkaProducer

from broker.local import launcher
from broker.segments.dump import DumpOptions, dump
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, produce, small_segments, unique

pytestmark = [pytest.mark.kafka]

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]
SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")


def partition_dir(layout: launcher.ClusterLayout, topic: str) -> Path:
    """Partition 0 of ``topic``, kept on broker 0 alone (the topics here have one replica there)."""
    return Path(layout.root) / "kafka-logs-0" / f"{topic}-0"


def write_history(topic: str) -> None:
    """Batches in every codec with headers, null keys and tombstones, from an idempotent producer; then a
    committed and an aborted transaction."""
    for codec in CODECS * 2:
        producer = KafkaProducer(
            bootstrap_servers=BOOTSTRAP.split(","), compression_type=codec, linger_ms=20, enable_idempotence=True
        )
        for i in range(60):
            key = None if i % 7 == 0 else f"user-{i % 5}".encode()
            text = f'{{"n": {i}, "codec": "{codec}", "pad": "{"x" * (i % 40)}"}}'
            value = None if i % 11 == 5 and key is not None else text.encode()
            producer.send(
                topic, key=key, value=value, partition=0, headers=[("codec", str(codec).encode()), ("i", b"%d" % i)]
            )
        producer.flush()
        producer.close()
    tx = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=unique("dump-tx"))
    tx.init_transactions()
    for end in ("commit", "abort"):
        tx.begin_transaction()
        for i in range(3):
            tx.send(topic, key=b"tx", value=f"{end}-{i}".encode(), partition=0)
        tx.flush()
        tx.commit_transaction() if end == "commit" else tx.abort_transaction()
    tx.close()


def split_by_file(text: str) -> dict[str, list[str]]:
    """The tool's output, file by file (each block starts with its ``Dumping <file>`` line)."""
    blocks: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("Dumping "):
            current = blocks.setdefault(line[len("Dumping ") :], [])
        current.append(line)
    return blocks


def kafka_dump_log(files: list[Path], *options: str) -> tuple[str, list[str]]:
    result = subprocess.run(
        [
            launcher.check_java(),
            "-cp",
            launcher.classpath(),
            "kafka.tools.DumpLogSegments",
            "--files",
            ",".join(str(f) for f in files),
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if not line.startswith("log4j:")]
    return result.stdout, errors


def ours(files: list[Path], options: DumpOptions) -> tuple[str, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    dump([str(f) for f in files], options, out, err)
    return out.getvalue(), err.getvalue().splitlines()


def assert_same(files: list[Path], options: DumpOptions, *flags: str) -> None:
    theirs_out, theirs_err = kafka_dump_log(files, *flags)
    our_out, our_err = ours(files, options)
    theirs, mine = split_by_file(theirs_out), split_by_file(our_out)
    assert mine.keys() == theirs.keys()
    for name, lines in theirs.items():
        assert mine[name] == lines, f"{name} differs with {flags or 'no options'}"
    assert sorted(our_err) == sorted(theirs_err)


@pytest.fixture(scope="module")
def segments(kafka_cluster: launcher.ClusterLayout) -> dict[str, list[Path]]:
    """Files of three topics: one segment of everything (active: preallocated index tails), the same
    rolled into many small segments (trimmed indexes, producer snapshots), and a compacted topic."""
    whole = create_topic(unique("dump-all"), assignments={0: [0]})
    rolled = create_topic(unique("dump-rolled"), assignments={0: [0]}, configs=small_segments(8192))
    write_history(whole)
    write_history(rolled)
    compacted = create_topic(
        unique("dump-compact"),
        assignments={0: [0]},
        configs={"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"},
    )
    produce(compacted, [(f"k{i % 3}".encode(), f"v{i}".encode()) for i in range(30)], partition=0)
    time.sleep(0.3)
    produce(compacted, [(b"k9", b"roll")], partition=0)
    cleaned = partition_dir(kafka_cluster, compacted) / "00000000000000000000.log"
    deadline = time.monotonic() + 90  # the log cleaner looks every 15 s
    while time.monotonic() < deadline and cleaned.exists() and cleaned.stat().st_size > 400:
        time.sleep(1)
    assert cleaned.stat().st_size <= 400, "the log cleaner did not compact the topic in time"
    time.sleep(1)  # the cleaner swaps files in: let it finish
    found = {}
    for name, topic in (("whole", whole), ("rolled", rolled), ("compacted", compacted)):
        files = sorted(f for f in partition_dir(kafka_cluster, topic).iterdir() if f.suffix in SUFFIXES)
        found[name] = files
    assert len([f for f in found["rolled"] if f.suffix == ".log"]) >= 3
    assert any(f.suffix == ".snapshot" for f in found["rolled"])
    assert any(f.suffix == ".txnindex" and f.stat().st_size for f in found["whole"])
    return found


def test_batch_lines_agree_with_kafka_dump_log(segments: dict[str, list[Path]]) -> None:
    files = [f for group in segments.values() for f in group]
    assert_same(files, DumpOptions())


def test_record_lines_agree_with_deep_iteration_and_data(segments: dict[str, list[Path]]) -> None:
    logs = [f for group in segments.values() for f in group if f.suffix == ".log"]
    assert_same(logs, DumpOptions(deep_iteration=True), "--deep-iteration")
    assert_same(logs, DumpOptions(print_data_log=True), "--print-data-log")


def test_every_codec_and_marker_is_in_the_segment(segments: dict[str, list[Path]]) -> None:
    log = next(f for f in segments["whole"] if f.suffix == ".log")
    text, _ = ours([log], DumpOptions(deep_iteration=True))
    assert {m for m in re.findall(r"compresscodec: (\w+)", text)} == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert "endTxnMarker: COMMIT" in text
    assert "endTxnMarker: ABORT" in text
    assert "headerKeys: [codec,i]" in text
    assert "valueSize: -1" in text  # tombstones


def test_index_checks_agree_on_rolled_segments(segments: dict[str, list[Path]]) -> None:
    active = max(f.stem for f in segments["rolled"] if f.suffix == ".log")
    indexes = [f for f in segments["rolled"] if f.suffix in (".index", ".timeindex") and f.stem != active]
    assert_same(indexes, DumpOptions(index_sanity_check=True), "--index-sanity-check")
    assert_same(indexes, DumpOptions(verify_index_only=True), "--verify-index-only")


def test_offsets_and_transaction_log_decoders_agree(
    segments: dict[str, list[Path]], kafka_cluster: launcher.ClusterLayout
) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    topic = segments["whole"][0].parent.name.rsplit("-", 1)[0]
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), group_id=unique("dump-group"))
    consumer.assign([TopicPartition(topic, 0)])
    consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(42, "meta", -1)})
    consumer.close(autocommit=False)
    root = Path(kafka_cluster.root)
    for internal, option, decoder in (
        ("__consumer_offsets", "--offsets-decoder", DumpOptions(offsets_decoder=True)),
        ("__transaction_state", "--transaction-log-decoder", DumpOptions(transaction_log_decoder=True)),
    ):
        logs = sorted(f for f in root.glob(f"kafka-logs-*/{internal}-*/*.log") if f.stat().st_size)
        assert logs, f"no {internal} records were written"
        assert_same(logs, decoder, option)
