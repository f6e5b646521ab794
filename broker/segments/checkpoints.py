"""Readers of the text files Kafka keeps in a log directory: at its root the offset checkpoints
(``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``, ``replication-offset-checkpoint``,
``cleaner-offset-checkpoint``) and ``meta.properties``; in each partition directory
``leader-epoch-checkpoint`` and ``partition.metadata``. With them, the formats they are written in: Java
properties, as ``java.util.Properties`` reads them, and Kafka's base64url uuids.

These files say where a broker starts from: each partition's recovery point, log start offset, high
watermark and cleaner position, the offset each leader epoch began at, the topic id a partition directory
belongs to, and the node and cluster a log directory belongs to. As in ``sidefiles``, every reader opens
its file read-only and returns what it read together with findings; damaged content never raises (a
missing file raises FileNotFoundError), and where Kafka itself would refuse a file, the finding says so.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from broker.segments.findings import Finding
from broker.segments.names import java_int
from broker.segments.sidefiles import cap_findings, read_capped

# Side files are small; these caps only keep a damaged or mistaken file from being loaded whole.
DEFAULT_MAX_TEXT_BYTES = 64 * 1024 * 1024


# --- Text checkpoint files ---------------------------------------------------------------------------

_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")


def _lines(data: bytes) -> list[tuple[int, str]]:
    """The file's lines as Java's BufferedReader gives them (no empty line after a final line break),
    each with the byte position where it starts."""
    out: list[tuple[int, str]] = []
    start = 0
    for m in _LINE_BREAK.finditer(data):
        out.append((start, data[start : m.start()].decode("utf-8", "replace")))
        start = m.end()
    if start < len(data):
        out.append((start, data[start:].decode("utf-8", "replace")))
    return out


def _java_split(line: str) -> list[str]:
    """``line.split("\\\\s+")`` as Java does it: a leading empty field kept, trailing empty ones dropped."""
    parts = _JAVA_WHITESPACE.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts or [""]


@dataclass
class _Checkpoint:
    version: int | None
    declared_count: int | None
    rows: list[tuple[int, list[str]]]  # (byte position of the line, its fields)


def _read_checkpoint(path: str, width: int, what: str, findings: list[Finding], max_bytes: int) -> _Checkpoint:
    """Kafka's checkpoint layout: a version line (0), a count line, then ``width`` whitespace-separated
    fields per line. Kafka reads an empty file, or one that ends after the version, as no entries."""
    data, _size = read_capped(path, max_bytes, findings)
    lines = _lines(data)
    if not lines:
        return _Checkpoint(None, None, [])
    version = java_int(lines[0][1], 32)
    if version is None:
        findings.append(
            Finding(path, 0, "malformed_line", f"The version line {lines[0][1]!r} is not a number.", "0", lines[0][1])
        )
    elif version != 0:
        findings.append(
            Finding(
                path,
                0,
                "unknown_version",
                f"The checkpoint has version {version}; Kafka reads only version 0 and refuses the file.",
                expected="0",
                found=str(version),
            )
        )
    if len(lines) < 2:
        return _Checkpoint(version, None, [])
    count = java_int(lines[1][1], 32)
    if count is None:
        findings.append(
            Finding(
                path,
                lines[1][0],
                "malformed_line",
                f"The entry count line {lines[1][1]!r} is not a number.",
                found=lines[1][1],
            )
        )
    rows: list[tuple[int, list[str]]] = []
    for position, line in lines[2:]:
        parts = _java_split(line)
        if len(parts) != width:
            findings.append(
                Finding(
                    path,
                    position,
                    "malformed_line",
                    f"The line {line!r} does not hold {width} fields ({what}); Kafka refuses the file.",
                    expected=what,
                    found=line,
                )
            )
            continue
        rows.append((position, parts))
    entry_lines = len(lines) - 2
    if count is not None and count != entry_lines:
        findings.append(
            Finding(
                path,
                lines[1][0],
                "count_mismatch",
                f"The checkpoint says it holds {count} entries but {entry_lines} lines follow; Kafka refuses the file.",
                expected=str(count),
                found=str(entry_lines),
            )
        )
    return _Checkpoint(version, count, rows)


class PartitionOffset(NamedTuple):
    """One line of an offset checkpoint file: a partition and its offset."""

    topic: str
    partition: int
    offset: int


@dataclass
class OffsetCheckpoint:
    """A log directory's offset checkpoint file (recovery points, log start offsets, high watermarks or
    the cleaner's offsets) as read: version, declared count, entries in file order, findings."""

    path: str
    version: int | None
    declared_count: int | None
    entries: list[PartitionOffset]
    findings: list[Finding] = field(default_factory=list)

    def as_map(self) -> dict[tuple[str, int], int]:
        """The offsets by (topic, partition); a partition listed twice keeps its last offset, as in Kafka."""
        return {(e.topic, e.partition): e.offset for e in self.entries}


