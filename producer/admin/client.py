"""``Admin``: topic, transaction and share-group administration over the Kafka protocol.

Methods return small dataclasses and raise the typed exceptions of
``txn.errors`` (for whole-request errors) or report per-item error codes in
their results, like Kafka's Admin client.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from typing import Any

from producer.admin.groups import ConsumerGroupAdmin
from producer.admin.quotas import ClientQuotaAdmin
from producer.admin.tokens import DelegationTokenAdmin
from producer.protocol.client import KafkaClient, check_error
from producer.protocol.client_defaults import REQUEST_TIMEOUT_MS
from producer.protocol.raw import describe_transactions_raw
from producer.protocol.security import ClientSecurity
from producer.protocol.types import TransactionDescription
from txn.api_keys import ApiKey
from txn.errors import ErrorCode, raise_for_code
from txn.ids import KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, TopicPartition

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_GROUP = 32
CONFIG_SET = 0
CONFIG_DELETE = 1


@dataclass(frozen=True, slots=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp_ms: int
    coordinator_epoch: int
    current_txn_start_offset: int

    @classmethod
    def from_wire(cls, p: Any) -> ProducerState:
        """One DescribeProducers ``active_producers`` entry."""
        return cls(
            int(p.producer_id),
            int(p.producer_epoch),
            int(p.last_sequence),
            int(p.last_timestamp),
            int(p.coordinator_epoch),
            int(p.current_txn_start_offset),
        )


@dataclass(frozen=True, slots=True)
class SharePendingAckEntry:
    """Staged (TX_PENDING) acknowledgements of one producer on one share partition."""

    group_id: str
    topic_id: uuid.UUID
    topic: str | None  # None: the topic id is not in the metadata (deleted)
    partition: int
    state_partition: int  # the __share_group_state partition holding them
    pending_records: int
    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class SharePendingAcks:
    """One producer's staged share acknowledgements (DescribeSharePendingAcks)."""

    producer_id: int
    producer_epoch: int
    entries: tuple[SharePendingAckEntry, ...]

    @property
    def pending_records(self) -> int:
        return sum(e.pending_records for e in self.entries)


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    state: str
    type: str


@dataclass(frozen=True, slots=True)
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topics: tuple[str, ...]
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    group_id: str
    error: ErrorCode
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ShareMember, ...] = ()
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ShareOffset:
    topic: str
    partition: int
    start_offset: int
    lag: int
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ItemResult:
    """One item's outcome in a batch admin request (a topic, a config resource)."""

    error: ErrorCode
    message: str | None = None

    def describe(self) -> str:
        if self.error is ErrorCode.NONE:
            return "ok"
        return f"{self.error.name}: {self.message}" if self.message else self.error.name


# DescribeConfigs' ConfigSource ids, with the names Kafka's tools print.
_CONFIG_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "GROUP_CONFIG",
}


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str
    read_only: bool
    sensitive: bool

    @property
    def explicit(self) -> bool:
        """Set on the resource itself (not a static, cluster-wide or default value)."""
        inherited = ("STATIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG", "DEFAULT_CONFIG")
        return self.source not in ("UNKNOWN", *inherited)


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    error: ErrorCode
    topic_id: uuid.UUID
    internal: bool
    leaders: dict[int, int]  # partition -> leader node id


def _item(entry: Any) -> ItemResult:
    message = getattr(entry, "error_message", None)
    return ItemResult(ErrorCode(int(entry.error_code)), str(message) if message else None)


