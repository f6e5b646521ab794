"""Consumer groups and their lag, in messages and in time, fetched in batches whatever the group count.

One listing makes: ListGroups per broker (which also says each group's type), one batched
FindCoordinator, per coordinator one describe request per type (DescribeGroups for classic groups,
ConsumerGroupDescribe for KIP-848 consumer groups, ShareGroupDescribe for share groups) and one
OffsetFetch for every group at once (KIP-709), or DescribeShareGroupOffsets for share groups;
ListOffsets per partition leader, and, for lag in time, one fetch per leader reading the first
unconsumed message of each lagging partition (fetch requests of our own, answered at once: a consumer
would wait out its time where only transaction markers follow a committed offset). Never one request
per group.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetSpec

from broker.client.connection import ClusterConnection, live_brokers
from broker.errors import ClusterUnavailable, NotFound
from broker.groups import classic, consumer_share
from broker.messages.log import records_given
from broker.messages.stamps import first_timestamps
from broker.topics.read import SILENT_ERRORS, partition_offsets, topic_leaders

# Lag in time reads one message per (partition, committed offset); a listing reads at most this many,
# the most lagging first; what the deadline does not reach shows no lag in time rather than slow the page.
MAX_TIME_LOOKUPS = 20_000


class GroupNotFound(NotFound):
    """No consumer group of that id."""


# Group types, as ListGroups (v5+) names them; a cluster that does not say has classic groups only.
CLASSIC, CONSUMER, SHARE = "classic", "consumer", "share"


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str
    assignment: list[tuple[str, int]]
    # KIP-848 consumer and share groups: the member's epoch, the topics it subscribed to, and (consumer
    # groups) what the coordinator is moving it to.
    member_epoch: int | None = None
    subscribed: tuple[str, ...] = ()
    target_assignment: list[tuple[str, int]] | None = None

    def as_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "member_id": self.member_id,
            "client_id": self.client_id,
            "host": self.host,
            "assignment": [{"topic": t, "partition": p} for t, p in self.assignment],
        }
        if self.member_epoch is not None:
            shown["member_epoch"] = self.member_epoch
            shown["subscribed_topics"] = list(self.subscribed)
        if self.target_assignment is not None:
            shown["target_assignment"] = [{"topic": t, "partition": p} for t, p in self.target_assignment]
        return shown


@dataclass(frozen=True)
class PartitionLag:
    """One row of ``kafka-consumer-groups --describe``, plus lag in time."""

    topic: str
    partition: int
    committed: int | None  # None: the group never committed here
    log_end: int | None
    member_id: str | None
    client_id: str | None
    host: str | None
    lag_ms: int | None = None  # age of the oldest unconsumed message; None when none waits (markers at most)
    stable_end: int | None = None  # the last stable offset: read_committed consumers read no further
    # Records a read_committed consumer at the committed offset is still given (markers and aborted records
    # do not count): 0 for a group that read every committed record, though the high watermark is a
    # commit marker further on.
    stable_lag: int | None = None
    # Share groups: the lag Kafka reports from the start offset (records not yet acknowledged), when it does.
    share_lag: int | None = None

    @property
    def lag(self) -> int | None:
        if self.share_lag is not None:
            return self.share_lag
        if self.committed is None or self.log_end is None:
            return None
        return max(0, self.log_end - self.committed)

    @property
    def waiting_end(self) -> int | None:
        """Where the records waiting for this group end, for judging it: the log end, or the committed
        offset plus ``stable_lag`` when that is less (a group that read every committed record is caught
        up, though a commit marker stands between it and the log end)."""
        if self.log_end is None or self.committed is None or self.stable_lag is None:
            return self.log_end
        return min(self.log_end, self.committed + self.stable_lag)

    @property
    def lags_differ(self) -> bool:
        """Whether lag at the high watermark and lag for a read_committed consumer differ (say both)."""
        return self.stable_lag is not None and self.lag is not None and self.stable_lag != self.lag

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "committed_offset": self.committed,
            "log_end_offset": self.log_end,
            "lag": self.lag,
            "last_stable_offset": self.stable_end,
            "lag_read_committed": self.stable_lag,
            "lag_ms": self.lag_ms,
            "member": self.member_id,
            "host": self.host,
            "client_id": self.client_id,
        }


@dataclass(frozen=True)
class GroupLag:
    group_id: str
    state: str
    protocol_type: str
    protocol: str  # the assignor (classic: the protocol the members agreed on)
    members: list[Member]
    partitions: list[PartitionLag]
    fetched_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    type: str = CLASSIC
    # KIP-848 consumer and share groups: the group's epoch and the epoch of its target assignment.
    group_epoch: int | None = None
    assignment_epoch: int | None = None

    @property
    def topics(self) -> list[str]:
        return sorted({p.topic for p in self.partitions})

    @property
    def total_lag(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)

    @property
    def total_stable_lag(self) -> int:
        """Records read_committed consumers would still be given (see PartitionLag.stable_lag)."""
        return sum(p.stable_lag if p.stable_lag is not None else (p.lag or 0) for p in self.partitions)

    @property
    def max_lag_ms(self) -> int | None:
        known = [p.lag_ms for p in self.partitions if p.lag_ms is not None]
        return max(known) if known else None

    @property
    def uncommitted(self) -> int:
        return sum(1 for p in self.partitions if p.committed is None)

    @property
    def unknown_lag(self) -> int:
        """Committed partitions whose log end is unknown now (their leader did not answer): not in total_lag."""
        return sum(1 for p in self.partitions if p.committed is not None and p.log_end is None)

    @property
    def empty(self) -> bool:
        return not self.members

    def as_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "group_id": self.group_id,
            "type": self.type,
            "state": self.state,
            "protocol_type": self.protocol_type,
            "protocol": self.protocol,
            "members": len(self.members),
            "topics": self.topics,
            "total_lag": self.total_lag,
            "total_lag_read_committed": self.total_stable_lag,
            "lag_ms": self.max_lag_ms,
            "partitions_without_commit": self.uncommitted,
            "partitions_without_log_end": self.unknown_lag,
        }
        if self.type != CLASSIC:
            shown.update(assignor=self.protocol, group_epoch=self.group_epoch, assignment_epoch=self.assignment_epoch)
        return shown


# ---------------------------------------------------------------- reads


def _members(described: dict[str, Any]) -> list[Member]:
    members = []
    for m in described.get("members") or []:
        assignment = m.get("member_assignment") or {}
        pairs = [
            (a["topic"], p)
            for a in (assignment.get("assigned_partitions") or [] if isinstance(assignment, dict) else [])
            for p in a.get("partitions") or []
        ]
        members.append(
            Member(
                member_id=m.get("member_id", ""),
                client_id=m.get("client_id", ""),
                host=str(m.get("client_host", "")).lstrip("/"),
                assignment=sorted(pairs),
            )
        )
    return members


@dataclass(frozen=True)
class _Described:
    """A group as its coordinator describes it, whatever its type."""

    type: str
    state: str
    protocol_type: str
    protocol: str
    members: list[Member]
    group_epoch: int | None = None
    assignment_epoch: int | None = None


def _kip848_members(
    found: consumer_share.ConsumerGroupDescription | consumer_share.ShareGroupDescription,
) -> list[Member]:
    return [
        Member(
            member_id=m.member_id,
            client_id=m.client_id,
            host=m.client_host.lstrip("/"),
            assignment=list(m.assignment),
            member_epoch=m.member_epoch,
            subscribed=m.subscribed_topics,
            target_assignment=list(m.target_assignment) if isinstance(m, consumer_share.ConsumerGroupMember) else None,
        )
        for m in found.members
    ]


def _describe(admin: KafkaAdminClient, conn: ClusterConnection, typed: dict[str, str]) -> dict[str, _Described]:
    """Each group described by the request its type needs, all groups of a type at once. A group its
    type's request does not know (deleted meanwhile) is Dead with no members."""
    timeout_ms = int(conn.config.timeout * 1000)
    of_type: dict[str, list[str]] = defaultdict(list)
    for group_id, kind in typed.items():
        of_type[kind if kind in (CONSUMER, SHARE) else CLASSIC].append(group_id)
    found: dict[str, _Described] = {}
    if of_type[CLASSIC]:
        described = classic.describe_groups(admin, of_type[CLASSIC])
        for group_id in of_type[CLASSIC]:
            info = described.get(group_id) or {}
            found[group_id] = _Described(
                type=typed[group_id] if typed[group_id] not in (CONSUMER, SHARE) else CLASSIC,
                state=str(info.get("group_state") or "Unknown"),
                protocol_type=str(info.get("protocol_type") or ""),
                protocol=str(info.get("protocol_data") or ""),
                members=_members(info),
            )
    kip848: list[tuple[str, dict[str, Any]]] = []
    if of_type[CONSUMER]:
        kip848.append((CONSUMER, dict(consumer_share.describe_consumer_groups(admin, of_type[CONSUMER], timeout_ms))))
    if of_type[SHARE]:
        kip848.append((SHARE, dict(consumer_share.describe_share_groups(admin, of_type[SHARE], timeout_ms))))
    for kind, answers in kip848:
        for group_id in of_type[kind]:
            one = answers.get(group_id)
            if one is None or one.error:
                found[group_id] = _Described(kind, "Dead", kind, "", [])
                continue
            found[group_id] = _Described(
                type=kind,
                state=one.state,
                protocol_type=kind,
                protocol=one.assignor,
                members=_kip848_members(one),
                group_epoch=one.group_epoch,
                assignment_epoch=one.assignment_epoch,
            )
    return found


