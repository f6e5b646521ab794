"""Topics and partitions as the cluster describes them: list, describe, offsets, sizes (changes are in changes.py).

Reads are batched whatever the number of topics: one metadata request for every topic,
one ListOffsets request per partition leader for each of earliest and latest, one
DescribeLogDirs per broker, one DescribeConfigs for every topic. Never one per topic.

A broker that does not answer (frozen, stopped, cut off) leaves out only what it alone can
tell: the offsets of the partitions it leads and the sizes of its replicas. It is then left
alone for a while (``ClusterConnection.mark_silent``), so pages stay quick while it is gone.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, OffsetSpec
from kafka.protocol.consumer.offsets import IsolationLevel

from broker.client.connection import ClusterConnection, live_brokers
from broker.errors import (
    InvalidInput,
    PartitionNotFound,
    TopicNotFound,
)
from broker.zk.fourletter import serving

TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
# Topic configs the create form offers; any other valid topic config may be given as key=value too.
COMMON_CONFIGS = (
    "retention.ms",
    "retention.bytes",
    "cleanup.policy",
    "min.insync.replicas",
    "segment.bytes",
    "max.message.bytes",
    "compression.type",
)
# What a broker that does not answer (or cannot be reached) makes kafka-python raise.
SILENT_ERRORS = (
    kafka.errors.RequestTimedOutError,
    kafka.errors.KafkaTimeoutError,
    kafka.errors.KafkaConnectionError,
    kafka.errors.NodeNotReadyError,
)


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int | None
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int] = field(default_factory=list)
    start_offset: int | None = None
    end_offset: int | None = None
    size: int | None = None  # bytes of the leader's replica
    error: str | None = None

    @property
    def available(self) -> bool:
        return self.leader is not None

    @property
    def messages(self) -> int | None:
        if self.start_offset is None or self.end_offset is None:
            return None
        return self.end_offset - self.start_offset

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def out_of_sync(self) -> list[int]:
        return [r for r in self.replicas if r not in self.isr]

    @property
    def preferred_leader(self) -> int | None:
        return self.replicas[0] if self.replicas else None

    @property
    def leader_is_preferred(self) -> bool:
        return self.leader is not None and self.leader == self.preferred_leader

    def as_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "leader": self.leader,
            "replicas": self.replicas,
            "isr": self.isr,
            "out_of_sync_replicas": self.out_of_sync,
            "offline_replicas": self.offline_replicas,
            "preferred_leader": self.preferred_leader,
            "leader_is_preferred": self.leader_is_preferred,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "messages": self.messages,
            "size": self.size,
            "available": self.available,
            "error": self.error,
        }


@dataclass(frozen=True)
class TopicSummary:
    name: str
    internal: bool
    partitions: int
    replication_factor: int
    messages: int | None
    size: int | None  # bytes on disk over every replica
    under_replicated: int
    offline: int
    under_min_isr: int
    min_isr: int | None  # known for topics with a shrunken ISR, and on a topic's own page
    # Partitions whose messages are not in ``messages`` (no leader, or a leader that did not answer).
    uncounted: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "internal": self.internal,
            "partitions": self.partitions,
            "replication_factor": self.replication_factor,
            "messages": self.messages,
            "uncounted_partitions": self.uncounted,
            "size": self.size,
            "under_replicated_partitions": self.under_replicated,
            "offline_partitions": self.offline,
            "under_min_isr_partitions": self.under_min_isr,
            "min_insync_replicas": self.min_isr,
        }


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str
    is_default: bool
    sensitive: bool
    read_only: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "source": self.source,
            "is_default": self.is_default,
            "sensitive": self.sensitive,
            "read_only": self.read_only,
        }


@dataclass(frozen=True)
class TopicDetail:
    summary: TopicSummary
    topic_id: str | None
    partitions: list[PartitionInfo]
    configs: list[ConfigEntry]
    configs_error: str | None = None  # why the configuration is not shown

    @property
    def name(self) -> str:
        return self.summary.name

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.summary.as_dict(),
            "topic_id": self.topic_id,
            "partitions": [p.as_dict() for p in self.partitions],
            "configs": [c.as_dict() for c in self.configs],
            "configs_error": self.configs_error,
        }


# ---------------------------------------------------------------- validation


def check_topic_name(name: str) -> str:
    """The name if Kafka would accept it; raises InvalidInput saying why not."""
    if name in (".", ".."):
        raise InvalidInput("A topic cannot be named '.' or '..'.")
    if not TOPIC_NAME.match(name):
        raise InvalidInput("A topic name is 1 to 249 characters of letters, digits, '.', '_' and '-'.")
    return name


# ---------------------------------------------------------------- reads


def _describe_topic(admin: KafkaAdminClient, conn: ClusterConnection, name: str) -> dict[str, Any]:
    """The metadata of one topic; raises TopicNotFound.

    Each broker answers metadata from its own cache, which lags the controller for a moment
    after a topic is created or a broker restarts: an unknown topic is asked for twice more,
    a quarter of a second apart, before it is called unknown.
    """
    for attempt in range(3):
        described = admin.describe_topics([name])
        unknown = not described or described[0].get("error_code") == kafka.errors.UnknownTopicOrPartitionError.errno
        if not unknown:
            found: dict[str, Any] = described[0]
            return found
        if attempt < 2:
            time.sleep(0.25)
    raise TopicNotFound(f"No topic named {name!r} in cluster {conn.config.name!r}.")


def _partitions_of(topic: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(topic.get("partitions") or [], key=lambda p: p["partition_index"])


def topic_leaders(topics: list[dict[str, Any]]) -> dict[TopicPartition, int]:
    return {
        TopicPartition(t["name"], p["partition_index"]): p.get("leader_id", -1)
        for t in topics
        for p in _partitions_of(t)
    }


_ISOLATION = {"read_uncommitted": IsolationLevel.READ_UNCOMMITTED, "read_committed": IsolationLevel.READ_COMMITTED}


def partition_offsets(
    admin: KafkaAdminClient,
    conn: ClusterConnection,
    tps: list[TopicPartition],
    spec: Any,
    leaders: dict[TopicPartition, int],
    isolation: str = "read_uncommitted",
    insist: bool = False,
) -> dict[TopicPartition, int]:
    """Offsets for ``tps`` in one request per leader; partitions that fail are left out, and so are those
    of silent leaders. When the answer times out, each leader is asked alone to find the silent one.
    With ``isolation="read_committed"``, LATEST is the last stable offset.

    ``insist``: silent leaders are asked too, and one that does not answer is not asked twice. For a read
    of one partition somebody asked for: a leader marked silent by another caller's time-out (a moment of
    overload is enough) would otherwise fail that read at once, for SILENT_ROUNDS time-outs."""
    wanted = tps if insist else [tp for tp in tps if not conn.is_silent(leaders.get(tp, -1))]
    if not wanted:
        return {}
    try:
        found = _ask_offsets(admin, wanted, spec, isolation)
    except SILENT_ERRORS:
        asked = {leaders.get(tp, -1) for tp in wanted}
        if insist and len(asked) == 1:
            conn.mark_silent(asked.pop())
            return {}
    except kafka.errors.UnknownBrokerIdError:
        raise  # the client is out of date: the connection builds a new one
    except kafka.errors.KafkaError:
        return _offsets_per_topic(admin, wanted, spec, isolation)
    else:
        conn.note_answered({leaders.get(tp, -1) for tp in wanted})
        return found
    by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
    for tp in wanted:
        by_leader[leaders.get(tp, -1)].append(tp)
    result: dict[TopicPartition, int] = {}
    for leader, group in by_leader.items():
        try:
            result.update(_offsets_per_topic(admin, group, spec, isolation))
        except SILENT_ERRORS:
            conn.mark_silent(leader)
        else:
            conn.note_answered([leader])
    return result


def _ask_offsets(
    admin: KafkaAdminClient, tps: list[TopicPartition], spec: Any, isolation: str = "read_uncommitted"
) -> dict[TopicPartition, int]:
    answer = admin.list_partition_offsets(dict.fromkeys(tps, spec), isolation_level=_ISOLATION[isolation])
    return {tp: o.offset for tp, o in answer.items()}


def _offsets_per_topic(
    admin: KafkaAdminClient, tps: list[TopicPartition], spec: Any, isolation: str = "read_uncommitted"
) -> dict[TopicPartition, int]:
    """One bad partition fails a whole answer: asked per topic, so the rest still shows. A silent broker's
    error is raised."""
    by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
    for tp in tps:
        by_topic[tp.topic].append(tp)
    result: dict[TopicPartition, int] = {}
    for group in by_topic.values():
        try:
            result.update(_ask_offsets(admin, group, spec, isolation))
        except (*SILENT_ERRORS, kafka.errors.UnknownBrokerIdError):
            raise
        except kafka.errors.KafkaError:
            continue
    return result


def replica_sizes(
    admin: KafkaAdminClient, conn: ClusterConnection, brokers: list[int], topics: list[dict[str, Any]]
) -> dict[tuple[str, int, int], int]:
    """{(topic, partition, broker): bytes} from one DescribeLogDirs request per live broker that is not
    silent (when the answer times out, each is asked alone to find the silent one).

    The partitions are named from the metadata already at hand: without them the client
    would fetch every topic's metadata once more.
    """
    sizes: dict[tuple[str, int, int], int] = {}
    wanted = {t["name"]: [p["partition_index"] for p in _partitions_of(t)] for t in topics}
    brokers = [b for b in brokers if not conn.is_silent(b)]
    if not wanted or not brokers:
        return sizes
    try:
        answers = admin.describe_log_dirs(topic_partitions=wanted, brokers=brokers)
    except SILENT_ERRORS:
        answers = []
        for broker in brokers:
            try:
                answers += admin.describe_log_dirs(topic_partitions=wanted, brokers=[broker])
            except SILENT_ERRORS:
                conn.mark_silent(broker)
            except kafka.errors.UnknownBrokerIdError:
                raise
            except kafka.errors.KafkaError:
                continue
    except kafka.errors.UnknownBrokerIdError:
        raise
    except kafka.errors.KafkaError:
        return sizes
    for answer in answers:
        broker = answer["broker"]
        for log_dir in answer["log_dirs"]:
            for topic in log_dir.get("topics", []):
                for p in topic.get("partitions", []):
                    if not p.get("is_future_key"):
                        sizes[(topic["name"], p["partition_index"], broker)] = p["partition_size"]
    return sizes


def min_isr_of(admin: KafkaAdminClient, conn: ClusterConnection, names: list[str]) -> dict[str, int]:
    """Each topic's min.insync.replicas, in one DescribeConfigs; topics not answered are left out."""
    if not names:
        return {}
    resources = [ConfigResource(ConfigResourceType.TOPIC, n, ["min.insync.replicas"]) for n in names]
    try:
        described = _describe_configs(admin, conn, resources)
    except kafka.errors.KafkaError:
        return {}
    if described is None:
        return {}
    result = {}
    for name, configs in described.get("topic", {}).items():
        entry = configs.get("min.insync.replicas")
        if entry and entry.get("value") is not None:
            result[name] = int(entry["value"])
    return result


