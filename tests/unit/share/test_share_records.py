"""__share_group_state record encoding: ShareSnapshot / ShareUpdate keys and values (§4)."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from txn.batch import build_batch
from txn.share_records import (
    ShareRecordFormatError,
    ShareRecordKey,
    ShareRecordType,
    ShareSnapshotValue,
    ShareUpdateValue,
    StateBatch,
    UnknownShareRecordVersionError,
    decode_key,
    decode_record,
    decode_value,
    encode_key,
    encode_record,
    encode_value,
)
from txn.txn_log import read_records

T = ShareRecordType
TOPIC = uuid.UUID("6f1c9b1e-2a4d-4c1e-9d7a-0b1c2d3e4f50")
SNAP_KEY = ShareRecordKey(T.SHARE_SNAPSHOT, "group-1", TOPIC, 3)
UPDATE_KEY = ShareRecordKey(T.SHARE_UPDATE, "group-1", TOPIC, 3)
BATCHES = (StateBatch(100, 109, 0, 1), StateBatch(110, 110, 2, 3), StateBatch(111, 120, 4, 5))


def snapshot(**overrides: object) -> ShareSnapshotValue:
    fields: dict[str, object] = {
        "snapshot_epoch": 7,
        "state_epoch": 2,
        "leader_epoch": 4,
        "start_offset": 100,
        "create_timestamp": 1_700_000_000_000,
        "write_timestamp": 1_700_000_000_500,
        "state_batches": BATCHES,
    }
    fields.update(overrides)
    return ShareSnapshotValue(**fields)  # type: ignore[arg-type]


def update(**overrides: object) -> ShareUpdateValue:
    fields: dict[str, object] = {
        "snapshot_epoch": 7,
        "leader_epoch": 4,
        "start_offset": -1,
        "state_batches": BATCHES[:1],
    }
    fields.update(overrides)
    return ShareUpdateValue(**fields)  # type: ignore[arg-type]


# --- keys ------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [SNAP_KEY, UPDATE_KEY])
def test_key_round_trip(key: ShareRecordKey) -> None:
    assert decode_key(encode_key(key)) == key


def test_key_layout_is_kafkas() -> None:
    # type int16 | GroupId int16-length string | TopicId 16 bytes | Partition int32
    raw = encode_key(UPDATE_KEY)
    assert raw == struct.pack(">hh", 1, 7) + b"group-1" + TOPIC.bytes + struct.pack(">i", 3)


def test_key_with_non_ascii_group() -> None:
    key = ShareRecordKey(T.SHARE_SNAPSHOT, "grüppe-☃", TOPIC, 0)
    assert decode_key(encode_key(key)) == key


def test_unknown_key_type_is_a_version_error() -> None:
    raw = struct.pack(">hh", 9, 1) + b"g" + TOPIC.bytes + struct.pack(">i", 0)
    with pytest.raises(UnknownShareRecordVersionError):
        decode_key(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        struct.pack(">hh", 0, 5) + b"ab",  # string ends early
        encode_key(SNAP_KEY)[:-1],  # partition cut
        encode_key(SNAP_KEY) + b"\x00",  # trailing byte
        struct.pack(">hh", 0, -1) + TOPIC.bytes + struct.pack(">i", 0),  # null group
        struct.pack(">hh", 0, 2) + b"\xff\xfe" + TOPIC.bytes + struct.pack(">i", 0),  # bad UTF-8
    ],
)
def test_bad_keys_are_rejected(raw: bytes) -> None:
    with pytest.raises(ShareRecordFormatError):
        decode_key(raw)


def test_key_partition_out_of_range() -> None:
    with pytest.raises(ShareRecordFormatError):
        encode_key(ShareRecordKey(T.SHARE_SNAPSHOT, "g", TOPIC, 2**31))


# --- values ----------------------------------------------------------------------------------


def test_snapshot_round_trip() -> None:
    value = snapshot()
    assert decode_value(T.SHARE_SNAPSHOT, encode_value(value)) == value


def test_update_round_trip() -> None:
    value = update()
    assert decode_value(T.SHARE_UPDATE, encode_value(value)) == value


def test_empty_batches_round_trip() -> None:
    for value in (snapshot(state_batches=()), update(state_batches=(), start_offset=120)):
        record_type = T.SHARE_SNAPSHOT if isinstance(value, ShareSnapshotValue) else T.SHARE_UPDATE
        assert decode_value(record_type, encode_value(value)) == value


def test_tombstone_is_none_both_ways() -> None:
    assert encode_value(None) is None
    assert decode_value(T.SHARE_SNAPSHOT, None) is None
    assert decode_value(T.SHARE_UPDATE, None) is None


def test_snapshot_layout_is_kafkas_flexible_v0() -> None:
    value = snapshot(state_batches=(StateBatch(5, 9, 2, 1),))
    raw = encode_value(value)
    expected = (
        struct.pack(">h", 0)
        + struct.pack(">iiiqqq", 7, 2, 4, 100, 1_700_000_000_000, 1_700_000_000_500)
        + b"\x02"  # compact array of one
        + struct.pack(">qqbh", 5, 9, 2, 1)
        + b"\x00"  # batch tagged fields
        + b"\x00"  # value tagged fields
    )
    assert raw == expected


def test_update_layout_has_no_state_epoch() -> None:
    raw = encode_value(update(state_batches=()))
    assert raw == struct.pack(">h", 0) + struct.pack(">iiq", 7, 4, -1) + b"\x01" + b"\x00"


def test_unknown_tagged_fields_are_skipped() -> None:
    raw = encode_value(update(state_batches=()))
    assert raw is not None
    # Replace the empty tag section with one unknown tag (7, 4 bytes).
    with_tag = raw[:-1] + b"\x01" + b"\x07" + b"\x04" + struct.pack(">i", 42)
    assert decode_value(T.SHARE_UPDATE, with_tag) == update(state_batches=())


def test_delivery_complete_count_is_kafkas_tag_zero() -> None:
    """KIP-1226's DeliveryCompleteCount: tag 0, int32, written only when not -1 (Kafka 4.4)."""
    raw = encode_value(update(state_batches=()))
    assert raw is not None
    with_tag = raw[:-1] + b"\x01" + b"\x00" + b"\x04" + struct.pack(">i", 42)
    value = update(state_batches=(), delivery_complete_count=42)
    assert encode_value(value) == with_tag
    assert decode_value(T.SHARE_UPDATE, with_tag) == value
    snap = snapshot(state_batches=(), delivery_complete_count=3, fence_leader_epoch=9)
    snap_raw = encode_value(snap)
    assert snap_raw is not None
    assert snap_raw.endswith(
        b"\x02" + b"\x00\x04" + struct.pack(">i", 3) + b"\xe8\x07\x04" + struct.pack(">i", 9)
    )
    assert decode_value(T.SHARE_SNAPSHOT, snap_raw) == snap


