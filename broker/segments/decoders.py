"""kafka-dump-log's ``--offsets-decoder`` and ``--transaction-log-decoder`` (Kafka 3.9.1): the records of
``__consumer_offsets`` and ``__transaction_state`` shown as the tool shows them.

Both functions take a record's key, value and offset and return the two strings the tool prints after
`` key: `` and `` payload: `` on the record's line (``None`` where it prints nothing); they replace the tool's
``parser.parse(record)``. Neither raises, whatever the bytes.

- ``offsets_key_payload``: the group coordinator's records (``CoordinatorRecordSerde``): the key's int16
  record type picks the key and value messages (0 and 1 an offset commit, 2 group metadata, 3 to 8 the
  consumer-protocol group records of KIP-848), each printed as its generated JSON converter prints it,
  ``{"type":"N","data":{...}}`` and ``{"version":"N","data":{...}}``. In group metadata of protocol type
  ``consumer``, each member's subscription and assignment bytes are expanded into the consumer protocol's
  messages where they can be read, and left as base64 where they cannot. A tombstone's payload is
  ``<DELETE>``; an unknown record type and an unreadable record give the tool's ``Unknown record type ...``
  and ``Error at offset ...`` sentences as the key, with no payload.
- ``transaction_key_payload``: ``TransactionLog.formatRecordKeyAndValue``: the transactional id, and the
  producer, state and partitions of the transaction (in the order the broker's Scala hash set keeps them).

Where the 3.9.1 tool itself dies with an exception instead of printing a line (a record without a key in
either decoder, an unreadable ``__transaction_state`` record), these return
``("Error at offset O, skipping. <the exception's message>", None)``, the offsets decoder's wording, so a
dump can go on; the message is Java's, or the exception's class where Java's has none.
"""

from __future__ import annotations

from typing import Any

from broker.segments.protocol import (
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
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

# ---------------------------------------------------------------- the group coordinator's records

OFFSET_COMMIT_KEY = message(
    "OffsetCommitKey",
    "0-1",
    "none",
    [field("group", STRING, "0-1"), field("topic", STRING, "0-1"), field("partition", INT32, "0-1")],
)
OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue",
    "0-4",
    "4+",
    [
        field("offset", INT64),
        field("leaderEpoch", INT32, "3+"),
        field("metadata", STRING),
        field("commitTimestamp", INT64),
        field("expireTimestamp", INT64, "1"),
    ],
)
GROUP_METADATA_KEY = message("GroupMetadataKey", "2", "none", [field("group", STRING, "2")])
_MEMBER_METADATA = message(  # a common struct: versions 0+, flexible as its message
    "MemberMetadata",
    "0+",
    "4+",
    [
        field("memberId", STRING),
        field("groupInstanceId", STRING, "3+", nullable="3+"),
        field("clientId", STRING),
        field("clientHost", STRING),
        field("rebalanceTimeout", INT32, "1+"),
        field("sessionTimeout", INT32),
        field("subscription", BYTES),
        field("assignment", BYTES),
    ],
)
GROUP_METADATA_VALUE = message(
    "GroupMetadataValue",
    "0-4",
    "4+",
    [
        field("protocolType", STRING),
        field("generation", INT32),
        field("protocol", STRING, nullable="0+"),
        field("leader", STRING, nullable="0+"),
        field("currentStateTimestamp", INT64, "2+"),
        field("members", _MEMBER_METADATA, array=True),
    ],
)


def _group_key(name: str, record_type: int, with_member: bool = False) -> Struct:
    spec = str(record_type)
    fields = [field("GroupId", STRING, spec)] + ([field("MemberId", STRING, spec)] if with_member else [])
    return message(name, spec, "none", fields)


