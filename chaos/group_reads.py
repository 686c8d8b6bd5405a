"""The consumer-group side of the simulation's end: quiescence and the final reads.

Quiescent (for the consumer group): every input partition's committed offset is its log end
(none committed counts as the log start, ``auto.offset.reset=earliest``, as the checker reads
it: an empty partition never gets a commit) and no transactional offset is pending.  The final
reads record, for the checker's C1-C3, the group output as a read_committed consumer sees it,
its batches, and the group's committed offsets.
"""

from __future__ import annotations

from typing import Any

from chaos.history import FINAL, History
from chaos.log_reads import batch_summary, read_committed
from chaos.workload import WorkloadConfig
from coordinator.broker import BrokerCore
from txn.errors import ErrorCode
from txn.ids import TopicPartition


def _input_partitions(cfg: WorkloadConfig) -> list[TopicPartition]:
    return [TopicPartition(cfg.input_topic, p) for p in range(cfg.input_partitions)]


def group_quiescent(core: BrokerCore, cfg: WorkloadConfig) -> bool:
    """Whether the consumer group has committed every input (trivially, without workers)."""
    return group_waiting_for(core, cfg) is None


def group_waiting_for(core: BrokerCore, cfg: WorkloadConfig) -> str | None:
    """What the consumer group has not finished yet (None: quiescent)."""
    if not cfg.group_workers:
        return None
    tps = _input_partitions(cfg)
    error, offsets = core.groups.fetch_offsets(cfg.consumer_group, tps, True)
    if error is not ErrorCode.NONE:
        return f"the consumer group's offsets ({error.name})"
    for tp in tps:
        fetched = offsets.get(tp)
        part = core.partition(tp.topic, tp.partition)
        if fetched is None or part is None or fetched.error is not ErrorCode.NONE:
            why = "no answer" if fetched is None else fetched.error.name
            return f"the consumer group's offset of {tp.topic}-{tp.partition} ({why})"
        # No committed offset: a consumer starts at the log start (earliest), so an empty
        # partition -- which no transaction ever commits -- is consumed.
        position = fetched.offset if fetched.offset >= 0 else part.log_start_offset
        if position != part.high_watermark:
            return (
                f"the consumer group to consume {tp.topic}-{tp.partition} (committed"
                f" {fetched.offset}, log end {part.high_watermark})"
            )
    for p in range(cfg.output_partitions):
        out = core.partition(cfg.group_output_topic, p)
        if out is None or out.last_stable_offset != out.high_watermark:
            return f"the LSO of {cfg.group_output_topic}-{p} to reach its high watermark"
    return None


def group_final_reads(core: BrokerCore, cfg: WorkloadConfig, history: History, now: int) -> None:
    """Record the group output (committed view and batches) and the committed offsets."""
    if not cfg.group_workers:
        return
    committed: dict[str, list[list[Any]]] = {}
    batches: dict[str, list[list[Any]]] = {}
    lso: dict[str, list[int]] = {}
    for p in range(cfg.output_partitions):
        tp = TopicPartition(cfg.group_output_topic, p)
        committed[str(p)] = [[o, v] for o, v in read_committed(core, tp)]
        batches[str(p)] = batch_summary(core, tp)
        part = core.partition(tp.topic, tp.partition)
        if part is not None:
            lso[str(p)] = [part.last_stable_offset, part.high_watermark]
    history.event(
        now,
        FINAL,
        "group-output",
        {
            "topic": cfg.group_output_topic,
            "committed": committed,
            "batches": batches,
            "lso": lso,
        },
    )
    tps = _input_partitions(cfg)
    _error, fetched = core.groups.fetch_offsets(cfg.consumer_group, tps, False)
    offsets = {str(tp.partition): fetched[tp].offset for tp in tps if tp in fetched}
    pending = [
        str(tp.partition) for tp in tps if core.groups.offsets.has_pending(cfg.consumer_group, tp)
    ]
    history.event(
        now,
        FINAL,
        "group-offsets",
        {"group": cfg.consumer_group, "offsets": offsets, "pending": pending},
    )
