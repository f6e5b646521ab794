"""What the produce page, the topic page and the messages page show of a cluster's schema registry: the subjects a
message can be written with (the topic's own ``<topic>-key`` / ``<topic>-value`` chosen first), the subjects a
topic's records use by the naming strategies, and the share of each schema id among the records of a page.

A cluster without a registry gets nothing but one line saying how to configure one; a registry that does not
answer gets one line saying so, within its time-out (the client then leaves it alone a few seconds)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from django.urls import reverse

from broker.errors import ConfigError, InvalidInput
from broker.schemas.encode import SchemaEncoder, SchemaUnusable
from broker.schemas.model import PROTOBUF, RegisteredSchema, RegistryError
from broker.schemas.registry import SUBJECT_NOT_FOUND, VERSION_NOT_FOUND, Registry
from broker.schemas.subjects import pretty
from console.config.registry import registry_for
from console.present.messages import ShownMessage

TYPE_LABELS = {"AVRO": "Avro", "PROTOBUF": "Protobuf", "JSON": "JSON Schema"}
MAX_RECORD_SUBJECTS = 20  # topic-record subjects the topic page looks up, at most


_encoders: dict[str, tuple[Registry, SchemaEncoder]] = {}
_encoders_lock = threading.Lock()


def schema_encoder(cluster: str) -> SchemaEncoder:
    """The encoder of ``cluster``'s registry (one per registry in this process, so compiled schemas last);
    raises InvalidInput when the cluster has none, ConfigError when it is configured wrongly."""
    registry = registry_for(cluster)
    if registry is None:
        raise InvalidInput(how_to_configure(cluster))
    with _encoders_lock:
        kept = _encoders.get(cluster)
        if kept is None or kept[0] is not registry:
            kept = _encoders[cluster] = (registry, SchemaEncoder(registry))
        return kept[1]


def how_to_configure(cluster: str) -> str:
    return (
        f"No schema registry is configured for cluster {cluster!r}: set SCHEMA_REGISTRY_URL (for the default "
        f"cluster) or a [clusters.{cluster}.schema_registry] table in the clusters file."
    )


def subject_url(cluster: str, subject: str) -> str:
    return reverse("schema-list", kwargs={"cluster": cluster}) + quote(subject, safe="") + "/"


@dataclass
class ChosenSchema:
    """The schema a part of the produce form is to be written with, as the page shows it (or why not)."""

    part: str
    subject: str
    version: str
    schema: RegisteredSchema | None = None
    error: str | None = None
    url: str = ""
    messages: tuple[str, ...] = ()  # a Protobuf schema's messages (full names), the first the default

    @property
    def type_label(self) -> str:
        return TYPE_LABELS.get(self.schema.schema_type, self.schema.schema_type) if self.schema else ""

    @property
    def text(self) -> str:
        return pretty(self.schema.text, self.schema.schema_type) if self.schema else ""


@dataclass
class ProduceSchemas:
    """The registry as the produce page offers it."""

    cluster: str
    topic: str
    registry: Registry | None = None
    configured: bool = False
    error: str | None = None
    subjects: list[str] = field(default_factory=list)

    def own(self, part: str) -> str | None:
        """The topic's own subject for ``part`` (topic name strategy) when the registry has it."""
        subject = f"{self.topic}-{part}"
        return subject if subject in self.subjects else None

    @property
    def initial(self) -> dict[str, str]:
        """The form's first choices: a part is written with the topic's own subject, latest, when it exists."""
        initial: dict[str, str] = {}
        for part in ("key", "value"):
            own = self.own(part)
            if own:
                initial |= {f"{part}_format": "schema", f"{part}_subject": own, f"{part}_version": "latest"}
        return initial

    def chosen(self, data: Mapping[str, Any]) -> list[ChosenSchema]:
        """The schemas the form's ``data`` (bound or initial) writes with, looked up to be shown."""
        found: list[ChosenSchema] = []
        if self.registry is None or self.error:
            return found
        for part in ("key", "value"):
            subject = str(data.get(f"{part}_subject") or "").strip()
            if data.get(f"{part}_format") != "schema" or not subject:
                continue
            version = str(data.get(f"{part}_version") or "").strip() or "latest"
            shown = ChosenSchema(part, subject, version, url=subject_url(self.cluster, subject))
            try:
                shown.schema = self.registry.schema_by_subject(subject, int(version) if version.isdigit() else "latest")
            except RegistryError as exc:
                shown.error = str(exc)
                if exc.code not in (SUBJECT_NOT_FOUND, VERSION_NOT_FOUND):
                    found.append(shown)
                    break  # the registry is down: ask it nothing more for this page
            if shown.schema is not None and shown.schema.schema_type == PROTOBUF:
                try:  # compiled once per id, and kept for the produce that follows
                    shown.messages = schema_encoder(self.cluster).encoder(shown.schema).messages
                except (RegistryError, SchemaUnusable, InvalidInput) as exc:
                    shown.error = str(exc)
            found.append(shown)
        return found