_TOPIC_ID_PARTITIONS = (field("TopicId", UUID), field("Partitions", INT32, array=True))
_CURRENT_TOPIC_PARTITIONS = message("TopicPartitions", "0+", "0+", _TOPIC_ID_PARTITIONS)  # a common struct
_CLASSIC_PROTOCOL = inline("ClassicProtocol", "0+", "0", "0+", [field("Name", STRING), field("Metadata", BYTES)])
_CLASSIC_MEMBER_METADATA = inline(
    "ClassicMemberMetadata",
    "0+",
    "0",
    "0+",
    [field("SessionTimeoutMs", INT32), field("SupportedProtocols", _CLASSIC_PROTOCOL, array=True)],
)
_PARTITION_METADATA = inline(
    "PartitionMetadata", "0+", "0", "0+", [field("Partition", INT32), field("Racks", STRING, array=True)]
)
_TOPIC_METADATA = inline(
    "TopicMetadata",
    "0+",
    "0",
    "0+",
    [
        field("TopicId", UUID),
        field("TopicName", STRING),
        field("NumPartitions", INT32),
        field("PartitionMetadata", _PARTITION_METADATA, array=True),
    ],
)

# record type -> (key message, value message), as CoordinatorRecordSerde maps them in 3.9.1
RECORD_TYPES: dict[int, tuple[Struct, Struct]] = {
    0: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: (
        _group_key("ConsumerGroupMetadataKey", 3),
        message("ConsumerGroupMetadataValue", "0", "0+", [field("Epoch", INT32)]),
    ),
    4: (
        _group_key("ConsumerGroupPartitionMetadataKey", 4),
        message("ConsumerGroupPartitionMetadataValue", "0", "0+", [field("Topics", _TOPIC_METADATA, array=True)]),
    ),
    5: (
        _group_key("ConsumerGroupMemberMetadataKey", 5, with_member=True),
        message(
            "ConsumerGroupMemberMetadataValue",
            "0",
            "0+",
            [
                field("InstanceId", STRING, nullable="0+"),
                field("RackId", STRING, nullable="0+"),
                field("ClientId", STRING),
                field("ClientHost", STRING),
                field("SubscribedTopicNames", STRING, array=True),
                field("SubscribedTopicRegex", STRING, nullable="0+"),
                field("RebalanceTimeoutMs", INT32),
                field("ServerAssignor", STRING, nullable="0+"),
                field(
                    "ClassicMemberMetadata",
                    _CLASSIC_MEMBER_METADATA,
                    nullable="0+",
                    tag=0,
                    default={"sessionTimeoutMs": 0, "supportedProtocols": []},
                ),
            ],
        ),
    ),
    6: (
        _group_key("ConsumerGroupTargetAssignmentMetadataKey", 6),
        message("ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", [field("AssignmentEpoch", INT32)]),
    ),
    7: (
        _group_key("ConsumerGroupTargetAssignmentMemberKey", 7, with_member=True),
        message(
            "ConsumerGroupTargetAssignmentMemberValue",
            "0",
            "0+",
            [field("TopicPartitions", inline("TopicPartition", "0+", "0", "0+", _TOPIC_ID_PARTITIONS), array=True)],
        ),
    ),
    8: (
        _group_key("ConsumerGroupCurrentMemberAssignmentKey", 8, with_member=True),
        message(
            "ConsumerGroupCurrentMemberAssignmentValue",
            "0",
            "0+",
            [
                field("MemberEpoch", INT32),
                field("PreviousMemberEpoch", INT32),
                field("State", INT8),
                field("AssignedPartitions", _CURRENT_TOPIC_PARTITIONS, array=True),
                field("PartitionsPendingRevocation", _CURRENT_TOPIC_PARTITIONS, array=True),
            ],
        ),
    ),
}

# ---------------------------------------------------------------- the consumer protocol, inside group metadata

CONSUMER_PROTOCOL_TYPE = "consumer"
CONSUMER_PROTOCOL_SUBSCRIPTION = message(
    "ConsumerProtocolSubscription",
    "0-3",
    "none",
    [
        field("Topics", STRING, array=True),
        field("UserData", BYTES, nullable="0+", zero_copy=True),
        field(
            "OwnedPartitions",
            inline(
                "TopicPartition",
                "1+",
                "0-3",
                "none",
                [field("Topic", STRING, "1+"), field("Partitions", INT32, "1+", array=True)],
            ),
            "1+",
            array=True,
        ),
        field("GenerationId", INT32, "2+"),
        field("RackId", STRING, "3+", nullable="3+"),
    ],
)
CONSUMER_PROTOCOL_ASSIGNMENT = message(
    "ConsumerProtocolAssignment",
    "0-3",
    "none",
    [
        field(
            "AssignedPartitions",
            inline(
                "TopicPartition", "0+", "0-3", "none", [field("Topic", STRING), field("Partitions", INT32, array=True)]
            ),
            array=True,
        ),
        field("UserData", BYTES, nullable="0+", zero_copy=True),
    ],
)


