"""Where producers put a keyed message: the default partitioners of the clients people run.

Java clients (Kafka's own producer, Kafka Streams, Spring Kafka, and kafka-python, which copies it)
take murmur2 of the key bytes. librdkafka, and so kcat, confluent-kafka for Python, Go and .NET and
most clients not written in Java, takes CRC32 of the key bytes by default ("consistent_random").
Sarama (IBM/sarama, the Go client most Go producers use) takes FNV-1a by default (its
NewHashPartitioner), and librdkafka offers the same placement as ``fnv1a`` / ``fnv1a_random`` so that
its producers can share a topic with Sarama's. Each is a positive hash modulo the partition count, so
a key lands in one partition per partitioner, and a topic written by all three kinds of producer holds
a key in at most three partitions.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

from kafka.partitioner.default import murmur2


def murmur2_partition(key: bytes, partitions: int) -> int:
    """The Java producer's partition for a non-null key: murmur2, made positive, modulo."""
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


def crc32_partition(key: bytes, partitions: int) -> int:
    """librdkafka's partition for a non-null key (partitioners consistent and consistent_random): the
    CRC-32 of zlib and Ethernet (reflected polynomial 0xEDB88320), modulo."""
    return zlib.crc32(key) % partitions


_FNV_OFFSET_BASIS = 0x811C9DC5  # FNV-1a, 32 bits: the offset basis and the prime
_FNV_PRIME = 0x01000193


def fnv1a_32(key: bytes) -> int:
    """FNV-1a of ``key``, 32 bits, unsigned: for each byte, xor it in, then multiply by the prime."""
    h = _FNV_OFFSET_BASIS
    for byte in key:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def fnv1a_partition(key: bytes, partitions: int) -> int:
    """Sarama's default partition for a non-null key (NewHashPartitioner), and librdkafka's ``fnv1a`` and
    ``fnv1a_random``: FNV-1a read as a signed 32-bit number, its absolute value modulo the count (the
    lowest hash, -2**31, has the absolute value 2**31 in both). Sarama's NewReferenceHashPartitioner,
    which masks the sign bit as Java does, places some keys elsewhere; it is not a default anywhere."""
    h = fnv1a_32(key)
    signed = h - (1 << 32) if h & 0x80000000 else h
    return abs(signed) % partitions


@dataclass(frozen=True)
class Partitioner:
    name: str
    place: Callable[[bytes, int], int]
    label: str  # what it computes
    clients: str  # who uses it by default


PARTITIONERS: dict[str, Partitioner] = {
    "murmur2": Partitioner(
        "murmur2",
        murmur2_partition,
        "murmur2 of the key bytes",
        "Java clients: Kafka's producer, Kafka Streams, Spring Kafka; also kafka-python",
    ),
    "crc32": Partitioner(
        "crc32",
        crc32_partition,
        "CRC32 of the key bytes",
        "librdkafka clients: kcat, confluent-kafka for Python, Go and .NET, and most others not in Java",
    ),
    "fnv1a": Partitioner(
        "fnv1a",
        fnv1a_partition,
        "FNV-1a (32-bit) of the key bytes",
        "Sarama, the Go client most Go producers use; librdkafka with partitioner=fnv1a or fnv1a_random",
    ),
}
# What find-by-key may search: the partitions the partitioners name (auto), one partitioner's, or every one.
CHOICES = ("auto", *PARTITIONERS, "all")


def placements(key: bytes, partitions: int) -> dict[str, int]:
    """The partition each partitioner of PARTITIONERS gives ``key`` among ``partitions``."""
    return {name: p.place(key, partitions) for name, p in PARTITIONERS.items()}