class Admin(ConsumerGroupAdmin, DelegationTokenAdmin, ClientQuotaAdmin):
    """Kafka administration for sharetxn brokers (and standard APIs on any Kafka cluster)."""

    def __init__(self, config: dict[str, Any] | str) -> None:
        if isinstance(config, str):
            config = {"bootstrap.servers": config}
        self.config = dict(config)
        self.client = KafkaClient(
            str(self.config["bootstrap.servers"]),
            client_id=str(self.config.get("client.id", "sharetxn-admin")),
            request_timeout_ms=int(self.config.get("request.timeout.ms", REQUEST_TIMEOUT_MS)),
            security=ClientSecurity.from_config(self.config),
        )

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- topics ---------------------------------------------------------------------------------

    def create_topics(
        self, topics: list[TopicSpec], *, validate_only: bool = False
    ) -> dict[str, ErrorCode]:
        body = self._create_topics_body(topics, validate_only)
        return {name: r.error for name, r in self._create_topics(body).items()}

    def create_topics_detailed(
        self, topics: list[TopicSpec], *, validate_only: bool = False
    ) -> dict[str, ItemResult]:
        """CreateTopics with the broker's error message per topic."""
        return self._create_topics(self._create_topics_body(topics, validate_only))

    def _create_topics(self, body: dict[str, Any]) -> dict[str, ItemResult]:
        resp = self.client.call(lambda: self.client.send(None, ApiKey.CREATE_TOPICS, body))
        return {t.name: _item(t) for t in resp.topics}

    def delete_topics(self, names: list[str]) -> dict[str, ItemResult]:
        body = {
            "topic_names": names,
            "topics": [{"name": n} for n in names],
            "timeout": self.client.request_timeout_ms,
        }
        resp = self.client.call(lambda: self.client.send(None, ApiKey.DELETE_TOPICS, body))
        self.client.forget_topics(names)
        return {r.name: _item(r) for r in resp.responses}

    def create_partitions(
        self, totals: dict[str, int], *, validate_only: bool = False
    ) -> dict[str, ItemResult]:
        """CreatePartitions: raise each topic's partition count to the given total."""
        body = {
            "topics": [
                {"name": name, "count": count, "assignments": None}
                for name, count in totals.items()
            ],
            "timeout": self.client.request_timeout_ms,
            "validate_only": validate_only,
        }
        resp = self.client.call(lambda: self.client.send(None, ApiKey.CREATE_PARTITIONS, body))
        return {r.name: _item(r) for r in resp.results}

    def describe_topics(self, names: list[str] | None = None) -> list[TopicDescription]:
        """Topic ids, partitions and leaders from Metadata (all topics when ``names`` is None)."""
        resp = self.client.call(
            lambda: self.client.send(
                None,
                ApiKey.METADATA,
                {
                    "topics": None if names is None else [{"name": n} for n in names],
                    "allow_auto_topic_creation": False,
                },
                min_version=1,
            )
        )
        out = [
            TopicDescription(
                name=str(t.name),
                error=ErrorCode(int(t.error_code)),
                topic_id=getattr(t, "topic_id", None) or uuid.UUID(int=0),
                internal=bool(getattr(t, "is_internal", False)),
                leaders={int(p.partition_index): int(p.leader_id) for p in t.partitions},
            )
            for t in resp.topics
        ]
        return sorted(out, key=lambda d: d.name)

    def _create_topics_body(self, topics: list[TopicSpec], validate_only: bool) -> dict[str, Any]:
        return {
            "topics": [
                {
                    "name": t.name,
                    "num_partitions": t.num_partitions,
                    "replication_factor": t.replication_factor,
                    "configs": [{"name": k, "value": v} for k, v in t.configs.items()],
                }
                for t in topics
            ],
            "timeout": self.client.request_timeout_ms,
            "validate_only": validate_only,
        }

    def list_topics(self, *, list_internal: bool = False) -> dict[str, list[int]]:
        """Every topic's partitions; Kafka's internal topics (``__consumer_offsets`` and the
        like) only with ``list_internal``, as Kafka's ``Admin.listTopics``."""
        self.client.call(lambda: self.client.refresh_metadata(None))
        return {
            name: meta.partitions
            for name, meta in sorted(self.client.topics.items())
            if list_internal or not meta.internal
        }

    def list_offsets(
        self, tp: TopicPartition, timestamp: int, *, read_committed: bool = False
    ) -> int:
        """ListOffsets: -2 earliest, -1 latest (the LSO under read_committed), else by time."""
        body = {
            "replica_id": -1,
            "isolation_level": 1 if read_committed else 0,
            "topics": [
                {
                    "name": tp.topic,
                    "partitions": [{"partition_index": tp.partition, "timestamp": timestamp}],
                }
            ],
        }
        node = self.client.call(lambda: self.client.leader_for(tp))
        resp = self.client.call(
            lambda: self.client.send(node, ApiKey.LIST_OFFSETS, body, min_version=1)
        )
        part = resp.topics[0].partitions[0]
        check_error(part.error_code, topic=tp.topic, partition=tp.partition)
        return int(part.offset)

    def describe_log_dirs(
        self, partitions: list[TopicPartition] | None = None
    ) -> dict[TopicPartition, int]:
        """DescribeLogDirs: bytes on disk of each partition's log (all partitions if None)."""
        topics: dict[str, list[int]] = {}
        for tp in partitions or []:
            topics.setdefault(tp.topic, []).append(tp.partition)
        body = {
            "topics": None
            if partitions is None
            else [{"topic": t, "partitions": ps} for t, ps in sorted(topics.items())]
        }
        resp = self.client.call(
            lambda: self.client.send(None, ApiKey.DESCRIBE_LOG_DIRS, body, min_version=1)
        )
        check_error(resp.error_code)
        sizes: dict[TopicPartition, int] = {}
        for result in resp.results:
            check_error(result.error_code)
            for topic in result.topics:
                for part in topic.partitions:
                    tp = TopicPartition(topic.name, int(part.partition_index))
                    sizes[tp] = sizes.get(tp, 0) + int(part.partition_size)
        return sizes

    # -- transactions ---------------------------------------------------------------------------

    def list_transactions(
        self,
        states: list[str] | None = None,
        producer_ids: list[int] | None = None,
        duration_ms: int = -1,
    ) -> list[TransactionListing]:
        body = {
            "state_filters": states or [],
            "producer_id_filters": producer_ids or [],
            "duration_filter": duration_ms,
        }

        def attempt() -> Any:
            resp = self.client.send(None, ApiKey.LIST_TRANSACTIONS, body)
            # COORDINATOR_LOAD_IN_PROGRESS while the transaction log loads (after a restart,
            # when recovery lists transactions) is retriable: asked again.
            check_error(resp.error_code)
            return resp

        resp = self.client.call(attempt)
        return [
            TransactionListing(t.transactional_id, int(t.producer_id), t.transaction_state)
            for t in resp.transaction_states
        ]

    def describe_transactions(self, transactional_ids: list[str]) -> list[TransactionDescription]:
        """DescribeTransactions for each id at its coordinator.

        A lost connection, or a coordinator that moved or is still loading its log (after
        a restart: when recovery runs), is retried until ``request.timeout.ms``.
        """
        return [
            self.client.call(functools.partial(self._describe_transaction, tid))
            for tid in transactional_ids
        ]

    def _describe_transaction(self, tid: str) -> TransactionDescription:
        node = self.client.coordinator_for(KEY_TYPE_TRANSACTION, tid)
        conn = self.client._connection(node)  # noqa: SLF001 - raw read below
        version = conn.pick_version(ApiKey.DESCRIBE_TRANSACTIONS, 0)
        desc = _describe_transaction_raw(conn, version, tid)
        if desc.error in _COORDINATOR_MOVED:
            raise_for_code(desc.error, transactional_id=tid)  # retriable: asked again
        return desc

    def describe_producers(self, tp: TopicPartition) -> list[ProducerState]:
        body = {"topics": [{"name": tp.topic, "partition_indexes": [tp.partition]}]}
        node = self.client.call(lambda: self.client.leader_for(tp))
        resp = self.client.call(lambda: self.client.send(node, ApiKey.DESCRIBE_PRODUCERS, body))
        part = resp.topics[0].partitions[0]
        check_error(part.error_code, part.error_message, topic=tp.topic, partition=tp.partition)
        return [ProducerState.from_wire(p) for p in part.active_producers]

    def describe_share_pending_acks(
        self, producer_ids: list[int] | None = None
    ) -> list[SharePendingAcks]:
        """KIP-1289 view: staged share acknowledgements per producer id (sharetxn admin API).

        Asks every broker (each hosts the share coordinators of its ``__share_group_state``
        partitions) and merges the answers; ``producer_ids`` None or empty means all.
        """
        body = {"producer_ids": list(producer_ids or [])}
        self.client.call(lambda: self.client.refresh_metadata([]))
        nodes: list[int | None] = list(sorted(self.client.brokers)) or [None]
        merged: dict[int, tuple[int, list[SharePendingAckEntry]]] = {}
        for node in nodes:
            resp = self.client.call(
                functools.partial(self.client.send, node, ApiKey.DESCRIBE_SHARE_PENDING_ACKS, body)
            )
            check_error(resp.error_code)
            for p in resp.producers:
                epoch, entries = merged.get(int(p.producer_id), (-1, []))
                for e in p.entries:
                    meta = self.client.topic_by_id(e.topic_id)
                    entries.append(
                        SharePendingAckEntry(
                            e.group_id,
                            e.topic_id,
                            meta.name if meta is not None else None,
                            int(e.partition),
                            int(e.state_partition),
                            int(e.pending_records),
                            int(e.first_offset),
                            int(e.last_offset),
                        )
                    )
                merged[int(p.producer_id)] = (max(epoch, int(p.producer_epoch)), entries)
        return [
            SharePendingAcks(pid, epoch, tuple(entries))
            for pid, (epoch, entries) in sorted(merged.items())
        ]

    # -- groups ---------------------------------------------------------------------------------

    def list_groups(
        self, types: list[str] | None = None, states: list[str] | None = None
    ) -> list[GroupListing]:
        body = {"states_filter": states or [], "types_filter": types or []}
        resp = self.client.call(lambda: self.client.send(None, ApiKey.LIST_GROUPS, body))
        check_error(resp.error_code)
        return [
            GroupListing(
                g.group_id, getattr(g, "group_state", ""), getattr(g, "group_type", "classic")
            )
            for g in resp.groups
        ]

    def describe_share_groups(self, group_ids: list[str]) -> list[ShareGroupDescription]:
        out: list[ShareGroupDescription] = []
        for gid in group_ids:
            node = self.client.call(
                functools.partial(self.client.coordinator_for, KEY_TYPE_GROUP, gid)
            )
            resp = self.client.call(
                functools.partial(
                    self.client.send, node, ApiKey.SHARE_GROUP_DESCRIBE, {"group_ids": [gid]}
                )
            )
            for g in resp.groups:
                members = tuple(
                    ShareMember(
                        m.member_id,
                        int(m.member_epoch),
                        m.client_id,
                        m.client_host,
                        m.rack_id,
                        tuple(m.subscribed_topic_names),
                        tuple(
                            TopicPartition(tp.topic_name, int(p))
                            for tp in m.assignment.topic_partitions
                            for p in tp.partitions
                        ),
                    )
                    for m in g.members
                )
                out.append(
                    ShareGroupDescription(
                        g.group_id,
                        ErrorCode(int(g.error_code)),
                        g.group_state,
                        int(g.group_epoch),
                        int(g.assignment_epoch),
                        g.assignor_name,
                        members,
                        g.error_message,
                    )
                )
        return out

    def describe_share_group_offsets(
        self, group_id: str, topics: list[str] | None = None
    ) -> list[ShareOffset]:
        node = self.client.call(lambda: self.client.coordinator_for(KEY_TYPE_GROUP, group_id))
        topic_filter = None
        if topics is not None:
            topic_filter = [
                {"topic_name": t, "partitions": self.client.topic(t).partitions} for t in topics
            ]
        body = {"groups": [{"group_id": group_id, "topics": topic_filter}]}
        resp = self.client.call(
            lambda: self.client.send(node, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, body)
        )
        group = resp.groups[0]
        check_error(
            getattr(group, "error_code", 0),
            getattr(group, "error_message", None),
            group_id=group_id,
        )
        return [
            ShareOffset(
                t.topic_name,
                int(p.partition_index),
                int(p.start_offset),
                int(getattr(p, "lag", -1)),
                ErrorCode(int(p.error_code)),
            )
            for t in group.topics
            for p in t.partitions
        ]

    def share_group_progress(self, group_id: str, topics: list[str]) -> dict[TopicPartition, int]:
        """How far the share group has delivered each partition of ``topics``.

        DescribeShareGroupOffsets answers Kafka's persisted start offset, which lags one
        write behind, and a lag that leaves out the records from it whose delivery is
        complete: end offset - lag is the start offset plus those records, the end offset
        once everything is delivered.  The end offsets are read first, so a record produced
        meanwhile is never counted as delivered.  -1 for a partition the group has not
        written yet; its start offset when the lag is unknown.
        """
        ends = {
            TopicPartition(t, p): self.list_offsets(TopicPartition(t, p), -1)
            for t, parts in self.list_topics().items()
            if t in topics
            for p in parts
        }
        out: dict[TopicPartition, int] = {}
        for o in self.describe_share_group_offsets(group_id, topics):
            tp = TopicPartition(o.topic, o.partition)
            if o.start_offset < 0 or o.lag < 0 or tp not in ends:
                out[tp] = o.start_offset
            else:
                out[tp] = ends[tp] - o.lag
        return out

    def alter_share_group_offsets(
        self, group_id: str, offsets: dict[TopicPartition, int]
    ) -> dict[TopicPartition, ErrorCode]:
        by_topic: dict[str, list[dict[str, int]]] = {}
        for tp, offset in offsets.items():
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "start_offset": offset}
            )
        body = {
            "group_id": group_id,
            "topics": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        node = self.client.call(lambda: self.client.coordinator_for(KEY_TYPE_GROUP, group_id))
        resp = self.client.call(
            lambda: self.client.send(node, ApiKey.ALTER_SHARE_GROUP_OFFSETS, body)
        )
        check_error(resp.error_code, resp.error_message, group_id=group_id)
        return {
            TopicPartition(t.topic_name, int(p.partition_index)): ErrorCode(int(p.error_code))
            for t in resp.responses
            for p in t.partitions
        }

    def delete_share_group_offsets(self, group_id: str, topics: list[str]) -> dict[str, ErrorCode]:
        body = {"group_id": group_id, "topics": [{"topic_name": t} for t in topics]}
        node = self.client.call(lambda: self.client.coordinator_for(KEY_TYPE_GROUP, group_id))
        resp = self.client.call(
            lambda: self.client.send(node, ApiKey.DELETE_SHARE_GROUP_OFFSETS, body)
        )
        check_error(resp.error_code, resp.error_message, group_id=group_id)
        return {t.topic_name: ErrorCode(int(t.error_code)) for t in resp.responses}

    def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        out: dict[str, ErrorCode] = {}
        for gid in group_ids:
            node = self.client.call(
                functools.partial(self.client.coordinator_for, KEY_TYPE_GROUP, gid)
            )
            resp = self.client.call(
                functools.partial(
                    self.client.send, node, ApiKey.DELETE_GROUPS, {"groups_names": [gid]}
                )
            )
            for r in resp.results:
                out[r.group_id] = ErrorCode(int(r.error_code))
        return out

    # -- configs --------------------------------------------------------------------------------

    def alter_group_configs(
        self,
        group_id: str,
        set_configs: dict[str, str] | None = None,
        delete_configs: list[str] | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        result = self.incremental_alter_configs(
            RESOURCE_GROUP, group_id, set_configs, delete_configs, validate_only=validate_only
        )
        check_error(result.error, result.message, group_id=group_id)

    def incremental_alter_configs(
        self,
        resource_type: int,
        name: str,
        set_configs: dict[str, str] | None = None,
        delete_configs: list[str] | None = None,
        *,
        validate_only: bool = False,
    ) -> ItemResult:
        """IncrementalAlterConfigs on one resource (topic 2, broker 4, broker logger 8,
        group 32)."""
        configs = [
            {"name": k, "config_operation": CONFIG_SET, "value": v}
            for k, v in (set_configs or {}).items()
        ]
        configs += [
            {"name": k, "config_operation": CONFIG_DELETE, "value": None}
            for k in delete_configs or []
        ]
        body = {
            "resources": [
                {"resource_type": resource_type, "resource_name": name, "configs": configs}
            ],
            "validate_only": validate_only,
        }
        node: int | None = None
        if resource_type == RESOURCE_GROUP:
            node = self.client.call(lambda: self.client.coordinator_for(KEY_TYPE_GROUP, name))
        resp = self.client.call(
            lambda: self.client.send(node, ApiKey.INCREMENTAL_ALTER_CONFIGS, body)
        )
        return _item(resp.responses[0])

    def describe_configs(
        self, resource_type: int, name: str, *, explicit_only: bool = False
    ) -> dict[str, str | None]:
        """DescribeConfigs; ``explicit_only`` keeps the values set on the resource itself."""
        return {
            e.name: e.value
            for e in self.describe_config_entries(resource_type, name)
            if not explicit_only or e.explicit
        }

    def describe_config_entries(self, resource_type: int, name: str) -> list[ConfigEntry]:
        """DescribeConfigs with each entry's source (topic 2, broker 4, broker logger 8,
        group 32)."""
        body = {
            "resources": [
                {"resource_type": resource_type, "resource_name": name, "configuration_keys": None}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        }
        resp = self.client.call(lambda: self.client.send(None, ApiKey.DESCRIBE_CONFIGS, body))
        r = resp.results[0]
        check_error(r.error_code, r.error_message, resource=name)
        return [
            ConfigEntry(
                c.name,
                c.value,
                _CONFIG_SOURCES.get(int(getattr(c, "config_source", 0)), "UNKNOWN"),
                bool(getattr(c, "read_only", False)),
                bool(getattr(c, "is_sensitive", False)),
            )
            for c in r.configs
        ]


_COORDINATOR_MOVED = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


def _describe_transaction_raw(
    conn: Any, version: int, transactional_id: str
) -> TransactionDescription:
    """DescribeTransactions for one id, decoded by hand (see ``producer.protocol.raw``)."""
    return describe_transactions_raw(conn, version, transactional_id)


def topic_id_of(admin: Admin, topic: str) -> uuid.UUID:
    return admin.client.topic(topic).topic_id
