"""Partition reassignment and leader election, as ``kafka-reassign-partitions`` and ``kafka-leader-election``.

A proposal spreads the chosen topics' partitions over the chosen brokers the way ``--generate`` does
(round-robin from a start broker, followers shifted so that replicas of consecutive partitions land on
different brokers; racks alternate when the brokers have them), and says per partition how many bytes
would be copied. A plan (Kafka's JSON: ``{"version": 1, "partitions": [{"topic", "partition",
"replicas"}]}``) is checked against the cluster before anything is sent: unknown brokers, duplicates and
replication factors above the broker count are refused with the reason. Executing sets an optional
replication throttle (the brokers' ``*.replication.throttled.rate`` and the topics'
``*.replication.throttled.replicas``) and sends one AlterPartitionReassignments; progress comes from
ListPartitionReassignments; once nothing moves, verifying removes the throttle.
"""

from __future__ import annotations

import json
import time
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import kafka.errors
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType

from broker.client.connection import ClusterConnection, live_brokers
from broker.errors import InvalidInput, KafkaRefused, TopicNotFound
from broker.topics.read import replica_sizes

THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
THROTTLED_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")

Plan = dict[tuple[str, int], list[int]]
T = TypeVar("T")


def _via_controller(admin: KafkaAdminClient, send: Callable[[], T], *, within: float = 3.0) -> T:
    """Send a request kafka-python routes to "the controller" (the broker Metadata names: on KRaft
    any broker, which forwards it). When that broker restarted since the client learnt of it (the client's
    metadata may not list it yet: UnknownBrokerIdError), refresh the metadata, forget the controller and
    ask again, for up to ``within`` seconds, rather than fail a change over a broker that is back."""
    deadline = time.monotonic() + within
    while True:
        try:
            return send()
        except (kafka.errors.UnknownBrokerIdError, kafka.errors.NodeNotReadyError, kafka.errors.KafkaConnectionError):
            if time.monotonic() >= deadline:
                raise
            admin._controller_id = None
            update = admin._manager.cluster.request_update()
            waited_until = min(deadline, time.monotonic() + 2.0)
            while not update.is_done and time.monotonic() < waited_until:
                time.sleep(0.05)
            time.sleep(0.2)


@dataclass(frozen=True)
class Move:
    topic: str
    partition: int
    current: tuple[int, ...]
    proposed: tuple[int, ...]
    size: int | None  # bytes of the partition on its leader, when known

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.proposed if b not in self.current)

    @property
    def bytes_to_move(self) -> int | None:
        return None if self.size is None else self.size * len(self.adding)

    @property
    def changes(self) -> bool:
        return self.current != self.proposed

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "current": list(self.current),
            "proposed": list(self.proposed),
            "bytes_to_move": self.bytes_to_move,
        }


@dataclass(frozen=True)
class Proposal:
    moves: list[Move]

    @property
    def bytes_to_move(self) -> int:
        return sum(m.bytes_to_move or 0 for m in self.moves)

    def plan(self) -> Plan:
        return {(m.topic, m.partition): list(m.proposed) for m in self.moves}

    def as_dict(self) -> dict[str, Any]:
        return {
            "moves": [m.as_dict() for m in self.moves],
            "bytes_to_move": self.bytes_to_move,
            "plan": plan_json(self.plan()),
            "current": plan_json({(m.topic, m.partition): list(m.current) for m in self.moves}),
        }


def plan_json(plan: Plan) -> dict[str, Any]:
    """Kafka's reassignment JSON of a plan."""
    return {
        "version": 1,
        "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(plan.items())],
    }


# ---------------------------------------------------------------- proposing (pure)


