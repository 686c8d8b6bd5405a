"""Per-transactional-id metadata with Kafka's two-phase transitions.

Every change goes through two steps, as in Kafka's ``TransactionMetadata``:

1. ``prepare_*()`` checks the transition table, sets ``pending_state`` and returns an immutable
   ``TxnTransitMetadata`` (the record to write to ``__transaction_state``);
2. after the append succeeded, replay calls ``complete_transition(transit)``, which validates
   and applies it; if the append failed, ``abort_pending()`` drops it.

Loading the log replays the same transits (``from_transit``, ``replay``).  Only replay changes
the log-backed fields; ``pending_state``, ``last_producer_epoch`` (not persisted) and a TV0/1
fence's ``fenced_producer_epoch`` are in memory only, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

from txn.errors import IllegalTransitionError, ProducerFencedError
from txn.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition
from txn.limits import MAX_PRODUCER_EPOCH
from txn.state import TransactionState, check_transition

_S = TransactionState


TV_0 = 0  # transaction.version levels; TV_1 only changes the record format
TV_1 = 1
TV_2 = 2  # KIP-890 part 2: the epoch is bumped at the end of every transaction


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka's ``isEpochExhausted``: epochs >= 32766 cannot be bumped by a client request."""
    return producer_epoch >= MAX_PRODUCER_EPOCH - 1