OFFSET_CHECKPOINT_FILES = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
)


def read_offset_checkpoint(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_TEXT_BYTES
) -> OffsetCheckpoint:
    """Read one of the log directory's offset checkpoint files (``OFFSET_CHECKPOINT_FILES``): version 0,
    a count, then ``topic partition offset`` lines. An empty file (Kafka creates the cleaner's so) holds
    no entries. Findings: a version other than 0, a count not matching the lines, a malformed line or
    number, a partition listed twice."""
    p = os.fspath(path)
    findings: list[Finding] = []
    cp = _read_checkpoint(p, 3, "topic partition offset", findings, max_bytes)
    entries: list[PartitionOffset] = []
    seen: set[tuple[str, int]] = set()
    for position, (topic, partition_text, offset_text) in cp.rows:
        partition = java_int(partition_text, 32)
        offset = java_int(offset_text, 64)
        if partition is None or offset is None:
            bad = partition_text if partition is None else offset_text
            findings.append(Finding(p, position, "malformed_line", f"{bad!r} is not a valid number.", found=f"{bad}"))
            continue
        if (topic, partition) in seen:
            findings.append(
                Finding(
                    p, position, "duplicate_partition", f"{topic}-{partition} is listed more than once; the last wins."
                )
            )
        seen.add((topic, partition))
        entries.append(PartitionOffset(topic, partition, offset))
    return OffsetCheckpoint(p, cp.version, cp.declared_count, entries, cap_findings(findings))


class EpochEntry(NamedTuple):
    """One line of a leader-epoch-checkpoint: a leader epoch and the first offset written in it."""

    epoch: int
    start_offset: int


@dataclass
class LeaderEpochCheckpoint:
    """A partition's ``leader-epoch-checkpoint`` as read."""

    path: str
    version: int | None
    declared_count: int | None
    entries: list[EpochEntry]
    findings: list[Finding] = field(default_factory=list)


def read_leader_epoch_checkpoint(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_TEXT_BYTES
) -> LeaderEpochCheckpoint:
    """Read a partition's ``leader-epoch-checkpoint``: version 0, a count, then ``epoch startOffset``
    lines. Findings as for offset checkpoints, plus epochs that do not increase and start offsets that go
    backwards (the broker keeps both in order)."""
    p = os.fspath(path)
    findings: list[Finding] = []
    cp = _read_checkpoint(p, 2, "epoch startOffset", findings, max_bytes)
    entries: list[EpochEntry] = []
    for position, (epoch_text, offset_text) in cp.rows:
        epoch = java_int(epoch_text, 32)
        offset = java_int(offset_text, 64)
        if epoch is None or offset is None:
            bad = epoch_text if epoch is None else offset_text
            findings.append(Finding(p, position, "malformed_line", f"{bad!r} is not a valid number.", found=bad))
            continue
        if entries and epoch <= entries[-1].epoch:
            findings.append(
                Finding(
                    p,
                    position,
                    "epoch_not_increasing",
                    f"Epoch {epoch} follows epoch {entries[-1].epoch}.",
                    expected=f"> {entries[-1].epoch}",
                    found=str(epoch),
                )
            )
        if entries and offset < entries[-1].start_offset:
            findings.append(
                Finding(
                    p,
                    position,
                    "start_offset_backwards",
                    f"Epoch {epoch} starts at offset {offset}, before epoch {entries[-1].epoch}'s start "
                    f"{entries[-1].start_offset}.",
                    expected=f">= {entries[-1].start_offset}",
                    found=str(offset),
                )
            )
        entries.append(EpochEntry(epoch, offset))
    return LeaderEpochCheckpoint(p, cp.version, cp.declared_count, entries, cap_findings(findings))