def _collect(
    admin: KafkaAdminClient, conn: ClusterConnection, typed: dict[str, str], with_time: bool
) -> list[GroupLag]:
    """Every group of ``typed`` ({group id: type}) with its lag, in the order of its ids."""
    group_ids = sorted(typed)
    if not group_ids:
        return []
    described = _describe(admin, conn, typed)
    offset_groups = [g for g in group_ids if typed[g] != SHARE]
    committed = admin.list_group_offsets({g: None for g in offset_groups}) if offset_groups else {}
    shares = [g for g in group_ids if typed[g] == SHARE]
    starts = consumer_share.share_group_offsets(admin, shares, int(conn.config.timeout * 1000)) if shares else {}
    rows: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
    for group_id in group_ids:
        by_tp: dict[tuple[str, int], dict[str, Any]] = {}
        for tp, meta in (committed.get(group_id) or {}).items():
            if meta.offset is not None and meta.offset >= 0:
                by_tp[(tp.topic, tp.partition)] = {"committed": meta.offset}
        share = starts.get(group_id)
        for (t, p), start in (share.partitions if share else {}).items():
            if start.start_offset is not None:
                by_tp[(t, p)] = {"committed": start.start_offset, "share_lag": start.lag}
        for member in described[group_id].members:
            for tp_key in member.assignment:
                row = by_tp.setdefault(tp_key, {"committed": None})
                row.update(member_id=member.member_id, client_id=member.client_id, host=member.host)
        rows[group_id] = by_tp
    wanted = sorted({TopicPartition(t, p) for by_tp in rows.values() for (t, p) in by_tp})
    ends, leaders = _log_ends(admin, conn, wanted)
    # Share consumers read every record (there is no read_committed share group to count for).
    stables, stable_lags = _stable_lags(
        admin, conn, {g: r for g, r in rows.items() if typed[g] != SHARE}, ends, leaders
    )
    times = _oldest_unconsumed(admin, conn, rows, ends, leaders) if with_time else {}
    result = []
    for group_id in group_ids:
        info = described[group_id]
        partitions = [
            PartitionLag(
                topic=t,
                partition=p,
                committed=row["committed"],
                log_end=ends.get(TopicPartition(t, p)),
                member_id=row.get("member_id"),
                client_id=row.get("client_id"),
                host=row.get("host"),
                lag_ms=times.get((group_id, t, p)),
                stable_end=stables.get(TopicPartition(t, p)),
                stable_lag=stable_lags.get((group_id, t, p)),
                share_lag=row.get("share_lag"),
            )
            for (t, p), row in sorted(rows[group_id].items())
        ]
        result.append(
            GroupLag(
                group_id=group_id,
                state=info.state,
                protocol_type=info.protocol_type,
                protocol=info.protocol,
                members=info.members,
                partitions=partitions,
                type=info.type,
                group_epoch=info.group_epoch,
                assignment_epoch=info.assignment_epoch,
            )
        )
    return result


