"""Kafka's numeric bounds and the arithmetic on them, defined once for broker and client.

Java's primitive ranges (the wire types INT8..INT64), the producer sequence space
(``DefaultRecordBatch``: sequences wrap from ``Integer.MAX_VALUE`` to 0), the producer epoch
ceiling (``Short.MAX_VALUE``) and the share-session epoch rule (KIP-932: after
``Integer.MAX_VALUE`` the next epoch is 1, because 0 opens and -1 closes a session).
"""

from __future__ import annotations

from typing import Final

INT8: Final = (-(2**7), 2**7 - 1)
INT16: Final = (-(2**15), 2**15 - 1)
INT32: Final = (-(2**31), 2**31 - 1)
INT64: Final = (-(2**63), 2**63 - 1)

INT16_MAX: Final = INT16[1]
INT32_MAX: Final = INT32[1]
INT32_MIN: Final = INT32[0]
LONG_MAX: Final = INT64[1]
LONG_MIN: Final = INT64[0]

#: Producer sequences are non-negative INT32s that wrap to 0.
SEQUENCE_MODULUS: Final = 2**31

#: ``Short.MAX_VALUE``: the last producer epoch (reserved so that a producer can always be fenced).
MAX_PRODUCER_EPOCH: Final = INT16_MAX


def in_range(value: int, bounds: tuple[int, int]) -> bool:
    """Whether ``value`` fits a wire type given by its (lowest, highest) bounds."""
    return bounds[0] <= value <= bounds[1]


def next_sequence(sequence: int, count: int = 1) -> int:
    """The producer sequence ``count`` records after ``sequence`` (wrapping as Kafka does)."""
    return (sequence + count) % SEQUENCE_MODULUS


def next_share_session_epoch(epoch: int) -> int:
    """The share-session epoch after ``epoch``: +1, and 1 after ``Integer.MAX_VALUE``."""
    return epoch + 1 if epoch < INT32_MAX else 1


# --- protocol defaults shared by broker and client ---------------------------------------------

#: Records per ShareFetch when the request names none (Kafka's ``max.poll.records`` default).
SHARE_FETCH_MAX_RECORDS: Final = 500