def test_reset_offset_is_a_tagged_field_of_this_broker() -> None:
    value = update(state_batches=(), start_offset=-1, reset_offset=1 << 40)
    raw = encode_value(value)
    assert raw is not None
    assert raw.endswith(b"\x01" + b"\xea\x07\x08" + struct.pack(">q", 1 << 40))
    assert decode_value(T.SHARE_UPDATE, raw) == value


def test_snapshot_fence_epochs_are_tagged_fields() -> None:
    value = snapshot(state_batches=(), fence_leader_epoch=9, fence_state_epoch=3)
    raw = encode_value(value)
    plain = encode_value(snapshot(state_batches=()))
    assert raw is not None and plain is not None
    # Tags 1000 and 1001 (uvarint e8 07 / e9 07), four bytes each, after the batches.
    tags = b"\x02" + b"\xe8\x07\x04" + struct.pack(">i", 9) + b"\xe9\x07\x04"
    assert raw == plain[:-1] + tags + struct.pack(">i", 3)
    assert decode_value(T.SHARE_SNAPSHOT, raw) == value


def test_a_snapshot_without_fence_tags_reads_as_no_higher_fence() -> None:
    """Records written before the tags existed (and Kafka's) decode with no fence fields."""
    value = decode_value(T.SHARE_SNAPSHOT, encode_value(snapshot()))
    assert isinstance(value, ShareSnapshotValue)
    assert (value.fence_leader_epoch, value.fence_state_epoch) == (None, None)


