"""A message as the pages show it: decoded key, value and headers, and its own URL."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from urllib.parse import quote

from django.urls import get_script_prefix, reverse

from broker.decode import (
    SCHEMA_KINDS,
    AvroSchema,
    Decoded,
    RecordDecoder,
    SchemaError,
    as_text,
    auto_data,
    decode,
    parse_avro_schema,
)
from broker.errors import ConfigError
from broker.messages.log import Message
from broker.messages.masking import masked_labels
from console.config.registry import registry_for
from console.models import TopicSchema

LIST_LIMIT = 2_000  # characters of a key or value decoded for a list of messages
PREVIEW_LIMIT = 400  # characters of the one-line preview in a list
DETAIL_LIMIT = 200_000  # on the message's own page


@dataclass(frozen=True)
class Header:
    name: str
    value: Decoded


@dataclass(frozen=True)
class ShownMessage:
    message: Message
    key: Decoded
    value: Decoded
    headers: list[Header]
    url: str
    key_preview: str = ""
    value_preview: str = ""
    cluster: str = ""

    @cached_property
    def key_schema_url(self) -> str:
        """The schemas page of the subject a registry record's key names, or ""."""
        return schema_url(self.cluster, self.key)

    @cached_property
    def value_schema_url(self) -> str:
        return schema_url(self.cluster, self.value)

    @cached_property
    def masked(self) -> tuple[str, ...]:
        """What masking hid of this message from the user it is shown to (see broker.messages.masking)."""
        return masked_labels(self.message)

    @property
    def key_masked(self) -> bool:
        return any(label.startswith("key ") for label in self.masked)

    @property
    def value_masked(self) -> bool:
        return any(not label.startswith(("key ", "header ")) for label in self.masked)

    @cached_property
    def time_utc(self) -> str:
        if self.message.timestamp is None:
            return ""
        return datetime.fromtimestamp(self.message.timestamp / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


class StoredSchemas:
    """The Avro schemas uploaded for a topic (TopicSchema), read from the database the first time they are asked
    for: a page of JSON or text records never asks (in "auto", a stored schema is only tried on bytes that are
    neither), and that query was a twentieth of a page of messages. A stored schema that no longer parses is
    reported in ``errors``, not raised."""

    def __init__(self, cluster: str | None, topic: str) -> None:
        self.cluster, self.topic = cluster, topic
        self._lock = threading.Lock()
        self._found: tuple[dict[str, AvroSchema], tuple[str, ...]] | None = None if cluster is not None else ({}, ())

    def read(self) -> tuple[dict[str, AvroSchema], tuple[str, ...]]:
        with self._lock:
            if self._found is None:
                schemas: dict[str, AvroSchema] = {}
                errors = []
                for stored in TopicSchema.objects.filter(cluster=self.cluster, topic=self.topic):
                    try:
                        schemas[stored.part] = parse_avro_schema(stored.schema)
                    except SchemaError as exc:
                        errors.append(f"The stored {stored.part} schema does not parse: {exc}")
                self._found = (schemas, tuple(errors))
            return self._found

    @property
    def was_read(self) -> bool:
        return self._found is not None


@dataclass(frozen=True)
class Decoding:
    """How to decode a topic's keys and values, with the schemas uploaded for it."""

    key_as: str = "auto"
    value_as: str = "auto"
    # The cluster's schema registry, for records in its wire format (None: not asked, as in unit tests)
    registry: RecordDecoder | None = None
    stored: StoredSchemas = field(default_factory=lambda: StoredSchemas(None, ""))

    @property
    def key_schema(self) -> AvroSchema | None:
        return self.stored.read()[0].get("key")

    @property
    def value_schema(self) -> AvroSchema | None:
        return self.stored.read()[0].get("value")

    @property
    def schema_errors(self) -> tuple[str, ...]:
        return self.stored.read()[1]

    @property
    def schema_errors_met(self) -> tuple[str, ...]:
        """The stored schemas' errors if anything has read them (a page says so only when they mattered)."""
        return self.stored.read()[1] if self.stored.was_read else ()


_decoders: dict[str, tuple[object, RecordDecoder]] = {}
_decoders_lock = threading.Lock()


def record_decoder(cluster: str) -> RecordDecoder:
    """The reader of ``cluster``'s wire-format records: one per registry in this process, so the schemas it
    compiled are kept across pages; without a registry (or with one configured wrongly) it says so for each
    framed record."""
    try:
        registry = registry_for(cluster)
    except ConfigError as exc:
        return RecordDecoder(None, f"the schema registry is not configured correctly: {exc}")
    with _decoders_lock:
        kept = _decoders.get(cluster)
        if kept is None or kept[0] is not registry:
            kept = _decoders[cluster] = (registry, RecordDecoder(registry))
        return kept[1]


def decoding_for(
    cluster: str, topic: str, key_as: str = "auto", value_as: str = "auto", lazy: bool = False
) -> Decoding:
    """The requested decodings plus the topic's stored Avro schemas, read now, or (``lazy``: for a page drawn in
    this thread) the first time a record needs them."""
    stored = StoredSchemas(cluster, topic)
    if not lazy:
        stored.read()
    return Decoding(key_as=key_as, value_as=value_as, registry=record_decoder(cluster), stored=stored)


# One encoder for every preview: json.dumps with options builds a new one for each value.
_PREVIEW_JSON = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), default=str)


