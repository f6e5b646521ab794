"""Broker configurations: each broker's configs with where each value comes from, compared across brokers,
and changes of the dynamic ones for one broker or as the cluster default.

Reading costs one DescribeConfigs per live broker (each broker answers for itself only), with synonyms so a
value set for the broker also shows the cluster default and the static value under it; never one request per
config. A broker that is down or silent gets an ``error`` and the others still show. Kafka returns no value
for a sensitive config (a password), so none is ever shown.

Changes go through IncrementalAlterConfigs, sent with ``validate_only`` first: when Kafka refuses (a bad
value, a read-only config), nothing has changed and its reason is passed on. The cluster default is the
broker resource named ``""``; kafka-python's admin client takes broker names as numbers only, so that request
is sent through its connection manager (kafka-python 3.0.x). Works alike in ZooKeeper mode and on KRaft.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from broker.client.connection import ClusterConnection, live_brokers, send_request
from broker.errors import InvalidInput, KafkaRefused

# Kafka's config sources (DescribeConfigs v1+), by the names kafka-python gives them, as short names.
SOURCES = {
    "STATIC_BROKER_CONFIG": "static",
    "DYNAMIC_BROKER_CONFIG": "dynamic_broker",
    "DYNAMIC_DEFAULT_BROKER_CONFIG": "dynamic_default",
    "DEFAULT_CONFIG": "default",
    "DYNAMIC_BROKER_LOGGER_CONFIG": "dynamic_broker_logger",
    "UNKNOWN": "unknown",
}
# The same by Kafka's numbers, for answers that carry the int.
SOURCE_NUMBERS = {
    0: "unknown",
    2: "dynamic_broker",
    3: "dynamic_default",
    4: "static",
    5: "default",
    6: "dynamic_broker_logger",
}
SOURCE_LABELS = {
    "static": "static",
    "dynamic_broker": "dynamic · broker",
    "dynamic_default": "dynamic · cluster default",
    "default": "default",
    "dynamic_broker_logger": "dynamic · broker logger",
    "unknown": "unknown",
}
SOURCE_TITLES = {
    "static": "from the broker's server.properties, read at start",
    "dynamic_broker": "set dynamically for this broker: wins over the cluster default and the static value",
    "dynamic_default": "set dynamically as the cluster default: wins over the static value",
    "default": "Kafka's default: set nowhere",
}
DYNAMIC_SOURCES = frozenset({"dynamic_broker", "dynamic_default"})
FILTERS = ("dynamic", "differs")
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def source_name(raw: Any) -> str:
    """The short name of a config source given as Kafka's number or kafka-python's enum name."""
    if isinstance(raw, int):
        return SOURCE_NUMBERS.get(raw, "unknown")
    return SOURCES.get(str(raw).rsplit(".", 1)[-1].upper(), "unknown")


@dataclass(frozen=True)
class Synonym:
    """A value the config would take from another source, strongest first (Kafka's order)."""

    name: str
    value: str | None
    source: str

    @property
    def source_label(self) -> str:
        return SOURCE_LABELS.get(self.source, self.source)


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None  # None: not set, or sensitive (Kafka never returns those)
    source: str  # one of SOURCES' short names
    read_only: bool  # True: only a restart with a changed server.properties changes it
    sensitive: bool
    synonyms: tuple[Synonym, ...] = ()

    @property
    def dynamic(self) -> bool:
        """Set dynamically (for this broker or as the cluster default)."""
        return self.source in DYNAMIC_SOURCES

    @property
    def source_label(self) -> str:
        return SOURCE_LABELS.get(self.source, self.source)

    @property
    def source_title(self) -> str:
        return SOURCE_TITLES.get(self.source, "")

    @property
    def shown(self) -> str | None:
        """The value as the console shows it: "hidden" for a sensitive one."""
        return "hidden" if self.sensitive else self.value

    def synonym(self, source: str) -> Synonym | None:
        return next((s for s in self.synonyms if s.source == source), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": None if self.sensitive else self.value,
            "source": self.source,
            "read_only": self.read_only,
            "sensitive": self.sensitive,
            "synonyms": [{"name": s.name, "value": s.value, "source": s.source} for s in self.synonyms],
        }


@dataclass(frozen=True)
class BrokerConfigs:
    broker: int
    configs: dict[str, ConfigEntry] = field(default_factory=dict)
    error: str | None = None  # why this broker has no answer


@dataclass(frozen=True)
class ConfigRow:
    """One config name across the brokers that answered."""

    name: str
    entries: dict[int, ConfigEntry]  # broker -> its entry

    @property
    def differs(self) -> bool:
        """Not the same value on every broker that answered (sensitive values cannot be compared)."""
        values = {e.value for e in self.entries.values() if not e.sensitive}
        return len(values) > 1

    @property
    def dynamic(self) -> bool:
        return any(e.dynamic for e in self.entries.values())

    @property
    def read_only(self) -> bool:
        return all(e.read_only for e in self.entries.values())

    @property
    def sensitive(self) -> bool:
        return any(e.sensitive for e in self.entries.values())


@dataclass(frozen=True)
class ClusterConfigs:
    brokers: list[BrokerConfigs]

    @property
    def answered(self) -> list[BrokerConfigs]:
        return [b for b in self.brokers if b.error is None]

    def rows(self, only: str | None = None, query: str = "") -> list[ConfigRow]:
        """One row per config name, sorted by name; ``only``: "dynamic" (set dynamically on some broker) or
        "differs"; ``query``: a part of the name."""
        return filter_rows(build_rows(self.brokers), only, query)

    def as_dict(self) -> dict[str, Any]:
        return {
            "brokers": [{"id": b.broker, "error": b.error} for b in self.brokers],
            "configs": [
                {
                    "name": r.name,
                    "differs": r.differs,
                    "read_only": r.read_only,
                    "sensitive": r.sensitive,
                    "values": {
                        str(b): {"value": e.as_dict()["value"], "source": e.source}
                        for b, e in sorted(r.entries.items())
                    },
                }
                for r in self.rows()
            ],
        }


def parse_entry(name: str, raw: dict[str, Any]) -> ConfigEntry:
    """A config from kafka-python's describe_configs answer (pure)."""
    sensitive = bool(raw.get("is_sensitive"))
    value = raw.get("value")
    return ConfigEntry(
        name=name,
        value=None if sensitive or value is None else str(value),
        source=source_name(raw.get("config_source", "UNKNOWN")),
        read_only=bool(raw.get("read_only")),
        sensitive=sensitive,
        synonyms=tuple(
            Synonym(
                str(s.get("name", name)),
                None if sensitive or s.get("value") is None else str(s["value"]),
                source_name(s.get("source", "UNKNOWN")),
            )
            for s in raw.get("synonyms") or []
        ),
    )


def build_rows(brokers: list[BrokerConfigs]) -> list[ConfigRow]:
    """The configs of the brokers that answered, one row per name (pure)."""
    names = sorted({n for b in brokers if b.error is None for n in b.configs})
    return [
        ConfigRow(n, {b.broker: b.configs[n] for b in brokers if b.error is None and n in b.configs}) for n in names
    ]


def filter_rows(rows: list[ConfigRow], only: str | None = None, query: str = "") -> list[ConfigRow]:
    """``rows`` narrowed to those ``only`` names ("dynamic", "differs") whose name holds ``query`` (pure)."""
    needle = query.strip().lower()
    return [
        r
        for r in rows
        if (not needle or needle in r.name.lower())
        and (only != "dynamic" or r.dynamic)
        and (only != "differs" or r.differs)
    ]


def _reason(outcome: str) -> str:
    """Kafka's reason from kafka-python's "[Error 42] InvalidRequestError: reason" text."""
    return re.sub(r"^\[Error -?\d+\] \w+: ?", "", outcome).strip() or outcome


def _describe(admin: KafkaAdminClient, broker: int) -> dict[str, ConfigEntry]:
    answer = admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, str(broker))], include_synonyms=True, config_filter="all"
    )
    raw = answer.get("broker", {}).get(str(broker), {})
    return {name: parse_entry(name, entry) for name, entry in raw.items()}