def rack_alternated(brokers: list[int], racks: dict[int, str | None]) -> list[int]:
    """The brokers ordered so that racks alternate (a, b, c, a, b, c...), each rack's brokers in id order;
    unchanged when no broker has a rack."""
    if not any(racks.get(b) for b in brokers):
        return sorted(brokers)
    by_rack: dict[str, list[int]] = defaultdict(list)
    for b in sorted(brokers):
        by_rack[racks.get(b) or ""].append(b)
    order: list[int] = []
    queues = [by_rack[r] for r in sorted(by_rack)]
    while any(queues):
        for queue in queues:
            if queue:
                order.append(queue.pop(0))
    return order


def assign(partitions: int, brokers: list[int], factor: int, start: int = 0, shift: int = 0) -> list[list[int]]:
    """Replicas for ``partitions`` partitions over ``brokers`` (in the given order), ``factor`` each: the
    first replica round-robin from ``start``, the others at a shift that grows each time the round-robin
    wraps, so that followers spread as well as leaders."""
    n = len(brokers)
    if not 1 <= factor <= n:
        raise InvalidInput(f"A replication factor of {factor} needs at least {factor} brokers; {n} chosen.")
    result = []
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [brokers[first]]
        for j in range(factor - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        result.append(replicas)
    return result


def _seed(topic: str, n: int) -> tuple[int, int]:
    """A start broker and shift for a topic: fixed per topic (a proposal can be made again and compared),
    different between topics (their leaders do not all start on the same broker)."""
    digest = zlib.crc32(topic.encode())
    return digest % n, (digest // n) % max(1, n - 1)


def propose_moves(
    topics: list[dict[str, Any]],
    brokers: list[int],
    racks: dict[int, str | None],
    sizes: dict[tuple[str, int], int],
    factor: int | None = None,
) -> Proposal:
    """The proposal for ``topics`` (metadata answers) onto ``brokers`` (pure)."""
    order = rack_alternated(brokers, racks)
    moves = []
    for topic in sorted(topics, key=lambda t: t["name"]):
        parts = sorted(topic.get("partitions") or [], key=lambda p: p["partition_index"])
        width = factor or max((len(p.get("replica_nodes") or []) for p in parts), default=1)
        start, shift = _seed(topic["name"], len(order))
        for p, proposed in zip(parts, assign(len(parts), order, width, start, shift), strict=True):
            index = p["partition_index"]
            moves.append(
                Move(
                    topic["name"],
                    index,
                    tuple(p.get("replica_nodes") or ()),
                    tuple(proposed),
                    sizes.get((topic["name"], index)),
                )
            )
    return Proposal(moves)


def parse_plan(document: Any) -> Plan:
    """A plan from Kafka's reassignment JSON (text or parsed). Raises InvalidInput saying what is wrong."""
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"The plan is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from None
    if not isinstance(document, dict) or not isinstance(document.get("partitions"), list):
        raise InvalidInput('The plan must be Kafka\'s reassignment JSON: {"version": 1, "partitions": [...]}.')
    plan: Plan = {}
    for i, entry in enumerate(document["partitions"]):
        where = f"partitions[{i}]"
        if not isinstance(entry, dict):
            raise InvalidInput(f"{where} must be an object with topic, partition and replicas.")
        topic, partition, replicas = entry.get("topic"), entry.get("partition"), entry.get("replicas")
        if not isinstance(topic, str) or not topic:
            raise InvalidInput(f"{where}: topic must be a topic name.")
        if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
            raise InvalidInput(f"{where}: partition must be a number of 0 or more.")
        if (
            not isinstance(replicas, list)
            or not replicas
            or not all(isinstance(r, int) and not isinstance(r, bool) for r in replicas)
        ):
            raise InvalidInput(f"{where}: replicas must be a non-empty list of broker ids.")
        if len(set(replicas)) != len(replicas):
            raise InvalidInput(f"{topic}-{partition}: broker {_duplicate(replicas)} is listed twice in its replicas.")
        if (topic, partition) in plan:
            raise InvalidInput(f"{topic}-{partition} is in the plan twice.")
        plan[(topic, partition)] = list(replicas)
    if not plan:
        raise InvalidInput("The plan moves no partition.")
    return plan


def _duplicate(replicas: list[int]) -> int:
    seen: set[int] = set()
    for r in replicas:
        if r in seen:
            return r
        seen.add(r)
    return replicas[0]


def check_plan(plan: Plan, brokers: set[int], partitions: dict[str, int]) -> None:
    """Refuse a plan naming a broker or partition the cluster does not have, or asking more replicas than
    there are brokers. ``partitions``: {topic: partition count}."""
    for (topic, partition), replicas in sorted(plan.items()):
        if topic not in partitions:
            raise TopicNotFound(f"No topic named {topic!r}: the plan cannot move {topic}-{partition}.")
        if partition >= partitions[topic]:
            raise InvalidInput(
                f"Topic {topic!r} has {partitions[topic]} partitions: there is no partition {partition}."
            )
        if len(replicas) > len(brokers):
            raise InvalidInput(
                f"{topic}-{partition}: {len(replicas)} replicas asked, but the cluster has {len(brokers)} brokers."
            )
        unknown = sorted(set(replicas) - brokers)
        if unknown:
            raise InvalidInput(
                f"{topic}-{partition}: no broker {', '.join(map(str, unknown))} in this cluster "
                f"(brokers: {', '.join(map(str, sorted(brokers)))})."
            )


# ---------------------------------------------------------------- with the cluster


def _metadata(admin: KafkaAdminClient, names: list[str]) -> list[dict[str, Any]]:
    found = admin.describe_topics(names)
    missing = [t["name"] for t in found if t.get("error_code")]
    if missing:
        raise TopicNotFound(f"No topic named {', '.join(repr(m) for m in missing)}.")
    return list(found)


def propose(conn: ClusterConnection, topics: list[str], brokers: list[int], factor: int | None = None) -> Proposal:
    """A proposal moving ``topics`` onto ``brokers``, optionally changing their replication factor.
    Raises TopicNotFound, InvalidInput, ClusterUnavailable."""
    if not topics:
        raise InvalidInput("Choose at least one topic.")
    if not brokers:
        raise InvalidInput("Choose at least one broker.")
    if len(set(brokers)) != len(brokers):
        raise InvalidInput("A broker is chosen twice.")

    def run(admin: KafkaAdminClient) -> Proposal:
        live = {b["broker_id"]: b.get("rack") for b in live_brokers(admin, conn)}
        unknown = sorted(set(brokers) - set(live))
        if unknown:
            raise InvalidInput(
                f"No broker {', '.join(map(str, unknown))} is up in this cluster "
                f"(up: {', '.join(map(str, sorted(live)))})."
            )
        metadata = _metadata(admin, sorted(set(topics)))
        leaders = {(t["name"], p["partition_index"]): p.get("leader_id", -1) for t in metadata for p in t["partitions"]}
        sizes_by_broker = replica_sizes(admin, conn, sorted(live), metadata)
        sizes = {(t, p): size for (t, p, b), size in sizes_by_broker.items() if leaders.get((t, p)) == b} or {
            (t, p): size for (t, p, _), size in sizes_by_broker.items()
        }
        return propose_moves(metadata, brokers, live, sizes, factor)

    return conn.call(run, "reassignment proposal", requests=4)


@dataclass(frozen=True)
class Progress:
    """Where a reassignment stands: per partition its replicas now, and what is still being added or removed."""

    ongoing: dict[tuple[str, int], dict[str, list[int]]]
    replicas: dict[tuple[str, int], list[int]]
    throttled: bool

    @property
    def done(self) -> bool:
        return not self.ongoing

    def as_dict(self) -> dict[str, Any]:
        return {
            "done": self.done,
            "throttled": self.throttled,
            "ongoing": [{"topic": t, "partition": p, **moving} for (t, p), moving in sorted(self.ongoing.items())],
            "replicas": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(self.replicas.items())],
        }


def execute(conn: ClusterConnection, plan: Plan, throttle: int | None = None) -> Progress:
    """Check the plan against the cluster, set the throttle (bytes/s, per broker) when asked, and start
    the reassignment. Raises InvalidInput, TopicNotFound, KafkaRefused, ClusterUnavailable."""
    if throttle is not None and throttle < 1024:
        raise InvalidInput("A throttle below 1 KiB/s would never finish; give bytes per second, e.g. 10485760.")

    def run(admin: KafkaAdminClient) -> Progress:
        brokers = {b["broker_id"] for b in live_brokers(admin, conn)}
        metadata = _metadata(admin, sorted({t for t, _ in plan}))
        check_plan(plan, brokers, {t["name"]: len(t["partitions"]) for t in metadata})
        current = {
            (t["name"], p["partition_index"]): list(p["replica_nodes"]) for t in metadata for p in t["partitions"]
        }
        if throttle is not None:
            _set_throttle(admin, plan, current, throttle)
        answer = _via_controller(
            admin,
            lambda: admin.alter_partition_reassignments(
                {TopicPartition(t, p): replicas for (t, p), replicas in sorted(plan.items())}
            ),
        )
        refused = {f"{tp.topic}-{tp.partition}": err.__name__ for tp, err in answer.items() if err is not None}
        if refused:
            raise KafkaRefused(
                "Kafka refused to move " + ", ".join(f"{k} ({v})" for k, v in sorted(refused.items())) + "."
            )
        return _progress(admin, sorted({t for t, _ in plan}))

    return conn.call(run, "reassignment", requests=8)


def _set_throttle(admin: KafkaAdminClient, plan: Plan, current: Plan, rate: int) -> None:
    """Throttle the copy: the rate on every broker taking part, and the moving replicas on their topics
    (leaders: the current replicas; followers: the ones being added), as Kafka's tool does."""
    involved = sorted({b for key, new in plan.items() for b in [*new, *current.get(key, [])]})
    admin.alter_configs(
        [
            ConfigResource(ConfigResourceType.BROKER, str(b), dict.fromkeys(THROTTLE_RATES, ("SET", str(rate))))
            for b in involved
        ],
        raise_on_unknown=False,
        incremental=True,
    )
    leaders: dict[str, list[str]] = defaultdict(list)
    followers: dict[str, list[str]] = defaultdict(list)
    for (topic, partition), new in sorted(plan.items()):
        old = current.get((topic, partition), [])
        leaders[topic] += [f"{partition}:{b}" for b in old]
        followers[topic] += [f"{partition}:{b}" for b in new if b not in old]
    admin.alter_configs(
        [
            ConfigResource(
                ConfigResourceType.TOPIC,
                topic,
                {
                    THROTTLED_REPLICAS[0]: ("SET", ",".join(leaders[topic])),
                    THROTTLED_REPLICAS[1]: ("SET", ",".join(followers[topic]) or ",".join(leaders[topic])),
                },
            )
            for topic in sorted(leaders)
        ],
        raise_on_unknown=False,
        incremental=True,
    )


def _progress(admin: KafkaAdminClient, topics: list[str]) -> Progress:
    ongoing = {
        (tp.topic, tp.partition): {"adding": state["adding_replicas"], "removing": state["removing_replicas"]}
        for tp, state in _via_controller(admin, admin.list_partition_reassignments).items()
        if not topics or tp.topic in topics
    }
    metadata = _metadata(admin, topics) if topics else []
    replicas = {(t["name"], p["partition_index"]): list(p["replica_nodes"]) for t in metadata for p in t["partitions"]}
    configs = (
        admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t, list(THROTTLED_REPLICAS)) for t in topics])
        if topics
        else {}
    )
    throttled = any(
        isinstance(entry, dict) and entry.get("value")
        for per_topic in configs.get("topic", {}).values()
        for name, entry in per_topic.items()
        if name in THROTTLED_REPLICAS
    )
    return Progress(ongoing, replicas, throttled)