def preview(decoded: Decoded, raw: bytes | None) -> str:
    """One line for a list: compact JSON, the text, or the first bytes in hex; cut at PREVIEW_LIMIT."""
    if decoded.kind == "json" or decoded.kind in SCHEMA_KINDS:
        line = _PREVIEW_JSON.encode(decoded.data)
    elif decoded.kind == "binary" and raw is not None:
        line = raw[: PREVIEW_LIMIT // 3].hex(" ")
    else:
        line = decoded.text
    return _one_line(line)


def _one_line(line: str) -> str:
    return line if len(line) <= PREVIEW_LIMIT else line[:PREVIEW_LIMIT] + "…"


def _listed(raw: bytes | None, decoding: Decoding, part: str, limit: int, subject: str) -> tuple[Decoded, str]:
    """A key or value (``part``) as shown (``limit`` characters) with its preview. In a list (``limit`` up to
    LIST_LIMIT), a key or value "auto" reads as JSON keeps the one-line form its preview shows as its text, not
    the pretty-printed form of a message's own page: printing that cost more than the rest of the row. The
    topic's stored schema is looked up only for what can use it: "avro", or framed bytes in "auto"."""
    as_ = decoding.key_as if part == "key" else decoding.value_as
    # A first byte 0 (the registry's wire format) is never JSON nor text to auto_data: straight to decode().
    if limit <= LIST_LIMIT and as_ == "auto" and raw and raw[0] != 0:
        kind, value = auto_data(raw)
        if kind == "json":
            line = _PREVIEW_JSON.encode(value)
            one_line = Decoded("json", "json", line[:limit], value, None, len(raw), len(line) > limit, len(line))
            return one_line, _one_line(line)
        if kind == "text":  # what decode() would read again
            text = as_text(raw, str(value), limit)
            return text, _one_line(text.text)
    schema = None
    if raw and (as_ == "avro" or (as_ == "auto" and raw[0] == 0)):
        schema = decoding.key_schema if part == "key" else decoding.value_schema
    listed = limit <= LIST_LIMIT
    decoded = decode(raw, as_, schema, limit=limit, registry=decoding.registry, subject=subject, one_line=listed)
    if listed and decoded.schema is not None and decoded.kind in SCHEMA_KINDS:
        return decoded, _one_line(decoded.text)  # already the one line its preview shows
    return decoded, preview(decoded, raw)


def message_url(cluster: str, topic: str, partition: int, offset: int) -> str:
    """The message's own page. Django's reverse() costs more than the rest of a list row: it is asked once per
    partition (and script prefix; the URL ends with the offset) and remembered."""
    key = (get_script_prefix(), cluster, topic, partition)
    prefix = _url_prefixes.get(key)
    if prefix is None:
        kwargs = {"cluster": cluster, "topic": topic, "partition": partition}
        first = reverse("message-detail", kwargs={**kwargs, "offset": 0})
        if not first.endswith("/0/"):  # not the URL this expects: no shortcut
            return reverse("message-detail", kwargs={**kwargs, "offset": offset})
        if len(_url_prefixes) >= _URL_PREFIXES:
            _url_prefixes.clear()
        prefix = _url_prefixes[key] = first[:-2]
    return f"{prefix}{offset}/"


_URL_PREFIXES = 1024
_url_prefixes: dict[tuple[str, str, str, int], str] = {}


def show(cluster: str, message: Message, decoding: Decoding, limit: int = LIST_LIMIT) -> ShownMessage:
    """``message`` decoded as ``decoding`` says, each part cut at ``limit`` characters: LIST_LIMIT for a row of a
    list (where a JSON key or value's text is its one line: see _listed), DETAIL_LIMIT on its own page."""
    topic = message.topic
    key, key_preview = _listed(message.key, decoding, "key", limit, f"{topic}-key")
    value, value_preview = _listed(message.value, decoding, "value", limit, f"{topic}-value")
    return ShownMessage(
        message=message,
        key=key,
        value=value,
        headers=[Header(name, decode(raw, "auto", limit=limit)) for name, raw in message.headers],
        url=message_url(cluster, message.topic, message.partition, message.offset),
        key_preview=key_preview,
        value_preview=value_preview,
        cluster=cluster,
    )


def schema_url(cluster: str, decoded: Decoded) -> str:
    """The schemas page of the subject ``decoded`` was read with (registry records), or ""."""
    if decoded.schema is None:
        return ""
    subject = decoded.schema.get("subject")
    if not subject:
        return ""
    key = (get_script_prefix(), cluster, str(subject))
    url = _schema_urls.get(key)
    if url is None:
        if len(_schema_urls) >= _URL_PREFIXES:
            _schema_urls.clear()
        url = _schema_urls[key] = f"{key[0]}clusters/{quote(cluster, safe='')}/schemas/{quote(key[2], safe='')}/"
    return url


_schema_urls: dict[tuple[str, str, str], str] = {}
