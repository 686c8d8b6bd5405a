"""The wire for scenarios: one API version per key for both brokers, and plain observations.

Every request goes out at the same version to Apache Kafka and to sharetxn (``COMMON``: the
highest version both serve, Kafka 4.4's ranges against ``coordinator.protocol.api_versions``), so a
difference in an answer is a difference in behaviour, not in versions.  ``plain`` turns a
kio response into JSON-able data with the values that legitimately differ between two
brokers (ids, timestamps, hosts, throttle times, free-text messages) masked.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from collections.abc import Mapping
from typing import Any

from producer.protocol.connection import BrokerConnection
from producer.protocol.records import decode_batch, split_batches
from txn.batch import control_type_of
from txn.errors import ErrorCode

#: api key -> the version both Apache Kafka 4.4 and sharetxn serve (the lower maximum).
#: AddPartitionsToTxn v3 and EndTxn v4 are the client forms of transaction version 1 (v4+
#: of AddPartitionsToTxn is broker-to-broker; EndTxn v5 is KIP-890's version 2).
COMMON: dict[int, int] = {
    0: 10,  # Produce
    1: 16,  # Fetch
    2: 11,  # ListOffsets
    3: 12,  # Metadata
    8: 9,  # OffsetCommit
    9: 9,  # OffsetFetch
    10: 6,  # FindCoordinator
    11: 9,  # JoinGroup
    12: 4,  # Heartbeat
    13: 5,  # LeaveGroup
    14: 5,  # SyncGroup
    15: 5,  # DescribeGroups
    16: 5,  # ListGroups
    18: 3,  # ApiVersions
    19: 7,  # CreateTopics
    20: 6,  # DeleteTopics
    21: 2,  # DeleteRecords
    22: 5,  # InitProducerId
    24: 3,  # AddPartitionsToTxn (client form)
    25: 4,  # AddOffsetsToTxn
    26: 4,  # EndTxn (transaction version 1)
    27: 2,  # WriteTxnMarkers (a client's: kafka-transactions.sh abort)
    28: 4,  # TxnOffsetCommit
    32: 4,  # DescribeConfigs
    37: 3,  # CreatePartitions
    42: 2,  # DeleteGroups
    44: 1,  # IncrementalAlterConfigs
    47: 0,  # OffsetDelete
    48: 1,  # DescribeClientQuotas
    49: 1,  # AlterClientQuotas
    60: 1,  # DescribeCluster
    61: 0,  # DescribeProducers
    65: 0,  # DescribeTransactions
    66: 1,  # ListTransactions
    68: 1,  # ConsumerGroupHeartbeat
    69: 1,  # ConsumerGroupDescribe
    76: 1,  # ShareGroupHeartbeat
    77: 1,  # ShareGroupDescribe
    78: 2,  # ShareFetch
    79: 2,  # ShareAcknowledge
    90: 1,  # DescribeShareGroupOffsets
    91: 0,  # AlterShareGroupOffsets
    92: 0,  # DeleteShareGroupOffsets
}

#: Fields dropped from every observation: they differ between any two brokers.
DROPPED = frozenset(
    {
        "throttle_time",
        "node_endpoints",
        "error_message",
        "acknowledge_error_message",
        "current_leader",
        "leader_epoch",
        "current_leader_epoch",
        "diverging_epoch",
        "snapshot_id",
        "preferred_read_replica",
        "partition_leader_epoch",
        "leader_id",
        "replica_nodes",
        "isr_nodes",
        "offline_replicas",
        "eligible_leader_replicas",
        "last_known_elr",
        "topic_authorized_operations",
        "authorized_operations",
        "cluster_authorized_operations",
        "controller_id",
        "cluster_id",
        "brokers",
        "timestamp",
        "log_append_time",
        "log_append_time_ms",
        "transaction_start_time",
        "last_timestamp",
        "heartbeat_interval",
        "acquisition_lock_timeout",
        "assignor_name",
        "client_host",
        "client_id",
        "rack_id",
        "batch_index_error_message",
        "host",
        "port",
        "node_id",
        "coordinator_epoch",
        "current_txn_start_offset",
    }
)

#: Fields whose value is an id: kept only as "set" or "unset".
MASKED = frozenset(
    {
        "member_id",
        "producer_id",
        "session_id",
        "topic_id",
        "group_instance_id",
        "leader",
        "generation_id",
    }
)


def _unset(value: Any) -> bool:
    if value is None or value == "" or value == 0:
        return True
    if isinstance(value, uuid.UUID):
        return value.int == 0
    return isinstance(value, int) and value < 0


def plain(value: Any, key: str = "") -> Any:
    """A kio entity (or anything inside one) as JSON-able data with ids masked."""
    if key in MASKED:
        return "<unset>" if _unset(value) else "<id>"
    if key.endswith("error_code") or key == "error":
        return ErrorCode(int(value)).name if value is not None else None
    if key == "records" and isinstance(value, bytes | bytearray | memoryview):
        return records_of(bytes(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name), f.name)
            for f in dataclasses.fields(value)
            if f.name not in DROPPED
        }
    if isinstance(value, tuple | list):
        return [plain(v, key) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v, str(k)) for k, v in value.items()}
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return "<time>"
    if isinstance(value, uuid.UUID):
        return "<uuid>" if value.int else "<zero-uuid>"
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value


def records_of(data: bytes | None) -> list[Any]:
    """Records as ``[offset, key, value]`` and transaction markers as ``[offset, "COMMIT"]``."""
    if not data:
        return []
    out: list[Any] = []
    for pos, header in split_batches(data):
        if header.is_control:
            out.append([header.base_offset, control_type_of(data, pos, header).name])
            continue
        batch = decode_batch(data, pos, header)
        for r in batch.records:
            key = r.key.decode(errors="replace") if r.key is not None else None
            value = r.value.decode(errors="replace") if r.value is not None else None
            out.append([r.offset, key, value])
    return out


class Wire:
    """A connection to one broker that sends every API at its ``COMMON`` version."""

    def __init__(self, bootstrap: str, client_id: str = "differential") -> None:
        host, _, port = bootstrap.rpartition(":")
        self.conn = BrokerConnection(host, int(port), client_id=client_id, timeout_s=30.0)

    def call(self, api_key: int, body: Mapping[str, Any], version: int | None = None) -> Any:
        return self.conn.request(api_key, COMMON[api_key] if version is None else version, body)

    def close(self) -> None:
        self.conn.close()
