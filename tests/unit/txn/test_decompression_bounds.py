"""Bounded decompression (issue 25): a batch that inflates past its limit is refused without
the broker holding the inflated bytes, whatever the codec."""

from __future__ import annotations

from pathlib import Path

import cramjam
import pytest

from coordinator.log.cleaner import CleanerPolicy, clean
from coordinator.log.memory_log import MemoryLog
from coordinator.partition import Partition
from tests.bombs import bomb_batch
from txn.batch import HEADER_SIZE, build_batch, crc_ok, parse_header
from txn.compression import (
    MAX_INFLATION,
    Codec,
    DecompressedTooLargeError,
    compress,
    decompress,
    decompressed_limit,
)
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.record_keys import InflatedBatchError, records_of

MIB = 1 << 20
STREAMED = [Codec.GZIP, Codec.LZ4, Codec.ZSTD]


def _peak_rss_reset() -> bool:
    """Reset this process's VmHWM (Linux: clear_refs 5); False where that is not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


@pytest.mark.parametrize("codec", STREAMED, ids=lambda c: c.name.lower())
def test_a_bomb_is_refused_within_the_bound(codec: Codec) -> None:
    raw = bomb_batch(codec, 256)  # 256 MiB of records in a few KB
    section = raw[HEADER_SIZE:]
    limit = 8 * MIB
    measured = _peak_rss_reset()
    before = _kib("VmRSS")
    with pytest.raises(DecompressedTooLargeError, match="more than 8388608 bytes"):
        decompress(codec, section, limit)
    if measured:
        assert _kib("VmHWM") - before < 48 * 1024  # never near the 256 MiB it claims
    with pytest.raises(InflatedBatchError):
        list(records_of(raw, parse_header(raw), limit))


def test_snappy_is_refused_by_its_stated_length() -> None:
    raw_block = bytes(cramjam.snappy.compress_raw(b"\x00" * (40 * MIB)))
    with pytest.raises(DecompressedTooLargeError):
        decompress(Codec.SNAPPY, raw_block, 4 * MIB)
    framed = b"\x82SNAPPY\x00" + b"\x00\x00\x00\x01" * 2
    for _ in range(3):
        framed += len(raw_block).to_bytes(4, "big") + raw_block
    with pytest.raises(DecompressedTooLargeError):
        decompress(Codec.SNAPPY, framed, 100 * MIB)  # 120 MiB in three blocks


@pytest.mark.parametrize("codec", list(Codec), ids=lambda c: c.name.lower())
def test_data_within_the_bound_round_trips_exactly(codec: Codec) -> None:
    data = b"".join(f"record-{i:06d};".encode() for i in range(100_000))  # 1.4 MB
    packed = compress(codec, data)
    assert decompress(codec, packed, len(data)) == data  # exactly the limit
    with pytest.raises(DecompressedTooLargeError):
        decompress(codec, packed, len(data) - 1)


def test_the_bound_follows_max_message_bytes() -> None:
    assert decompressed_limit(1048588) == 1048588 * MAX_INFLATION


def test_a_compacted_partition_refuses_a_bomb_as_too_large() -> None:
    partition = Partition(TopicPartition("t", 0), MemoryLog(), max_batch_bytes=1 << 16)
    partition.compacted = True
    result = partition.append(bomb_batch(Codec.ZSTD, 8), now_ms=1)  # limit: 4 MiB
    assert result.error is ErrorCode.MESSAGE_TOO_LARGE
    assert "decompress to more than" in (result.error_message or "")
    ok = build_batch([(b"k", b"v" * 1000)], timestamp_ms=1, compression=Codec.ZSTD)
    assert partition.append(ok, now_ms=1).error is ErrorCode.NONE


def test_the_cleaner_keeps_an_oversized_batch_unread() -> None:
    """A batch past the bound (written under a larger limit) stays whole; the rest is cleaned."""
    bomb = bytearray(bomb_batch(Codec.ZSTD, 8, key=b"a"))
    bomb[0:8] = (2).to_bytes(8, "big")  # base offset 2
    header = parse_header(bytes(bomb))
    assert crc_ok(bytes(bomb), 0, header)
    first = build_batch([(b"a", b"1"), (b"b", b"1")], base_offset=0, timestamp_ms=1)
    later = build_batch([(b"b", b"2")], base_offset=3, timestamp_ms=1)
    batches = [(parse_header(r), r) for r in (first, bytes(bomb), later)]
    policy = CleanerPolicy(max_decompressed_bytes=MIB)
    kept = clean(batches, lambda _h: False, 10, policy)
    assert kept[1:] == [bytes(bomb), later]
    # "b"@1 went (b@3 is later); "a"@0 stays: the bomb's keys were not read
    assert [r.offset for r in records_of(kept[0], parse_header(kept[0]))] == [0]