def get_broker_configs(conn: ClusterConnection, brokers: list[int] | None = None) -> ClusterConfigs:
    """The configs of ``brokers`` (None: every live broker, and those seen before and gone now, as down), one
    DescribeConfigs per broker. A broker that is down or does not answer gets an ``error``. Raises
    ClusterUnavailable when the cluster cannot be reached at all."""

    def ask(admin: KafkaAdminClient) -> ClusterConfigs:
        live = {b["broker_id"] for b in live_brokers(admin, conn)}
        asked = brokers if brokers is not None else sorted(live | set(conn.known_brokers))
        result = []
        for broker in asked:
            if broker not in live:
                result.append(BrokerConfigs(broker, error="is down (not registered with the cluster now)"))
            elif conn.is_silent(broker):
                result.append(BrokerConfigs(broker, error="did not answer lately"))
            else:
                try:
                    result.append(BrokerConfigs(broker, _describe(admin, broker)))
                except (kafka.errors.KafkaTimeoutError, kafka.errors.RequestTimedOutError):
                    conn.mark_silent(broker)
                    result.append(BrokerConfigs(broker, error="did not answer in time"))
                except kafka.errors.KafkaError as exc:
                    result.append(BrokerConfigs(broker, error=type(exc).__name__))
        return ClusterConfigs(result)

    return conn.call(ask, "broker configs", requests=3, retry=True)