def retention_ms_of(conn: ClusterConnection, names: list[str]) -> dict[str, int]:
    """Each topic's retention.ms (-1: kept for ever), in one DescribeConfigs; topics not answered are left out
    (and every topic while the brokers cannot give configs: see _describe_configs)."""
    if not names:
        return {}

    def fetch(admin: KafkaAdminClient) -> dict[str, int]:
        resources = [ConfigResource(ConfigResourceType.TOPIC, n, ["retention.ms"]) for n in names]
        described = _describe_configs(admin, conn, resources)
        found = {}
        for name, configs in (described or {}).get("topic", {}).items():
            entry = configs.get("retention.ms")
            if entry and entry.get("value") not in (None, ""):
                found[name] = int(entry["value"])
        return found

    try:
        return conn.call(fetch, "retention of topics", retry=True)
    except kafka.errors.KafkaError:
        return {}


def _zookeeper_away(conn: ClusterConnection) -> bool:
    """True while a request the brokers need ZooKeeper for timed out (conn.zookeeper_stalled_at) and
    ZooKeeper still does not serve (with no ZooKeeper configured: for ten time-outs after the stall)."""
    stalled = conn.zookeeper_stalled_at
    if stalled is None or conn.mode() == "kraft":
        return False
    zookeeper = conn.zookeeper_connect
    if zookeeper:
        return not serving(zookeeper, conn.config.timeout)
    return time.monotonic() - stalled <= conn.config.timeout * 10


