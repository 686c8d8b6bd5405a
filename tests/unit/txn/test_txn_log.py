"""__transaction_state record encoding (reference §1.8)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from txn.batch import build_batch
from txn.ids import TopicPartition
from txn.state import TransactionState
from txn.txn_log import (
    TransactionLogValue,
    TxnLogFormatError,
    UnknownRecordVersionError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    read_records,
)

S = TransactionState


def value(**overrides: object) -> TransactionLogValue:
    fields: dict[str, object] = {
        "producer_id": 10,
        "producer_epoch": 3,
        "transaction_timeout_ms": 60000,
        "state": S.ONGOING,
        "topic_partitions": frozenset({TopicPartition("foo", 0), TopicPartition("bar", 2)}),
        "last_update_timestamp_ms": 1_700_000_000_123,
        "start_timestamp_ms": 1_700_000_000_000,
    }
    fields.update(overrides)
    return TransactionLogValue(**fields)  # type: ignore[arg-type]


def test_key_layout_is_version_then_string() -> None:
    assert encode_key("txn-1") == struct.pack(">hh", 0, 5) + b"txn-1"
    assert decode_key(encode_key("tx\u00e9")) == "tx\u00e9"


def test_unknown_key_version_is_reported() -> None:
    with pytest.raises(UnknownRecordVersionError):
        decode_key(struct.pack(">hh", 1, 1) + b"x")


def test_value_round_trip_with_defaults_writes_no_tags() -> None:
    original = value()
    encoded = encode_value(original)
    assert encoded is not None
    assert encoded[:2] == struct.pack(">h", 1)
    assert encoded[-1] == 0  # empty tagged-field section
    assert decode_value(encoded) == original


def test_value_round_trip_with_every_tag() -> None:
    original = value(
        state=S.PREPARE_COMMIT,
        producer_epoch=32767,
        previous_producer_id=9,
        next_producer_id=11,
        next_producer_epoch=4,
        client_transaction_version=2,
        two_phase_commit=True,
        transaction_timeout_ms=2147483647,
    )
    assert decode_value(encode_value(original)) == original


def test_empty_state_writes_null_partitions() -> None:
    original = value(state=S.EMPTY, topic_partitions=frozenset(), start_timestamp_ms=-1)
    encoded = encode_value(original)
    assert encoded is not None
    # version(2) pid(8) epoch(2) timeout(4) status(1) then the null compact array (0)
    assert encoded[17] == 0
    assert decode_value(encoded) == original


def test_empty_state_with_partitions_is_rejected() -> None:
    with pytest.raises(TxnLogFormatError):
        encode_value(value(state=S.EMPTY))


def test_tombstone_is_none_both_ways() -> None:
    assert encode_value(None) is None
    assert decode_value(None) is None


def test_version_zero_values_are_read() -> None:
    v0 = struct.pack(">hqhib", 0, 7, 1, 1000, int(S.ONGOING))
    v0 += struct.pack(">ih", 1, 3) + b"foo" + struct.pack(">ii", 1, 5)
    v0 += struct.pack(">qq", 20, 10)
    decoded = decode_value(v0)
    assert decoded == TransactionLogValue(
        producer_id=7,
        producer_epoch=1,
        transaction_timeout_ms=1000,
        state=S.ONGOING,
        topic_partitions=frozenset({TopicPartition("foo", 5)}),
        last_update_timestamp_ms=20,
        start_timestamp_ms=10,
    )


def test_unknown_tags_are_skipped() -> None:
    encoded = encode_value(value())
    assert encoded is not None
    with_unknown = encoded[:-1] + bytes([1, 42, 2, 0xAB, 0xCD])
    assert decode_value(with_unknown) == value()


@pytest.mark.parametrize(
    "bad",
    [b"", struct.pack(">h", 9), struct.pack(">hq", 1, 1)],
    ids=["empty", "unknown-version", "truncated"],
)
def test_bad_values_raise(bad: bytes) -> None:
    with pytest.raises(TxnLogFormatError):
        decode_value(bad)


def test_unknown_status_raises() -> None:
    encoded = bytearray(encode_value(value()) or b"")
    encoded[16] = 9
    with pytest.raises(TxnLogFormatError):
        decode_value(bytes(encoded))


def test_read_records_of_a_batch() -> None:
    key = encode_key("a")
    val = encode_value(value())
    batch = build_batch(
        [(key, val), (encode_key("b"), None)],
        timestamp_ms=5,
        headers=[[("h", b"v")], []],
    )
    assert read_records(batch) == [(key, val), (encode_key("b"), None)]


partitions = st.frozensets(
    st.builds(TopicPartition, st.text(min_size=1, max_size=8), st.integers(0, 2**31 - 1)),
    max_size=6,
)
int64 = st.integers(-(2**63), 2**63 - 1)
int16 = st.integers(-(2**15), 2**15 - 1)


int32 = st.integers(-(2**31), 2**31 - 1)
# Every field, in TransactionLogValue's order (any state but EMPTY).
log_values = st.builds(
    TransactionLogValue,
    int64,
    int16,
    int32,
    st.sampled_from([s for s in S if s is not S.EMPTY]),
    partitions,
    int64,
    int64,
    int64,
    int64,
    int16,
    int16,
    st.booleans(),
)


@given(original=log_values)
def test_value_round_trip_property(original: TransactionLogValue) -> None:
    assert decode_value(encode_value(original)) == original
    tid = "".join(sorted(t.topic for t in original.topic_partitions))
    assert decode_key(encode_key(tid)) == tid
