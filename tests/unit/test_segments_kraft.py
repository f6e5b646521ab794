"""KRaft's control records as kafka-dump-log prints them (the header and footer bytes and lines come from a
real bootstrap.checkpoint and Kafka 3.9.1's tool)."""

from __future__ import annotations

import struct
import uuid

from broker.segments.kraft import control_text


def test_snapshot_header_and_footer_read_as_the_tool_prints_them() -> None:
    header = bytes.fromhex("0000000000000000000000")
    assert control_text("SNAPSHOT_HEADER", header) == ' SnapshotHeader {"version":0,"lastContainedLogTimestamp":0}'
    assert control_text("SNAPSHOT_FOOTER", bytes.fromhex("000000")) == ' SnapshotFooter {"version":0}'


def test_kraft_version_and_voters() -> None:
    assert control_text("KRAFT_VERSION", struct.pack(">hhB", 0, 1, 0)) == ' KRaftVersion {"version":0,"kRaftVersion":1}'
    directory = uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF)
    endpoint = b"\x0bCONTROLLER" + b"\x0a127.0.0.1" + struct.pack(">H", 15192) + b"\x00"
    voter = struct.pack(">i", 3000) + directory.bytes + b"\x02" + endpoint + struct.pack(">hhB", 0, 1, 0) + b"\x00"
    value = struct.pack(">h", 0) + b"\x02" + voter + b"\x00"
    text = control_text("KRAFT_VOTERS", value)
    assert text is not None
    assert text.startswith(' KRaftVoters {"version":0,"voters":[{"voterId":3000,"voterDirectoryId":"')
    assert text.endswith(
        '"endpoints":[{"name":"CONTROLLER","host":"127.0.0.1","port":15192}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}'
    )


def test_what_does_not_read_falls_back_to_the_type() -> None:
    assert control_text("LEADER_CHANGE", b"\x00\x00") is None
    assert control_text("KRAFT_VOTERS", b"\x00") is None
    assert control_text("SNAPSHOT_HEADER", None) is None
