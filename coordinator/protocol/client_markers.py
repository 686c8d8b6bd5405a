"""WriteTxnMarkers from a client: an administrator ends a producer's transaction on partitions.

Kafka serves WriteTxnMarkers to any principal with CLUSTER_ACTION on the cluster; its own
transaction coordinator is one such client, and ``Admin.abortTransaction``
(``kafka-transactions.sh abort``) another: it aborts a hanging transaction -- one whose
producer died and whose coordinator no longer knows the partition -- by writing the ABORT
marker the coordinator never wrote.  Here the coordinator reaches the partitions in-process
(``coordinator.marker_channel``); a client's markers take the same path, one partition at a
time, with Kafka's answers for what only a client can name:

- a partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION;
- a partition of a user topic: the marker is appended as the coordinator's are
  (``Partition.write_marker``: INVALID_PRODUCER_EPOCH below the producer's epoch there),
  waking the fetches that wait for it;
- Kafka's internal topics: the consumer groups' offsets partition ends the producer's
  transactional offset commits and a share-state partition its KIP-1289 staged
  acknowledgements, as for the coordinator's markers; the other partitions Metadata lists
  hold no transactional records here, so there is nothing to end (NONE).

As Kafka's producer state, each partition keeps the coordinator epoch of the last marker
it took: a marker naming an older one is refused TRANSACTION_COORDINATOR_FENCED (a user
partition checks it itself; on a coordinator's partition it is checked here, against the
producer state DescribeProducers shows, after the producer epoch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.assembly import CONSUMER_GROUPS_PARTITION
from coordinator.marker_channel import TxnMarker
from txn.errors import ErrorCode
from txn.ids import (
    GROUP_METADATA_TOPIC,
    KAFKA_INTERNAL_TOPICS,
    SHARE_GROUP_STATE_TOPIC,
    TopicPartition,
)

if TYPE_CHECKING:
    from coordinator.broker import BrokerCore


def _coordinator_path(core: BrokerCore, tp: TopicPartition) -> bool | None:
    """For an internal topic's partition: whether its coordinator takes the marker (None:
    the partition does not exist)."""
    listed = core.internal_topics.listed(tp.topic, core.cluster_id)
    if listed is None or not 0 <= tp.partition < listed.num_partitions:
        return None
    if tp.topic == GROUP_METADATA_TOPIC:
        return tp.partition == CONSUMER_GROUPS_PARTITION
    held = core.coordinator_logs.get(tp.topic, {})
    return tp.topic == SHARE_GROUP_STATE_TOPIC and tp.partition in held


def _fenced(core: BrokerCore, tp: TopicPartition, marker: TxnMarker) -> bool:
    """Whether the producer's last marker on coordinator partition ``tp`` named a newer
    coordinator epoch (a marker of an older producer epoch is left to the partition)."""
    _error, producers = core.describe_producers(tp)
    return any(
        p.producer_id == marker.producer_id
        and marker.producer_epoch >= p.producer_epoch
        and marker.coordinator_epoch < p.coordinator_epoch
        for p in producers
    )


def write_client_markers(core: BrokerCore, marker: TxnMarker) -> dict[TopicPartition, ErrorCode]:
    """Each partition of ``marker``'s answer (the caller checked CLUSTER_ACTION)."""
    results: dict[TopicPartition, ErrorCode] = {}
    for tp in marker.partitions:
        if tp.topic in KAFKA_INTERNAL_TOPICS:
            path = _coordinator_path(core, tp)
            if path is None:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            if not path:
                results[tp] = ErrorCode.NONE
                continue
            if _fenced(core, tp, marker):
                results[tp] = ErrorCode.TRANSACTION_COORDINATOR_FENCED
                continue
        elif tp not in core.partitions:
            results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        one = TxnMarker(
            marker.transactional_id,
            marker.producer_id,
            marker.producer_epoch,
            marker.coordinator_epoch,
            marker.result,
            (tp,),
        )
        results[tp] = core.write_txn_markers(one).get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)
    return results
