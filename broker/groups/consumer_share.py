"""Kafka 4 groups that kafka-python's admin client cannot describe: KIP-848 consumer groups
(ConsumerGroupDescribe) and KIP-932 share groups (ShareGroupDescribe, and DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets for their start offsets).

Each function finds the groups' coordinators in one batched FindCoordinator request (the admin client's
own helper, which caches them), sends one request per coordinator with all of its groups, and turns the
answers into frozen dataclasses. A group's or a partition's error comes back as a readable sentence in
the result; transport failures and time-outs raise kafka.errors exceptions, and a cluster whose brokers do
not know the request raises ``NotSupportedByCluster``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient

from broker.client.connection import broker_versions, find_coordinators, forget_coordinators, send_requests
from broker.errors import NotSupported
from broker.groups.protocol import (
    AlterShareGroupOffsetsRequest,
    ConsumerGroupDescribeRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ShareGroupDescribeRequest,
)

TopicPartition = tuple[str, int]


class NotSupportedByCluster(NotSupported):
    """The cluster's brokers do not know the request; the message says which and since when Kafka has it."""


@dataclass(frozen=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topics: tuple[str, ...]
    subscribed_regex: str | None
    assignment: tuple[TopicPartition, ...]  # sorted
    target_assignment: tuple[TopicPartition, ...]  # sorted
    member_type: str | None  # "consumer", or "classic" for a classic member in a consumer group; None if unsaid


@dataclass(frozen=True)
class ConsumerGroupDescription:
    group_id: str
    error: str | None  # None when described; then the fields below are the coordinator's
    state: str = ""
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor: str = ""
    members: tuple[ConsumerGroupMember, ...] = ()


@dataclass(frozen=True)
class ShareGroupMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topics: tuple[str, ...]
    assignment: tuple[TopicPartition, ...]  # sorted


@dataclass(frozen=True)
class ShareGroupDescription:
    group_id: str
    error: str | None
    state: str = ""
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor: str = ""
    members: tuple[ShareGroupMember, ...] = ()


@dataclass(frozen=True)
class ShareOffset:
    start_offset: int | None  # None: the group has not started on this partition
    leader_epoch: int | None
    lag: int | None  # None when Kafka gives none (before 4.3, or no start offset)
    error: str | None = None


@dataclass(frozen=True)
class ShareGroupOffsets:
    error: str | None  # the group's own error (not found, not authorised, ...): then no partitions
    partitions: Mapping[TopicPartition, ShareOffset]


_UNSUPPORTED = {  # NotSupportedByCluster's message: "This cluster's brokers do not <what> (<request>, Kafka X+)."
    request: f"This cluster's brokers do not {what} ({request.__name__[:-7]}, Kafka {since} and later)."
    for request, what, since in [
        (ConsumerGroupDescribeRequest, "describe KIP-848 consumer groups", "4.0"),
        (ShareGroupDescribeRequest, "describe share groups", "4.0"),
        (DescribeShareGroupOffsetsRequest, "report share groups' offsets", "4.1"),
        (AlterShareGroupOffsetsRequest, "set share groups' offsets", "4.1"),
        (DeleteShareGroupOffsetsRequest, "delete share groups' offsets", "4.1"),
    ]
}

_E = kafka.errors
_READABLE = {
    _E.UnknownTopicOrPartitionError.errno: "unknown topic or partition",
    _E.CoordinatorLoadInProgressError.errno: "the group coordinator is still loading; try again",
    _E.CoordinatorNotAvailableError.errno: "the group coordinator is not available; try again",
    _E.NotCoordinatorError.errno: "the group moved to another coordinator; try again",
    _E.InvalidGroupIdError.errno: "invalid group id",
    _E.TopicAuthorizationFailedError.errno: "not authorised for the topic",
    _E.GroupAuthorizationFailedError.errno: "not authorised for the group",
    _E.InvalidRequestError.errno: "invalid request",
    _E.KafkaStorageError.errno: "storage error on the broker",
    _E.NonEmptyGroupError.errno: "the group still has members; stop them first",
    _E.GroupIdNotFoundError.errno: "not found",
    _E.UnknownError.errno: "unknown server error",
}
# Answers worth asking again once, of a coordinator found afresh.
_MOVED = {_E.NotCoordinatorError.errno, _E.CoordinatorNotAvailableError.errno}
_MEMBER_TYPES = {0: "classic", 1: "consumer"}
_FEATURES = {ConsumerGroupDescribeRequest: ("KIP-848 consumer", "group")}  # else share groups, share.version
_NO_ANSWER = -1000  # our own code: the coordinator's answer left the group out


def describe_consumer_groups(
    admin: KafkaAdminClient, group_ids: Iterable[str], timeout_ms: int
) -> dict[str, ConsumerGroupDescription]:
    """KIP-848 consumer groups as their coordinators describe them. A group of another type (classic,
    share, streams), or none, comes back with ``error`` set."""

    def build(groups: list[str]) -> Any:
        return ConsumerGroupDescribeRequest(group_ids=groups, include_authorized_operations=False)

    answers = _ask_coordinators(admin, ConsumerGroupDescribeRequest, group_ids, timeout_ms, build, _described)
    return {group_id: read_consumer_group(group_id, code, group) for group_id, (code, group) in answers.items()}


def describe_share_groups(
    admin: KafkaAdminClient, group_ids: Iterable[str], timeout_ms: int
) -> dict[str, ShareGroupDescription]:
    """KIP-932 share groups as their coordinators describe them; other groups come back with ``error`` set."""

    def build(groups: list[str]) -> Any:
        return ShareGroupDescribeRequest(group_ids=groups, include_authorized_operations=False)

    answers = _ask_coordinators(admin, ShareGroupDescribeRequest, group_ids, timeout_ms, build, _described)
    return {group_id: read_share_group(group_id, code, group) for group_id, (code, group) in answers.items()}


def share_group_offsets(
    admin: KafkaAdminClient, group_ids: Iterable[str], timeout_ms: int
) -> dict[str, ShareGroupOffsets]:
    """Each share group's start offset (and, from Kafka 4.3, lag) on every partition it has state for."""
    request_class = DescribeShareGroupOffsetsRequest

    def build(groups: list[str]) -> Any:  # topics=None asks for every topic-partition
        group_class = request_class.DescribeShareGroupOffsetsRequestGroup
        return request_class(groups=[group_class(group_id=g, topics=None) for g in groups])

    answers = _ask_coordinators(admin, request_class, group_ids, timeout_ms, build, _described)
    return {group_id: read_share_offsets(code, group) for group_id, (code, group) in answers.items()}


def alter_share_group_offsets(
    admin: KafkaAdminClient, group_id: str, offsets: Mapping[TopicPartition, int], timeout_ms: int
) -> dict[TopicPartition, str | None]:
    """Set an empty share group's start offsets: each partition's error, or None where it was set. Kafka
    creates the share group if there is none of that name."""
    request_class = AlterShareGroupOffsetsRequest
    topic_class = request_class.AlterShareGroupOffsetsRequestTopic
    partition_class = topic_class.AlterShareGroupOffsetsRequestPartition
    topics: dict[str, list[Any]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        topics.setdefault(topic, []).append(partition_class(partition_index=partition, start_offset=offset))

    def build(groups: list[str]) -> Any:
        return request_class(
            group_id=groups[0], topics=[topic_class(topic_name=t, partitions=ps) for t, ps in topics.items()]
        )

    code, answer = _ask_coordinators(admin, request_class, [group_id], timeout_ms, build, _whole)[group_id]
    return read_altered(offsets, code, answer)


def delete_share_group_offsets(
    admin: KafkaAdminClient, group_id: str, topics: Iterable[str], timeout_ms: int
) -> dict[str, str | None]:
    """Forget an empty share group's offsets on whole topics: each topic's error, or None where done."""
    request_class = DeleteShareGroupOffsetsRequest
    topic_class = request_class.DeleteShareGroupOffsetsRequestTopic
    wanted = sorted(set(topics))

    def build(groups: list[str]) -> Any:
        return request_class(group_id=groups[0], topics=[topic_class(topic_name=t) for t in wanted])

    code, answer = _ask_coordinators(admin, request_class, [group_id], timeout_ms, build, _whole)[group_id]
    return read_deleted(wanted, code, answer)


def read_consumer_group(group_id: str, code: int, group: Any) -> ConsumerGroupDescription:
    """One group of a ConsumerGroupDescribe answer, with the group's error code (or ours)."""
    if code:
        return ConsumerGroupDescription(group_id, _group_error(code, group, "KIP-848 consumer group"))
    members = tuple(
        ConsumerGroupMember(
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topics=tuple(sorted(m.subscribed_topic_names or ())),
            subscribed_regex=m.subscribed_topic_regex or None,
            assignment=_partitions(m.assignment),
            target_assignment=_partitions(m.target_assignment),
            member_type=_MEMBER_TYPES.get(getattr(m, "member_type", -1)),
        )
        for m in group.members
    )
    return ConsumerGroupDescription(
        group_id, None, group.group_state, group.group_epoch, group.assignment_epoch, group.assignor_name, members
    )


def read_share_group(group_id: str, code: int, group: Any) -> ShareGroupDescription:
    """One group of a ShareGroupDescribe answer, with the group's error code (or ours)."""
    if code:
        return ShareGroupDescription(group_id, _group_error(code, group, "share group"))
    members = tuple(
        ShareGroupMember(
            member_id=m.member_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topics=tuple(sorted(m.subscribed_topic_names or ())),
            assignment=_partitions(m.assignment),
        )
        for m in group.members
    )
    return ShareGroupDescription(
        group_id, None, group.group_state, group.group_epoch, group.assignment_epoch, group.assignor_name, members
    )


def read_share_offsets(code: int, group: Any) -> ShareGroupOffsets:
    """One group of a DescribeShareGroupOffsets answer; -1 (no start offset, no lag) becomes None."""
    if code:
        return ShareGroupOffsets(_group_error(code, group, "share group"), {})
    offsets = {
        (topic.topic_name, p.partition_index): ShareOffset(
            start_offset=_known(p.start_offset),
            leader_epoch=_known(p.leader_epoch) if p.start_offset >= 0 else None,
            lag=_known(getattr(p, "lag", -1)),
            error=_readable(p.error_code, p.error_message),
        )
        for topic in group.topics
        for p in topic.partitions
    }
    return ShareGroupOffsets(None, dict(sorted(offsets.items())))


def read_altered(offsets: Iterable[TopicPartition], code: int, answer: Any) -> dict[TopicPartition, str | None]:
    """Each asked partition's error in an AlterShareGroupOffsets answer: its own, else the group's."""
    own = {
        (topic.topic_name, p.partition_index): _readable(p.error_code, p.error_message)
        for topic in (answer.responses if answer is not None else ())
        for p in topic.partitions
    }
    group_error = _group_error(code, answer, "share group")
    return {where: _outcome(own, where, group_error) for where in sorted(offsets)}


def read_deleted(topics: Iterable[str], code: int, answer: Any) -> dict[str, str | None]:
    """Each asked topic's error in a DeleteShareGroupOffsets answer: its own, else the group's."""
    own = {t.topic_name: _readable(t.error_code, t.error_message) for t in (answer.responses if answer else ())}
    group_error = _group_error(code, answer, "share group")
    return {topic: _outcome(own, topic, group_error) for topic in sorted(topics)}


def by_coordinator(coordinators: Mapping[str, int]) -> dict[int, list[str]]:
    """Group ids keyed by their coordinator's node id, in the order given: one request per coordinator."""
    batches: dict[int, list[str]] = {}
    for group_id, node_id in coordinators.items():
        batches.setdefault(node_id, []).append(group_id)
    return batches


def _ask_coordinators(
    admin: KafkaAdminClient,
    request_class: Any,
    group_ids: Iterable[str],
    timeout_ms: int,
    build: Callable[[list[str]], Any],
    per_group: Callable[[Any, list[str]], Iterable[tuple[str, int, Any]]],
) -> dict[str, tuple[int, Any]]:
    """Each group's (error code, answer) from its coordinator, all requests in flight at once. A group
    whose coordinator moved is asked again once, of the coordinator found afresh."""
    check_supported(broker_versions(admin), request_class)
    deadline = time.monotonic() + timeout_ms / 1000
    wanted = list(dict.fromkeys(group_ids))

    def ask_once(groups: list[str]) -> list[tuple[str, int, Any]]:
        coordinators = find_coordinators(admin, groups, timeout_ms=_left_ms(deadline))
        batches = by_coordinator(coordinators)
        sent = send_requests(admin, [(build(batch), node_id) for node_id, batch in batches.items()], _left_ms(deadline))
        answers: list[tuple[str, int, Any]] = []
        for batch, answer in zip(batches.values(), sent, strict=True):
            if isinstance(answer, kafka.errors.KafkaError):
                forget_coordinators(admin, batch)  # perhaps a coordinator that is gone: the next call looks again
                raise answer
            answers += per_group(answer, batch)
        return answers

    def ask() -> dict[str, tuple[int, Any]]:
        answers = ask_once([g for g in wanted if g])
        moved = [group_id for group_id, code, _ in answers if code in _MOVED]
        forget_coordinators(admin, moved)  # kafka-python caches coordinators for good
        if moved:
            with contextlib.suppress(kafka.errors.KafkaError):  # if not, the moved groups keep their first answer
                answers += ask_once(moved)  # later answers replace the first ones
        return {group_id: (code, answer) for group_id, code, answer in answers}

    try:
        found = ask() if any(wanted) else {}
    except kafka.errors.IncompatibleBrokerVersion as exc:  # a coordinator older than the bootstrap broker
        raise NotSupportedByCluster(_UNSUPPORTED[request_class]) from exc
    if any(code == _E.UnsupportedVersionError.errno for code, _ in found.values()):  # a Kafka 4 feature is off
        kind, feature = _FEATURES.get(request_class, ("share", "share"))
        raise NotSupportedByCluster(
            f"This cluster has {kind} groups turned off (feature {feature}.version is 0; "
            f"kafka-features.sh upgrade --feature {feature}.version=1 turns them on)."
        )
    for group_id in wanted:  # "" has no coordinator
        found.setdefault(group_id, (_NO_ANSWER if group_id else _E.InvalidGroupIdError.errno, None))
    return found


def check_supported(versions: Any, request_class: Any) -> None:
    """Raise NotSupportedByCluster unless the broker's api versions (kafka-python's BrokerVersionData) and
    ours share a version of the request."""
    if versions is None:
        return
    try:
        versions.api_version(request_class)
    except kafka.errors.IncompatibleBrokerVersion as exc:
        raise NotSupportedByCluster(_UNSUPPORTED[request_class]) from exc


def _left_ms(deadline: float) -> int:
    left = int((deadline - time.monotonic()) * 1000)
    if left <= 0:
        raise kafka.errors.KafkaTimeoutError("The group coordinators did not answer in time.")
    return left


def _described(response: Any, groups: list[str]) -> Iterable[tuple[str, int, Any]]:
    return ((g.group_id, g.error_code, g) for g in response.groups)


def _whole(response: Any, groups: list[str]) -> Iterable[tuple[str, int, Any]]:  # Alter and Delete: one group
    return [(groups[0], response.error_code, response)]


def _outcome(own: Mapping[Any, str | None], key: Any, group_error: str | None) -> str | None:
    """A partition's or topic's own error, else the group's; a key the answer left out has one or the other."""
    if key in own:
        return own[key] or group_error
    return group_error or "the group coordinator did not answer for it"


def _partitions(assignment: Any) -> tuple[TopicPartition, ...]:
    pairs = ((t.topic_name or str(t.topic_id), p) for t in assignment.topic_partitions for p in t.partitions)
    return tuple(sorted(pairs))


def _known(value: int | None) -> int | None:
    return None if value is None or value < 0 else value


def _group_error(code: int, answer: Any, wanted: str = "") -> str | None:
    if code == _NO_ANSWER:
        return "the group coordinator did not answer for this group"
    return _readable(code, getattr(answer, "error_message", None), wanted)


def _readable(code: int, message: str | None, wanted: str = "") -> str | None:
    """An error code as a few words, Kafka's own message after them; None for no error."""
    if not code:
        return None
    if code == _E.GroupIdNotFoundError.errno and wanted and message and " is not a " in message:
        return f"a group of another type, not a {wanted}"
    name = str(getattr(_E.kafka_errors.get(code), "message", "")).replace("_", " ").lower()
    text = _READABLE.get(code) or name or f"error {code}"
    return f"{text} ({message})" if message else text
