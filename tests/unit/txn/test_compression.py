"""Kafka's record-batch codecs through txn.compression, and batches built with them."""

from __future__ import annotations

import struct

import cramjam
import pytest

from producer.protocol.records import (
    CorruptRecordError,
    UnsupportedCompressionError,
    decode_records,
)
from txn.batch import build_batch
from txn.compression import (
    Codec,
    CorruptCompressedDataError,
    codec_by_name,
    compress,
    decompress,
)
from txn.compression import UnsupportedCompressionError as UnknownCodec

DATA = b"".join(f"record-{i:05d};".encode() for i in range(2000))


@pytest.mark.parametrize("codec", list(Codec))
def test_round_trip(codec: Codec) -> None:
    packed = compress(codec, DATA)
    if codec is not Codec.NONE:
        assert len(packed) < len(DATA) // 2
    assert decompress(codec, packed) == DATA


def test_snappy_java_framing_is_read() -> None:
    """Kafka's Java producer writes snappy-java's framing: magic, versions, sized blocks."""
    blocks = [DATA[:10000], DATA[10000:]]
    framed = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for block in blocks:
        raw = bytes(cramjam.snappy.compress_raw(block))
        framed += struct.pack(">i", len(raw)) + raw
    assert decompress(Codec.SNAPPY, framed) == DATA
    with pytest.raises(CorruptCompressedDataError, match="runs past"):
        decompress(Codec.SNAPPY, framed[:-5])


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_corrupt_data_is_a_clear_error(codec: Codec) -> None:
    with pytest.raises(CorruptCompressedDataError, match=codec.name.lower()):
        decompress(codec, b"\x00\x01 definitely not compressed \xff" * 3)


def test_unknown_codec_ids_and_names() -> None:
    with pytest.raises(UnknownCodec, match="codec id 5"):
        decompress(5, b"")
    assert codec_by_name(" LZ4 ") is Codec.LZ4
    with pytest.raises(UnknownCodec, match=r"compression\.type must be one of"):
        codec_by_name("brotli")


@pytest.mark.parametrize("codec", list(Codec))
def test_built_batches_decode(codec: Codec) -> None:
    records = [(f"k{i}".encode(), f"v{i}".encode() * 20) for i in range(300)]
    batch = build_batch(records, timestamp_ms=1, base_offset=7, compression=codec)
    decoded = list(decode_records(batch))
    assert [(r.key, r.value) for r in decoded] == records
    assert [r.offset for r in decoded] == list(range(7, 307))


def test_batch_with_an_undefined_codec_or_bad_payload() -> None:
    batch = bytearray(build_batch([(None, b"v")], timestamp_ms=1, compression=Codec.GZIP))
    # attributes (int16 at byte 21): codec 6 does not exist; fix the CRC so only the codec is wrong
    from crc32c import crc32c  # noqa: PLC0415

    struct.pack_into(">h", batch, 21, 6)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    with pytest.raises(UnsupportedCompressionError, match="codec id 6"):
        list(decode_records(bytes(batch)))
    broken = bytearray(build_batch([(None, b"v" * 100)], timestamp_ms=1, compression=Codec.LZ4))
    struct.pack_into("<I", broken, 61 + 7, 0x7FFFFF)  # the first block runs past the frame
    struct.pack_into(">I", broken, 17, crc32c(bytes(broken[21:])))
    with pytest.raises(CorruptRecordError, match="lz4"):
        list(decode_records(bytes(broken)))


@pytest.mark.parametrize("size", [0, 1, 1000, 65_536, 65_537, 200_000])
def test_lz4_frames_are_the_ones_kafka_writes(size: int) -> None:
    """Independent 64 KiB blocks and no checksums: Kafka's Java reader refuses dependent ones."""
    for data in (bytes(range(256)) * (size // 256) + b"a" * (size % 256), random_bytes(size)):
        frame = compress(Codec.LZ4, data)
        assert frame[:7] == bytes.fromhex("04224d18604082")  # magic, FLG, BD, descriptor checksum
        assert frame[-4:] == b"\x00\x00\x00\x00"  # the end mark, no content checksum
        assert bytes(cramjam.lz4.decompress(frame)) == data
        assert decompress(Codec.LZ4, frame) == data


def random_bytes(size: int) -> bytes:
    state = 12345
    out = bytearray()
    for _ in range(size):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(state >> 16 & 0xFF)
    return bytes(out)


def test_incompressible_lz4_blocks_are_stored() -> None:
    data = random_bytes(70_000)
    frame = compress(Codec.LZ4, data)
    (first,) = struct.unpack_from("<I", frame, 7)
    assert first == 65_536 | 0x80000000  # the high bit: the block is stored as is
    assert len(frame) == 7 + 4 + 65_536 + 4 + (70_000 - 65_536) + 4
