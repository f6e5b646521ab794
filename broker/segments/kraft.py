"""KRaft's control records (snapshot header and footer, kraft.version, voters) as kafka-dump-log prints
them: their name and the JSON of Kafka's generated converters. Leader-change records, like unknown ones,
print as ``controlType: NAME(id)`` in Kafka 3.9's tool, which this follows."""

from __future__ import annotations

from broker.segments.protocol import (
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    ProtocolError,
    Reader,
    Struct,
    field,
    inline,
    message,
    read_struct,
    to_json,
)

SNAPSHOT_HEADER = message(
    "SnapshotHeaderRecord", "0", "0+", [field("Version", INT16), field("LastContainedLogTimestamp", INT64)]
)
SNAPSHOT_FOOTER = message("SnapshotFooterRecord", "0", "0+", [field("Version", INT16)])
KRAFT_VERSION = message("KRaftVersionRecord", "0", "0+", [field("Version", INT16), field("KRaftVersion", INT16)])
_ENDPOINT = inline("Endpoint", "0+", "0", "0+", [field("Name", STRING), field("Host", STRING), field("Port", UINT16)])
_FEATURE = inline(
    "KRaftVersionFeature", "0+", "0", "0+", [field("MinSupportedVersion", INT16), field("MaxSupportedVersion", INT16)]
)
_VOTER = inline(
    "Voter",
    "0+",
    "0",
    "0+",
    [
        field("VoterId", INT32),
        field("VoterDirectoryId", UUID),
        field("Endpoints", _ENDPOINT, array=True),
        field("KRaftVersionFeature", _FEATURE),
    ],
)
VOTERS = message("VotersRecord", "0", "0+", [field("Version", INT16), field("Voters", _VOTER, array=True)])

# Control type -> (the name the tool prints, the record's schema).
CONTROL_RECORDS: dict[str, tuple[str, Struct]] = {
    "SNAPSHOT_HEADER": ("SnapshotHeader", SNAPSHOT_HEADER),
    "SNAPSHOT_FOOTER": ("SnapshotFooter", SNAPSHOT_FOOTER),
    "KRAFT_VERSION": ("KRaftVersion", KRAFT_VERSION),
    "KRAFT_VOTERS": ("KRaftVoters", VOTERS),
}


def control_text(control_type: str | None, value: bytes | None) -> str | None:
    """`` SnapshotHeader {...}`` and the like for a KRaft control record, or None for any other type or a
    value that does not read (the caller prints ``controlType: NAME(id)`` then)."""
    known = CONTROL_RECORDS.get(control_type or "")
    if known is None or value is None:
        return None
    name, spec = known
    try:
        return f" {name} {to_json(read_struct(Reader(value), spec, 0))}"
    except (ProtocolError, ValueError, KeyError):
        return None