def progress(conn: ClusterConnection, topics: list[str]) -> Progress:
    """The reassignments under way on ``topics`` (all topics when empty)."""
    return conn.call(lambda admin: _progress(admin, topics), "reassignment progress", requests=3)


def verify(conn: ClusterConnection, topics: list[str]) -> Progress:
    """Like progress, and once nothing moves any more, remove the throttle (topics' throttled replicas and
    every broker's throttled rates), as ``--verify`` does."""

    def run(admin: KafkaAdminClient) -> Progress:
        now = _progress(admin, topics)
        if now.done and (now.throttled or topics):
            brokers = [b["broker_id"] for b in live_brokers(admin, conn)]
            admin.alter_configs(
                [
                    ConfigResource(ConfigResourceType.TOPIC, t, dict.fromkeys(THROTTLED_REPLICAS, ("DELETE", None)))
                    for t in topics
                ]
                + [
                    ConfigResource(ConfigResourceType.BROKER, str(b), dict.fromkeys(THROTTLE_RATES, ("DELETE", None)))
                    for b in brokers
                ],
                raise_on_unknown=False,
                incremental=True,
            )
            now = Progress(now.ongoing, now.replicas, throttled=False)
        return now

    return conn.call(run, "reassignment verification", requests=6)


def cancel(conn: ClusterConnection, partitions: list[tuple[str, int]]) -> Progress:
    """Cancel the reassignments under way of ``partitions`` (all under way when empty)."""

    def run(admin: KafkaAdminClient) -> Progress:
        under_way = _via_controller(admin, admin.list_partition_reassignments)
        chosen = [tp for tp in under_way if not partitions or (tp.topic, tp.partition) in partitions]
        if chosen:
            _via_controller(admin, lambda: admin.alter_partition_reassignments(dict.fromkeys(chosen)))
        return _progress(admin, sorted({tp.topic for tp in chosen}))

    return conn.call(run, "reassignment cancel", requests=4)


