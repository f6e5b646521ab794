"""Client quotas: byte rates, request time and mutation rates of users and client ids, connection rates of IPs.

kafka-python's admin client has no quota calls, so the requests go through its protocol layer: one
DescribeClientQuotas with a filter that matches every entity (users, client ids, their pairs and IPs,
defaults included) lists them all, and AlterClientQuotas sets or removes values, first with
``validate_only`` (Kafka checks the keys and values and changes nothing) and then for real. Our own checks
come before either: an unknown key for the entity, a negative rate or a fraction where Kafka wants a whole
number is refused with the reason before anything is sent. Works alike in ZooKeeper mode and on KRaft.

An entity is one to two components, each a type and a name; a name of ``None`` is the default (the quota
of every user, client id or IP that has none of its own).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from broker.client.connection import ClusterConnection, send_request
from broker.errors import InvalidInput, KafkaRefused

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)  # the order components are shown and sent in
_ALIASES = {"client_id": CLIENT_ID, "clientid": CLIENT_ID, "client": CLIENT_ID}

# Quota key -> (what it limits, whether Kafka wants a whole number), per kind of entity.
CLIENT_KEYS: dict[str, tuple[str, bool]] = {
    "producer_byte_rate": ("bytes per second produced", True),
    "consumer_byte_rate": ("bytes per second fetched", True),
    "request_percentage": ("percentage of a request thread's time", False),
    "controller_mutation_rate": ("partitions created or deleted per second", False),
}
IP_KEYS: dict[str, tuple[str, bool]] = {"connection_creation_rate": ("connections opened per second", True)}
KEYS: dict[str, tuple[str, bool]] = {**CLIENT_KEYS, **IP_KEYS}
_LONG_MAX = 2**63 - 1

Entity = tuple[tuple[str, str | None], ...]  # ((type, name or None for the default), ...) in ENTITY_TYPES order


@dataclass(frozen=True)
class ClientQuota:
    """One entity and the quotas set on it."""

    entity: Entity
    values: dict[str, float]

    @property
    def label(self) -> str:
        return describe_entity(self.entity)

    @property
    def kind(self) -> str:
        return "+".join(t for t, _ in self.entity)

    @property
    def is_default(self) -> bool:
        return any(n is None for _, n in self.entity)

    def names(self) -> dict[str, str | None]:
        return dict(self.entity)

    def items(self) -> list[tuple[str, int | float]]:
        return [(k, shown_value(k, v)) for k, v in sorted(self.values.items(), key=lambda kv: _key_order(kv[0]))]

    def as_dict(self) -> dict[str, Any]:
        return {
            "entity": self.names(),
            "kind": self.kind,
            "default": self.is_default,
            "label": self.label,
            "quotas": dict(self.items()),
        }


def _key_order(key: str) -> tuple[int, str]:
    order = list(KEYS)
    return (order.index(key) if key in order else len(order), key)


def shown_value(key: str, value: float) -> int | float:
    """A whole-number quota as an int (Kafka sends every value as a double)."""
    return int(value) if math.isfinite(value) and value.is_integer() else value


def describe_entity(entity: Entity) -> str:
    """``client-id app-1``, ``user <default>``, ``user alice, client-id <default>``."""
    return ", ".join(f"{t} {n if n is not None else '<default>'}" for t, n in entity)


def sort_key(quota: ClientQuota) -> tuple[Any, ...]:
    kinds = tuple(ENTITY_TYPES.index(t) if t in ENTITY_TYPES else 9 for t, _ in quota.entity)
    return (kinds, tuple((n is not None, n or "") for _, n in quota.entity))


# ---------------------------------------------------------------- checks (pure)


def parse_entity(raw: Mapping[str, Any]) -> Entity:
    """An entity from ``{"user": "alice", "client-id": None}`` (None: the default). Raises InvalidInput."""
    if not isinstance(raw, Mapping) or not raw:
        raise InvalidInput('Name the entity: {"user": ..., "client-id": ..., "ip": ...} (null: the default).')
    found: dict[str, str | None] = {}
    for given, name in raw.items():
        kind = _ALIASES.get(str(given).lower(), str(given).lower())
        if kind not in ENTITY_TYPES:
            raise InvalidInput(f"Unknown entity type {given!r}: use user, client-id or ip.")
        if kind in found:
            raise InvalidInput(f"The entity names {kind} twice.")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise InvalidInput(f"The {kind} must be a name, or null for the default.")
        found[kind] = name.strip() if isinstance(name, str) else None
    if IP in found and len(found) > 1:
        raise InvalidInput("An IP quota stands alone: it cannot be combined with a user or client id.")
    return tuple((t, found[t]) for t in ENTITY_TYPES if t in found)


def keys_for(entity: Entity) -> dict[str, tuple[str, bool]]:
    """The quota keys Kafka knows for this kind of entity."""
    return IP_KEYS if any(t == IP for t, _ in entity) else CLIENT_KEYS


def parse_value(key: str, raw: Any) -> float:
    """A quota's value as Kafka takes it (a double). Raises InvalidInput for a negative, non-finite or (for a
    whole-number key) fractional value."""
    if isinstance(raw, bool):
        raise InvalidInput(f"{key} must be a number, not {raw!r}.")
    try:
        value = float(str(raw).strip()) if isinstance(raw, str) else float(raw)
    except (TypeError, ValueError):
        raise InvalidInput(f"{key} must be a number, not {raw!r}.") from None
    if not math.isfinite(value):
        raise InvalidInput(f"{key} must be a finite number.")
    if value < 0:
        raise InvalidInput(f"{key} cannot be negative ({raw}): a quota is a rate of zero or more.")
    whole = KEYS.get(key, ("", False))[1]
    if whole and not value.is_integer():
        raise InvalidInput(f"{key} must be a whole number, not {raw}.")
    if whole and value > _LONG_MAX:
        raise InvalidInput(f"{key} is too large.")
    return value


def check_ops(
    entity: Entity, set_values: Mapping[str, Any], remove: Iterable[str]
) -> tuple[dict[str, float], list[str]]:
    """The values to set and keys to remove, checked against the entity's kind. Raises InvalidInput."""
    known = keys_for(entity)
    removing = list(dict.fromkeys(str(k) for k in remove))
    for key in [*set_values, *removing]:
        if key not in known:
            kind = "+".join(t for t, _ in entity)
            raise InvalidInput(f"Unknown quota {key!r} for a {kind} entity: use {', '.join(known)}.")
    if both := sorted(set(set_values) & set(removing)):
        raise InvalidInput(f"{', '.join(both)} cannot be both set and removed.")
    values = {key: parse_value(key, raw) for key, raw in set_values.items()}
    if not values and not removing:
        raise InvalidInput("Nothing to change: give quotas to set or to remove.")
    return values, removing


