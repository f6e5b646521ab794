"""Producing one message and waiting for the brokers' acknowledgement; the produce form's first values (formats
guessed from the topic's recent records, or a record to send again)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import kafka.errors

from broker.client.connection import ClusterConnection
from broker.errors import ClusterUnavailable
from broker.messages.log import Message
from broker.topics.changes import refusal
from broker.topics.read import get_partition, get_topic_partitions


@dataclass(frozen=True)
class Produced:
    topic: str
    partition: int
    offset: int
    timestamp: int | None


def do_produce(
    conn: ClusterConnection,
    topic: str,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes]] | None = None,
    partition: int | None = None,
) -> Produced:
    """Send one message with acks=all and wait for the broker's acknowledgement.

    Raises PartitionNotFound, TopicNotFound, KafkaRefused (e.g. too large), ClusterUnavailable.
    """

    if partition is not None:
        get_partition(conn, topic, partition)
    else:
        get_topic_partitions(conn, topic)
    producer = conn.producer()
    try:
        future = producer.send(topic, key=key, value=value, headers=headers or [], partition=partition)
        meta = future.get(timeout=conn.config.timeout * 2)
    except (kafka.errors.KafkaTimeoutError, kafka.errors.RequestTimedOutError, kafka.errors.KafkaConnectionError):
        conn.drop_producer()
        raise ClusterUnavailable(
            f"Cluster {conn.config.name!r} did not acknowledge the message in time; "
            "it may or may not have been written."
        ) from None
    except kafka.errors.KafkaError as exc:
        raise refusal(exc) from None
    finally:
        conn.reads.forget()  # the partition's end offset moved (or may have)
    return Produced(
        topic=meta.topic,
        partition=meta.partition,
        offset=meta.offset,
        timestamp=meta.timestamp if meta.timestamp is not None and meta.timestamp >= 0 else None,
    )


def guess_formats(recent: list[Message]) -> dict[str, str]:
    """The produce form's formats as a topic's recent records suggest them: ``value_format`` json when every
    recent value is a JSON object or array, ``key_format`` none when no recent record has a key, json when every
    key is a JSON object or array. Nothing is guessed from no records, nor where they disagree."""
    records = [m for m in recent if m.control is None]
    guessed: dict[str, str] = {}
    if not records:
        return guessed
    values = [m.value for m in records if m.value is not None]
    if values and all(_json_document(v) for v in values):
        guessed["value_format"] = "json"
    keys = [m.key for m in records]
    if all(k is None for k in keys):
        guessed["key_format"] = "none"
    elif all(k is not None and _json_document(k) for k in keys):
        guessed["key_format"] = "json"
    return guessed


def _json_document(raw: bytes) -> bool:
    """Whether ``raw`` is a JSON object or array (a bare number or word is as likely plain text)."""
    text = raw.strip()
    if text[:1] not in (b"{", b"["):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Again:
    """A record as the produce form takes it, to send it again (edited first if wanted); ``left_out``: the parts
    masking hides from the user, which are not filled in."""

    source: str  # "partition:offset"
    fields: dict[str, str]
    left_out: tuple[str, ...]


def as_form(message: Message, masked: tuple[str, ...] = ()) -> Again:
    """``message``'s key, value, headers and partition as the produce form's fields: text where the bytes are
    UTF-8 (JSON as json), base64 otherwise. A part that masking touched (``masked``: its labels) is left empty."""
    hidden_key = any(label.startswith("key") for label in masked)
    hidden_value = any(not label.startswith(("key", "header")) for label in masked)
    hidden_headers = any(label.startswith("header") for label in masked)
    fields: dict[str, str] = {"partition": str(message.partition)}
    left_out = []
    for part, raw, hidden in (("key", message.key, hidden_key), ("value", message.value, hidden_value)):
        if hidden:
            left_out.append(part)
            continue
        fmt, text = _as_input(raw, part)
        fields[f"{part}_format"], fields[part] = fmt, text
    if hidden_headers:
        left_out.append("headers")
    elif message.headers:
        texts = [(name, value) for name, value in message.headers]
        if all(v is None or _utf8(v) is not None for _, v in texts):
            fields["header_format"] = "text"
            fields["headers"] = "\n".join(f"{name}={_utf8(v) or ''}" for name, v in texts)
        else:
            fields["header_format"] = "base64"
            fields["headers"] = "\n".join(f"{name}={base64.b64encode(v or b'').decode()}" for name, v in texts)
    return Again(f"{message.partition}:{message.offset}", fields, tuple(left_out))


def _utf8(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _as_input(raw: bytes | None, part: str) -> tuple[str, str]:
    if raw is None:
        return ("none", "") if part == "key" else ("null", "")
    text = _utf8(raw)
    if text is None or "\x00" in text:
        return "base64", base64.b64encode(raw).decode()
    return ("json" if _json_document(raw) else "text"), text
