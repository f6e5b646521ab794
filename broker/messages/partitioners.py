"""Where producers put a keyed message: the default partitioners of the clients people run.

Java clients (Kafka's own producer, Kafka Streams, Spring Kafka, and kafka-python, which copies it)
take murmur2 of the key bytes. librdkafka, and so kcat, confluent-kafka for Python, Go and .NET and
most clients not written in Java, takes CRC32 of the key bytes by default ("consistent_random").
Both are positive hashes modulo the partition count, so a key lands in one partition per partitioner,
and a topic written by both kinds of producer holds a key in at most two partitions.
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
}
# What find-by-key may search: the partitions both partitioners name, one partitioner's, or every one.
CHOICES = ("auto", *PARTITIONERS, "all")


def placements(key: bytes, partitions: int) -> dict[str, int]:
    """The partition each partitioner of PARTITIONERS gives ``key`` among ``partitions``."""
    return {name: p.place(key, partitions) for name, p in PARTITIONERS.items()}
