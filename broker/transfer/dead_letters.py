"""Where a dead letter came from, by the headers its writer put on it.

- Kafka Connect (a sink connector with ``errors.deadletterqueue.context.headers.enable=true``) writes
  ``__connect.errors.topic``, ``__connect.errors.partition`` and ``__connect.errors.offset`` as text, beside the
  connector's name, the stage and the exception (``__connect.errors.exception.class.name``, ``...message``).
- Spring Kafka's DeadLetterPublishingRecoverer writes ``kafka_dlt-original-topic`` as text and
  ``kafka_dlt-original-partition`` (4 bytes) and ``kafka_dlt-original-offset`` (8 bytes) as big-endian numbers,
  beside ``kafka_dlt-exception-fqcn`` and ``kafka_dlt-exception-message``.
- Any other writer: a header chosen by hand names the topic (and, optionally, one the partition).

Pure: records in, origins out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["CONNECT", "SPRING", "Origin", "Scheme", "detect", "group_by_origin", "origin_of"]


@dataclass(frozen=True)
class Scheme:
    name: str
    topic: str  # the header naming the original topic
    partition: str | None = None
    offset: str | None = None
    error: tuple[str, ...] = ()  # headers that say what went wrong, first found wins


CONNECT = Scheme(
    "kafka-connect",
    "__connect.errors.topic",
    "__connect.errors.partition",
    "__connect.errors.offset",
    ("__connect.errors.exception.message", "__connect.errors.exception.class.name"),
)
SPRING = Scheme(
    "spring-kafka",
    "kafka_dlt-original-topic",
    "kafka_dlt-original-partition",
    "kafka_dlt-original-offset",
    ("kafka_dlt-exception-message", "kafka_dlt-exception-fqcn"),
)
KNOWN = (CONNECT, SPRING)


@dataclass(frozen=True)
class Origin:
    """Where one dead letter was read from, and why it failed (as its writer said)."""

    topic: str
    partition: int | None
    offset: int | None
    error: str | None


def _number(raw: bytes | None) -> int | None:
    """A header holding a number: Connect writes it as text, Spring as a big-endian int32 or int64."""
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace").strip()
    if text.lstrip("-").isdigit():
        return int(text)
    if len(raw) in (4, 8):
        return int.from_bytes(raw, "big", signed=True)
    return None


def _last(headers: Sequence[tuple[str, bytes | None]], name: str) -> bytes | None:
    """The last value of header ``name`` (a record sent to the dead letters twice carries the newest last)."""
    found = None
    for key, value in headers:
        if key == name:
            found = value
    return found


def origin_of(headers: Sequence[tuple[str, bytes | None]], scheme: Scheme) -> Origin | None:
    """Where the record came from by ``scheme``'s headers; None when it does not name a topic."""
    topic = _last(headers, scheme.topic)
    if not topic:
        return None
    error = next((v for name in scheme.error if (v := _last(headers, name))), None)
    return Origin(
        topic=topic.decode("utf-8", "replace"),
        partition=_number(_last(headers, scheme.partition)) if scheme.partition else None,
        offset=_number(_last(headers, scheme.offset)) if scheme.offset else None,
        error=error.decode("utf-8", "replace")[:500] if error else None,
    )


def detect(samples: Iterable[Sequence[tuple[str, bytes | None]]]) -> Scheme | None:
    """The known scheme that the most of ``samples`` (records' headers) follow, or None when none does."""
    counts = dict.fromkeys(KNOWN, 0)
    for headers in samples:
        names = {name for name, _ in headers}
        for scheme in KNOWN:
            if scheme.topic in names:
                counts[scheme] += 1
    best = max(KNOWN, key=lambda s: counts[s])
    return best if counts[best] else None


@dataclass
class OriginGroup:
    """The dead letters of one original topic and partition: how many, their offsets here, a few samples."""

    topic: str
    partition: int | None
    count: int = 0
    offsets: list[tuple[int, int]] = field(default_factory=list)  # (partition, offset) in the dead-letter topic
    errors: dict[str, int] = field(default_factory=dict)  # why, and how often (the most frequent 10 kept)
    first_offset: int | None = None  # the smallest original offset
    last_offset: int | None = None


def group_by_origin(
    letters: Iterable[tuple[int, int, Sequence[tuple[str, bytes | None]]]], scheme: Scheme
) -> tuple[list[OriginGroup], int]:
    """Dead letters ((partition, offset, headers) in the dead-letter topic) grouped by where they came from,
    the biggest groups first; and how many named no origin."""
    groups: dict[tuple[str, int | None], OriginGroup] = {}
    unnamed = 0
    for partition, offset, headers in letters:
        origin = origin_of(headers, scheme)
        if origin is None:
            unnamed += 1
            continue
        key = (origin.topic, origin.partition)
        group = groups.get(key)
        if group is None:
            group = groups[key] = OriginGroup(origin.topic, origin.partition)
        group.count += 1
        group.offsets.append((partition, offset))
        if origin.error:
            group.errors[origin.error] = group.errors.get(origin.error, 0) + 1
        if origin.offset is not None:
            group.first_offset = origin.offset if group.first_offset is None else min(group.first_offset, origin.offset)
            group.last_offset = origin.offset if group.last_offset is None else max(group.last_offset, origin.offset)
    ordered = sorted(groups.values(), key=lambda g: (-g.count, g.topic, -1 if g.partition is None else g.partition))
    for g in ordered:
        g.errors = dict(sorted(g.errors.items(), key=lambda kv: -kv[1])[:10])
    return ordered, unnamed
