"""Changing consumer groups: reset their offsets, delete a group or its offsets of a topic; refused while the
group has members."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetSpec
from kafka.structs import OffsetAndMetadata

from broker.client.connection import ClusterConnection
from broker.errors import InvalidInput, KafkaRefused, KazamiError
from broker.groups import consumer_share
from broker.groups.lag import SHARE, Member, _one_group
from broker.groups.resets import PartitionState, PlannedReset, ResetSpec, plan, time_target_ms


class GroupActive(KazamiError):
    """The group has members, so its offsets cannot be changed; the message names them."""

    def __init__(self, group_id: str, members: list[Member]) -> None:
        self.members = members
        names = ", ".join(f"{m.member_id} ({m.client_id} on {m.host})" for m in members)
        who = (
            f"has {len(members)} active member{'s' if len(members) != 1 else ''}: {names}"
            if members
            else "has active members or is rebalancing"
        )
        super().__init__(
            f"Group {group_id!r} {who}. "
            "Stop its consumers first: Kafka only accepts offset changes for a group without members."
        )


@dataclass(frozen=True)
class ResetResult:
    group_id: str
    spec: ResetSpec
    planned: list[PlannedReset]
    executed: bool


def do_reset_offsets(
    conn: ClusterConnection, group_id: str, topics: list[str] | None, spec: ResetSpec, dry_run: bool = True
) -> ResetResult:
    """Plan (and unless ``dry_run``, commit) new offsets for the group on ``topics`` (None: every topic it
    has committed), the way ``kafka-consumer-groups --reset-offsets`` does.

    Raises GroupNotFound, GroupActive, InvalidInput (a topic the group never consumed), ClusterUnavailable.
    """
    now_ms = int(time.time() * 1000)

    def run(admin: KafkaAdminClient) -> ResetResult:
        group = _one_group(admin, conn, group_id, with_time=False)
        consumed = sorted({p.topic for p in group.partitions if p.committed is not None})
        chosen = topics or consumed
        strangers = [t for t in chosen if t not in consumed]
        if strangers:
            raise InvalidInput(
                f"Group {group_id!r} never committed offsets on {', '.join(strangers)}; "
                f"it has consumed {', '.join(consumed) or 'nothing yet'}."
            )
        if not dry_run and group.members:
            raise GroupActive(group_id, group.members)
        by_tp = {(p.topic, p.partition): p for p in group.partitions if p.topic in chosen}
        tps = [TopicPartition(t, p) for (t, p) in sorted(by_tp)]
        starts = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.EARLIEST))
        ends = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
        target = time_target_ms(spec, now_ms)
        by_time: dict[TopicPartition, int | None] = {}
        if target is not None:
            answer = admin.list_partition_offsets(dict.fromkeys(tps, target))
            by_time = {tp: (o.offset if o.offset >= 0 else None) for tp, o in answer.items()}
        states = [
            PartitionState(
                topic=tp.topic,
                partition=tp.partition,
                committed=by_tp[(tp.topic, tp.partition)].committed,
                log_start=starts[tp].offset,
                log_end=ends[tp].offset,
                offset_for_time=by_time.get(tp),
            )
            for tp in tps
        ]
        planned = plan(states, spec)
        if not dry_run and group.type == SHARE:
            wanted = {(r.topic, r.partition): r.new for r in planned}
            refused = consumer_share.alter_share_group_offsets(admin, group_id, wanted, int(conn.config.timeout * 1000))
            _check_share_errors(group_id, refused, "reset")
        elif not dry_run:
            answer = admin.alter_group_offsets(
                group_id, {TopicPartition(r.topic, r.partition): OffsetAndMetadata(r.new, "", -1) for r in planned}
            )
            _check_partition_errors(group_id, answer, "reset")
        return ResetResult(group_id=group_id, spec=spec, planned=planned, executed=not dry_run)

    try:
        return conn.call(run, "offset reset", requests=8)
    except kafka.errors.KafkaError as exc:
        if isinstance(exc, kafka.errors.KafkaTimeoutError | kafka.errors.KafkaConnectionError):
            raise
        if isinstance(exc, kafka.errors.UnknownMemberIdError | kafka.errors.RebalanceInProgressError):
            raise GroupActive(group_id, []) from None
        raise KafkaRefused(f"Kafka refused the reset: {type(exc).__name__}: {exc}") from None


def do_delete_group(conn: ClusterConnection, group_id: str) -> None:
    """Delete a group and its committed offsets. Raises GroupNotFound, GroupActive, ClusterUnavailable."""

    def run(admin: KafkaAdminClient) -> None:
        group = _one_group(admin, conn, group_id, with_time=False)
        if group.members:
            raise GroupActive(group_id, group.members)
        outcome = dict(admin.delete_groups([group_id]))
        if outcome.get(group_id, "OK") != "OK":
            raise KafkaRefused(f"Kafka refused to delete group {group_id!r}: {outcome[group_id]}")

    conn.call(run, "group deletion", requests=6)


def do_delete_offsets(conn: ClusterConnection, group_id: str, topic: str) -> int:
    """Delete the group's committed offsets for one topic; returns how many partitions lost a commit.

    Raises GroupNotFound, InvalidInput (never consumed the topic), KafkaRefused (the group is subscribed
    to it right now), ClusterUnavailable.
    """

    def run(admin: KafkaAdminClient) -> int:
        group = _one_group(admin, conn, group_id, with_time=False)
        parts = [
            TopicPartition(p.topic, p.partition)
            for p in group.partitions
            if p.topic == topic and p.committed is not None
        ]
        if not parts:
            raise InvalidInput(f"Group {group_id!r} has no committed offsets on {topic!r}.")
        if group.type == SHARE:
            if group.members:
                raise GroupActive(group_id, group.members)
            refused = consumer_share.delete_share_group_offsets(
                admin, group_id, [topic], int(conn.config.timeout * 1000)
            )
            _check_share_errors(group_id, refused, "offset deletion")
            return len(parts)
        answer = admin.delete_group_offsets(group_id, parts)
        if any(error is kafka.errors.GroupSubscribedToTopicError for error in answer.values()):
            raise KafkaRefused(f"Group {group_id!r} is subscribed to {topic!r} right now; stop its consumers first.")
        _check_partition_errors(group_id, answer, "offset deletion")
        return len(parts)

    return conn.call(run, "offset deletion", requests=6)


def _check_share_errors(group_id: str, refused: Mapping[Any, str | None], what: str) -> None:
    """Raise for the errors a share group's offset change answered (readable sentences per partition or
    topic); a group with members is GroupActive, as for consumer groups."""
    failed = {key: error for key, error in refused.items() if error}
    if not failed:
        return
    if any("still has members" in error for error in failed.values()):
        raise GroupActive(group_id, [])
    names = ", ".join(
        f"{'-'.join(str(k) for k in key) if isinstance(key, tuple) else key}: {error}"
        for key, error in sorted(failed.items(), key=lambda item: str(item[0]))
    )
    raise KafkaRefused(f"Kafka refused the {what} of share group {group_id!r}: {names}")


def _check_partition_errors(group_id: str, answer: dict[TopicPartition, Any], what: str) -> None:
    """Raise for partition-level errors in an offset commit or deletion answer (they are returned, not raised)."""
    failed = {tp: err for tp, err in answer.items() if err is not kafka.errors.NoError and err is not None}
    if not failed:
        return
    if any(
        err
        in (
            kafka.errors.UnknownMemberIdError,
            kafka.errors.RebalanceInProgressError,
            kafka.errors.IllegalGenerationError,
        )
        for err in failed.values()
    ):
        raise GroupActive(group_id, [])
    names = ", ".join(
        f"{tp.topic}-{tp.partition}: {getattr(err, '__name__', err)}" for tp, err in sorted(failed.items())
    )
    raise KafkaRefused(f"Kafka refused the {what} of group {group_id!r}: {names}")