def _expand_consumer_protocol(group: dict[str, Any]) -> None:
    """What the tool does to group metadata of the consumer protocol: each member's ``subscription`` and
    ``assignment`` bytes replaced by the message they hold (an int16 version, then the message), where
    that reads; where it does not, the bytes stay."""
    if group.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
        return
    for member in group.get("members") or []:
        for name, spec in (
            ("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
            ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT),
        ):
            raw = member.get(name)
            if isinstance(raw, bytes):
                try:
                    reader = Reader(raw)
                    member[name] = read_struct(reader, spec, reader.fixed(INT16))
                except ProtocolError:
                    pass


def offsets_key_payload(key: bytes | None, value: bytes | None, offset: int) -> tuple[str | None, str | None]:
    """What ``kafka-dump-log --offsets-decoder`` prints after `` key: `` and `` payload: `` for a record of
    ``__consumer_offsets`` at ``offset``: the key and value as JSON, ``<DELETE>`` as a tombstone's payload,
    or the tool's sentence for an unknown record type or an unreadable record as the key and no payload.
    Never raises."""
    if key is None:
        return _failed(
            offset,
            f"Failed to decode message at offset {offset} using offset topic decoder (message had a missing key)",
        ), None
    try:
        key_reader = Reader(key)
        record_type = _read_version(key_reader, "key")
        if record_type not in RECORD_TYPES:
            return f"Unknown record type {record_type} at offset {offset}, skipping.", None
        key_spec, value_spec = RECORD_TYPES[record_type]
        key_data = _read_message(key_reader, key_spec, record_type, "key")
        payload = "<DELETE>"
        if value is not None:
            value_reader = Reader(value)
            version = _read_version(value_reader, "value")
            value_data = _read_message(value_reader, value_spec, version, "value")
            if value_spec is GROUP_METADATA_VALUE:
                _expand_consumer_protocol(value_data)
            payload = f'{{"version":"{version}","data":{to_json(value_data)}}}'
    except ProtocolError as exc:
        return _failed(offset, exc.text), None
    return f'{{"type":"{record_type}","data":{to_json(key_data)}}}', payload


def _read_version(reader: Reader, name: str) -> int:
    try:
        return reader.fixed(INT16)
    except ProtocolError:
        raise ProtocolError(f"Could not read version from {name}'s buffer.") from None


def _read_message(reader: Reader, spec: Struct, version: int, name: str) -> dict[str, Any]:
    try:
        return read_struct(reader, spec, version)
    except ProtocolError as exc:
        raise ProtocolError(
            f"Could not read record with version {version} from {name}'s buffer due to: {exc.text}."
        ) from None


def _failed(offset: int, message_text: str) -> str:
    return f"Error at offset {offset}, skipping. {message_text}"


# ---------------------------------------------------------------- the transaction log

TRANSACTION_LOG_KEY = message("TransactionLogKey", "0", "none", [field("TransactionalId", STRING, "0")])
TRANSACTION_LOG_VALUE = message(
    "TransactionLogValue",
    "0-1",
    "1+",
    [
        field("ProducerId", INT64),
        field("ProducerEpoch", INT16),
        field("TransactionTimeoutMs", INT32),
        field("TransactionStatus", INT8),
        field(
            "TransactionPartitions",
            inline(
                "PartitionsSchema",
                "0+",
                "0-1",
                "1+",
                [field("Topic", STRING), field("PartitionIds", INT32, array=True)],
            ),
            nullable="0+",
            array=True,
        ),
        field("TransactionLastUpdateTimestampMs", INT64),
        field("TransactionStartTimestampMs", INT64),
    ],
)
_NULL_PARTITIONS = (  # Java 17's message for the NullPointerException the broker's code meets
    'Cannot invoke "java.util.List.forEach(java.util.function.Consumer)" because the return value of '
    '"org.apache.kafka.coordinator.transaction.generated.TransactionLogValue.transactionPartitions()" is null'
)
TRANSACTION_STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
)


