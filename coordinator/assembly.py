"""The composition root of the coordinators: their logs, runtimes and shards, wired together.

As in Kafka, where the broker builds each ``CoordinatorRuntime`` and the runtime owns the
shards, no coordinator builds its own runtime here: this module opens each coordinator's
internal logs, gives them to a ``CoordinatorRuntime`` together with a new shard, and hands
the runtime to the coordinator.  ``BrokerCore`` (and through it the chaos simulator) calls
``assemble_coordinators``; tests build single coordinators over their own logs with the
runtime factories below.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

from coordinator.group.coordinator import ConsumerGroupCoordinator
from coordinator.group.parts import TopicCatalog
from coordinator.group.shard import ConsumerGroupShard, GroupMeter, GroupRuntime
from coordinator.log.storage import LogConfig, PartitionLog, Storage
from coordinator.marker_channel import MarkerChannel
from coordinator.partition import Partition
from coordinator.producer_ids import ProducerIdManager
from coordinator.shard_runtime import CoordinatorRuntime
from coordinator.share.group_model import TopicLookup
from coordinator.share.group_shard import ShareGroupRuntime, ShareGroupShard
from coordinator.share.manager import EventSink, ShareManager
from coordinator.share.share_coordinator import ShareStateRuntime
from coordinator.share.state_shard import ShareStateShard
from coordinator.topics import TopicRegistry
from coordinator.txn_coordinator import TransactionCoordinator
from coordinator.txn_shard import TxnRuntime, TxnShard
from txn.clock import Clock
from txn.config import BrokerConfig
from txn.ids import (
    GROUP_METADATA_TOPIC,
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
    TopicPartition,
)

# Partition 0 of __consumer_offsets holds share groups, partition 1 consumer groups.
SHARE_GROUPS_PARTITION = 0
CONSUMER_GROUPS_PARTITION = 1


# --- the runtimes ---------------------------------------------------------------------------


def txn_runtime(clock: Clock, log: PartitionLog) -> TxnRuntime:
    """The runtime of ``__transaction_state-0``, owning a new ``TxnShard``."""
    return CoordinatorRuntime(clock, TRANSACTION_STATE_TOPIC, {0: log}, shard=TxnShard())


def share_group_runtime(clock: Clock, config: BrokerConfig, log: PartitionLog) -> ShareGroupRuntime:
    """The runtime of the share-group log, owning a new ``ShareGroupShard``."""
    return CoordinatorRuntime(
        clock, "share-group log", {0: log}, shard=ShareGroupShard(clock, config)
    )


def share_state_runtime(shard: ShareStateShard) -> ShareStateRuntime:
    """The runtime of the ``__share_group_state`` logs, owning ``shard``.

    A log's start offset moves inside batches (pruning), so load skips what lies below it.
    The logs themselves are opened by the share coordinator's ``load``, one after another.
    """
    return CoordinatorRuntime(
        shard.clock, SHARE_GROUP_STATE_TOPIC, shard=shard, skip_below_start=True
    )


def group_runtime(clock: Clock, log: PartitionLog, meter: GroupMeter) -> GroupRuntime:
    """The runtime of the consumer groups' ``__consumer_offsets`` partition, owning a new
    ``ConsumerGroupShard`` that counts through ``meter``."""
    return CoordinatorRuntime(
        clock, GROUP_METADATA_TOPIC, {0: log}, shard=ConsumerGroupShard(meter)
    )


def consumer_group_coordinator(
    clock: Clock,
    config: BrokerConfig,
    log: PartitionLog,
    *,
    is_share_group: Callable[[str], bool] = lambda _g: False,
    on_event: EventSink | None = None,
    topics: TopicLookup | None = None,
    consumer_timing: Callable[[str], tuple[int, int]] | None = None,
    topic_catalog: TopicCatalog | None = None,
    consumer_assignment_interval: Callable[[str], int] | None = None,
) -> ConsumerGroupCoordinator:
    """A ``ConsumerGroupCoordinator`` (not loaded) over ``log``, handed its runtime and the
    metric emitter its shard shares; ``on_event(group id, meter, count)`` gets the meters."""
    meter = GroupMeter(on_event)
    return ConsumerGroupCoordinator(
        clock,
        group_runtime(clock, log, meter),
        config,
        meter,
        is_share_group=is_share_group,
        topics=topics,
        consumer_timing=consumer_timing,
        topic_catalog=topic_catalog,
        consumer_assignment_interval=consumer_assignment_interval,
    )


def topic_partition_exists(topics: TopicRegistry) -> Callable[[uuid.UUID, int], bool]:
    """Whether a topic id's partition exists now (the share-state shard's check)."""

    def exists(topic_id: uuid.UUID, partition: int) -> bool:
        info = topics.by_id(topic_id)
        return info is not None and 0 <= partition < info.num_partitions

    return exists


# --- the broker's coordinators --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Coordinators:
    """The broker's coordinators, loaded, and the compacted internal logs under them."""

    txn: TransactionCoordinator
    share: ShareManager
    groups: ConsumerGroupCoordinator
    # "topic-partition" -> log: the internal logs the cleaner compacts.
    compacted_logs: dict[str, PartitionLog]
    # Kafka's internal topic -> its partitions' coordinator logs (kept current on reopen).
    internal_logs: dict[str, dict[int, PartitionLog]]


