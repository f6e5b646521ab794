"""The partitioners find-by-key searches with, against published values."""

from __future__ import annotations

import pytest

from broker.messages.partitioners import (
    CHOICES,
    crc32_partition,
    fnv1a_32,
    fnv1a_partition,
    murmur2_partition,
    placements,
)

# CRC-32 (ISO-HDLC, as zlib and librdkafka compute it): its standard check value, and two widely
# published ones.
CRC32 = {b"123456789": 0xCBF43926, b"a": 0xE8B7BE43, b"The quick brown fox jumps over the lazy dog": 0x414FA339}


@pytest.mark.parametrize(("key", "crc"), CRC32.items())
@pytest.mark.parametrize("partitions", [1, 3, 6, 7, 100])
def test_crc32_placement_is_the_checksum_modulo_the_partitions(key: bytes, crc: int, partitions: int) -> None:
    assert crc32_partition(key, partitions) == crc % partitions


def test_the_two_partitioners_disagree_for_most_keys() -> None:
    keys = [f"user-{i}".encode() for i in range(600)]
    same = sum(crc32_partition(k, 6) == murmur2_partition(k, 6) for k in keys)
    assert 50 < same < 150  # about one in six by chance
    assert placements(b"123456789", 6) == {
        "murmur2": murmur2_partition(b"123456789", 6),
        "crc32": 0xCBF43926 % 6,
        "fnv1a": fnv1a_partition(b"123456789", 6),
    }
    assert CHOICES == ("auto", "murmur2", "crc32", "fnv1a", "all")


# FNV-1a, 32 bits, and Sarama's NewHashPartitioner placement, computed by an independent implementation: a Go
# program with the standard library's hash/fnv (fnv.New32a) placing keys as Sarama does (int32 of the sum,
# modulo the count, negated when negative), run with go1.26. Columns: the unsigned hash, then the partition
# among 3, 6, 7 and 100.
GO_FNV1A = {
    b"": (0x811C9DC5, 0, 3, 2, 35),
    b"kafka": (0x0D33C4E1, 2, 5, 4, 45),
    b"user-1": (0xF5537974, 0, 0, 1, 96),
    b"user-42": (0x026073AB, 0, 3, 6, 99),
    b"order-9001": (0x6C94C604, 2, 2, 3, 48),
    b"\x00\xff": (0xD277C7A0, 0, 0, 0, 48),
    "ü-Schlüssel".encode(): (0x488994A7, 2, 5, 6, 39),
}


@pytest.mark.parametrize(("key", "expected"), GO_FNV1A.items())
def test_fnv1a_hash_and_placement_match_gos_hash_fnv_with_saramas_formula(
    key: bytes, expected: tuple[int, int, int, int, int]
) -> None:
    hashed, *partitions = expected
    assert fnv1a_32(key) == hashed
    assert [fnv1a_partition(key, n) for n in (3, 6, 7, 100)] == partitions


# librdkafka's own unit test of rd_fnv1a lists these values (from Go's hash/fnv, made positive as Sarama does).
LIBRDKAFKA_FNV1A = {b"kafka": 0x0D33C4E1, b"giberish123456789": 0x77A58295, b"1234": 0x023BDD03, b"": 0x7EE3623B}


@pytest.mark.parametrize(("key", "positive"), LIBRDKAFKA_FNV1A.items())
def test_fnv1a_placement_is_the_positive_hash_modulo_as_librdkafka_computes_it(key: bytes, positive: int) -> None:
    assert [fnv1a_partition(key, n) for n in (1, 2, 6, 64, 1000)] == [positive % n for n in (1, 2, 6, 64, 1000)]


def test_the_lowest_signed_hash_counts_as_two_to_the_31() -> None:
    """A hash of 0x80000000 (-2**31 as int32) has no positive int32: Sarama's negated remainder and librdkafka's
    wrapped absolute value both give 2**31 modulo the count. The key was found, and its partitions among 3, 6 and
    7 computed, by the Go program above (hash/fnv, Sarama's formula)."""
    assert fnv1a_32(b"hp4gi_") == 0x80000000
    assert [fnv1a_partition(b"hp4gi_", n) for n in (3, 6, 7)] == [2, 2, 2]