def _describe_configs(
    admin: KafkaAdminClient, conn: ClusterConnection, resources: list[ConfigResource]
) -> dict[str, Any] | None:
    """``describe_configs`` of topics, or None when the brokers cannot give it in time.

    A ZooKeeper-mode broker reads topic configurations from ZooKeeper and holds the request, and
    one of its few request threads, for as long as ZooKeeper is down: asking again on every page
    would take every thread, and the broker would answer nothing else. So after one time-out they
    are asked again only once ZooKeeper serves (or, with no ZooKeeper configured, after a while).
    """
    if _zookeeper_away(conn):
        return None
    try:
        described: dict[str, Any] = admin.describe_configs(resources, config_filter="all")
    except SILENT_ERRORS:
        if conn.mode() != "kraft":
            conn.zookeeper_stalled_at = time.monotonic()
        return None
    conn.zookeeper_stalled_at = None
    return described


def ends_and_sizes(
    admin: KafkaAdminClient, conn: ClusterConnection, topics: list[dict[str, Any]]
) -> tuple[dict[TopicPartition, int], list[TopicPartition], dict[TopicPartition, int], dict[tuple[str, int, int], int]]:
    """What a listing and a throughput look both ask of ``topics`` (their metadata): each partition's leader (-1:
    none), the partitions with a leader, their end offsets (silent leaders left out) and every replica's size on
    the live brokers ({(topic, partition, broker): bytes})."""
    leaders = topic_leaders(topics)
    readable = [tp for tp, leader in leaders.items() if leader >= 0]
    ends = partition_offsets(admin, conn, readable, OffsetSpec.LATEST, leaders)
    brokers = [b["broker_id"] for b in live_brokers(admin, conn)]
    return leaders, readable, ends, replica_sizes(admin, conn, brokers, topics)