def test_a_fence_tag_of_the_wrong_size_is_rejected() -> None:
    raw = encode_value(snapshot(state_batches=()))
    assert raw is not None
    bad = raw[:-1] + b"\x01" + b"\xe8\x07\x02" + b"\x00\x01"
    with pytest.raises(ShareRecordFormatError):
        decode_value(T.SHARE_SNAPSHOT, bad)


def test_unknown_value_version() -> None:
    raw = encode_value(update())
    assert raw is not None
    with pytest.raises(UnknownShareRecordVersionError):
        decode_value(T.SHARE_UPDATE, struct.pack(">h", 1) + raw[2:])


@pytest.mark.parametrize("cut", [1, 3, 10, 25])
def test_truncated_values_are_rejected(cut: int) -> None:
    raw = encode_value(snapshot())
    assert raw is not None
    with pytest.raises(ShareRecordFormatError):
        decode_value(T.SHARE_SNAPSHOT, raw[:-cut])


def test_trailing_bytes_are_rejected() -> None:
    raw = encode_value(snapshot())
    assert raw is not None
    with pytest.raises(ShareRecordFormatError):
        decode_value(T.SHARE_SNAPSHOT, raw + b"\x00")


def test_null_batch_array_is_rejected() -> None:
    raw = struct.pack(">h", 0) + struct.pack(">iiq", 1, 1, -1) + b"\x00" + b"\x00"
    with pytest.raises(ShareRecordFormatError):
        decode_value(T.SHARE_UPDATE, raw)


@pytest.mark.parametrize(
    "value",
    [
        snapshot(state_batches=(StateBatch(0, 1, 128, 1),)),  # int8 state
        snapshot(state_batches=(StateBatch(0, 1, 0, 2**15),)),  # int16 count
        snapshot(snapshot_epoch=2**31),
        snapshot(start_offset=2**63),
        update(leader_epoch=-(2**31) - 1),
    ],
)
def test_values_that_do_not_fit_are_rejected(value: ShareSnapshotValue | ShareUpdateValue) -> None:
    with pytest.raises(ShareRecordFormatError):
        encode_value(value)


# --- whole records ---------------------------------------------------------------------------


def test_record_round_trip_through_a_batch() -> None:
    records: list[tuple[bytes | None, bytes | None]] = [
        encode_record(SNAP_KEY, snapshot()),
        encode_record(UPDATE_KEY, update()),
        encode_record(SNAP_KEY, None),
    ]
    batch = build_batch(records, timestamp_ms=1)
    decoded = [decode_record(k, v) for k, v in read_records(batch)]
    assert decoded == [(SNAP_KEY, snapshot()), (UPDATE_KEY, update()), (SNAP_KEY, None)]


def test_record_value_must_match_key_type() -> None:
    with pytest.raises(ShareRecordFormatError):
        encode_record(SNAP_KEY, update())
    with pytest.raises(ShareRecordFormatError):
        encode_record(UPDATE_KEY, snapshot())


def test_record_without_key() -> None:
    with pytest.raises(ShareRecordFormatError):
        decode_record(None, b"")


# --- properties ------------------------------------------------------------------------------

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
batches = st.lists(
    st.builds(StateBatch, int64, int64, st.integers(-128, 127), st.integers(-(2**15), 2**15 - 1)),
    max_size=5,
).map(tuple)


@given(
    group=st.text(max_size=40),
    topic=st.uuids(),
    partition=st.integers(0, 2**31 - 1),
    record_type=st.sampled_from(list(ShareRecordType)),
)
def test_any_key_round_trips(
    group: str, topic: uuid.UUID, partition: int, record_type: ShareRecordType
) -> None:
    key = ShareRecordKey(record_type, group, topic, partition)
    assert decode_key(encode_key(key)) == key


@given(int32, int32, int32, int64, int64, int64, batches)
def test_any_snapshot_round_trips(
    se: int, st_: int, le: int, so: int, ct: int, wt: int, bs: tuple[StateBatch, ...]
) -> None:
    value = ShareSnapshotValue(se, st_, le, so, ct, wt, bs)
    assert decode_value(T.SHARE_SNAPSHOT, encode_value(value)) == value


@given(int32, int32, int64, batches)
def test_any_update_round_trips(se: int, le: int, so: int, bs: tuple[StateBatch, ...]) -> None:
    value = ShareUpdateValue(se, le, so, bs)
    assert decode_value(T.SHARE_UPDATE, encode_value(value)) == value