# --- partition.metadata and meta.properties ----------------------------------------------------------

ZERO_UUID = bytes(16)


def decode_kafka_uuid(text: str) -> bytes | None:
    """The 16 bytes of a Kafka Uuid written as Kafka writes it (22 characters of unpadded base64url, as
    in ``partition.metadata`` and ``meta.properties``), or None when the text is not one. Padding is
    accepted, as Java's decoder accepts it."""
    if len(text) > 24 or not re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", text):
        return None
    stripped = text.rstrip("=")
    try:
        raw = base64.urlsafe_b64decode(stripped + "=" * (-len(stripped) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 16 else None


@dataclass
class PartitionMetadata:
    """A partition's ``partition.metadata``: its version and topic id (as written, base64url)."""

    path: str
    version: int | None
    topic_id: str | None
    findings: list[Finding] = field(default_factory=list)


def read_partition_metadata(path: str | os.PathLike[str]) -> PartitionMetadata:
    """Read ``partition.metadata`` (``version: 0`` then ``topic_id: <uuid>``). Findings for a missing or
    malformed line, a version other than 0 (Kafka refuses a negative one and accepts a greater one), a
    topic id that is not a 16-byte base64url uuid or is all zeros (both refused by Kafka), and a key other
    than ``version`` / ``topic_id`` (Kafka does not look at the keys)."""
    p = os.fspath(path)
    findings: list[Finding] = []
    data, _size = read_capped(p, 64 * 1024, findings)
    lines = _lines(data)
    values: list[str | None] = []
    for n, key in enumerate(("version", "topic_id")):
        if n >= len(lines):
            findings.append(Finding(p, None, "missing_line", f"The {key} line is missing.", expected=f"{key}: ..."))
            values.append(None)
            continue
        position, line = lines[n]
        parts = re.split(r":\s+", line)
        if len(parts) != 2:
            findings.append(
                Finding(
                    p, position, "malformed_line", f"The line {line!r} is not '{key}: <value>'.", f"{key}: ...", line
                )
            )
            values.append(None)
            continue
        if parts[0] != key:
            findings.append(
                Finding(
                    p,
                    position,
                    "unexpected_key",
                    f"The line names {parts[0]!r} where {key!r} is expected.",
                    key,
                    parts[0],
                )
            )
        values.append(parts[1])
    version: int | None = None
    if values[0] is not None:
        version = java_int(values[0], 32)
        if version is None:
            findings.append(
                Finding(p, 0, "malformed_line", f"The version {values[0]!r} is not a number.", "0", values[0])
            )
        elif version != 0:
            findings.append(
                Finding(
                    p,
                    0,
                    "unknown_version",
                    f"The file has version {version}; Kafka writes version 0"
                    + (" and refuses a negative one." if version < 0 else " and reads newer ones as if they were 0."),
                    expected="0",
                    found=str(version),
                )
            )
    topic_id = values[1]
    if topic_id is not None:
        raw = decode_kafka_uuid(topic_id)
        position = lines[1][0]
        if raw is None:
            findings.append(
                Finding(
                    p,
                    position,
                    "bad_topic_id",
                    f"The topic id {topic_id!r} is not a uuid in base64url (16 bytes, 22 characters).",
                    found=topic_id,
                )
            )
        elif raw == ZERO_UUID:
            findings.append(
                Finding(p, position, "bad_topic_id", "The topic id is the all-zero uuid, which Kafka refuses.")
            )
    if len(lines) > 2 and any(line.strip() for _, line in lines[2:]):
        findings.append(Finding(p, lines[2][0], "extra_lines", "Lines follow the topic id (Kafka ignores them)."))
    return PartitionMetadata(p, version, topic_id, findings)


_PROPERTIES_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_java_properties(text: str, problems: list[str] | None = None) -> dict[str, str]:
    """The key/value pairs of a Java properties file, read as ``java.util.Properties.load`` reads it:
    ``#`` and ``!`` comments, ``=``, ``:`` or whitespace between key and value, backslash line
    continuations and escapes (``\\uXXXX`` included). A later key wins. Malformed ``\\u`` escapes are kept
    as written and described in ``problems``."""
    result: dict[str, str] = {}
    natural = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(natural):
        line = natural[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        # A line ending in an odd number of backslashes continues on the next one.
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i < len(natural):
            line = line[:-1] + natural[i].lstrip(" \t\f")
            i += 1
        if (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            line = line[:-1]
        key_end = 0
        while key_end < len(line) and line[key_end] not in "=: \t\f":
            key_end += 2 if line[key_end] == "\\" else 1
        key_end = min(key_end, len(line))
        rest = line[key_end:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        result[_unescape(line[:key_end], problems)] = _unescape(rest, problems)
    return result


def _unescape(text: str, problems: list[str] | None) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        n = text[i + 1]
        if n == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) == 4 and all(d in "0123456789abcdefABCDEF" for d in digits):
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            if problems is not None:
                problems.append(f"malformed \\uxxxx escape {text[i : i + 6]!r}")
            out.append(text[i : i + 2])
            i += 2
            continue
        out.append(_PROPERTIES_ESCAPES.get(n, n))
        i += 2
    return "".join(out)


@dataclass
class MetaProperties:
    """A log directory's ``meta.properties``. ``version`` 0 is a ZooKeeper-mode broker (``node_id`` from
    ``broker.id``), 1 a KRaft node (from ``node.id``); ``directory_id`` exists from Kafka 3.7 on."""

    path: str
    properties: dict[str, str]
    version: int | None
    node_id: int | None
    cluster_id: str | None
    directory_id: str | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def mode(self) -> str | None:
        """``"zookeeper"`` for version 0, ``"kraft"`` for version 1, None for anything else."""
        return {0: "zookeeper", 1: "kraft"}.get(self.version) if self.version is not None else None


def read_meta_properties(path: str | os.PathLike[str]) -> MetaProperties:
    """Read ``meta.properties`` as the broker does (a missing version means 0). Findings: an unknown or
    malformed version, a missing or non-numeric ``broker.id`` (v0, optional) or ``node.id`` (v1,
    required), a missing ``cluster.id`` in v1, a ``directory.id`` that is not a Kafka uuid, malformed
    escapes."""
    p = os.fspath(path)
    findings: list[Finding] = []
    data, _size = read_capped(p, 1024 * 1024, findings)
    problems: list[str] = []
    props = parse_java_properties(data.decode("latin-1"), problems)
    for problem in problems:
        findings.append(Finding(p, None, "malformed_escape", f"The file has a {problem}."))
    version_text = props.get("version", "0")
    version = java_int(version_text.strip(), 32)
    if version is None:
        findings.append(
            Finding(
                p, None, "malformed_version", f"The version {version_text!r} is not a number.", "0 or 1", version_text
            )
        )
    elif version not in (0, 1):
        findings.append(
            Finding(
                p,
                None,
                "unknown_version",
                f"Version {version} is unknown: 0 is ZooKeeper mode, 1 KRaft. Kafka refuses the file.",
                expected="0 or 1",
                found=str(version),
            )
        )
    id_key = "broker.id" if version == 0 else "node.id"
    node_id: int | None = None
    if id_key in props:
        node_id = java_int(props[id_key], 32)
        if node_id is None:
            findings.append(
                Finding(p, None, "malformed_id", f"{id_key} {props[id_key]!r} is not a number.", found=props[id_key])
            )
    elif version == 1:
        findings.append(Finding(p, None, "missing_node_id", "A version 1 (KRaft) file must have node.id."))
    cluster_id = props.get("cluster.id")
    if cluster_id is None and version == 1:
        findings.append(Finding(p, None, "missing_cluster_id", "A version 1 (KRaft) file must have cluster.id."))
    directory_id = props.get("directory.id")
    if directory_id is not None and decode_kafka_uuid(directory_id) is None:
        findings.append(
            Finding(
                p,
                None,
                "bad_directory_id",
                f"directory.id {directory_id!r} is not a uuid in base64url (Kafka refuses the file).",
                found=directory_id,
            )
        )
    return MetaProperties(p, props, version, node_id, cluster_id, directory_id, findings)