def _collect(
    admin: KafkaAdminClient, conn: ClusterConnection, topics: list[dict[str, Any]]
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int], dict[tuple[str, int, int], int], dict[str, int]]:
    leaders, readable, ends, sizes = ends_and_sizes(admin, conn, topics)
    starts = partition_offsets(admin, conn, readable, OffsetSpec.EARLIEST, leaders)
    # A partition whose ISR holds every replica cannot be under its minimum ISR, so the
    # setting is only needed for topics with a shrunken ISR: asking every topic for it
    # costs the broker more than all the other requests of a listing together.
    shrunk = [
        t["name"]
        for t in topics
        if any(len(p.get("isr_nodes") or []) < len(p.get("replica_nodes") or []) for p in _partitions_of(t))
    ]
    min_isr = min_isr_of(admin, conn, shrunk)
    return starts, ends, sizes, min_isr


def _build_partitions(
    topic: dict[str, Any],
    starts: dict[TopicPartition, int],
    ends: dict[TopicPartition, int],
    sizes: dict[tuple[str, int, int], int],
    conn: ClusterConnection,
) -> list[PartitionInfo]:
    result = []
    for p in _partitions_of(topic):
        tp = TopicPartition(topic["name"], p["partition_index"])
        leader = p.get("leader_id", -1)
        error_code = p.get("error_code", 0)
        error = None
        if leader < 0:
            error = "no leader: the partition is unavailable"
        elif conn.is_silent(leader) and (tp not in starts or tp not in ends):
            error = f"its leader, broker {leader}, did not answer within {conn.config.timeout:g} s"
        elif error_code:
            error = kafka.errors.for_code(error_code).__name__
        result.append(
            PartitionInfo(
                partition=p["partition_index"],
                leader=leader if leader >= 0 else None,
                replicas=list(p.get("replica_nodes") or []),
                isr=list(p.get("isr_nodes") or []),
                offline_replicas=list(p.get("offline_replicas") or []),
                start_offset=starts.get(tp),
                end_offset=ends.get(tp),
                size=sizes.get((tp.topic, tp.partition, leader)) if leader >= 0 else None,
                error=error,
            )
        )
    return result


