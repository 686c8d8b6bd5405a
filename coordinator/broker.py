"""The broker core: topics, partitions and the coordinators, without any I/O.

``BrokerCore`` is what the Kafka-protocol server adapts to the wire and what
the chaos simulator drives directly.  It takes the four seams of DESIGN §2a:
a ``Clock``, a ``Storage``, typed calls in and results out, and the marker
channel between the transaction coordinator and the partitions.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from coordinator.assembly import CONSUMER_GROUPS_PARTITION, assemble_coordinators
from coordinator.broker_dynamic import DynamicBrokerConfigs, Op, changed_configs
from coordinator.group.offset_commands import Committer
from coordinator.group_admin import GroupAdmin
from coordinator.internal_producers import producers_of
from coordinator.log.cleaner_passes import CleanerExecutor, CleanTarget, LogCleaner
from coordinator.log.compaction import CleanResult, last_records_of, transactions_of
from coordinator.log.storage import LogConfig, PartitionLog, Storage
from coordinator.log_settings import (
    TopicLogSettings,
    base_log_config,
    default_topic_configs,
    reconfigure_partitions,
    topic_log_settings,
)
from coordinator.log_tasks import repeat, schedule_flush, schedule_producer_expiry
from coordinator.marker_channel import MarkerChannel, TxnMarker
from coordinator.partition import AppendResult, FetchData, Partition
from coordinator.partition_limits import total_partitions_refusal
from coordinator.producer_ids import legacy_log_pending, open_producer_ids
from coordinator.quotas.store import ClientQuotas
from coordinator.reserved_topics import (
    FORGET_CONFIG,
    InternalTopics,
    alter_configs_refusal,
    client_created,
    create_refusal,
    delete_refusal,
    partitions_refusal,
    refuse_client_created,
    write_refusal,
)
from coordinator.security.token_store import DelegationTokenStore
from coordinator.share.manager import PartitionAcks, VerifiedAcks
from coordinator.share.persister import ShareStateKey
from coordinator.share_dead_letters import ShareDeadLetters
from coordinator.share_fetch import ShareFetches
from coordinator.topics import TopicInfo, TopicRegistry
from coordinator.txn_results import ActiveProducer
from txn.batch import ControlType
from txn.clock import Clock
from txn.config import BrokerConfig
from txn.errors import ErrorCode, KafkaProtocolError
from txn.ids import (
    CLUSTER_METADATA_TOPIC,
    GROUP_METADATA_TOPIC,
    LEGACY_PRODUCER_IDS_LOG,
    RESERVED_TOPICS,
    SHARE_GROUP_STATE_TOPIC,
    TopicIdPartition,
    TopicPartition,
)
from txn.limits import LONG_MAX
from txn.topic_config_defs import ConfigOperation

log = logging.getLogger("sharetxn.broker")

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
#: Kafka's special ListOffsets timestamps and the request version each needs
SPECIAL_TIMESTAMP_VERSIONS = {LATEST_TIMESTAMP: 1, EARLIEST_TIMESTAMP: 1, MAX_TIMESTAMP: 7}
SPECIAL_TIMESTAMP_VERSIONS.update({EARLIEST_LOCAL_TIMESTAMP: 8, -5: 9, -6: 11})


@dataclass(frozen=True, slots=True)
class TopicResult:
    name: str
    error: ErrorCode
    message: str | None = None
    topic_id: str | None = None
    num_partitions: int = -1


class BrokerCore:
    """Single-node Kafka broker state machine."""

    node_id = 1
    # Kafka's cluster id; the launcher sets the one in the data directory's meta.properties.
    cluster_id = "sharetxn-single-node"

    def __init__(
        self,
        storage: Storage,
        clock: Clock,
        config: BrokerConfig | None = None,
        rng: random.Random | None = None,
        cleaner_executor: CleanerExecutor | None = None,
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.config = config or BrokerConfig()
        self.rng = rng or random.Random()
        self._log_config = base_log_config(self.config)
        # Coordinator logs are durable before any decision is acted on: every coordinator calls
        # flush() right after its append, so the log itself must not fsync a second time.
        self._internal_log_config = LogConfig(flush_interval_messages=LONG_MAX)
        # The compacted internal logs (Kafka's cleanup.policy=compact internal topics), by name.
        self._compacted_internal: dict[str, PartitionLog] = {}
        self.cleaner = LogCleaner(clock, cleaner_executor)
        self.partitions: dict[TopicPartition, Partition] = {}
        # The topics and the producer id blocks, as Kafka's KRaft metadata log.
        metadata_log = storage.open_log(CLUSTER_METADATA_TOPIC, 0, self._internal_log_config)
        self.topics = TopicRegistry(
            metadata_log,
            self.rng,
            {name: value for name, (value, _) in default_topic_configs(self.config).items()},
        )
        # Dynamic broker configs (recorded in the metadata log) over the static ones.
        self.dynamic = DynamicBrokerConfigs(self.config, self.node_id, self.topics.broker_configs)
        self.tokens = DelegationTokenStore(metadata_log, self.config, clock)  # KIP-48, same log
        self._reconfigure(self.dynamic.effective())
        self.client_quotas = ClientQuotas(self.topics, clock, self.config)  # coordinator.quotas
        self._refuse_client_created_internal_topics(legacy_log_pending(storage, metadata_log))
        # All client partitions together (sharetxn.max.partitions).
        self.max_partitions = self.config.get_int("sharetxn.max.partitions")
        # Cumulative log-cleanup figures (metrics): bytes and segments retention deleted.
        self.retention_bytes_deleted = 0
        self.retention_runs = 0
        self.dirty_ratio_max = 0.0  # the dirtiest compacted log at the last cleaner pass
        self._append_listeners: list[Callable[[TopicPartition], None]] = []
        self._share_event_listeners: list[Callable[[str, str, int], None]] = []
        for info in self.topics.all():
            self._open_partitions(info)
        # Scrambled: a producer id cannot be guessed from another one (docs/security.md).
        self.producer_ids = open_producer_ids(
            storage,
            metadata_log,
            self._internal_log_config,
            user_topic=self.topics.get(LEGACY_PRODUCER_IDS_LOG) is not None,
            scramble_rng=self.rng,
        )
        self.marker_channel = MarkerChannel(clock, self)
        self._group_event_listeners: list[Callable[[str, str, int], None]] = []
        coordinators = assemble_coordinators(
            storage,
            clock,
            self.config,
            self._internal_log_config,
            topics=self.topics,
            partitions=self.partitions,
            producer_ids=self.producer_ids,
            marker_channel=self.marker_channel,
            on_share_event=self._on_share_event,
            on_group_event=self._on_group_event,
        )
        self.txn_coordinator = coordinators.txn
        self.share = coordinators.share
        self.groups = coordinators.groups
        self._compacted_internal.update(coordinators.compacted_logs)
        self.coordinator_logs = coordinators.internal_logs
        self.internal_topics = InternalTopics(self.topics, coordinators.internal_logs, self.config)
        self.group_admin = GroupAdmin(self.topics, self.partitions, self.groups, self.share)
        self.share_fetches = ShareFetches(self.share, clock)
        self.share.dead_letters = ShareDeadLetters(self, self._on_share_event).enqueue
        live = self.partitions.values
        schedule_flush(self.clock, self._log_config.flush_interval_ms, live)
        expiry = "producer.id.expiration.ms"  # dynamic: read at each check
        schedule_producer_expiry(self.clock, lambda: self.config.get_int(expiry), live)
        self._schedule_retention()
        self._schedule_cleaner()

    # -- plumbing -------------------------------------------------------------------------------

    def _refuse_client_created_internal_topics(self, legacy_ids: bool) -> None:
        """A topic a client created under a reserved name (older versions let Metadata
        auto-create one) shares its files with a coordinator's log: refuse to start, or
        forget the topic's record when the operator asked for it (``client_created``)."""
        bad = client_created(self.topics.all(), legacy_producer_ids=legacy_ids)
        if not bad:
            return
        if not self.config.get_bool(FORGET_CONFIG):
            raise refuse_client_created(bad, self.log_dir)
        for info in bad:
            self.topics.delete(info.name, self.clock.now_ms())
            log.warning(
                "forgot the client-created topic %s (id %s, %s=true); the coordinator logs"
                " %s are kept as they are",
                info.name,
                info.topic_id,
                FORGET_CONFIG,
                ", ".join(f"{info.name}-{i}" for i in range(info.num_partitions)),
            )

    def _reconfigure(self, config: BrokerConfig) -> None:
        """Take new effective broker settings: the topics' log defaults follow them."""
        self.config = config
        self._log_config = base_log_config(config)
        self.topics.set_defaults({k: v for k, (v, _) in default_topic_configs(config).items()})
        for info in self.topics.all():
            self._apply_log_settings(info)

    def alter_broker_configs(self, resource: str, ops: Sequence[Op]) -> None:
        """Record checked dynamic changes of BROKER ``resource`` and apply them at once."""
        configs = changed_configs(self.dynamic.configs_of(resource), ops)
        self.topics.set_broker_configs(resource, configs, self.clock.now_ms())
        self._reconfigure(self.dynamic.replace(resource, configs))
        log.info("dynamic broker configs of %r now %s", resource, configs or "{}")

    def log_settings(self, info: TopicInfo) -> TopicLogSettings:
        """The topic's effective log settings (its configs over the broker's defaults)."""
        return topic_log_settings(self._log_config, self.config, info.configs)

    def _open_partitions(self, info: TopicInfo) -> None:
        if info.name in RESERVED_TOPICS:
            return  # the coordinators' own logs, never a client's partitions
        self.partitions.update(self._new_partitions(info))

    def _new_partitions(self, info: TopicInfo) -> dict[TopicPartition, Partition]:
        """The logs of ``info``'s partitions not open yet, opened (creating their files)."""
        settings = self.log_settings(info)
        opened: dict[TopicPartition, Partition] = {}
        for index in range(info.num_partitions):
            tp = TopicPartition(info.name, index)
            if tp not in self.partitions:
                partition = Partition(
                    tp,
                    self.storage.open_log(info.name, index, settings.log),
                    settings.max_message_bytes,
                    now_ms=self.clock.now_ms(),
                    producer_expiration_ms=self.config.get_int("producer.id.expiration.ms"),
                )
                partition.compacted = settings.compact and not info.internal
                partition.timestamps = settings.timestamps
                opened[tp] = partition
        return opened

    def _prepare_partitions(self, info: TopicInfo) -> dict[TopicPartition, Partition] | str:
        """Open the new partitions' logs before the topic record is written: on failure (too
        many open files, a full disk) the ones made are removed and the reason returned, so
        nothing half-made is ever persisted."""
        try:
            return self._new_partitions(info)
        except OSError as exc:
            log.error("cannot open the logs of topic %s: %s", info.name, exc)
            for index in range(info.num_partitions):
                if TopicPartition(info.name, index) not in self.partitions:
                    try:
                        self.storage.delete_log(info.name, index)
                    except OSError:
                        log.exception("cannot remove the log %s-%d", info.name, index)
            return f"cannot open the logs of topic {info.name}: {exc.strerror or exc}"

    def _total_refusal(self, adding: int) -> tuple[ErrorCode, str] | None:
        return total_partitions_refusal(len(self.partitions), adding, self.max_partitions)

    def _schedule_retention(self) -> None:
        """Apply retention every ``log.retention.check.interval.ms``, off the request path
        (Kafka's kafka-log-retention task, first run after ``log.initial.task.delay.ms``)."""
        interval = self.config.get_int("log.retention.check.interval.ms")
        repeat(
            self.clock,
            self.config.get_int("log.initial.task.delay.ms"),
            interval,
            self.run_retention,
        )

    def _client_partitions(self) -> Iterator[tuple[TopicPartition, Partition, TopicLogSettings]]:
        """The partitions of the topics clients use (not internal, not hidden) with their log
        settings, over a snapshot of the partitions."""
        for tp, partition in list(self.partitions.items()):
            info = self.topics.get(tp.topic)
            if info is None or info.internal or tp.topic in RESERVED_TOPICS:
                continue
            yield tp, partition, self.log_settings(info)

    def run_retention(self) -> int:
        """One retention pass over every topic partition; the bytes deleted.

        Internal logs are left alone: Kafka compacts them (they are never time- or
        size-deleted) and their coordinators prune them by raising the start offset.
        """
        now = self.clock.now_ms()
        freed = 0
        for tp, partition, settings in self._client_partitions():
            start = partition.log_start_offset
            try:
                deleted = partition.apply_retention(now, settings.retention)
            except (OSError, KafkaProtocolError) as exc:
                log.error("retention on %s failed: %s", tp, exc)
                continue
            if partition.log_start_offset > start:
                self._after_start_moved(tp, settings.file_delete_delay_ms)
                log.info(
                    "retention deleted %d bytes of %s; log start offset now %d",
                    deleted,
                    tp,
                    partition.log_start_offset,
                )
            freed += deleted
        self.retention_bytes_deleted += freed
        self.retention_runs += 1
        return freed

    def _schedule_cleaner(self) -> None:
        """Compact dirty compacted topics every ``log.cleaner.backoff.ms`` (on the Clock)."""
        if not self.config.get_bool("log.cleaner.enable"):
            return
        interval = self.config.get_int("log.cleaner.backoff.ms")
        repeat(self.clock, interval, interval, self.run_cleaner)

    def run_cleaner(self) -> int:
        """One cleaner pass over the compacted topic partitions and the compacted internal
        logs; the bytes removed by the cleans that finished during the call (all of them
        unless the copying runs on a worker)."""
        targets: list[CleanTarget] = []
        dirtiest = 0.0
        for tp, partition, settings in self._client_partitions():
            if not settings.compact:
                continue
            dirtiest = max(dirtiest, partition.dirty_ratio())
            targets.append(
                CleanTarget(
                    str(tp),
                    partition.log,
                    settings.cleaner,
                    partition.transactions_for_cleaner,
                    producers=partition.producers_for_cleaner,
                    after=functools.partial(self._after_clean, tp),
                    delete_delay_ms=settings.file_delete_delay_ms,
                )
            )
        internal_policy = topic_log_settings(self._log_config, self.config, {}).cleaner
        for name, log_ in self._compacted_internal.items():
            targets.append(
                CleanTarget(
                    name,
                    log_,
                    internal_policy,
                    functools.partial(transactions_of, log_),
                    producers=functools.partial(last_records_of, log_),
                    flush_first=True,
                    delete_delay_ms=self.config.get_int("log.segment.delete.delay.ms"),
                )
            )
        self.dirty_ratio_max = dirtiest
        return self.cleaner.run_pass(targets)

    def _after_clean(self, tp: TopicPartition, result: CleanResult) -> None:
        partition = self.partitions.get(tp)
        if partition is not None:
            partition.after_clean(result.end, result.kept_markers)
        self.share.on_data_appended(tp)

    @property
    def cleaner_runs(self) -> int:
        return self.cleaner.stats.runs

    @property
    def cleaner_bytes_removed(self) -> int:
        return self.cleaner.stats.bytes_removed

    def _after_start_moved(self, tp: TopicPartition, delete_delay_ms: int) -> None:
        """The log start offset of ``tp`` may have moved: share partitions follow it, and the
        retired segment files go after ``file.delete.delay.ms``."""
        partition = self.partitions.get(tp)
        if partition is None:
            return
        self.share.on_data_appended(tp)
        log_ = partition.log
        retired = log_.retired_mark  # files retired later get their own delay

        def purge() -> None:
            log_.purge_deleted(retired)

        self.clock.schedule(max(delete_delay_ms, 0), purge)

    def add_append_listener(self, listener: Callable[[TopicPartition], None]) -> None:
        """Called after every append (used by the server to wake long-polling fetches)."""
        self._append_listeners.append(listener)

    def add_share_event_listener(self, listener: Callable[[str, str, int], None]) -> None:
        """(group id, event kind, count) for every share-partition metric event."""
        self._share_event_listeners.append(listener)

    def add_group_event_listener(self, listener: Callable[[str, str, int], None]) -> None:
        """(group id, meter, count) for KIP-496's group-coordinator meters."""
        self._group_event_listeners.append(listener)

    def _on_group_event(self, group_id: str, meter: str, count: int) -> None:
        for listener in self._group_event_listeners:
            listener(group_id, meter, count)

    @property
    def consumer_offsets_partition(self) -> TopicPartition:
        """The ``__consumer_offsets`` partition of every consumer group (AddOffsetsToTxn)."""
        return TopicPartition(GROUP_METADATA_TOPIC, CONSUMER_GROUPS_PARTITION)

    def add_offsets_to_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> ErrorCode:
        """AddOffsetsToTxn: the consumer groups' ``__consumer_offsets`` partition joins the
        transaction (every consumer group lives on one partition here)."""
        results = self.txn_coordinator.add_partitions_to_txn(
            transactional_id, producer_id, producer_epoch, [self.consumer_offsets_partition]
        )
        errors = [e for e in results.values() if e is not ErrorCode.NONE]
        return errors[0] if errors else ErrorCode.NONE

    def txn_offset_commit(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: dict[TopicPartition, tuple[int, int, str | None]],
    ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: stage offsets in the producer's ongoing transaction.

        The group's partition must be in that transaction (AddOffsetsToTxn at this epoch):
        nothing may be staged outside a transaction.
        """
        tp = self.consumer_offsets_partition
        verdict = self.verify_in_transaction(
            transactional_id,
            producer_id,
            producer_epoch,
            [tp],
            # Another transactional id's producer id, as Kafka 4.4.
            foreign_producer=ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        )[tp]
        if verdict is not ErrorCode.NONE:
            return dict.fromkeys(offsets, verdict)
        committer = Committer(group_id, generation, member_id, group_instance_id)
        return self.groups.txn_commit_offsets(producer_id, producer_epoch, committer, offsets)

    def verify_in_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[TopicPartition],
        *,
        foreign_producer: ErrorCode,
    ) -> dict[TopicPartition, ErrorCode]:
        """The one verify-and-map step of the RPCs that stage work in an ongoing transaction
        (TxnOffsetCommit; KIP-1289's TxnShareAcknowledge), once per request: NONE for each
        partition in the transaction of (producer id, epoch), else the error to answer.

        A partition not in it is INVALID_TXN_STATE (nothing is staged outside a transaction);
        another transactional id's producer id is ``foreign_producer``; fencing and the
        coordinator's own errors (PRODUCER_FENCED, CONCURRENT_TRANSACTIONS, ...) are answered
        as they are.
        """
        verdicts = self.txn_coordinator.verify_partitions(
            transactional_id, producer_id, producer_epoch, partitions
        )
        mapped = {
            ErrorCode.TRANSACTION_ABORTABLE: ErrorCode.INVALID_TXN_STATE,
            ErrorCode.INVALID_PRODUCER_ID_MAPPING: foreign_producer,
        }
        return {tp: mapped.get(error, error) for tp, error in verdicts.items()}

    def txn_share_acknowledge(
        self,
        group_id: str,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str | None,
        acks: list[PartitionAcks],
    ) -> dict[TopicIdPartition, ErrorCode]:
        """KIP-1289 TxnShareAcknowledge: the acks of each partition whose share-state partition
        is in the transaction become TX_PENDING (``ShareManager.txn_share_acknowledge``).
        Another transactional id's producer id is INVALID_TXN_STATE (DESIGN §4.3). The state
        partitions mapped here are handed on, so the share manager is entered once."""
        state_partitions = [self._state_partition(group_id, pa.tip) for pa in acks]
        verdicts = self.verify_in_transaction(
            transactional_id,
            producer_id,
            producer_epoch,
            state_partitions,
            foreign_producer=ErrorCode.INVALID_TXN_STATE,
        )
        verified = [
            VerifiedAcks(pa, tp.partition, verdicts.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR))
            for pa, tp in zip(acks, state_partitions, strict=True)
        ]
        return self.share.txn_share_acknowledge(
            group_id, producer_id, producer_epoch, member_id, verified
        )

    def _state_partition(self, group_id: str, tip: TopicIdPartition) -> TopicPartition:
        """The ``__share_group_state`` partition of (group, topic partition) (DESIGN §3)."""
        key = ShareStateKey(group_id, tip.topic_id, tip.partition)
        return TopicPartition(SHARE_GROUP_STATE_TOPIC, self.share.persister.partition_for(key))

    def add_share_acks_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
        topics: Mapping[str, Sequence[int]],
    ) -> ErrorCode:
        """KIP-1289 AddShareAcksToTxn: add the share-state partition of each (group, topic
        partition) to the transaction (``topics``: name -> partitions); the first error, or
        NONE. An unknown topic or partition adds nothing."""
        state_partitions: list[TopicPartition] = []
        for name, indexes in topics.items():
            info = self.topics.get(name)
            if info is None or any(not 0 <= p < info.num_partitions for p in indexes):
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            for p in indexes:
                state_tp = self._state_partition(group_id, TopicIdPartition(info.topic_id, p))
                if state_tp not in state_partitions:
                    state_partitions.append(state_tp)
        if not group_id:
            return ErrorCode.INVALID_REQUEST
        results = self.txn_coordinator.add_partitions_to_txn(
            transactional_id, producer_id, producer_epoch, state_partitions
        )
        return next((e for e in results.values() if e is not ErrorCode.NONE), ErrorCode.NONE)

    def _on_share_event(self, group_id: str, kind: str, count: int) -> None:
        for listener in self._share_event_listeners:
            listener(group_id, kind, count)

    def _notify(self, tp: TopicPartition) -> None:
        self.share.on_data_appended(tp)
        for listener in self._append_listeners:
            listener(tp)

    def partition(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get(TopicPartition(topic, index))

    def partition_size(self, tp: TopicPartition) -> int | None:
        """Bytes in the partition's segments (DescribeLogDirs), None for an unknown one."""
        partition = self.partitions.get(tp)
        if partition is None:
            return None
        return sum(seg.size_bytes for seg in partition.log.segments())

    @property
    def log_dir(self) -> str:
        """The directory holding the logs (DescribeLogDirs), or a name for memory storage."""
        root = getattr(self.storage, "root_dir", None)
        return str(root.resolve()) if root is not None else "memory"

    def close(self) -> None:
        self.groups.close()
        self.share.close()
        for partition in self.partitions.values():
            partition.log.flush()
            partition.take_snapshot()
        self.storage.close()

    # -- topics ---------------------------------------------------------------------------------

    def visible_topics(self) -> list[TopicInfo]:
        return [t for t in self.topics.all() if t.name not in RESERVED_TOPICS]

    def topic_exists(self, name: str) -> bool:
        """A user topic, or an internal topic already created (Kafka's metadata cache)."""
        return self.topics.get(name) is not None or self.internal_topics.created(name)

    def gauges(self) -> dict[str, int]:
        """Point-in-time figures for the metrics exporter (plain reads, any thread)."""
        return {
            "partition-count": len(self.partitions),
            "transactions-open": self.txn_coordinator.open_transaction_count(),
            "share-partition-inflight-records": self.share.in_flight_records(),
            "log-retention-bytes-deleted": self.retention_bytes_deleted,
            "log-retention-runs": self.retention_runs,
            "log-cleaner-runs": self.cleaner_runs,
            "log-cleaner-bytes-removed": self.cleaner_bytes_removed,
            "log-cleaner-max-dirty-percent": int(self.dirty_ratio_max * 100),
        }

    def ensure_topic(self, name: str) -> TopicInfo | None:
        """The topic, auto-creating it if ``auto.create.topics.enable`` (Metadata semantics).

        A reserved name (the broker's own logs) is never a client's topic: None."""
        if name in RESERVED_TOPICS:
            return None
        info = self.topics.get(name)
        if info is None and self.config.get_bool("auto.create.topics.enable"):
            result = self.create_topic(name, -1, -1)
            if result.error is not ErrorCode.NONE:
                return None
            info = self.topics.get(name)
            if info is not None:
                log.info("auto-created topic %s with %d partition(s)", name, info.num_partitions)
        return info

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: dict[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> TopicResult:
        if (refusal := create_refusal(name)) is not None:
            return TopicResult(name, *refusal)
        if num_partitions == -1:
            num_partitions = self.config.get_int("num.partitions")
        if replication_factor not in (-1, 1):
            return TopicResult(
                name,
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"replication factor {replication_factor} is larger than the 1 available broker",
            )
        try:
            info = self.topics.create(
                name, num_partitions, self.clock.now_ms(), configs, validate_only=True
            )
        except KafkaProtocolError as exc:
            return TopicResult(name, exc.code, exc.message or str(exc))
        if (refusal := self._total_refusal(num_partitions)) is not None:
            return TopicResult(name, *refusal)
        if not validate_only:
            opened = self._prepare_partitions(info)
            if isinstance(opened, str):
                return TopicResult(name, ErrorCode.KAFKA_STORAGE_ERROR, opened)
            try:
                info = self.topics.create(name, num_partitions, self.clock.now_ms(), configs)
            except Exception:
                self._discard(opened)
                raise
            self.partitions.update(opened)
            log.info(
                "created topic %s (id %s) with %d partition(s)%s",
                name,
                info.topic_id,
                info.num_partitions,
                f", configs {info.configs}" if info.configs else "",
            )
            self.share.on_topics_changed()
        return TopicResult(name, ErrorCode.NONE, None, str(info.topic_id), info.num_partitions)

    def delete_topic(self, name: str) -> TopicResult:
        if (refusal := delete_refusal(name)) is not None:
            return TopicResult(name, *refusal)
        try:
            info = self.topics.delete(name, self.clock.now_ms())
        except KafkaProtocolError as exc:
            return TopicResult(name, exc.code, exc.message or str(exc))
        for index in range(info.num_partitions):
            tp = TopicPartition(name, index)
            self.partitions.pop(tp, None)
            self.storage.delete_log(name, index)
        self.groups.on_topic_deleted(name)
        self.share.on_topics_changed([info.topic_id])
        log.info("deleted topic %s (id %s)", name, info.topic_id)
        return TopicResult(name, ErrorCode.NONE, None, str(info.topic_id))

    def alter_topic_configs(
        self,
        name: str,
        set_configs: dict[str, str],
        delete_configs: list[str],
        *,
        validate_only: bool = False,
    ) -> tuple[ErrorCode, str | None]:
        """SET and DELETE on a topic's configs (the legacy AlterConfigs)."""
        ops: list[Op] = [(k, ConfigOperation.SET, v) for k, v in set_configs.items()]
        ops += [(k, ConfigOperation.DELETE, None) for k in delete_configs]
        return self.incremental_alter_topic_configs(name, ops, validate_only=validate_only)

    def incremental_alter_topic_configs(
        self,
        name: str,
        ops: Sequence[tuple[str, int, str | None]],
        *,
        validate_only: bool = False,
    ) -> tuple[ErrorCode, str | None]:
        """IncrementalAlterConfigs on a topic: (config, operation, value) in order."""
        if (refusal := alter_configs_refusal(name)) is not None:
            return refusal
        try:
            info = self.topics.incremental_alter_configs(
                name, ops, self.clock.now_ms(), validate_only=validate_only
            )
        except KafkaProtocolError as exc:
            message = exc.message or str(exc)
            return exc.code, None if exc.code is ErrorCode.UNKNOWN_SERVER_ERROR else message
        if not validate_only:
            log.info("topic %s configs now %s", name, info.configs or "{}")
            self._apply_log_settings(info)
        return ErrorCode.NONE, None

    def _apply_log_settings(self, info: TopicInfo) -> None:
        tps = (TopicPartition(info.name, index) for index in range(info.num_partitions))
        opened = [p for tp in tps if (p := self.partitions.get(tp)) is not None]
        reconfigure_partitions(opened, self.log_settings(info))

    def create_partitions(
        self, name: str, count: int, *, validate_only: bool = False
    ) -> TopicResult:
        if (refusal := partitions_refusal(name)) is not None:
            return TopicResult(name, *refusal)
        try:
            self.topics.add_partitions(name, count, self.clock.now_ms(), validate_only=True)
        except KafkaProtocolError as exc:
            return TopicResult(name, exc.code, exc.message or str(exc))
        info = self.topics.get(name)
        assert info is not None
        if (refusal := self._total_refusal(count - info.num_partitions)) is not None:
            return TopicResult(name, *refusal)
        if not validate_only:
            opened = self._prepare_partitions(replace(info, num_partitions=count))
            if isinstance(opened, str):
                return TopicResult(name, ErrorCode.KAFKA_STORAGE_ERROR, opened)
            try:
                self.topics.add_partitions(name, count, self.clock.now_ms())
            except Exception:
                self._discard(opened)
                raise
            self.partitions.update(opened)
            log.info("topic %s now has %d partition(s)", name, count)
            self.share.on_topics_changed()
        return TopicResult(name, ErrorCode.NONE)

    def _discard(self, opened: dict[TopicPartition, Partition]) -> None:
        """Remove logs opened for a topic whose record could not be written."""
        for tp in opened:
            self.storage.delete_log(tp.topic, tp.partition)

    # -- produce / fetch ------------------------------------------------------------------------

    def produce(
        self,
        tp: TopicPartition,
        records: bytes,
        transactional_id: str | None,
        *,
        defer_flush: bool = False,
    ) -> AppendResult:
        """Append to ``tp``; ``defer_flush``: the caller makes it durable (``Partition.append``)."""
        if (refused := write_refusal(tp.topic)) is not None:
            # Kafka: "Cannot append to internal topic", to every user (its message not sent).
            return AppendResult(refused)
        partition = self.partitions.get(tp)
        if partition is None:
            return AppendResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=f"unknown {tp}")
        result = partition.append(
            records,
            self.clock.now_ms(),
            transactional_id=transactional_id,
            verifier=self._verify_txn_partition,
            txn_producer=self.txn_coordinator.is_transactional_producer,
            defer_flush=defer_flush,
        )
        if result.error is ErrorCode.NONE:
            self._notify(tp)
        return result

    def partition_log(self, tp: TopicPartition) -> PartitionLog | None:
        """The log of ``tp`` (for the Produce path's group commit), or None."""
        partition = self.partitions.get(tp)
        return None if partition is None else partition.log

    def _verify_txn_partition(
        self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition
    ) -> ErrorCode:
        verdict = self.txn_coordinator.verify_partitions(
            transactional_id, producer_id, producer_epoch, [tp]
        )
        return verdict.get(tp, ErrorCode.NONE)

    def fetch(
        self, tp: TopicPartition, offset: int, max_bytes: int, *, read_committed: bool
    ) -> FetchData:
        partition = self.partitions.get(tp)
        if partition is None:
            return FetchData(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1, b"", None)
        return partition.fetch(offset, max_bytes, read_committed=read_committed)

    def list_offset(
        self, tp: TopicPartition, timestamp: int, *, read_committed: bool, version: int = 7
    ) -> tuple[ErrorCode, int, int]:
        """ListOffsets for one partition: (error, offset, timestamp).

        A negative target is one of Kafka's special timestamps, each from the request version
        that introduced it (any other: UNSUPPORTED_VERSION, as ReplicaManager answers).  A
        lookup that lands at or past the last offset a reader may fetch (the LSO under
        read_committed, else the high watermark) answers offset and timestamp -1."""
        partition = self.partitions.get(tp)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1
        if timestamp < 0 and version < SPECIAL_TIMESTAMP_VERSIONS.get(timestamp, 1 << 15):
            return ErrorCode.UNSUPPORTED_VERSION, -1, -1
        fetchable = partition.last_stable_offset if read_committed else partition.high_watermark
        if timestamp == LATEST_TIMESTAMP:
            return ErrorCode.NONE, fetchable, -1
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return ErrorCode.NONE, partition.log_start_offset, -1
        if timestamp == MAX_TIMESTAMP:
            offset, ts = partition.max_timestamp()
        elif timestamp >= 0:
            offset, ts = partition.offset_for_timestamp(timestamp)
        else:  # LATEST_TIERED and EARLIEST_PENDING_UPLOAD: nothing is tiered
            return ErrorCode.NONE, -1, -1
        if offset >= fetchable:
            return ErrorCode.NONE, -1, -1
        return ErrorCode.NONE, offset, ts

    def delete_records(self, tp: TopicPartition, offset: int) -> tuple[ErrorCode, int]:
        if (refused := write_refusal(tp.topic)) is not None:
            return refused, -1  # Kafka: "Cannot delete records of internal topic"
        partition = self.partitions.get(tp)
        info = self.topics.get(tp.topic)
        if partition is None or info is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
        result = partition.delete_records(offset)
        if result[0] is ErrorCode.NONE:
            self._after_start_moved(tp, self.log_settings(info).file_delete_delay_ms)
        return result

    # -- transaction markers (MarkerHandler) ----------------------------------------------------

    def write_txn_markers(self, marker: TxnMarker) -> dict[TopicPartition, ErrorCode]:
        results: dict[TopicPartition, ErrorCode] = {}
        now = self.clock.now_ms()
        for tp in marker.partitions:
            if tp.topic == GROUP_METADATA_TOPIC:
                results[tp] = self.groups.complete_transaction(
                    marker.producer_id,
                    marker.producer_epoch,
                    marker.result is ControlType.COMMIT,
                    marker.coordinator_epoch,
                )
                continue
            if tp.topic == SHARE_GROUP_STATE_TOPIC:
                results[tp] = self.share.complete_transaction(
                    tp.partition,
                    marker.producer_id,
                    marker.producer_epoch,
                    marker.result is ControlType.COMMIT,
                    marker.coordinator_epoch,
                )
                continue
            partition = self.partitions.get(tp)
            if partition is None:
                # A deleted topic cannot block the transaction (KAFKA-5202).
                results[tp] = ErrorCode.NONE
                continue
            results[tp] = partition.write_marker(
                marker.producer_id,
                marker.producer_epoch,
                marker.coordinator_epoch,
                marker.result,
                now,
            )
            if results[tp] is ErrorCode.NONE:
                self._notify(tp)
        return results

    def describe_producers(self, tp: TopicPartition) -> tuple[ErrorCode, list[ActiveProducer]]:
        partition = self.partitions.get(tp)
        if partition is None:
            internal = self.internal_topics.listed(tp.topic, self.cluster_id)
            if internal is not None and 0 <= tp.partition < internal.num_partitions:
                # A partition Metadata lists (Kafka's internal topic): the producers of the
                # transactional records its coordinator keeps there (offset commits), if any.
                log = self.coordinator_logs.get(tp.topic, {}).get(tp.partition)
                expiry_ms = self.config.get_int("producer.id.expiration.ms")
                return ErrorCode.NONE, producers_of(log, self.clock.now_ms(), expiry_ms)
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []
        return ErrorCode.NONE, [
            ActiveProducer(
                producer_id=pid,
                producer_epoch=entry.epoch,
                last_sequence=entry.last_seq,
                last_timestamp=entry.last_timestamp_ms,
                coordinator_epoch=entry.coordinator_epoch,
                current_txn_start_offset=(
                    -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset
                ),
            )
            for pid, entry in sorted(partition.producers.producers.items())
        ]