def check_change(set_configs: dict[str, str], delete: list[str]) -> None:
    """Refuse a change that names nothing, a malformed name, or one name both set and deleted. Raises
    InvalidInput."""
    if not set_configs and not delete:
        raise InvalidInput("Name a config to set or to delete.")
    for name in [*set_configs, *delete]:
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidInput(f"{name!r} is not a config name.")
    for name, value in set_configs.items():
        if not isinstance(value, str):
            raise InvalidInput(f"The value of {name} must be text.")
    both = sorted(set(set_configs) & set(delete))
    if both:
        raise InvalidInput(f"{', '.join(both)} cannot be both set and deleted.")


def do_alter_broker_configs(
    conn: ClusterConnection, broker: int | None, set_configs: dict[str, str], delete: list[str] | None = None
) -> None:
    """Set ``set_configs`` and delete ``delete`` (back to the static or default value) dynamically, on
    ``broker``, or as the cluster default when it is None. Kafka validates first (validate-only); nothing
    is changed unless it accepts all of it.

    Raises InvalidInput (a name no broker lists), KafkaRefused (Kafka's reason: a bad value, a read-only
    config), ClusterUnavailable."""
    delete = delete or []
    check_change(set_configs, delete)
    changes: dict[str, Any] = {k: ("SET", v) for k, v in set_configs.items()}
    changes.update({k: ("DELETE", None) for k in delete})
    name = "" if broker is None else str(broker)

    def alter(admin: KafkaAdminClient) -> None:
        # Kafka accepts names it does not know as custom broker configs: a typo would be kept silently.
        asked = broker if broker is not None else min(b["broker_id"] for b in live_brokers(admin, conn))
        known = _describe(admin, asked)
        unknown = sorted(set(changes) - set(known))
        if unknown:
            raise InvalidInput(f"Broker {asked} lists no config named {', '.join(unknown)}: nothing was changed.")
        for validate_only in (True, False):
            outcome = _send(admin, broker, ConfigResource(ConfigResourceType.BROKER, name, changes), validate_only)
            if outcome != "OK":
                raise KafkaRefused(f"Kafka refused: {_reason(outcome)}. Nothing was changed.")
        # The broker applies it a moment later (from ZooKeeper or the metadata log): wait a little, so that a
        # page read right after shows it, leaving the call time for one more request.
        deadline = started + 2 * conn.config.timeout
        while not applied(_describe(admin, asked), set_configs, delete, broker is None):
            if time.monotonic() >= deadline:
                break
            time.sleep(0.2)

    started = time.monotonic()
    conn.call(alter, "broker config change", requests=3)


def applied(configs: dict[str, ConfigEntry], set_configs: dict[str, str], delete: list[str], default: bool) -> bool:
    """Whether a broker's ``configs`` show the change (as the cluster default when ``default``), with the
    values under a stronger one (synonyms) counted (pure)."""
    source = "dynamic_default" if default else "dynamic_broker"

    def layers(name: str) -> list[tuple[str | None, str]]:
        entry = configs.get(name)
        if entry is None:
            return []
        return [(entry.value, entry.source), *((s.value, s.source) for s in entry.synonyms)]

    sets = all(
        any(src == source and (value == set_configs[n] or configs[n].sensitive) for value, src in layers(n))
        for n in set_configs
    )
    return sets and all(all(src != source for _, src in layers(n)) for n in delete)


def _send(admin: KafkaAdminClient, broker: int | None, resource: ConfigResource, validate_only: bool) -> str:
    """One IncrementalAlterConfigs: to ``broker`` for its own configs, to any broker for the cluster
    default. Returns "OK" or kafka-python's error text."""
    request = admin._alter_configs_request([resource], validate_only=validate_only, incremental=True)
    response = send_request(admin, request, node=broker)
    answer = admin._alter_configs_process_responses(response.responses)
    return str(answer.get("broker", {}).get(resource.name, "no answer for this resource"))