def _summary(
    topic: dict[str, Any], partitions: list[PartitionInfo], sizes: dict[tuple[str, int, int], int], min_isr: int | None
) -> TopicSummary:
    counts = [p.messages for p in partitions]
    replica_sizes = [v for (t, _, _), v in sizes.items() if t == topic["name"]] if sizes else []
    return TopicSummary(
        name=topic["name"],
        internal=bool(topic.get("is_internal")),
        partitions=len(partitions),
        replication_factor=max((len(p.replicas) for p in partitions), default=0),
        messages=sum(c for c in counts if c is not None) if any(c is not None for c in counts) else None,
        size=sum(replica_sizes) if replica_sizes else None,
        under_replicated=sum(1 for p in partitions if p.under_replicated),
        offline=sum(1 for p in partitions if not p.available),
        under_min_isr=sum(1 for p in partitions if min_isr is not None and len(p.isr) < min_isr),
        min_isr=min_isr,
        uncounted=sum(1 for c in counts if c is None),
    )


def get_topics(conn: ClusterConnection, include_internal: bool = False) -> list[TopicSummary]:
    """Every topic (internal ones only when asked) with counts, sizes and health, sorted by name.

    Raises ClusterUnavailable.
    """

    def fetch(admin: KafkaAdminClient) -> list[TopicSummary]:
        topics = [t for t in admin.describe_topics() if include_internal or not t.get("is_internal")]
        starts, ends, sizes, min_isr = _collect(admin, conn, topics)
        # Index the replica sizes by topic once, so summing is linear in partitions.
        by_topic: dict[str, dict[tuple[str, int, int], int]] = defaultdict(dict)
        for key, value in sizes.items():
            by_topic[key[0]][key] = value
        summaries = []
        for t in topics:
            parts = _build_partitions(t, starts, ends, by_topic[t["name"]], conn)
            summaries.append(_summary(t, parts, by_topic[t["name"]], min_isr.get(t["name"])))
        return sorted(summaries, key=lambda s: s.name)

    return conn.reads.get(("topics", include_internal), lambda: conn.call(fetch, "topic list", requests=6, retry=True))