def produce_schemas(cluster: str, topic: str) -> ProduceSchemas:
    """The cluster's registry and its subjects for the produce page (one request); never raises."""
    found = ProduceSchemas(cluster, topic)
    try:
        registry = registry_for(cluster)
    except ConfigError as exc:
        found.error = f"The schema registry is not configured correctly: {exc}"
        return found
    if registry is None:
        return found
    found.registry, found.configured = registry, True
    try:
        found.subjects = sorted(registry.subjects())
    except RegistryError as exc:
        found.error = str(exc)
    return found


@dataclass(frozen=True)
class TopicSubject:
    """A subject a topic's records use: ``part`` key or value, ``strategy`` topic or topic-record."""

    part: str
    strategy: str
    subject: str
    url: str
    version: int | None = None
    id: int | None = None
    type_label: str = ""
    error: str | None = None


@dataclass
class TopicSchemas:
    """The topic page's registry section."""

    configured: bool
    subjects: list[TopicSubject] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # <topic>-key / -value when the registry has neither
    error: str | None = None
    how_to_configure: str = ""


def topic_schemas(cluster: str, topic: str) -> TopicSchemas:
    """The subjects ``topic``'s records use by the topic naming strategy (``<topic>-key``, ``<topic>-value``)
    and the topic-record one (``<topic>-<record name>``), each with its latest version, id and type; never
    raises."""
    try:
        registry = registry_for(cluster)
    except ConfigError as exc:
        return TopicSchemas(True, error=f"The schema registry is not configured correctly: {exc}")
    if registry is None:
        return TopicSchemas(False, how_to_configure=how_to_configure(cluster))
    try:
        names = set(registry.subjects())
    except RegistryError as exc:
        return TopicSchemas(True, error=str(exc))
    found = TopicSchemas(True)
    wanted: list[tuple[str, str, str]] = []
    for part in ("key", "value"):
        subject = f"{topic}-{part}"
        if subject in names:
            wanted.append((part, "topic", subject))
        else:
            found.missing.append(subject)
    record = sorted(n for n in names if n.startswith(f"{topic}-") and n not in (f"{topic}-key", f"{topic}-value"))
    wanted += [("value", "topic-record", n) for n in record[:MAX_RECORD_SUBJECTS]]
    for part, strategy, subject in wanted:
        url = subject_url(cluster, subject)
        try:
            latest = registry.schema_by_subject(subject)
        except RegistryError as exc:
            found.subjects.append(TopicSubject(part, strategy, subject, url, error=str(exc)))
            if exc.status == 0:
                break
            continue
        label = TYPE_LABELS.get(latest.schema_type, latest.schema_type)
        found.subjects.append(TopicSubject(part, strategy, subject, url, latest.version, latest.id, label))
    return found


@dataclass(frozen=True)
class SchemaShare:
    """How many records of a page carry one schema id in their key or value (``id`` None: none)."""

    part: str
    id: int | None
    subject: str | None
    version: object
    type_label: str
    url: str
    count: int
    total: int

    @property
    def fraction(self) -> float:
        return self.count / self.total if self.total else 0.0

    @property
    def percent(self) -> str:
        return f"{100 * self.fraction:.0f}%"


def schema_shares(cluster: str, shown: Iterable[ShownMessage]) -> list[SchemaShare]:
    """The share of each schema id among the keys and values of ``shown`` (markers left out), most common first
    per part; empty when no record of the page names a schema id."""
    counts: dict[str, Counter[int | None]] = {"key": Counter(), "value": Counter()}
    seen: dict[tuple[str, int], dict[str, object]] = {}
    total = 0
    for row in shown:
        if row.message.is_marker:
            continue
        total += 1
        for part, decoded in (("key", row.key), ("value", row.value)):
            schema = decoded.schema
            schema_id = schema.get("id") if schema else None
            if isinstance(schema_id, int):
                counts[part][schema_id] += 1
                seen.setdefault((part, schema_id), schema or {})
            else:
                counts[part][None] += 1
    shares = []
    for part in ("key", "value"):
        if not any(i is not None for i in counts[part]):
            continue
        for schema_id, count in counts[part].most_common():
            schema = seen.get((part, schema_id), {}) if schema_id is not None else {}
            subject = schema.get("subject")
            kind = str(schema.get("type") or "")
            shares.append(
                SchemaShare(
                    part,
                    schema_id,
                    str(subject) if subject else None,
                    schema.get("version"),
                    TYPE_LABELS.get(kind, kind),
                    subject_url(cluster, str(subject)) if subject else "",
                    count,
                    total,
                )
            )
    return shares
