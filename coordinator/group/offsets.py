"""Committed offsets per group, and transactional offsets pending per producer id.

An offset committed in a transaction (TxnOffsetCommit) stays pending under its producer id
until the transaction's marker reaches ``__consumer_offsets``: COMMIT makes it the committed
offset unless a plain commit written later in the log already replaced it, ABORT drops it.
Each entry remembers the log offset of its record, which decides that order on replay too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from txn.ids import TopicPartition


@dataclass(frozen=True, slots=True)
class OffsetEntry:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    record_offset: int  # where its record is in __consumer_offsets


@dataclass(slots=True)
class OffsetStore:
    committed: dict[str, dict[TopicPartition, OffsetEntry]] = field(default_factory=dict)
    # producer id -> group -> partition -> entry
    pending: dict[int, dict[str, dict[TopicPartition, OffsetEntry]]] = field(default_factory=dict)

    def commit(self, group_id: str, tp: TopicPartition, entry: OffsetEntry) -> None:
        self.committed.setdefault(group_id, {})[tp] = entry

    def delete(self, group_id: str, tp: TopicPartition) -> bool:
        offsets = self.committed.get(group_id)
        if offsets is None or offsets.pop(tp, None) is None:
            return False
        if not offsets:
            del self.committed[group_id]
        return True

    def stage(
        self, producer_id: int, group_id: str, tp: TopicPartition, entry: OffsetEntry
    ) -> None:
        self.pending.setdefault(producer_id, {}).setdefault(group_id, {})[tp] = entry

    def complete(self, producer_id: int, commit: bool) -> list[tuple[str, TopicPartition]]:
        """Apply (COMMIT) or drop (ABORT) a producer's pending offsets; what became committed."""
        staged = self.pending.pop(producer_id, {})
        applied: list[tuple[str, TopicPartition]] = []
        if not commit:
            return applied
        for group_id, offsets in staged.items():
            for tp, entry in offsets.items():
                current = self.committed.get(group_id, {}).get(tp)
                if current is None or current.record_offset < entry.record_offset:
                    self.commit(group_id, tp, entry)
                    applied.append((group_id, tp))
        return applied

    def drop_pending(self, group_id: str, tp: TopicPartition) -> None:
        """Forget every producer's pending offset of ``group_id`` on ``tp`` (a tombstone)."""
        for groups in self.pending.values():
            offsets = groups.get(group_id)
            if offsets is not None:
                offsets.pop(tp, None)

    def on_topic(self, topic: str) -> list[tuple[str, TopicPartition]]:
        """Every (group, partition) of ``topic`` with a committed or a pending offset."""
        found = {(g, tp) for g, offs in self.committed.items() for tp in offs if tp.topic == topic}
        for groups in self.pending.values():
            found |= {(g, tp) for g, offs in groups.items() for tp in offs if tp.topic == topic}
        return sorted(found)

    def has_pending(self, group_id: str, tp: TopicPartition | None = None) -> bool:
        for groups in self.pending.values():
            offsets = groups.get(group_id)
            if offsets and (tp is None or tp in offsets):
                return True
        return False

    def producers_with_pending(self) -> list[int]:
        return sorted(self.pending)

    def of(self, group_id: str) -> dict[TopicPartition, OffsetEntry]:
        return dict(self.committed.get(group_id, {}))

    def drop_group(self, group_id: str) -> list[TopicPartition]:
        return sorted(self.committed.pop(group_id, {}))