def get_topic(conn: ClusterConnection, name: str) -> TopicDetail:
    """One topic with its partitions (leader, replicas, ISR, offsets, size) and its configuration.

    Raises TopicNotFound, ClusterUnavailable.
    """

    def fetch(admin: KafkaAdminClient) -> TopicDetail:
        topic = _describe_topic(admin, conn, name)
        starts, ends, sizes, _ = _collect(admin, conn, [topic])
        partitions = _build_partitions(topic, starts, ends, sizes, conn)
        configs = _topic_configs(admin, conn, name)
        min_isr = next((int(c.value) for c in configs or [] if c.name == "min.insync.replicas" and c.value), None)
        return TopicDetail(
            summary=_summary(topic, partitions, sizes, min_isr),
            topic_id=str(topic.get("topic_id")) if topic.get("topic_id") else None,
            partitions=partitions,
            configs=configs or [],
            configs_error=None
            if configs is not None
            else (
                f"The configuration is not shown: the brokers did not give it within {conn.config.timeout:g} s"
                + (
                    "; try again in a moment."
                    if conn.mode() == "kraft"
                    else " (in ZooKeeper mode they read it from ZooKeeper, which may be down)."
                )
            ),
        )

    return conn.reads.get(("topic", name), lambda: conn.call(fetch, "topic description", requests=8, retry=True))


def _topic_configs(admin: KafkaAdminClient, conn: ClusterConnection, name: str) -> list[ConfigEntry] | None:
    """The topic's configuration, or None when the brokers cannot give it in time (see _describe_configs)."""
    described = _describe_configs(admin, conn, [ConfigResource(ConfigResourceType.TOPIC, name)])
    if described is None:
        return None
    entries = []
    for key, entry in sorted(described.get("topic", {}).get(name, {}).items()):
        source = str(entry.get("config_source", "UNKNOWN"))
        sensitive = bool(entry.get("is_sensitive"))
        entries.append(
            ConfigEntry(
                name=key,
                value=None if sensitive else entry.get("value"),
                source=source,
                is_default=source in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
                sensitive=sensitive,
                read_only=bool(entry.get("read_only")),
            )
        )
    return entries


def get_partition(conn: ClusterConnection, topic: str, partition: int) -> PartitionInfo:
    """One partition of a topic; raises TopicNotFound, PartitionNotFound, ClusterUnavailable."""
    detail = get_topic_partitions(conn, topic)
    for p in detail:
        if p.partition == partition:
            return p
    raise PartitionNotFound(f"Topic {topic!r} has no partition {partition} (it has 0 to {len(detail) - 1}).")


def get_topic_leaders(conn: ClusterConnection, topic: str) -> list[PartitionInfo]:
    """The partitions of ``topic`` with leaders and replicas and no offsets, in one metadata request: for a
    read whose own fetch answers say where the partition starts and ends. Raises TopicNotFound,
    ClusterUnavailable."""

    def fetch(admin: KafkaAdminClient) -> list[PartitionInfo]:
        return _build_partitions(_describe_topic(admin, conn, topic), {}, {}, {}, conn)

    return conn.reads.get(("leaders", topic), lambda: conn.call(fetch, "topic metadata", retry=True))


def get_topic_partitions(conn: ClusterConnection, topic: str, only: int | None = None) -> list[PartitionInfo]:
    """The partitions of ``topic`` with leaders and offsets (no sizes, no configs): the cheap read that
    message browsing needs. With ``only``, offsets are read for that partition alone (the others carry
    leaders and replicas but no offsets). Raises TopicNotFound, ClusterUnavailable."""

    def fetch(admin: KafkaAdminClient) -> list[PartitionInfo]:
        described = [_describe_topic(admin, conn, topic)]
        readable = [
            TopicPartition(topic, p["partition_index"])
            for p in _partitions_of(described[0])
            if p.get("leader_id", -1) >= 0 and (only is None or p["partition_index"] == only)
        ]
        leaders = topic_leaders(described)
        # One partition is read because somebody asked for it: its leader is asked even when another
        # caller's time-out marked it silent (once: what did not answer then is not asked again).
        one = only is not None
        starts = partition_offsets(admin, conn, readable, OffsetSpec.EARLIEST, leaders, insist=one)
        ends = partition_offsets(admin, conn, readable, OffsetSpec.LATEST, leaders, insist=one and bool(starts))
        return _build_partitions(described[0], starts, ends, {}, conn)

    return conn.reads.get(
        ("partitions", topic, only), lambda: conn.call(fetch, "partition offsets", requests=4, retry=True)
    )
