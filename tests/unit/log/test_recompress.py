"""A topic's compression.type: batches stored with the topic's codec (Kafka's LogValidator)."""

from __future__ import annotations

import random
import struct

import pytest
from crc32c import crc32c

from coordinator.log.memory_log import MemoryLog
from coordinator.log.recompress import recompress
from coordinator.log.storage import LogConfig
from coordinator.log_settings import compression_level
from coordinator.partition import Partition
from txn.batch import ATTR_COMPRESSION_MASK, _varint, build_batch, crc_ok, parse_header
from txn.compression import Codec, DecompressedTooLargeError, topic_codec
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.record_keys import records_of

NOW = 1_700_000_000_000
RECORDS = [(b"k%d" % i, b"value-%d" % i * 20) for i in range(5)]


def batch(codec: Codec, **kw: object) -> bytes:
    return build_batch(RECORDS, timestamp_ms=NOW, compression=int(codec), **kw)  # type: ignore[arg-type]


def contents(raw: bytes) -> list[tuple[int, int, bytes | None, bytes]]:
    header = parse_header(raw)
    return [(r.offset, r.timestamp_ms, r.key, r.raw) for r in records_of(raw, header)]


@pytest.mark.parametrize("source", list(Codec))
@pytest.mark.parametrize("target", list(Codec))
def test_every_codec_to_every_codec_keeps_the_records(source: Codec, target: Codec) -> None:
    raw = batch(source, producer_id=7, producer_epoch=2, base_sequence=5, transactional=True)
    header = parse_header(raw)
    out = recompress(raw, header, target, 1 << 20)
    new = parse_header(out)
    assert new.attributes & ATTR_COMPRESSION_MASK == int(target)
    assert new.attributes & ~ATTR_COMPRESSION_MASK == header.attributes & ~ATTR_COMPRESSION_MASK
    assert new.size == len(out) and crc_ok(out, 0, new)
    fields = ("producer_id", "producer_epoch", "base_sequence", "records_count", "max_timestamp")
    assert all(getattr(new, f) == getattr(header, f) for f in fields)
    assert contents(out) == contents(raw)
    if source == target:
        assert out is raw


def test_producer_keeps_the_batch() -> None:
    raw = batch(Codec.GZIP)
    assert recompress(raw, parse_header(raw), topic_codec("producer"), 1 << 20) is raw
    assert topic_codec("uncompressed") is Codec.NONE
    assert topic_codec("zstd") is Codec.ZSTD


def test_recompression_is_bounded_like_any_decompression() -> None:
    raw = build_batch([(None, b"\0" * 100_000)], timestamp_ms=NOW, compression=int(Codec.GZIP))
    with pytest.raises(DecompressedTooLargeError):
        recompress(raw, parse_header(raw), Codec.LZ4, 10_000)


def partition(compression_type: str, max_batch_bytes: int = 1048588) -> Partition:
    log = MemoryLog(LogConfig(compression=topic_codec(compression_type)))
    return Partition(TopicPartition("t", 0), log, max_batch_bytes)


@pytest.mark.parametrize("topic", ["uncompressed", "gzip", "snappy", "lz4", "zstd"])
def test_a_partition_stores_the_topic_codec(topic: str) -> None:
    p = partition(topic)
    for codec in Codec:
        assert p.append(batch(codec), NOW).error is ErrorCode.NONE
    stored = p.fetch(0, 1 << 20, read_committed=False).records
    pos, codecs = 0, []
    while pos < len(stored):
        header = parse_header(stored, pos)
        codecs.append(header.attributes & ATTR_COMPRESSION_MASK)
        assert header.base_offset == len(codecs) * 5 - 5
        pos += header.size
    assert codecs == [int(topic_codec(topic))] * 5  # type: ignore[arg-type]


def test_a_recompressed_batch_must_fit_max_message_bytes() -> None:
    big = build_batch([(None, b"x" * 5000)], timestamp_ms=NOW, compression=int(Codec.GZIP))
    p = partition("uncompressed", max_batch_bytes=1000)
    result = p.append(big, NOW)
    assert result.error is ErrorCode.MESSAGE_TOO_LARGE
    assert p.high_watermark == 0
    assert partition("producer", max_batch_bytes=1000).append(big, NOW).error is ErrorCode.NONE