# ---------------------------------------------------------------- elections


def elect(conn: ClusterConnection, kind: str, partitions: list[tuple[str, int]] | None) -> dict[str, str | None]:
    """Preferred (``kind="preferred"``) or unclean election for ``partitions`` (None: every partition,
    preferred only). Returns {"topic-partition": None when elected, else why not ("not needed" when it
    already has its preferred leader)}. Raises InvalidInput, KafkaRefused, ClusterUnavailable."""
    if kind not in ("preferred", "unclean"):
        raise InvalidInput("The election is preferred or unclean.")
    if kind == "unclean" and not partitions:
        raise InvalidInput("An unclean election names its partitions: it may lose messages.")
    wanted: dict[str, list[int]] | None = None
    if partitions:
        wanted = defaultdict(list)
        for topic, partition in partitions:
            wanted[topic].append(partition)

    def run(admin: KafkaAdminClient) -> dict[str, str | None]:
        try:
            answer = _via_controller(
                admin, lambda: admin.elect_leaders(0 if kind == "preferred" else 1, wanted, raise_errors=False)
            )
        except kafka.errors.KafkaError as exc:
            raise KafkaRefused(f"Kafka refused the election: {type(exc).__name__}: {exc}") from None
        outcome: dict[str, str | None] = {}
        for result in answer.replica_election_results:
            for p in result.partition_result:
                error = kafka.errors.for_code(p.error_code)
                key = f"{result.topic}-{p.partition_id}"
                if error is kafka.errors.NoError:
                    outcome[key] = None
                elif error is kafka.errors.ElectionNotNeededError:
                    outcome[key] = (
                        "not needed: it is on its preferred leader"
                        if kind == "preferred"
                        else "not needed: it has a leader"
                    )
                else:
                    outcome[key] = p.error_message or error.__name__
        return outcome

    return conn.call(run, "leader election", requests=3)
