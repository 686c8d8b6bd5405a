"""``find-hanging``: cross-check the participants against the transaction coordinator.

Three kinds of findings, each reported only if present in two scans (the CLI runs
``find_hanging`` twice, a back-off apart, and keeps what both found):

* ``open-transaction``: a data partition has an open transaction (DescribeProducers
  ``current_txn_start_offset >= 0``, older than the threshold) whose producer the
  coordinator does not list as Ongoing/Prepare* with that partition (KIP-664's rule);
  it pins the partition's last stable offset.
* ``pending-share-acks``: a share coordinator holds TX_PENDING acknowledgements of a
  producer whose transaction is Complete*/Empty/unknown, of another epoch, or does not
  include that ``__share_group_state`` partition; they pin the share-partition start
  offset and the records are never redelivered.
* ``prepared-2pc``: a prepared (2PC, never timed out) transaction with partitions, older
  than the threshold: in doubt until someone commits or aborts it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from producer.twophase.model import TxnSnapshot
from producer.twophase.scan import RateLimiter, Scanner
from txn.ids import SHARE_GROUP_STATE_TOPIC, TopicPartition


@dataclass(frozen=True, slots=True)
class HangingItem:
    """One finding of ``find_hanging``."""

    kind: str
    producer_id: int
    producer_epoch: int
    transactional_id: str | None
    coordinator_state: str
    where: str
    start_offset: int | None
    pending_records: int | None
    age_ms: int | None
    reason: str

    @property
    def key(self) -> tuple[Any, ...]:
        """Identity across scans (ages grow; everything else must be the same)."""
        return (
            self.kind,
            self.producer_id,
            self.producer_epoch,
            self.transactional_id,
            self.coordinator_state,
            self.where,
            self.start_offset,
            self.pending_records,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class _Coordinator:
    """The coordinator's view by producer id (ListTransactions + cached DescribeTransactions)."""

    def __init__(self, scanner: Scanner) -> None:
        self.scanner = scanner
        self.listings = scanner.listings()
        self.by_pid = {t.producer_id: t.transactional_id for t in self.listings}
        self._snaps: dict[str, TxnSnapshot] = {}

    def snapshot(self, transactional_id: str) -> TxnSnapshot:
        snap = self._snaps.get(transactional_id)
        if snap is None:
            snap = self._snaps[transactional_id] = self.scanner.snapshot(transactional_id)
        return snap

    def for_producer(self, producer_id: int) -> TxnSnapshot | None:
        tid = self.by_pid.get(producer_id)
        if tid is None:
            return None
        snap = self.snapshot(tid)
        return snap if snap.known and snap.producer_id == producer_id else None


def find_hanging(
    scanner: Scanner,
    topics: Sequence[str] | None,
    max_age_ms: int,
    limiter: RateLimiter | None = None,
) -> list[HangingItem]:
    """One scan; see the module docstring for what counts as hanging.

    ``topics`` None means every topic (the CLI asks for ``--all-topics`` explicitly).  The
    partitions' leaders are asked in batches of at most 500 partitions per
    DescribeProducers request, each request taking a token of ``limiter``.
    """
    now = scanner.now_ms()
    tc = _Coordinator(scanner)
    items: list[HangingItem] = []
    wanted = set(topics) if topics else None
    scope = [
        TopicPartition(topic, partition)
        for topic in (sorted(wanted) if wanted else scanner.topics())
        for partition in scanner.partitions(topic)
    ]
    by_partition = scanner.producers_batched(scope, limiter or RateLimiter(0))
    for tp in scope:
        for prod in by_partition.get(tp, []):
            if prod.current_txn_start_offset < 0:
                continue
            age = max(0, now - prod.last_timestamp_ms)
            if age < max_age_ms:
                continue
            view = tc.for_producer(prod.producer_id)
            if view is None:
                reason = f"the coordinator has no transactional id for producer {prod.producer_id}"
            elif not view.is_open:
                reason = f"the coordinator's transaction is {view.state}"
            elif tp not in view.partitions:
                reason = "the coordinator's open transaction does not include this partition"
            else:
                continue
            items.append(
                HangingItem(
                    "open-transaction",
                    prod.producer_id,
                    prod.producer_epoch,
                    view.transactional_id if view else None,
                    view.state if view else "Unknown",
                    str(tp),
                    prod.current_txn_start_offset,
                    None,
                    age,
                    f"{reason}; the partition's last stable offset is pinned at "
                    f"{prod.current_txn_start_offset}",
                )
            )
    pending = scanner.pending_acks()
    for producer_id, acks in sorted(pending.items()):
        entries = [e for e in acks.entries if wanted is None or e.topic in wanted]
        if not entries:
            continue
        view = tc.for_producer(producer_id)
        for e in entries:
            state_tp = TopicPartition(SHARE_GROUP_STATE_TOPIC, e.state_partition)
            if view is None:
                reason = f"the coordinator has no transactional id for producer {producer_id}"
            elif not view.is_open:
                reason = f"the coordinator's transaction is {view.state}"
            elif view.producer_epoch != acks.producer_epoch:
                reason = (
                    f"staged by epoch {acks.producer_epoch}, the coordinator's open transaction "
                    f"is epoch {view.producer_epoch}"
                )
            elif state_tp not in view.partitions:
                reason = f"the coordinator's open transaction does not include {state_tp}"
            else:
                continue
            items.append(
                HangingItem(
                    "pending-share-acks",
                    producer_id,
                    acks.producer_epoch,
                    view.transactional_id if view else None,
                    view.state if view else "Unknown",
                    f"{e.group_id}/{e.topic or e.topic_id}-{e.partition} ({state_tp})",
                    e.first_offset,
                    e.pending_records,
                    None,
                    f"{reason}; {e.pending_records} records stay TX_PENDING and pin the "
                    "share-partition start offset",
                )
            )
    for listing in tc.listings:
        if listing.state != "Ongoing":
            continue
        view = tc.snapshot(listing.transactional_id)
        open_ms = view.age_ms(now)
        if not (view.state == "Ongoing" and view.two_phase and view.partitions):
            continue
        if open_ms is None or open_ms < max_age_ms:
            continue
        if wanted is not None:
            staged = pending.get(view.producer_id)
            touched = {tp.topic for tp in view.data_partitions}
            touched |= {e.topic or "" for e in staged.entries} if staged else set()
            if not touched & wanted:
                continue
        items.append(
            HangingItem(
                "prepared-2pc",
                view.producer_id,
                view.producer_epoch,
                view.transactional_id,
                view.state,
                ", ".join(map(str, view.partitions)),
                None,
                None,
                open_ms,
                "prepared two-phase-commit transaction, never timed out: in doubt until "
                "`sharetxn txn commit` (with evidence) or `sharetxn txn abort`",
            )
        )
    return items


def confirmed(first: list[HangingItem], second: list[HangingItem]) -> list[HangingItem]:
    """The findings of ``second`` that ``first`` had too."""
    seen = {item.key for item in first}
    return [item for item in second if item.key in seen]
