"""Producer id allocation in durable blocks (Kafka's ProducerIdManager + ProducerIdsRecord).

In KRaft the controller hands out blocks of 1000 ids and records each one as a
ProducerIdsRecord in ``__cluster_metadata``; the broker serves ids from its current block.  Here
one manager does both: before the first id of a new block is handed out, a record saying "ids
below ``next_producer_id`` are taken" is appended to the log given by the caller and flushed.
On construction the log is replayed, so a restarted broker starts at the next unused block and
never reuses an id (at most the rest of the last block is skipped).

Record (one per batch)::

    key   = version int16 0 | record type int16 15 (Kafka's ProducerIdsRecord api key)
    value = version int16 0 | BrokerId int32 | BrokerEpoch int64 | NextProducerId int64
"""

from __future__ import annotations

import struct

from coordinator.log.storage import PartitionLog
from txn.batch import build_batch
from txn.clock import Clock
from txn.limits import LONG_MAX as _LONG_MAX
from txn.txn_log import read_records

PRODUCER_ID_BLOCK_SIZE = 1000
PRODUCER_IDS_RECORD_TYPE = 15
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hiqq")


class ProducerIdsExhaustedError(RuntimeError):
    """Every int64 producer id has been handed out (in practice: never)."""


def producer_ids_key() -> bytes:
    return _KEY.pack(0, PRODUCER_IDS_RECORD_TYPE)


def encode_producer_ids_value(broker_id: int, broker_epoch: int, next_producer_id: int) -> bytes:
    return _VALUE.pack(0, broker_id, broker_epoch, next_producer_id)


def decode_next_producer_id(key: bytes | None, value: bytes | None) -> int | None:
    """NextProducerId of a ProducerIdsRecord, or None for any other record."""
    if key != producer_ids_key() or value is None or len(value) != _VALUE.size:
        return None
    version, _broker, _epoch, next_id = _VALUE.unpack(value)
    return int(next_id) if version == 0 else None


class ProducerIdManager:
    """Hands out unique producer ids; ``generate_producer_id`` may append to the log."""

    def __init__(
        self,
        log: PartitionLog,
        clock: Clock | None = None,
        *,
        block_size: int = PRODUCER_ID_BLOCK_SIZE,
        broker_id: int = 0,
        broker_epoch: int = 0,
    ) -> None:
        if block_size <= 0:
            raise ValueError("block_size must be positive")
        self._log = log
        self._clock = clock
        self._block_size = block_size
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        start = 0
        for _header, batch in log.batches(log.log_start_offset):
            for key, value in read_records(batch):
                next_id = decode_next_producer_id(key, value)
                if next_id is not None:
                    start = max(start, next_id)
        # Nothing may be served from a block whose record was not read back: start a new one.
        self._next_id = start
        self._block_end = start

    @property
    def next_producer_id(self) -> int:
        """The id the next call returns if no new block is needed (for tests and tools)."""
        return self._next_id

    def generate_producer_id(self) -> int:
        """A producer id never handed out before; raises if the block record cannot be written."""
        if self._next_id >= self._block_end:
            self._allocate_block()
        producer_id = self._next_id
        self._next_id += 1
        return producer_id

    def _allocate_block(self) -> None:
        start = self._block_end
        end = start + self._block_size
        if end > _LONG_MAX:
            raise ProducerIdsExhaustedError("no producer ids left")
        # The clock only stamps the record; without one it carries NO_TIMESTAMP (-1).
        now = self._clock.now_ms() if self._clock is not None else -1
        value = encode_producer_ids_value(self._broker_id, self._broker_epoch, end)
        batch = build_batch([(producer_ids_key(), value)], timestamp_ms=now)
        self._log.append(batch, max(now, 0))
        self._log.flush()  # durable before any id of the block leaves this process
        self._next_id = start
        self._block_end = end
