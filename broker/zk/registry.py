"""What Kafka keeps in ZooKeeper, said plainly: given a znode's path and data, what it means as labelled
rows. Pure functions; the shapes are the ones Kafka 3.x writes (ZooKeeper mode, and a migration to KRaft).

Secrets stay hidden (broker.redaction's rule): ``holds_credentials`` names the znodes of users' configs, where
Kafka keeps SCRAM credentials (a salt, a stored key and a server key per mechanism: enough to guess the
password offline), which the console shows to admins only; ``redact_data`` is a znode's data as it may be
shown to anyone, secrets hidden (those credentials, sensitive dynamic broker configs, URL credentials...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from broker import redaction
from broker.zk.nodes import ZStat

# Rows past this many (a topic's partitions) are summed up in one last row.
MAX_ROWS = 200


@dataclass(frozen=True)
class Row:
    """One labelled fact; ``time_ms`` marks a moment (shown in the viewer's zone), ``znode`` a path the
    value names (shown as a link into the browser)."""

    label: str
    value: str
    time_ms: int | None = None
    znode: str | None = None

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"label": self.label, "value": self.value}
        if self.time_ms is not None:
            found["time_ms"] = self.time_ms
        if self.znode is not None:
            found["znode"] = self.znode
        return found


@dataclass(frozen=True)
class Explanation:
    """What a znode is (``title``), what Kafka uses it for (``summary``) and what its data says (``rows``);
    ``problem`` when the data is not what Kafka writes there."""

    title: str
    summary: str
    rows: tuple[Row, ...] = ()
    problem: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "summary": self.summary,
            "rows": [r.as_dict() for r in self.rows],
            "problem": self.problem,
        }


class _Unexpected(Exception):
    """The data does not have the shape Kafka writes."""


def _json(data: bytes | None) -> dict[str, Any]:
    if not data:
        raise _Unexpected("it holds no data")
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _Unexpected("it is not JSON") from None
    if not isinstance(value, dict):
        raise _Unexpected("it is not a JSON object")
    return value


def _ms(value: Any) -> int | None:
    """A Kafka timestamp (ms, written as a number or a string), None when absent or not one."""
    try:
        ms = int(value)
    except (TypeError, ValueError):
        return None
    return ms if ms > 0 else None


def _at(label: str, ms: int) -> Row:
    """A moment: ISO-8601 UTC as text, the milliseconds for the viewer's zone."""
    try:
        moment = datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, ValueError, OSError):  # no date a calendar has
        return Row(label, f"{ms} ms since the epoch")
    return Row(label, moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"), time_ms=ms)


def _ids(values: Any) -> str:
    if not isinstance(values, list):
        raise _Unexpected("a broker list is not a list")
    return ", ".join(str(v) for v in values) or "none"


def _broker(broker_id: Any) -> Row:
    return Row("Broker", str(broker_id), znode=f"/brokers/ids/{broker_id}")


def _partition_rows(entries: Any, label: str = "Partition") -> list[Row]:
    """Rows for a list of {"topic", "partition", ...} (notifications, elections, reassignments)."""
    if not isinstance(entries, list):
        raise _Unexpected("its partitions are not a list")
    rows = []
    for e in entries[:MAX_ROWS]:
        if not isinstance(e, dict) or "topic" not in e or "partition" not in e:
            raise _Unexpected("a partition entry lacks its topic or number")
        state = f"/brokers/topics/{e['topic']}/partitions/{e['partition']}/state"
        value = f"{e['topic']}-{e['partition']}"
        if "replicas" in e:
            value += f" → replicas {_ids(e['replicas'])}"
        rows.append(Row(label, value, znode=state))
    if len(entries) > MAX_ROWS:
        rows.append(Row("More", f"{len(entries) - MAX_ROWS} more partitions not listed here"))
    return rows


# ---------------------------------------------------------------- one function per kind of znode
# Each takes the match of its path pattern, the data and the stat, and returns the rows.

Explainer = Callable[[re.Match[str], bytes | None, ZStat | None], list[Row]]
# A title: a format string over the path's groups (``{1}`` the first), or a function of the match.
Title = str | Callable[[re.Match[str]], str]


def _cluster_id(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    value = _json(data)
    return [Row("Cluster id", str(value.get("id")))]


def _controller(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    value = _json(data)
    if "brokerid" not in value:
        raise _Unexpected("it names no broker")
    epoch = value.get("kraftControllerEpoch")
    if isinstance(epoch, int) and epoch >= 0:  # a migration: the KRaft controller holds the node
        rows = [Row("Controller", f"KRaft controller {value['brokerid']} (migrating to KRaft)")]
        rows.append(Row("KRaft controller epoch", str(epoch)))
    else:
        rows = [Row("Controller", f"broker {value['brokerid']}", znode=f"/brokers/ids/{value['brokerid']}")]
    if (at := _ms(value.get("timestamp"))) is not None:
        rows.append(_at("Elected at", at))
    if stat is not None and stat.owner_hex:
        rows.append(Row("Session", f"{stat.owner_hex} (the controller's; the node goes when it ends)"))
    return rows


def _controller_epoch(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    try:
        epoch = int((data or b"").decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise _Unexpected("it is not a number") from None
    rows = [Row("Controller epoch", str(epoch))]
    if stat is not None:
        rows.append(_at("Last election", stat.modified))
    return rows


def _broker_registration(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    value = _json(data)
    rows = [Row("Broker", m.group(1))]
    protocols = value.get("listener_security_protocol_map") or {}
    endpoints = value.get("endpoints")
    if not isinstance(endpoints, list):
        raise _Unexpected("it has no endpoint list")
    for endpoint in endpoints:
        listener, _, address = str(endpoint).partition("://")
        protocol = protocols.get(listener) if isinstance(protocols, dict) else None
        label = f"Endpoint {listener}" + (f" ({protocol})" if protocol and protocol != listener else "")
        rows.append(Row(label, address))
    rows.append(Row("Rack", str(value["rack"]) if value.get("rack") else "none"))
    if (at := _ms(value.get("timestamp"))) is not None:
        rows.append(_at("Registered at", at))
    if stat is not None and stat.owner_hex:
        rows.append(Row("Session", f"{stat.owner_hex} (the broker's; the registration goes when it ends)"))
    if isinstance(value.get("jmx_port"), int) and value["jmx_port"] > 0:
        rows.append(Row("JMX port", str(value["jmx_port"])))
    features = value.get("features")
    if isinstance(features, dict):
        for name, levels in sorted(features.items()):
            if isinstance(levels, dict):
                rows.append(
                    Row(f"Supports {name}", f"{levels.get('min_version', '?')} to {levels.get('max_version', '?')}")
                )
    rows.append(Row("Registration format", f"version {value.get('version', '?')}"))
    return rows


def _topic(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    topic = m.group(1)
    value = _json(data)
    partitions = value.get("partitions")
    if not isinstance(partitions, dict):
        raise _Unexpected("it has no partition assignment")
    rows = [Row("Topic", topic)]
    if value.get("topic_id"):
        rows.append(Row("Topic id", str(value["topic_id"])))
    rows.append(Row("Partitions", str(len(partitions))))
    adding = value.get("adding_replicas") or {}
    removing = value.get("removing_replicas") or {}
    ordered = sorted(partitions.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else -1)
    for number, replicas in ordered[:MAX_ROWS]:
        text = f"replicas {_ids(replicas)}"
        if adding.get(number) or removing.get(number):
            text += f" (moving: adding {_ids(adding.get(number) or [])}, removing {_ids(removing.get(number) or [])})"
        rows.append(Row(f"Partition {number}", text, znode=f"/brokers/topics/{topic}/partitions/{number}/state"))
    if len(ordered) > MAX_ROWS:
        rows.append(Row("More", f"{len(ordered) - MAX_ROWS} more partitions not listed here"))
    return rows


def _partition_state(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    value = _json(data)
    if "leader" not in value or "isr" not in value:
        raise _Unexpected("it has no leader or ISR")
    leader = value["leader"]
    rows = [
        Row("Topic", m.group(1), znode=f"/brokers/topics/{m.group(1)}"),
        Row("Partition", m.group(2)),
        Row("Leader", f"broker {leader}", znode=f"/brokers/ids/{leader}")
        if isinstance(leader, int) and leader >= 0
        else Row("Leader", "none: the partition is offline"),
        Row("In-sync replicas (ISR)", _ids(value["isr"])),
        Row("Leader epoch", str(value.get("leader_epoch", "?"))),
        Row("Controller epoch", f"{value.get('controller_epoch', '?')} (of the controller that wrote this)"),
    ]
    if "leader_recovery_state" in value:
        state = value["leader_recovery_state"]
        rows.append(Row("Leader recovery", {0: "recovered", 1: "recovering"}.get(state, str(state))))
    if stat is not None:
        rows.append(Row("Partition epoch", f"{stat.version} (changes of leader or ISR so far)"))
        rows.append(_at("Last change", stat.modified))
    return rows


def _reassignment(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    return _partition_rows(_json(data).get("partitions"), "Move")


def _delete_topic(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    rows = [Row("Topic", m.group(1), znode=f"/brokers/topics/{m.group(1)}")]
    if stat is not None:
        rows.append(_at("Requested at", stat.created))
    return rows


def _preferred_election(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    return _partition_rows(_json(data).get("partitions"))


_ENTITY = {"topics": "topic", "brokers": "broker", "users": "user", "clients": "client", "ips": "IP address"}
_PLURAL = {"topics": "topics", "brokers": "brokers", "users": "users", "clients": "clients", "ips": "IP addresses"}


def _entity(kind: str, name: str) -> str:
    name = unquote(name)
    if name == "<default>":
        return f"every {_ENTITY.get(kind, kind)} (the default)"
    return f"{_ENTITY.get(kind, kind)} {name}"


def _config_value(key: str, value: Any) -> str:
    """A config override as shown: secrets hidden; a SCRAM credential says its iterations only."""
    if key.upper().startswith("SCRAM-"):
        found = re.search(r"iterations=(\d+)", str(value))
        iterations = f"{found.group(1)} iterations" if found else "credential"
        return f"{iterations}; salt, stored key and server key hidden"
    return str(redaction.redact_value(key, str(value)))


def _config(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    kind, name, client = m.group(1), m.group(2), m.group(3)
    value = _json(data)
    config = value.get("config")
    if not isinstance(config, dict):
        raise _Unexpected("it has no config object")
    entity = _entity(kind, name) + (f", {_entity('clients', client)}" if client else "")
    rows = [Row("For", entity)]
    rows += [Row(key, _config_value(key, v)) for key, v in sorted(config.items())]
    if not config:
        rows.append(Row("Overrides", "none: the defaults apply"))
    return rows


def _config_change(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    value = _json(data)
    entity = value.get("entity_path")
    if not isinstance(entity, str) or "/" not in entity:
        raise _Unexpected("it names no entity")
    kind, _, name = entity.partition("/")
    if "/clients/" in name:
        user, _, client = name.partition("/clients/")
        what = f"{_entity(kind, user)}, {_entity('clients', client)}"
    else:
        what = _entity(kind, name)
    rows = [Row("Changed", what, znode=f"/config/{entity}")]
    if stat is not None:
        rows.append(_at("At", stat.created))
    return rows


def _isr_change(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    rows = _partition_rows(_json(data).get("partitions"))
    if stat is not None:
        rows.append(_at("Noted at", stat.created))
    return rows


def _log_dir_event(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    value = _json(data)
    if "broker" not in value:
        raise _Unexpected("it names no broker")
    event = value.get("event")
    rows = [_broker(value["broker"]), Row("Event", "a log directory failed" if event == 1 else f"event {event}")]
    if stat is not None:
        rows.append(_at("At", stat.created))
    return rows


def _migration(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    value = _json(data)
    names = [
        ("kraft_controller_id", "KRaft controller"),
        ("kraft_controller_epoch", "KRaft controller epoch"),
        ("kraft_metadata_offset", "Metadata log offset migrated"),
        ("kraft_metadata_epoch", "Metadata log epoch"),
    ]
    rows = [Row(label, str(value[key])) for key, label in names if key in value]
    if not rows:
        raise _Unexpected("it has none of the migration fields")
    if stat is not None:
        rows.append(_at("Last written", stat.modified))
    return rows


def _feature(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    value = _json(data)
    status = value.get("status")
    rows = [Row("Versioning", "enabled" if status == 1 else "disabled" if status == 0 else str(status))]
    features = value.get("features") or {}
    if isinstance(features, dict):
        for name, levels in sorted(features.items()):
            if isinstance(levels, dict):
                low, high = levels.get("min_version_level", "?"), levels.get("max_version_level", "?")
                rows.append(Row(f"Finalized {name}", str(high) if low == high else f"{low} to {high}"))
    if len(rows) == 1:
        rows.append(Row("Finalized features", "none"))
    return rows


def _producer_ids(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    value = _json(data)
    block = f"{value.get('block_start')} to {value.get('block_end')}"
    return [_broker(value.get("broker")), Row("Producer ids", block)]


def _broker_seqid(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    return [Row("Sequence", f"{stat.version} broker ids generated so far")] if stat is not None else []


def _acl(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    value = _json(data)
    acls = value.get("acls")
    if not isinstance(acls, list):
        raise _Unexpected("it has no ACL list")
    rows = [Row("Resource", f"{m.group(2)} {unquote(m.group(3))}" + (f" ({m.group(1)})" if m.group(1) else ""))]
    for acl in acls[:MAX_ROWS]:
        if isinstance(acl, dict):
            rows.append(
                Row(
                    str(acl.get("principal")),
                    f"{acl.get('permissionType')} {acl.get('operation')} from host {acl.get('host')}",
                )
            )
    return rows


def _nothing(m: re.Match[str], data: bytes | None, stat: ZStat | None) -> list[Row]:
    return []


_TOPIC = r"([^/]+)"
# (path pattern, title, what Kafka uses it for, explainer). The first match wins.
_KNOWN: list[tuple[str, Title, str, Explainer]] = [
    (
        r"^/$",
        "The root",
        "Kafka keeps its registry right under it (under the chroot, when the connect string names one): "
        "brokers, topics, controller, configurations, admin requests.",
        _nothing,
    ),
    (r"^/brokers$", "Brokers and topics", "Registered brokers (ids) and each topic's assignment (topics).", _nothing),
    (
        r"^/admin$",
        "Admin requests",
        "Requests to the controller: topics to delete, and, the old way, reassignments and elections.",
        _nothing,
    ),
    (
        r"^/config$",
        "Configuration overrides",
        "Dynamic configurations by kind of entity (topics, brokers, users, clients, ips), and change notices.",
        _nothing,
    ),
    (
        r"^/config/changes$",
        "Configuration change notices",
        "One sequential child per change; brokers watch it to apply new configurations without a restart.",
        _nothing,
    ),
    (
        r"^/config/(topics|brokers|users|clients|ips)$",
        lambda m: f"Configurations of {_PLURAL[m.group(1)]}",
        "One child per entity with overrides; an entity without any has no child.",
        _nothing,
    ),
    (r"^/cluster/id$", "Cluster id", "The id Kafka gave this cluster when its first broker started.", _cluster_id),
    (
        r"^/controller$",
        "The active controller",
        "The broker that won the election holds this ephemeral node; when its session ends, the node goes "
        "and the brokers elect another.",
        _controller,
    ),
    (
        r"^/controller_epoch$",
        "Controller epoch",
        "Raised by one at each election; brokers ignore requests from a controller with an older epoch.",
        _controller_epoch,
    ),
    (
        r"^/brokers/ids$",
        "Registered brokers",
        "One ephemeral child per live broker: a broker that stops, or loses its session, leaves this list.",
        _nothing,
    ),
    (
        r"^/brokers/ids/(\d+)$",
        "Broker {1}'s registration",
        "Written by the broker when it starts, ephemeral: it lasts as long as the broker's ZooKeeper session.",
        _broker_registration,
    ),
    (r"^/brokers/topics$", "Topics", "One child per topic, holding its partition assignment.", _nothing),
    (
        rf"^/brokers/topics/{_TOPIC}$",
        "Topic {1}: replica assignment",
        "Which brokers hold each partition, the first being the preferred leader.",
        _topic,
    ),
    (
        rf"^/brokers/topics/{_TOPIC}/partitions$",
        "Partitions of topic {1}",
        "One child per partition; each holds the partition's state (leader and ISR).",
        _nothing,
    ),
    (
        rf"^/brokers/topics/{_TOPIC}/partitions/(\d+)$",
        "Partition {1}-{2}",
        "Its child state holds the partition's leader and in-sync replicas.",
        _nothing,
    ),
    (
        rf"^/brokers/topics/{_TOPIC}/partitions/(\d+)/state$",
        "Partition {1}-{2}: leader and ISR",
        "Written by the controller (and the leader, when the ISR changes): who leads the partition and which "
        "replicas are in sync.",
        _partition_state,
    ),
    (
        r"^/brokers/seqid$",
        "Broker id sequence",
        "Its version counts the broker ids generated (broker.id.generation.enable).",
        _broker_seqid,
    ),
    (
        r"^/admin/reassign_partitions$",
        "Partition reassignment (the ZooKeeper way)",
        "Partitions to move, as written by tools before Kafka 2.4; the controller moves them, then deletes the "
        "node. Kafka's admin API does not use it.",
        _reassignment,
    ),
    (
        r"^/admin/delete_topics$",
        "Topics being deleted",
        "One child per topic whose deletion was asked and is not finished; the controller removes it when done.",
        _nothing,
    ),
    (
        rf"^/admin/delete_topics/{_TOPIC}$",
        "Deletion of topic {1}",
        "The controller deletes the topic's replicas on every broker, then this node and the topic's.",
        _delete_topic,
    ),
    (
        r"^/admin/preferred_replica_election$",
        "Preferred leader election",
        "Partitions whose preferred replica should lead again; the controller elects, then deletes the node.",
        _preferred_election,
    ),
    (
        r"^/config/changes/config_change_\d+$",
        "Configuration change notice",
        "Tells every broker that an entity's configuration changed, so it reads it again.",
        _config_change,
    ),
    (
        r"^/config/(users)/([^/]+)/clients/([^/]+)$",
        lambda m: f"Quotas of {_entity('users', m.group(2))}, {_entity('clients', m.group(3))}",
        "The quota overrides for this user and client id.",
        _config,
    ),
    (
        r"^/config/(topics|brokers|users|clients|ips)/([^/]+)()$",
        lambda m: f"Configuration of {_entity(m.group(1), m.group(2))}",
        "The overrides set on this entity; any setting not listed has its default (or the broker's own).",
        _config,
    ),
    (
        r"^/isr_change_notification$",
        "ISR change notices",
        "Leaders note here the partitions whose ISR changed; the controller reads and deletes each notice.",
        _nothing,
    ),
    (
        r"^/isr_change_notification/isr_change_\d+$",
        "ISR change notice",
        "Partitions whose in-sync replicas changed; the controller tells every broker, then deletes this.",
        _isr_change,
    ),
    (
        r"^/log_dir_event_notification$",
        "Log directory events",
        "Brokers note here a failed log directory; the controller moves leadership away, then deletes it.",
        _nothing,
    ),
    (
        r"^/log_dir_event_notification/log_dir_event_\d+$",
        "Log directory event",
        "A broker lost a log directory; the controller moves leadership off the replicas it held.",
        _log_dir_event,
    ),
    (
        r"^/migration$",
        "ZooKeeper to KRaft migration",
        "Written by the KRaft controller while it copies the metadata out of ZooKeeper; how far it got.",
        _migration,
    ),
    (
        r"^/feature$",
        "Finalized features",
        "The feature levels the whole cluster agreed on (KIP-584).",
        _feature,
    ),
    (
        r"^/latest_producer_id_block$",
        "Producer id block",
        "The last block of producer ids handed to a broker for idempotent and transactional producers.",
        _producer_ids,
    ),
    (
        r"^/kafka-acl(?:-extended/([a-z]+))?/([^/]+)/([^/]+)$",
        "ACLs of {2} {3}",
        "Who may do what on this resource (the ZooKeeper-mode authorizer).",
        _acl,
    ),
    (
        r"^/consumers$",
        "Old consumers",
        "Offsets of consumers from before Kafka 0.9; current consumers keep them in __consumer_offsets.",
        _nothing,
    ),
    (r"^/zookeeper$", "ZooKeeper's own", "ZooKeeper keeps its quotas and ensemble configuration here.", _nothing),
]
PATTERNS = [(re.compile(p), title, summary, fn) for p, title, summary, fn in _KNOWN]


# A user's config znode (and what is under it): SCRAM credentials and quotas.
_CREDENTIALS = re.compile(r"^/config/users/[^/]+(?:/.*)?$")
# Keys of a SCRAM credential whose values are hidden even from admins.
_SCRAM_PARTS = re.compile(r"\b(salt|stored_key|server_key)=[^,\"\s]*")


def holds_credentials(path: str) -> bool:
    """Whether ``path`` is a user's config znode or under one: where Kafka keeps SCRAM credentials."""
    return bool(_CREDENTIALS.match(path))


def redact_data(path: str, data: bytes | None) -> bytes | None:
    """``data`` of the znode at ``path`` as it may be shown: the secrets in it hidden (broker.redaction's rule:
    values of secret-named JSON fields, URL credentials, Authorization values, ``password=`` parts) and a
    SCRAM credential's salt, stored key and server key. Data that is not UTF-8 text is returned as it is."""
    if not data:
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    shown = redaction.redact_text(text)
    if holds_credentials(path):
        shown = _SCRAM_PARTS.sub(lambda m: f"{m.group(1)}={redaction.MASK}", shown)
    return data if shown == text else shown.encode("utf-8")


def explain(path: str, data: bytes | None, stat: ZStat | None = None) -> Explanation | None:
    """What the znode at ``path`` holding ``data`` means to Kafka, or None for a path Kafka's registry does
    not have. Data of another shape than Kafka writes gives the title and summary with ``problem`` set."""
    for pattern, title, summary, fn in PATTERNS:
        m = pattern.match(path)
        if m is None:
            continue
        named = title(m) if callable(title) else title.format(None, *(unquote(g) if g else g for g in m.groups()))
        try:
            return Explanation(named, summary, tuple(fn(m, data, stat)))
        except _Unexpected as exc:
            return Explanation(named, summary, problem=f"This is not what Kafka writes here: {exc}.")
        except (KeyError, TypeError, ValueError, AttributeError):
            return Explanation(named, summary, problem="This is not what Kafka writes here: a field has another shape.")
    return None
