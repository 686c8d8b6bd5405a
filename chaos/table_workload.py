"""Compaction under chaos (issue 18): a keyed table on a compacted topic, and its invariant.

Some seeds (``FaultProfile.compaction``) add a table writer beside the share-group workload:
an idempotent producer writing versions of a few keys -- and tombstones -- to the compacted
topic ``table`` (small segments, ``min.cleanable.dirty.ratio=0.01``, a short
``delete.retention.ms``), while the broker's cleaner runs on the simulated clock with every
fault on (crashes mid-swap, torn writes, I/O errors).  Two in three of those seeds make the
table ``compact,delete`` with a short ``retention.ms``, so retention removes whole old
segments as well (the broker's retention task runs every simulated second).  The same seeds
shrink the internal logs' segments, so ``__consumer_offsets`` and ``__transaction_state`` are
compacted under the same faults and every restart replays cleaned logs.

The invariant, **T1**, is in ``chaos.table_checker``: every key reads its latest acknowledged
value (or a later one); what the cleaner removed by policy is not lost.
"""

from __future__ import annotations

import random
from typing import Any

from chaos.history import FINAL, History
from chaos.log_reads import read_committed_from
from chaos.sim_client import Proc, Sleep
from chaos.workload import Gen, IdempotentWriter, WorkloadEnv
from coordinator.broker import BrokerCore
from producer.protocol.records import DecodedRecord
from txn.ids import TopicPartition

TABLE_TOPIC = "table"
TABLE_KEYS = 6
TABLE_WRITES = 60
TABLE_CONFIGS = {
    "cleanup.policy": "compact",
    "internal.segment.bytes": "600",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "3000",
}


def table_configs(retention_ms: int) -> dict[str, str]:
    """The table's topic configs; with ``retention_ms``, ``compact,delete``: whole segments
    older than that go too, latest values included (removed by policy, not lost)."""
    if not retention_ms:
        return dict(TABLE_CONFIGS)
    return {**TABLE_CONFIGS, "cleanup.policy": "compact,delete", "retention.ms": str(retention_ms)}


# Broker settings of a compaction seed: a cleaner pass every second of simulated time, and
# internal-log segments small enough that the internal logs are cleaned too.
COMPACTION_BROKER = {
    "log.cleaner.backoff.ms": "1000",
    "log.cleaner.min.cleanable.ratio": "0.05",
    "log.cleaner.delete.retention.ms": "5000",
    "offsets.topic.segment.bytes": "4096",
    "transaction.state.log.segment.bytes": "4096",
    "log.retention.check.interval.ms": "1000",
    "log.initial.task.delay.ms": "1000",
}


class TableWriter(IdempotentWriter):
    """Writes versions of ``TABLE_KEYS`` keys (one in ten a tombstone), idempotently."""

    def __init__(self, env: WorkloadEnv, proc: Proc, rng: random.Random) -> None:
        super().__init__(env, proc, rng)
        self.done = False

    def run(self) -> Gen:
        written = 0
        while written < TABLE_WRITES:
            if self.pid < 0:
                yield from self._init_pid()
                continue
            records: list[list[Any]] = []
            for _ in range(self.rng.randint(1, 3)):
                key = f"k{self.rng.randrange(TABLE_KEYS)}"
                value = None if self.rng.random() < 0.1 else f"v{written}.{len(records)}"
                records.append([key, value])
            written += 1
            yield from self._produce(
                TABLE_TOPIC,
                0,
                [(k.encode(), None if v is None else v.encode()) for k, v in records],
                "table-write",
                {"records": records},
            )
            yield Sleep(self.rng.randint(50, 600))
        self.done = True


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode()


def _table_entry(record: DecodedRecord) -> list[Any]:
    """[offset, key, value] of a table record (a tombstone's value is None)."""
    return [record.offset, _text(record.key), _text(record.value)]


def table_final_read(core: BrokerCore, history: History, now: int) -> None:
    """The table as a read_committed consumer reads it from the log start (keys included)."""
    tp = TopicPartition(TABLE_TOPIC, 0)
    part = core.partition(TABLE_TOPIC, 0)
    if part is None:
        return
    records, _next = read_committed_from(
        core, tp, part.log_start_offset, set(), _table_entry, end=part.last_stable_offset
    )
    history.event(
        now,
        FINAL,
        "table",
        {
            "records": records,
            "log_start": part.log_start_offset,
            "cleaner_runs": core.cleaner_runs,
        },
    )
