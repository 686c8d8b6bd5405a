"""A share partition (KIP-932): the in-flight records of one share group on one partition.

The broker core calls it; it calls three seams and nothing else: the data
partition (``PartitionData``: offsets and fetch), the ``Persister`` (durable
state, i.e. the share coordinator) and the ``Clock`` (acquisition locks).

Offsets (DESIGN and reference §3)::

    SPSO (start_offset)  first offset still in flight (not ACKNOWLEDGED/ARCHIVED)
    SPEO (end_offset)    one past the last offset ever taken into the cache
                         (exclusive, as in KIP-932's worked example; Kafka's
                         ``endOffset()`` is ``end_offset - 1`` while the cache
                         is non-empty)
    next_fetch_offset    first AVAILABLE (or never-fetched) offset, else SPEO

Every state change goes through ``txn.share_state.check_transition``.  An
acknowledgement is *prepared* (validated, turned into a plan), written with
one ``Persister.write_state`` call, and applied only if that call returns
NONE; otherwise nothing changes and the persister's error (mapped as Kafka
maps it) is returned.  Acquisitions are not persisted (as in Kafka); lock
expiry, session release and transaction completion are.

What a write carries (``_write_batches``): the changed ranges at or above the
SPSO the write produces, coalesced by (state, delivery count), and
``start_offset`` = that SPSO when it differs from the last persisted one,
else -1 ("unchanged").  Ranges that fall below the new SPSO are omitted: the
share coordinator prunes them anyway.  This reproduces KIP-932's worked
example (see tests/unit/share/test_worked_example.py).

Log start movement: Kafka's share partition says "LSO" for the *log start*
offset (retention, DeleteRecords).  When it passes the SPSO, AVAILABLE records
below it are archived, ACQUIRED ones wait for their lock, SPSO = log start and
SPEO = max(SPEO, SPSO); the new start is persisted with the next write.  The
*last stable* offset only bounds what a read_committed partition can fetch.
It is checked on every public operation and by ``on_log_appended``.

A fresh state (persisted start -1) takes ``auto_offset_reset`` (latest = the
high watermark, or the last stable offset under read_committed; earliest =
the log start) and persists it at once, so a restart resumes there.

KIP-1289 (DESIGN §4.1, §4.2): ``plan_pending`` + ``apply_pending`` move ACQUIRED records to
TX_PENDING (lock cancelled; never acquired, released or expired);
``complete_pending`` applies (commit) or reverts (abort) them.  Pending acks
themselves are stored by the share coordinator as a transactional batch, so
``prepare_pending`` writes nothing here.
"""

from __future__ import annotations

from coordinator.share.acquisition import Acquisition
from coordinator.share.partition_model import (
    EVENT_ACKNOWLEDGED,
    EVENT_ACQUIRED,
    EVENT_ARCHIVED,
    EVENT_REDELIVERED,
    EVENT_REJECTED,
    EVENT_RELEASED,
    AckBatch,
    AcquiredRange,
    AcquireResult,
    AutoOffsetReset,
    EventSink,
    Isolation,
    PartitionData,
    SharePartitionConfig,
    SharePartitionState,
    map_persister_error,
    validate_ack_batches,
)
from coordinator.share.txn_pending import PendingPlan, TransactionalAcks

__all__ = [
    "EVENT_ACKNOWLEDGED",
    "EVENT_ACQUIRED",
    "EVENT_ARCHIVED",
    "EVENT_REDELIVERED",
    "EVENT_REJECTED",
    "EVENT_RELEASED",
    "AckBatch",
    "AcquireResult",
    "AcquiredRange",
    "AutoOffsetReset",
    "EventSink",
    "Isolation",
    "PartitionData",
    "PendingPlan",
    "SharePartition",
    "SharePartitionConfig",
    "SharePartitionState",
    "map_persister_error",
    "validate_ack_batches",
]


class SharePartition(Acquisition, TransactionalAcks):
    """In-flight records, acquisition locks and SPSO/SPEO of one share partition.

    Its jobs live in their own modules: the state and the plan/write/apply path
    (``partition_core``), acquisition (``acquisition``), acknowledgement
    (``acknowledgement``) and KIP-1289's transactional acknowledgements (``txn_pending``).
    """