def transaction_key_payload(key: bytes | None, value: bytes | None, offset: int) -> tuple[str | None, str | None]:
    """What ``kafka-dump-log --transaction-log-decoder`` prints after `` key: `` and `` payload: `` for a
    record of ``__transaction_state`` at ``offset``: ``transaction_metadata::transactionalId=...`` and the
    transaction's producer, state and partitions (``<DELETE>`` for a tombstone), or
    ``unknown::version=N`` and no payload for a key of another version. Never raises: where the tool dies
    on the record, returns an ``Error at offset ...`` sentence as the key (see the module's docstring)."""
    if key is None:
        return _failed(offset, 'Cannot invoke "java.nio.ByteBuffer.getShort()" because "buffer" is null'), None
    try:
        reader = Reader(key)
        key_version = reader.fixed(INT16)
        if key_version != 0:
            return f"unknown::version={key_version}", None
        transactional_id = read_struct(reader, TRANSACTION_LOG_KEY, key_version)["transactionalId"]
        payload = "<DELETE>" if value is None else _transaction_text(Reader(value))
    except ProtocolError as exc:
        return _failed(offset, exc.message if exc.message is not None else exc.java_class), None
    return f"transaction_metadata::transactionalId={transactional_id}", payload


def _transaction_text(reader: Reader) -> str:
    version = reader.fixed(INT16)
    if not 0 <= version <= 1:
        raise ProtocolError(f"Unknown version {version} from the transaction log message value")
    data = read_struct(reader, TRANSACTION_LOG_VALUE, version)
    status = data["transactionStatus"]
    if not 0 <= status < len(TRANSACTION_STATES):
        raise ProtocolError(f"Unknown transaction state id {status} from the transaction status message")
    state = TRANSACTION_STATES[status]
    partitions: list[tuple[str, int]] = []
    if state != "Empty":
        groups = data["transactionPartitions"]
        if groups is None:
            raise ProtocolError(_NULL_PARTITIONS, "java.lang.NullPointerException")
        partitions = scala_hash_set_order([[(g["topic"], p) for p in g["partitionIds"]] for g in groups])
    return (
        f"producerId:{data['producerId']},producerEpoch:{data['producerEpoch']},state={state},"
        f"partitions=[{','.join(f'{topic}-{p}' for topic, p in partitions)}],"
        f"txnLastUpdateTimestamp={data['transactionLastUpdateTimestampMs']},"
        f"txnTimeoutMs={data['transactionTimeoutMs']}"
    )


# ---------------------------------------------------------------- the order of a Scala 2.13 mutable.HashSet


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, wrapping as an int)."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _topic_partition_hash(topic: str, partition: int) -> int:
    h = (31 * (31 + partition) + java_string_hash(topic)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _table_size_for(capacity: int) -> int:
    n = max(capacity - 1, 4)
    return min((1 << (n.bit_length() - 1)) * 2, 1 << 30)


def scala_hash_set_order(groups: list[list[tuple[str, int]]]) -> list[tuple[str, int]]:
    """The topic partitions of ``groups`` in the order a Scala 2.13 ``mutable.HashSet`` iterates them after
    ``set ++= group.toSet`` for each group in turn: how the broker's ``TransactionMetadata`` holds them and
    the tool prints them. Buckets in index order, each sorted by (improved) hash; the table grows as
    ``sizeHint`` and ``add`` grow it (a group of more than four is added without the per-element check)."""
    length, threshold = 16, 12
    entries: dict[tuple[str, int], tuple[int, int]] = {}
    for group in groups:
        distinct = list(dict.fromkeys(group))
        target = _table_size_for(int((len(distinct) + 1) / 0.75))
        if target > length:
            length, threshold = target, int(target * 0.75)
        for tp in distinct:
            if len(distinct) <= 4 and len(entries) + 1 >= threshold:
                length, threshold = length * 2, int(length * 2 * 0.75)
            if tp not in entries:
                h = _topic_partition_hash(*tp)
                entries[tp] = (h ^ ((h & 0xFFFFFFFF) >> 16), len(entries))
    return sorted(entries, key=lambda tp: (entries[tp][0] & (length - 1), entries[tp][0], entries[tp][1]))


__all__ = [
    "RECORD_TYPES",
    "TRANSACTION_STATES",
    "offsets_key_payload",
    "scala_hash_set_order",
    "transaction_key_payload",
]
