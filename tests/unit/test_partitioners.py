"""The partitioners find-by-key searches with, against published values."""

from __future__ import annotations

import pytest

from broker.messages.partitioners import CHOICES, crc32_partition, murmur2_partition, placements

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
    assert placements(b"123456789", 6) == {"murmur2": murmur2_partition(b"123456789", 6), "crc32": 0xCBF43926 % 6}
    assert CHOICES == ("auto", "murmur2", "crc32", "all")