def supports_epoch_bump(client_transaction_version: int) -> bool:
    return client_transaction_version >= TV_2


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    """The complete state a transaction moves to; also the content of its log record."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    next_producer_epoch: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int
    two_phase_commit: bool


_TRANSIT_FIELDS = tuple(field.name for field in fields(TxnTransitMetadata))


class TransactionMetadata:
    """The coordinator's view of one transactional id (Kafka field names, snake case)."""

    def __init__(
        self,
        transactional_id: str,
        producer_id: int,
        *,
        prev_producer_id: int = NO_PRODUCER_ID,
        next_producer_id: int = NO_PRODUCER_ID,
        next_producer_epoch: int = NO_PRODUCER_EPOCH,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        last_producer_epoch: int = NO_PRODUCER_EPOCH,
        txn_timeout_ms: int,
        state: TransactionState = TransactionState.EMPTY,
        topic_partitions: Iterable[TopicPartition] = (),
        txn_start_timestamp: int = -1,
        txn_last_update_timestamp: int,
        client_transaction_version: int = TV_0,
        two_phase_commit: bool = False,
    ) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.prev_producer_id = prev_producer_id
        self.next_producer_id = next_producer_id
        self.next_producer_epoch = next_producer_epoch
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.txn_timeout_ms = txn_timeout_ms
        self.state = state
        self.topic_partitions: frozenset[TopicPartition] = frozenset(topic_partitions)
        self.txn_start_timestamp = txn_start_timestamp
        self.txn_last_update_timestamp = txn_last_update_timestamp
        self.client_transaction_version = client_transaction_version
        self.two_phase_commit = two_phase_commit
        # In memory only (Kafka's pendingState): the transition prepared and not yet durable.
        self.pending_state: TransactionState | None = None

    # --- construction from the log ------------------------------------------------------------

    @classmethod
    def from_transit(
        cls, transactional_id: str, transit: TxnTransitMetadata
    ) -> TransactionMetadata:
        """Metadata whose state is ``transit`` (log replay); the last epoch is not persisted."""
        metadata = cls(
            transactional_id,
            transit.producer_id,
            txn_timeout_ms=transit.txn_timeout_ms,
            txn_last_update_timestamp=transit.txn_last_update_timestamp,
        )
        metadata._apply(transit)
        metadata.last_producer_epoch = NO_PRODUCER_EPOCH
        return metadata

    # --- the producer epoch: the log's, or a TV0/1 fence's in memory ---------------------------

    @property
    def producer_epoch(self) -> int:
        """The epoch in force: a TV0/1 fence's (``fenced_producer_epoch``) while it stands,
        else the log's."""
        fenced = self.fenced_producer_epoch
        return self._producer_epoch if fenced is None else fenced

    @producer_epoch.setter
    def producer_epoch(self, epoch: int) -> None:
        """The log's epoch (construction and replay); a durable record ends an in-memory fence."""
        self._producer_epoch = epoch
        self.fenced_producer_epoch: int | None = None

    @property
    def has_failed_epoch_fence(self) -> bool:
        """A TV0/1 fence's append failed: its epoch (in force in memory) must not be bumped
        again by the next fencing attempt (KAFKA-9666)."""
        return self.fenced_producer_epoch is not None and self.pending_state is None

    # --- queries ------------------------------------------------------------------------------

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def snapshot(self) -> TxnTransitMetadata:
        """The current state as a transit object (no pending state is set)."""
        return self._transit(self.state)

    # --- prepare ------------------------------------------------------------------------------

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """Ongoing -> pending PrepareEpochFence with epoch+1 (InitProducerId or timeout)."""
        # After a failed fence the bumped epoch is reused (KAFKA-9666); at Short.MAX the epoch is
        # not bumped at all, so an abort can still go through (KAFKA-20090).
        bump = not self.has_failed_epoch_fence and self.producer_epoch < MAX_PRODUCER_EPOCH
        epoch = self.producer_epoch + 1 if bump else self.producer_epoch
        return self._prepare(self._transit(_S.PREPARE_EPOCH_FENCE, producer_epoch=epoch))

    def prepare_increment_producer_epoch(
        self,
        new_txn_timeout_ms: int,
        expected_producer_epoch: int | None,
        update_timestamp: int,
        *,
        two_phase_commit: bool = False,
    ) -> TxnTransitMetadata:
        """InitProducerId on an idle id: -> Empty with epoch+1 (or the same epoch on a retry).

        Raises ProducerFencedError when the expected epoch is neither current nor last, and
        IllegalTransitionError when the epoch is exhausted (the caller rotates the id instead).
        """
        if self.is_producer_epoch_exhausted:
            raise IllegalTransitionError(
                f"cannot allocate more producer epochs for producer id {self.producer_id}"
            )
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch in (NO_PRODUCER_EPOCH, expected_producer_epoch):
            epoch, last = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            # A retry of a bump whose response was lost: hand out the same epoch again.
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            raise ProducerFencedError(
                transactional_id=self.transactional_id,
                producer_id=self.producer_id,
                producer_epoch=expected_producer_epoch,
            )
        return self._prepare_empty(
            self.producer_id, epoch, last, new_txn_timeout_ms, update_timestamp, two_phase_commit
        )

    def prepare_producer_id_rotation(
        self,
        new_producer_id: int,
        new_txn_timeout_ms: int,
        update_timestamp: int,
        record_last_epoch: bool,
        *,
        two_phase_commit: bool = False,
    ) -> TxnTransitMetadata:
        """InitProducerId on an exhausted epoch: -> Empty with a new producer id at epoch 0."""
        if self.state in (_S.ONGOING, _S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            raise IllegalTransitionError(
                f"cannot rotate the producer id of {self.transactional_id!r} in "
                f"{self.state.state_name}"
            )
        last = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._prepare_empty(
            new_producer_id, 0, last, new_txn_timeout_ms, update_timestamp, two_phase_commit
        )

    def _prepare_empty(
        self,
        producer_id: int,
        producer_epoch: int,
        last_producer_epoch: int,
        txn_timeout_ms: int,
        update_timestamp: int,
        two_phase_commit: bool,
    ) -> TxnTransitMetadata:
        """InitProducerId's transition: -> Empty with no partitions and no transaction started."""
        return self._prepare(
            self._transit(
                _S.EMPTY,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                last_producer_epoch=last_producer_epoch,
                txn_timeout_ms=txn_timeout_ms,
                topic_partitions=frozenset(),
                txn_start_timestamp=-1,
                txn_last_update_timestamp=update_timestamp,
                two_phase_commit=two_phase_commit,
            )
        )

    def prepare_add_partitions(
        self,
        added: Iterable[TopicPartition],
        update_timestamp: int,
        client_transaction_version: int,
    ) -> TxnTransitMetadata:
        """AddPartitionsToTxn: -> Ongoing; the transaction starts now if none was open."""
        starting = self.state in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT)
        return self._prepare(
            self._transit(
                _S.ONGOING,
                topic_partitions=self.topic_partitions | frozenset(added),
                txn_start_timestamp=update_timestamp if starting else self.txn_start_timestamp,
                txn_last_update_timestamp=update_timestamp,
                client_transaction_version=client_transaction_version,
            )
        )

    def prepare_abort_or_commit(
        self,
        new_state: TransactionState,
        client_transaction_version: int,
        next_producer_id: int,
        update_timestamp: int,
        no_partition_added: bool,
    ) -> TxnTransitMetadata:
        """EndTxn: -> PrepareCommit / PrepareAbort (TV2 bumps the epoch here)."""
        if supports_epoch_bump(client_transaction_version):
            # At Short.MAX an abort goes through without overflowing, so a broken id recovers.
            overflow_abort = (
                self.producer_epoch == MAX_PRODUCER_EPOCH and new_state is _S.PREPARE_ABORT
            )
            epoch = self.producer_epoch if overflow_abort else self.producer_epoch + 1
            last = self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        start = update_timestamp if no_partition_added else self.txn_start_timestamp
        return self._prepare(
            self._transit(
                new_state,
                producer_epoch=epoch,
                last_producer_epoch=last,
                next_producer_id=next_producer_id,
                # TV2 may abort with no partition added: the start time is then "now".
                txn_start_timestamp=start,
                txn_last_update_timestamp=update_timestamp,
                client_transaction_version=client_transaction_version,
            )
        )

    def prepare_abort_after_fence(
        self, fence: TxnTransitMetadata, client_transaction_version: int, update_timestamp: int
    ) -> TxnTransitMetadata:
        """Turn a pending PrepareEpochFence into PrepareAbort (the coordinator's own abort)."""
        if self.pending_state is not _S.PREPARE_EPOCH_FENCE:
            raise IllegalTransitionError(
                f"{self.transactional_id!r} has no pending epoch fence to abort with"
            )
        self.pending_state = None
        if not supports_epoch_bump(client_transaction_version):
            # TV0/1 keep the epoch at the end, so the fenced epoch takes effect in memory now
            # (as Kafka sets producerEpoch before the append): the old producer is fenced even
            # if the append fails.  The log-backed epoch changes when the abort is replayed.
            self.fenced_producer_epoch = fence.producer_epoch
            self.last_producer_epoch = NO_PRODUCER_EPOCH
        return self.prepare_abort_or_commit(
            _S.PREPARE_ABORT, client_transaction_version, NO_PRODUCER_ID, update_timestamp, False
        )

    def prepare_complete(self, update_timestamp: int) -> TxnTransitMetadata:
        """Markers written: PrepareCommit/PrepareAbort -> CompleteCommit/CompleteAbort."""
        target = _S.COMPLETE_COMMIT if self.state is _S.PREPARE_COMMIT else _S.COMPLETE_ABORT
        rotate = (
            supports_epoch_bump(self.client_transaction_version)
            and self.next_producer_id != NO_PRODUCER_ID
        )
        # On TV2 epoch overflow the producer id becomes next_producer_id at epoch 0; the last
        # epoch stays 32766, the last one the client saw.
        return self._prepare(
            self._transit(
                target,
                producer_id=self.next_producer_id if rotate else self.producer_id,
                producer_epoch=0 if rotate else self.producer_epoch,
                next_producer_id=NO_PRODUCER_ID,
                topic_partitions=frozenset(),
                txn_last_update_timestamp=update_timestamp,
            )
        )

    def prepare_dead(self) -> TxnTransitMetadata:
        """Transactional id expiry: -> Dead (written as a tombstone)."""
        return self._prepare(self._transit(_S.DEAD, topic_partitions=frozenset()))

    # --- complete / abort ---------------------------------------------------------------------

    def complete_transition(self, transit: TxnTransitMetadata) -> None:
        """Apply ``transit`` after its record was appended; raises if it is not the pending one."""
        target = self.pending_state
        if target is None:
            raise IllegalTransitionError(
                f"{self.transactional_id!r} completing a transition with no pending state"
            )
        if target is not transit.state:
            self._fail(transit)
        if target is _S.EMPTY:
            same_or_bumped = transit.producer_epoch == self.producer_epoch or self._valid_bump(
                transit
            )
            if not same_or_bumped or transit.topic_partitions or transit.txn_start_timestamp != -1:
                self._fail(transit)
        elif target is _S.ONGOING:
            if (
                not self._valid_producer_epoch(transit)
                or not transit.topic_partitions >= self.topic_partitions
                or transit.txn_timeout_ms != self.txn_timeout_ms
            ):
                self._fail(transit)
        elif target in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            empty_abort = (
                target is _S.PREPARE_ABORT
                and supports_epoch_bump(transit.client_transaction_version)
                and self.state in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT)
            )
            if (
                not self._valid_producer_epoch(transit)
                or transit.topic_partitions != self.topic_partitions
                or transit.txn_timeout_ms != self.txn_timeout_ms
                or not (empty_abort or transit.txn_start_timestamp == self.txn_start_timestamp)
            ):
                self._fail(transit)
        elif target in (_S.COMPLETE_COMMIT, _S.COMPLETE_ABORT):
            if (
                not self._valid_producer_epoch(transit)
                or transit.txn_timeout_ms != self.txn_timeout_ms
                or transit.txn_start_timestamp == -1
            ):
                self._fail(transit)
        else:
            # PrepareEpochFence and Dead are pending-only: they are never completed.
            self._fail(transit)
        self._apply(transit)
        self.pending_state = None

    def replay(self, transit: TxnTransitMetadata) -> None:
        """A record of the log on load: its transit is the state (nothing is pending)."""
        self._apply(transit)

    def abort_pending(self) -> None:
        """The append failed: forget the pending transition."""
        self.pending_state = None

    # --- internals ----------------------------------------------------------------------------

    def _valid_bump(self, transit: TxnTransitMetadata) -> bool:
        return transit.producer_epoch == self.producer_epoch + 1 or (
            transit.producer_epoch == 0 and transit.producer_id != self.producer_id
        )

    def _valid_producer_epoch(self, transit: TxnTransitMetadata) -> bool:
        tv2 = supports_epoch_bump(transit.client_transaction_version)
        if (
            tv2
            and transit.state in (_S.COMPLETE_COMMIT, _S.COMPLETE_ABORT)
            and transit.producer_epoch == 0
        ):
            # Overflow: the producer id rotated to next_producer_id; the last epoch is kept.
            return (
                transit.last_producer_epoch == self.last_producer_epoch
                and transit.prev_producer_id == self.producer_id
            )
        if tv2 and transit.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            return (
                transit.last_producer_epoch == self.producer_epoch
                and transit.producer_id == self.producer_id
            )
        return (
            transit.producer_epoch == self.producer_epoch
            and transit.producer_id == self.producer_id
        )

    def _fail(self, transit: TxnTransitMetadata) -> None:
        raise IllegalTransitionError(
            f"{self.transactional_id!r} ({self.state.state_name}, pid {self.producer_id}, "
            f"epoch {self.producer_epoch}) cannot complete the transition to {transit}"
        )

    def _prepare(self, transit: TxnTransitMetadata) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransitionError(
                f"{self.transactional_id!r} already has a pending transition to "
                f"{self.pending_state.state_name}"
            )
        if transit.producer_id < 0:
            raise IllegalTransitionError(f"illegal new producer id {transit.producer_id}")
        if transit.state is not _S.DEAD and not 0 <= transit.producer_epoch <= MAX_PRODUCER_EPOCH:
            raise IllegalTransitionError(f"illegal new producer epoch {transit.producer_epoch}")
        check_transition(self.state, transit.state)
        self.pending_state = transit.state
        return transit

    def _transit(
        self,
        state: TransactionState,
        *,
        producer_id: int | None = None,
        producer_epoch: int | None = None,
        last_producer_epoch: int | None = None,
        next_producer_id: int | None = None,
        txn_timeout_ms: int | None = None,
        topic_partitions: frozenset[TopicPartition] | None = None,
        txn_start_timestamp: int | None = None,
        txn_last_update_timestamp: int | None = None,
        client_transaction_version: int | None = None,
        two_phase_commit: bool | None = None,
    ) -> TxnTransitMetadata:
        """A transit that copies every field not given; prev_producer_id is the current id."""

        def pick(value: int | None, current: int) -> int:
            return current if value is None else value

        return TxnTransitMetadata(
            producer_id=pick(producer_id, self.producer_id),
            prev_producer_id=self.producer_id,
            next_producer_id=pick(next_producer_id, self.next_producer_id),
            next_producer_epoch=self.next_producer_epoch,
            producer_epoch=pick(producer_epoch, self.producer_epoch),
            last_producer_epoch=pick(last_producer_epoch, self.last_producer_epoch),
            txn_timeout_ms=pick(txn_timeout_ms, self.txn_timeout_ms),
            state=state,
            topic_partitions=self.topic_partitions
            if topic_partitions is None
            else topic_partitions,
            txn_start_timestamp=pick(txn_start_timestamp, self.txn_start_timestamp),
            txn_last_update_timestamp=pick(
                txn_last_update_timestamp, self.txn_last_update_timestamp
            ),
            client_transaction_version=pick(
                client_transaction_version, self.client_transaction_version
            ),
            two_phase_commit=self.two_phase_commit
            if two_phase_commit is None
            else two_phase_commit,
        )

    def _apply(self, transit: TxnTransitMetadata) -> None:
        for name in _TRANSIT_FIELDS:
            setattr(self, name, getattr(transit, name))

    def __repr__(self) -> str:
        pending = self.pending_state.state_name if self.pending_state else None
        return (
            f"TransactionMetadata({self.transactional_id!r}, pid={self.producer_id}, "
            f"epoch={self.producer_epoch}, last={self.last_producer_epoch}, "
            f"prev={self.prev_producer_id}, next={self.next_producer_id}, "
            f"state={self.state.state_name}, pending={pending}, "
            f"partitions={sorted(self.topic_partitions)}, tv={self.client_transaction_version}, "
            f"2pc={self.two_phase_commit})"
        )