def assemble_coordinators(
    storage: Storage,
    clock: Clock,
    config: BrokerConfig,
    internal_log_config: LogConfig,
    *,
    topics: TopicRegistry,
    partitions: dict[TopicPartition, Partition],
    producer_ids: ProducerIdManager,
    marker_channel: MarkerChannel,
    on_share_event: EventSink,
    on_group_event: EventSink,
) -> Coordinators:
    """Open the coordinators' logs, build their runtimes and the coordinators over them, and
    load each, in this order: transactions, share groups and share state, consumer groups."""

    def internal(segment_bytes_config: str) -> LogConfig:
        return replace(internal_log_config, segment_bytes=config.get_int(segment_bytes_config))

    offsets_config = internal("offsets.topic.segment.bytes")
    compacted: dict[str, PartitionLog] = {}

    txn_log = storage.open_log(
        TRANSACTION_STATE_TOPIC, 0, internal("transaction.state.log.segment.bytes")
    )
    compacted[f"{TRANSACTION_STATE_TOPIC}-0"] = txn_log
    txn = TransactionCoordinator(
        clock, txn_runtime(clock, txn_log), producer_ids, marker_channel, config
    )
    txn.load()

    share_groups_log = storage.open_log(
        GROUP_METADATA_TOPIC, SHARE_GROUPS_PARTITION, offsets_config
    )
    compacted[f"{GROUP_METADATA_TOPIC}-{SHARE_GROUPS_PARTITION}"] = share_groups_log
    share_state_config = internal("share.coordinator.state.topic.segment.bytes")
    state_logs: dict[int, PartitionLog] = {}

    def open_state_log(index: int) -> PartitionLog:
        opened = storage.open_log(SHARE_GROUP_STATE_TOPIC, index, share_state_config)
        state_logs[index] = opened
        return opened

    group_runtime = share_group_runtime(clock, config, share_groups_log)
    state_shard = ShareStateShard(clock, config, topic_exists=topic_partition_exists(topics))
    share = ShareManager(
        clock,
        config,
        topics,
        partitions,
        group_runtime,
        share_state_runtime(state_shard),
        open_state_log,
        on_event=on_share_event,
    )
    share.load()

    groups_log = storage.open_log(GROUP_METADATA_TOPIC, CONSUMER_GROUPS_PARTITION, offsets_config)
    compacted[f"{GROUP_METADATA_TOPIC}-{CONSUMER_GROUPS_PARTITION}"] = groups_log
    groups = consumer_group_coordinator(
        clock,
        config,
        groups_log,
        is_share_group=lambda group_id: share.groups.group(group_id) is not None,
        on_event=on_group_event,
        topics=topics,
        consumer_timing=share.groups.consumer_timing,
        topic_catalog=topics,
        consumer_assignment_interval=share.groups.consumer_assignment_interval_ms,
    )
    groups.load()
    share.groups.is_foreign_group = groups.has_group
    txn.on_timeout_abort = share.on_transaction_timed_out
    by_topic = {
        TRANSACTION_STATE_TOPIC: {0: txn_log},
        GROUP_METADATA_TOPIC: {
            SHARE_GROUPS_PARTITION: share_groups_log,
            CONSUMER_GROUPS_PARTITION: groups_log,
        },
        SHARE_GROUP_STATE_TOPIC: state_logs,
    }
    return Coordinators(txn, share, groups, compacted, by_topic)