def _odd_batch() -> bytes:
    """A batch no Kafka producer writes: a base timestamp below its first record's, record
    attributes set, offset deltas 0, 2, 4 (the last offset delta says 4)."""
    records = b""
    for index in range(3):
        body = (
            b"\x01"
            + _varint(500 + index)  # timestamp delta
            + _varint(index * 2)  # offset delta
            + _varint(1)
            + b"k"
            + _varint(1)
            + bytes([48 + index])
            + _varint(0)
        )
        records += _varint(len(body)) + body
    plain = build_batch([(b"k", b"0")], timestamp_ms=NOW - 500)
    header = parse_header(plain)
    after = struct.pack(">hiqqqhii", 0, 4, NOW - 500, NOW + 2, -1, -1, -1, 3) + records
    head = struct.pack(">qiib", 0, 61 - 12 + len(records), header.partition_leader_epoch, 2)
    return head + struct.pack(">I", crc32c(after)) + after


def _text() -> bytes:
    """Compressible but not trivially (random words): levels compress it differently."""
    rng = random.Random(1)
    words = [
        bytes(rng.choice(b"abcdefghijklmnop") for _ in range(rng.randint(2, 9))) for _ in range(300)
    ]
    return b" ".join(rng.choice(words) for _ in range(20000))


def test_recompression_writes_the_records_again_as_kafka() -> None:
    """Kafka's LogValidator builds a recompressed batch again: record attributes 0, offset
    deltas 0, 1, 2, timestamps from the first record's; keys, values, timestamps kept."""
    raw = _odd_batch()
    out = recompress(raw, parse_header(raw), Codec.GZIP, 1 << 20)
    new = parse_header(out)
    assert crc_ok(out, 0, new)
    assert (new.base_timestamp, new.max_timestamp, new.last_offset_delta) == (NOW, NOW + 2, 2)
    got = list(records_of(out, new))
    assert [(r.offset, r.timestamp_ms, r.key) for r in got] == [
        (0, NOW, b"k"),
        (1, NOW + 1, b"k"),
        (2, NOW + 2, b"k"),
    ]
    assert [r.raw[1] for r in got] == [0, 0, 0]  # attributes
    # A batch as Kafka's producer writes it keeps its record bytes.
    plain = batch(Codec.NONE)
    again = recompress(plain, parse_header(plain), Codec.ZSTD, 1 << 20)
    assert [r.raw for r in records_of(again, parse_header(again))] == [
        r.raw for r in records_of(plain, parse_header(plain))
    ]


@pytest.mark.parametrize(
    ("codec", "levels"),
    [(Codec.GZIP, (1, -1, 9)), (Codec.LZ4, (9, 3, 17)), (Codec.ZSTD, (-5, 3, 22))],
)
def test_the_topic_compression_level_is_used(codec: Codec, levels: tuple[int, ...]) -> None:
    """KIP-390: ``compression.<codec>.level`` (lz4: 9 is the fast compressor, the others its
    high-compression one); every level decompresses to the same records."""
    text = _text()
    raw = build_batch([(None, text)], timestamp_ms=NOW)
    outs = [recompress(raw, parse_header(raw), codec, 1 << 20, level) for level in levels]
    for out in outs:
        assert contents(out) == contents(raw)
    sizes = [len(out) for out in outs]
    assert sizes[0] > sizes[-1], sizes  # the lowest level compresses least


def test_a_partition_compresses_at_the_topic_level() -> None:
    assert compression_level(Codec.ZSTD, {"compression.zstd.level": " 19 "}) == 19
    assert compression_level(Codec.SNAPPY, {"compression.zstd.level": "19"}) is None
    assert compression_level(Codec.GZIP, {}) is None
    text = _text()
    raw = build_batch([(None, text)], timestamp_ms=NOW)
    sizes = []
    for level in (1, 9):
        log = MemoryLog(LogConfig(compression=Codec.GZIP, compression_level=level))
        p = Partition(TopicPartition("t", 0), log, 1 << 20)
        assert p.append(raw, NOW).error is ErrorCode.NONE
        sizes.append(len(p.fetch(0, 1 << 20, read_committed=False).records))
    assert sizes[0] > sizes[1]