def _log_ends(
    admin: KafkaAdminClient, conn: ClusterConnection, tps: list[TopicPartition]
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """Log-end offsets in one ListOffsets per leader, and the leaders; partitions of deleted topics are
    left out, and so are those of a leader that does not answer (their lag shows as unknown)."""
    if not tps:
        return {}, {}
    existing = {t["name"]: t for t in admin.describe_topics(sorted({tp.topic for tp in tps}))}
    leaders = {
        tp: leader
        for tp, leader in topic_leaders([t for t in existing.values() if not t.get("error_code")]).items()
        if leader >= 0
    }
    readable = [tp for tp in tps if tp in leaders]
    return partition_offsets(admin, conn, readable, OffsetSpec.LATEST, leaders), leaders


def _stable_lags(
    admin: KafkaAdminClient,
    conn: ClusterConnection,
    rows: dict[str, dict[tuple[str, int], dict[str, Any]]],
    ends: dict[TopicPartition, int],
    leaders: dict[TopicPartition, int],
) -> tuple[dict[TopicPartition, int], dict[tuple[str, str, int], int]]:
    """The last stable offsets (one ListOffsets per leader, read_committed), and for each (group, topic,
    partition) whose committed offset is below it, the records a read_committed consumer is still given
    (broker.messages.log.records_given: one fetch per leader). A partition whose LSO is unknown has none."""
    stables = partition_offsets(admin, conn, list(ends), OffsetSpec.LATEST, leaders, isolation="read_committed")
    ranges: dict[tuple[str, str, int], tuple[str, int, int, int]] = {}
    lags: dict[tuple[str, str, int], int] = {}
    for group_id, by_tp in rows.items():
        for (t, p), row in by_tp.items():
            stable, committed = stables.get(TopicPartition(t, p)), row["committed"]
            if stable is None or committed is None:
                continue
            if committed >= stable:
                lags[(group_id, t, p)] = 0
            else:
                ranges[(group_id, t, p)] = (t, p, committed, stable)
    if ranges:
        by_place = {(tp.topic, tp.partition): leader for tp, leader in leaders.items()}
        lags.update(records_given(admin, ranges, by_place, int(conn.config.timeout * 1000)))
    return stables, lags


def _group_ids(admin: KafkaAdminClient, conn: ClusterConnection) -> dict[str, str]:
    """Every group the brokers know, with its type ({id: "classic" | "consumer" | "share" | ...}): a
    ListGroups to each broker alone (each lists the groups it coordinates), so that a broker that does
    not answer costs one time-out and is then left out, with its groups, while it counts as silent
    (ClusterConnection.silent_brokers), rather than fail the list."""
    ids: dict[str, str] = {}
    for broker in sorted(b["broker_id"] for b in live_brokers(admin, conn)):
        if conn.is_silent(broker):
            continue
        try:
            for g in admin.list_groups(broker_ids=[broker]):
                ids[g["group_id"]] = str(g.get("group_type") or CLASSIC).lower()
        except SILENT_ERRORS:
            conn.mark_silent(broker)
    conn.group_types.update(ids)
    return dict(sorted(ids.items()))


def _oldest_unconsumed(
    admin: KafkaAdminClient,
    conn: ClusterConnection,
    rows: dict[str, dict[tuple[str, int], dict[str, Any]]],
    ends: dict[TopicPartition, int],
    leaders: dict[TopicPartition, int],
) -> dict[tuple[str, str, int], int]:
    """{(group, topic, partition): age in ms of the first unconsumed message} for lagging partitions; none
    where only transaction markers stand between the committed offset and the log end (nothing waits).

    Reads one message per distinct (partition, offset) not read before (conn.timestamps), all partitions
    at once, so the brokers get one fetch each rather than one per partition.
    """
    targets: dict[tuple[str, int, int], list[str]] = defaultdict(list)
    lag_of: dict[tuple[str, int, int], int] = {}
    for group_id, by_tp in rows.items():
        for (t, p), row in by_tp.items():
            end = ends.get(TopicPartition(t, p))
            if row.get("share_lag") == 0:
                continue  # a share group that acknowledged everything it was given waits for nothing
            if row["committed"] is not None and end is not None and end > row["committed"]:
                targets[(t, p, row["committed"])].append(group_id)
                lag_of[(t, p, row["committed"])] = end - row["committed"]
    if not targets:
        return {}
    chosen = {k: targets[k] for k in sorted(targets, key=lambda k: -lag_of[k])[:MAX_TIME_LOOKUPS]}
    stamps = conn.timestamps.known(list(chosen))
    if missing := [k for k in chosen if k not in stamps]:
        read = read_timestamps(conn, missing, admin=admin, leaders=leaders)
        conn.timestamps.learn(read)
        stamps.update(read)
    now = int(time.time() * 1000)
    return {
        (g, t, p): max(0, now - stamps[(t, p, o)])
        for (t, p, o), groups in chosen.items()
        if (t, p, o) in stamps
        for g in groups
    }


def read_timestamps(
    conn: ClusterConnection,
    wanted: list[tuple[str, int, int]],
    *,
    admin: KafkaAdminClient,
    leaders: dict[TopicPartition, int],
) -> dict[tuple[str, int, int], int]:
    """{(topic, partition, offset): timestamp ms} of the first record at or after each offset, for those
    that have one before the high watermark (broker.messages.stamps: a fetch per leader a round, which,
    unlike a consumer, sees that only transaction markers follow an offset and stops there).

    Several offsets of one partition are read one after another; different partitions at once, within one
    deadline: lag in time is worth a moment, not a slow page. Silent leaders are not asked.
    """
    places = {(tp.topic, tp.partition): leader for tp, leader in leaders.items() if not conn.is_silent(leader)}
    timeout = conn.config.timeout
    try:
        return first_timestamps(admin, wanted, places, int(timeout * 1000), time.monotonic() + timeout)
    except (kafka.errors.KafkaError, ClusterUnavailable):
        return {}  # no lag in time this once (a broker did not answer): the rest of the page still shows


def list_group_ids(conn: ClusterConnection) -> list[str]:
    """Every group id the brokers know (one ListGroups per broker). Raises ClusterUnavailable."""
    return conn.call(lambda admin: list(_group_ids(admin, conn)), "group list", requests=4, retry=True)


def get_groups(conn: ClusterConnection, with_time: bool = True) -> list[GroupLag]:
    """Every consumer group with its state, members and per-partition lag, sorted by id.

    Raises ClusterUnavailable.
    """

    def fetch(admin: KafkaAdminClient) -> list[GroupLag]:
        return _collect(admin, conn, _group_ids(admin, conn), with_time)

    return conn.reads.get(("groups", with_time), lambda: conn.call(fetch, "group list", requests=8, retry=True))


def get_group(conn: ClusterConnection, group_id: str, with_time: bool = True) -> GroupLag:
    """One group with every partition it has committed or is assigned.

    Raises GroupNotFound (no members and no committed offsets), ClusterUnavailable.
    """

    return conn.reads.get(
        ("group", group_id, with_time),
        lambda: conn.call(
            lambda admin: _one_group(admin, conn, group_id, with_time), "group description", requests=8, retry=True
        ),
    )


def _one_group(admin: KafkaAdminClient, conn: ClusterConnection, group_id: str, with_time: bool) -> GroupLag:
    """One group; raises GroupNotFound when Kafka knows neither members nor committed offsets for it."""
    kind = conn.group_types.get(group_id) or _type_of(admin, conn, group_id)
    found = _collect(admin, conn, {group_id: kind}, with_time)[0]
    if found.state in ("Dead", "Unknown") and not found.partitions:
        conn.group_types.pop(group_id, None)  # gone, or of another type now: asked afresh next time
        raise GroupNotFound(f"No consumer group {group_id!r} in cluster {conn.config.name!r}.")
    return found


def _type_of(admin: KafkaAdminClient, conn: ClusterConnection, group_id: str) -> str:
    """A group's type when no listing told it: a classic describe, then (on a cluster that has them) the
    KIP-848 consumer and share group describes, until one knows the group."""
    info = classic.describe_groups(admin, [group_id]).get(group_id) or {}
    if str(info.get("group_state") or "Dead") not in ("Dead", "Unknown") or conn.mode() != "kraft":
        return CLASSIC
    timeout_ms = int(conn.config.timeout * 1000)
    for kind, describe in (
        (CONSUMER, consumer_share.describe_consumer_groups),
        (SHARE, consumer_share.describe_share_groups),
    ):
        try:
            answer = describe(admin, [group_id], timeout_ms).get(group_id)
        except consumer_share.NotSupportedByCluster:
            continue
        if answer is not None and answer.error is None:
            conn.group_types[group_id] = kind
            return kind
    return CLASSIC
