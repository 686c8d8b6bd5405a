"""Producer id allocation in durable blocks (Kafka's ProducerIdManager + ProducerIdsRecord).

In KRaft the controller hands out blocks of 1000 ids and records each one as a
ProducerIdsRecord in ``__cluster_metadata``; the broker serves ids from its current block.  Here
one manager does both: before the first id of a new block is handed out, a record saying "ids
below ``next_producer_id`` are taken" is appended to the log given by the caller and flushed.
On construction the log is replayed, so a restarted broker starts at the next unused block and
never reuses an id (at most the rest of the last block is skipped).  The broker's log is
``__cluster_metadata``, as Kafka's, shared with the topic records (``coordinator.topics``,
whose records have no key: these have one).  Older versions kept these records in a log of
their own, ``__producer_ids``, a name clients could then not use; ``open_producer_ids``
copies what it holds into the metadata log and removes it (``migrate_legacy_log``).

Record (one per batch)::

    key   = version int16 0 | record type int16 15 (Kafka's ProducerIdsRecord api key)
    value = version int16 0 | BrokerId int32 | BrokerEpoch int64 | NextProducerId int64

Kafka hands the ids out in order, so the next producer's id is easy to guess.  The broker
(``scramble=True``) hands out a keyed permutation of them instead: id = F(slot), where the slots
are the sequential, durable numbers above and F a 4-round Feistel network over 62 bits keyed by
a random key kept in this log (a sharetxn record).  F is a bijection, so ids stay unique across
restarts; an id below the sequential ids handed out before the key existed (an older data
directory) is skipped::

    key   = version int16 0 | record type int16 1000 (sharetxn's producer id key)
    value = version int16 0 | key 16 bytes | LegacyBound int64
"""

from __future__ import annotations

import hashlib
import random
import struct

from coordinator.log.storage import LogConfig, PartitionLog, Storage
from txn.batch import build_batch
from txn.clock import Clock
from txn.ids import LEGACY_PRODUCER_IDS_LOG
from txn.limits import LONG_MAX as _LONG_MAX
from txn.txn_log import read_records

PRODUCER_ID_BLOCK_SIZE = 1000
PRODUCER_IDS_RECORD_TYPE = 15
PRODUCER_ID_KEY_RECORD_TYPE = 1000
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hiqq")
_KEY_VALUE = struct.Struct(">h16sq")
_HALF_BITS = 31
_HALF_MASK = (1 << _HALF_BITS) - 1
#: Scrambled ids are in [0, 2**62): non-negative int64s, never -1 (no producer id).
ID_SPACE = 1 << (2 * _HALF_BITS)


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


class IdScrambler:
    """A keyed bijection of [0, ID_SPACE): a balanced 4-round Feistel network (BLAKE2b rounds)."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def _round(self, index: int, half: int) -> int:
        digest = hashlib.blake2b(
            struct.pack(">BI", index, half), key=self._key, digest_size=4
        ).digest()
        return int.from_bytes(digest, "big") & _HALF_MASK

    def permute(self, slot: int) -> int:
        left, right = slot >> _HALF_BITS, slot & _HALF_MASK
        for index in range(4):
            left, right = right, left ^ self._round(index, right)
        return (left << _HALF_BITS) | right


def producer_id_key_record_key() -> bytes:
    return _KEY.pack(0, PRODUCER_ID_KEY_RECORD_TYPE)


def _state(log: PartitionLog) -> tuple[int, tuple[bytes, int] | None]:
    """The log's next unused slot and its scrambling key record (secret, legacy bound)."""
    start = 0
    scramble_key: tuple[bytes, int] | None = None
    for _header, batch in log.batches(log.log_start_offset):
        for key, value in read_records(batch):
            next_id = decode_next_producer_id(key, value)
            if next_id is not None:
                start = max(start, next_id)
            elif key == producer_id_key_record_key() and value is not None:
                _version, secret, bound = _KEY_VALUE.unpack(value)
                scramble_key = scramble_key or (secret, bound)
    return start, scramble_key


