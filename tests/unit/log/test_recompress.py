"""A topic's compression.type: batches stored with the topic's codec (Kafka's LogValidator)."""

from __future__ import annotations

import pytest

from coordinator.log.memory_log import MemoryLog
from coordinator.log.recompress import recompress
from coordinator.log.storage import LogConfig
from coordinator.partition import Partition
from txn.batch import ATTR_COMPRESSION_MASK, build_batch, crc_ok, parse_header
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
