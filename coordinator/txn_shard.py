"""The ``__transaction_state`` shard: every transactional id's metadata and its replay.

``TransactionCoordinator`` prepares a transition on an id's metadata (which sets only its
in-memory ``pending_state``, as Kafka's ``prepareTransitionTo`` does) and hands the typed
``TxnRecord`` to its ``CoordinatorRuntime``, which encodes it (``TxnRecordCodec``), appends and
flushes it, and only then calls ``replay``: the one place the log-backed fields of an id change,
for live writes and on load alike.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from coordinator.shard_runtime import CoordinatorRuntime, Record
from coordinator.txn_results import log_value_to_transit, transit_record
from txn.metadata import TransactionMetadata, TxnTransitMetadata
from txn.state import TransactionState
from txn.txn_log import decode_key, decode_value, encode_key

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """One ``__transaction_state`` record: an id's new state, or (None, or Dead) its removal."""

    transactional_id: str
    transit: TxnTransitMetadata | None


class TxnRecordCodec:
    """``TxnRecord`` <-> log records (``txn.txn_log``); errors are ValueErrors."""

    def encode(self, record: TxnRecord) -> Record:
        if record.transit is None:
            return encode_key(record.transactional_id), None
        return transit_record(record.transactional_id, record.transit)

    def decode(self, key: bytes | None, value: bytes | None) -> TxnRecord:
        if key is None:
            raise ValueError("__transaction_state record without a key")
        decoded = decode_value(value)
        transit = None if decoded is None else log_value_to_transit(decoded)
        return TxnRecord(decode_key(key), transit)


_CODEC = TxnRecordCodec()


class TxnShard:
    """The metadata of every transactional id, as the ``__transaction_state`` log makes it.

    ``txns`` is one dict for the shard's life (the coordinator keeps a reference to it).
    """

    def __init__(self) -> None:
        self.txns: dict[str, TransactionMetadata] = {}

    @property
    def codec(self) -> TxnRecordCodec:
        return _CODEC

    def reset(self) -> None:
        """Forget everything (before a load)."""
        self.txns.clear()

    def replay(
        self, partition: int, offset: int, producer_id: int, producer_epoch: int, record: TxnRecord
    ) -> None:
        """One durable record: the id's new state, or its removal.

        A live write completes the transition its metadata prepared (``complete_transition``
        checks the record against the pending state); on load there is none, and the record
        is the state.
        """
        transactional_id, transit = record.transactional_id, record.transit
        if transit is None or transit.state is TransactionState.DEAD:
            self.txns.pop(transactional_id, None)
            return
        metadata = self.txns.get(transactional_id)
        if metadata is None:
            self.txns[transactional_id] = TransactionMetadata.from_transit(
                transactional_id, transit
            )
        elif metadata.pending_transition_in_progress:
            metadata.complete_transition(transit)
        else:
            metadata.replay(transit)

    def replay_marker(
        self, partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """The transaction log has no control batches: nothing to do."""


TxnRuntime = CoordinatorRuntime[TxnShard]
"""The runtime owning a ``TxnShard``; the composition root (``coordinator.assembly``) builds
it."""