def _append_flushed(log: PartitionLog, key: bytes, value: bytes, timestamp_ms: int) -> None:
    log.append(build_batch([(key, value)], timestamp_ms=timestamp_ms), max(timestamp_ms, 0))
    log.flush()


def holds_key(log: PartitionLog) -> bool:
    """Whether ``log`` holds the scrambling key record (every broker writes one on its first
    start; a metadata log without one is an older version's, whose key is in the legacy log)."""
    return _state(log)[1] is not None


def legacy_log_pending(storage: Storage, log: PartitionLog) -> bool:
    """Whether an older version's ``__producer_ids`` log is still to be migrated into the
    metadata log ``log`` (a directory of that name is a client's topic once ``log`` holds
    the key: ``holds_key``)."""
    return (LEGACY_PRODUCER_IDS_LOG, 0) in storage.list_logs() and not holds_key(log)


def migrate_legacy_log(legacy: PartitionLog, log: PartitionLog) -> None:
    """Copy the state of an older version's ``__producer_ids`` log into ``log``: its key
    record (unless ``log`` has one) and its next unused slot (if above ``log``'s), durable
    before the caller removes the legacy log.  Idempotent: a crash before the removal
    copies nothing twice."""
    legacy_start, legacy_key = _state(legacy)
    start, key = _state(log)
    if legacy_key is not None and key is None:
        value = _KEY_VALUE.pack(0, *legacy_key)
        _append_flushed(log, producer_id_key_record_key(), value, -1)
    if legacy_start > start:
        value = encode_producer_ids_value(0, 0, legacy_start)
        _append_flushed(log, producer_ids_key(), value, -1)


def open_producer_ids(
    storage: Storage,
    log: PartitionLog,
    legacy_config: LogConfig,
    *,
    user_topic: bool,
    scramble_rng: random.Random,
) -> ProducerIdManager:
    """The broker's manager over the metadata log ``log``, after migrating an older
    version's ``__producer_ids`` log into it (unless ``user_topic``: that directory is then
    a client's topic of that name)."""
    if not user_topic and (LEGACY_PRODUCER_IDS_LOG, 0) in storage.list_logs():
        legacy = storage.open_log(LEGACY_PRODUCER_IDS_LOG, 0, legacy_config)
        migrate_legacy_log(legacy, log)
        storage.delete_log(LEGACY_PRODUCER_IDS_LOG, 0)
    return ProducerIdManager(log, scramble_rng=scramble_rng)


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
        scramble_rng: random.Random | None = None,
    ) -> None:
        """``scramble_rng``: hand out scrambled ids (the key is drawn from it once, then kept
        in the log); without it the ids are sequential, as Kafka's."""
        if block_size <= 0:
            raise ValueError("block_size must be positive")
        self._log = log
        self._clock = clock
        self._block_size = block_size
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        start, scramble_key = _state(log)
        # Nothing may be served from a block whose record was not read back: start a new one.
        self._next_id = start
        self._block_end = start
        self._scrambler: IdScrambler | None = None
        self._legacy_bound = 0
        if scramble_key is None and scramble_rng is not None:
            scramble_key = (scramble_rng.getrandbits(128).to_bytes(16, "big"), start)
            value = _KEY_VALUE.pack(0, *scramble_key)
            record = build_batch([(producer_id_key_record_key(), value)], timestamp_ms=-1)
            self._log.append(record, 0)
            self._log.flush()
        if scramble_key is not None:
            self._scrambler = IdScrambler(scramble_key[0])
            self._legacy_bound = scramble_key[1]

    @property
    def next_producer_id(self) -> int:
        """The next slot: the id the next call returns if no new block is needed and the ids
        are not scrambled (for tests and tools)."""
        return self._next_id

    def generate_producer_id(self) -> int:
        """A producer id never handed out before; raises if the block record cannot be written."""
        while True:
            if self._next_id >= self._block_end:
                self._allocate_block()
            slot = self._next_id
            self._next_id += 1
            if self._scrambler is None:
                return slot
            if slot >= ID_SPACE:
                raise ProducerIdsExhaustedError("no producer ids left")
            producer_id = self._scrambler.permute(slot)
            if producer_id >= self._legacy_bound:  # not one of the older, sequential ids
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