# ---------------------------------------------------------------- requests


def build_quotas(entries: Iterable[Any]) -> list[ClientQuota]:
    """ClientQuota from DescribeClientQuotas' entries (pure), sorted: users, client ids, pairs, IPs; defaults
    first in each."""
    found = []
    for entry in entries or ():
        names = {c.entity_type: c.entity_name for c in entry.entity}
        entity = tuple((t, names[t]) for t in ENTITY_TYPES if t in names) + tuple(
            (t, n) for t, n in names.items() if t not in ENTITY_TYPES
        )
        values = {v.key: float(v.value) for v in entry.values}
        if values:
            found.append(ClientQuota(entity=entity, values=values))
    return sorted(found, key=sort_key)


def _send(admin: KafkaAdminClient, request: Any) -> Any:
    return send_request(admin, request, "This cluster's brokers do not handle client quotas (Kafka 2.6 and later).")


def _refused(code: int, message: str | None) -> str:
    name = str(getattr(kafka.errors.kafka_errors.get(code), "message", "") or f"error {code}")
    return f"{name.replace('_', ' ').lower()}" + (f": {message}" if message else "")


def list_quotas(conn: ClusterConnection) -> list[ClientQuota]:
    """Every entity with quotas, defaults included: one DescribeClientQuotas matching everything."""

    def fetch(admin: KafkaAdminClient) -> list[ClientQuota]:
        answer = _send(admin, DescribeClientQuotasRequest(components=[], strict=False))
        if answer.error_code:
            raise KafkaRefused("Kafka did not list the quotas: " + _refused(answer.error_code, answer.error_message))
        return build_quotas(answer.entries or [])

    return conn.call(fetch, "client quotas", retry=True)


def alter_request(entity: Entity, values: Mapping[str, float], remove: Iterable[str], validate_only: bool) -> Any:
    entry = AlterClientQuotasRequest.EntryData
    ops = [entry.OpData(key=k, value=v, remove=False) for k, v in values.items()]
    ops += [entry.OpData(key=k, value=0.0, remove=True) for k in remove]
    return AlterClientQuotasRequest(
        entries=[entry(entity=[entry.EntityData(entity_type=t, entity_name=n) for t, n in entity], ops=ops)],
        validate_only=validate_only,
    )


def do_alter_quotas(
    conn: ClusterConnection, entity: Entity, set_values: Mapping[str, Any], remove: Iterable[str]
) -> ClientQuota:
    """Set and remove quotas of one entity; what it has afterwards (as asked, not read back). Our checks
    first (InvalidInput), then Kafka's with validate_only (KafkaRefused), then the change."""
    values, removing = check_ops(entity, set_values, remove)

    def alter(admin: KafkaAdminClient) -> None:
        for validate_only in (True, False):
            answer = _send(admin, alter_request(entity, values, removing, validate_only))
            for entry in answer.entries:
                if entry.error_code:
                    what = "refused the quota" if validate_only else "did not change the quota"
                    raise KafkaRefused(f"Kafka {what}: {_refused(entry.error_code, entry.error_message)}")

    conn.call(alter, "client quota change", requests=2)
    return ClientQuota(entity=entity, values=values)
