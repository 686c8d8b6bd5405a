"""Transaction APIs: InitProducerId, AddPartitionsToTxn, EndTxn, ListTransactions,
DescribeTransactions, DescribeProducers, WriteTxnMarkers (from a client)."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from coordinator.broker import BrokerCore
from coordinator.marker_channel import TxnMarker
from coordinator.protocol.client_markers import write_client_markers
from coordinator.protocol.request_views import (
    AddPartitionsToTxnRequestV0To3View,
    AddPartitionsToTxnRequestV4To5View,
    AddPartitionsToTxnRequestView,
    DescribeProducersRequestView,
    DescribeTransactionsRequestView,
    EndTxnRequestView,
    InitProducerIdRequestView,
    ListTransactionsRequestView,
    WriteTxnMarkersRequestView,
)
from coordinator.protocol.responses import Handler, api, handler_table, millis
from coordinator.protocol.txn_messages import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopicResult,
    DescribedTransaction,
    DescribeProducersPartition,
    DescribeProducersResponse,
    DescribeProducersTopic,
    DescribeTransactionsResponse,
    EndTxnResponse,
    InitProducerIdResponse,
    ListedTransaction,
    ListTransactionsResponse,
    TransactionTopic,
    WritableTxnMarkerResult,
    WriteTxnMarkersResponse,
    marker_results,
)
from coordinator.protocol.wire import DecodedRequest, optional
from coordinator.txn_results import ProducerResult
from txn.api_keys import ApiKey
from txn.batch import ControlType
from txn.errors import ErrorCode
from txn.ids import KAFKA_INTERNAL_TOPICS, TopicPartition
from txn.state import TransactionState


def _producer_error(result: ProducerResult, *, fenced_unknown: bool) -> ErrorCode:
    """The error of ``result``; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH to a request version
    older than the error (``fenced_unknown``)."""
    if result.error is ErrorCode.PRODUCER_FENCED and fenced_unknown:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return result.error


def partition_errors_by_topic(
    results: dict[TopicPartition, ErrorCode],
) -> tuple[AddPartitionsToTxnTopicResult, ...]:
    """AddPartitionsToTxn's per-topic results, topics in request order."""
    grouped: dict[str, list[AddPartitionsToTxnPartitionResult]] = {}
    for tp, error in results.items():
        grouped.setdefault(tp.topic, []).append(
            AddPartitionsToTxnPartitionResult(
                partition_index=tp.partition, partition_error_code=error
            )
        )
    return tuple(
        AddPartitionsToTxnTopicResult(name=name, results_by_partition=tuple(parts))
        for name, parts in grouped.items()
    )


class TxnHandlers:
    def __init__(self, core: BrokerCore) -> None:
        self.core = core
        self.table: dict[int, Handler] = handler_table(self)

    @api(ApiKey.INIT_PRODUCER_ID)
    async def init_producer_id(
        self, req: DecodedRequest[InitProducerIdRequestView]
    ) -> InitProducerIdResponse:
        body = req.body
        result = self.core.txn_coordinator.init_producer_id(
            body.transactional_id,
            millis(body.transaction_timeout),
            int(optional(body, "producer_id", default=-1)),
            int(optional(body, "producer_epoch", default=-1)),
            enable_2pc=bool(optional(body, "enable2_pc", default=False)),
            keep_prepared_txn=bool(optional(body, "keep_prepared_txn", default=False)),
        )
        return InitProducerIdResponse(
            error_code=_producer_error(result, fenced_unknown=req.api_version < 4),
            producer_id=result.producer_id,
            producer_epoch=result.producer_epoch,
            ongoing_txn_producer_id=result.ongoing_txn_producer_id,
            ongoing_txn_producer_epoch=result.ongoing_txn_producer_epoch,
        )

    @api(ApiKey.ADD_PARTITIONS_TO_TXN)
    async def add_partitions_to_txn(
        self, req: DecodedRequest[AddPartitionsToTxnRequestView]
    ) -> AddPartitionsToTxnResponse:
        coordinator = self.core.txn_coordinator
        if req.api_version <= 3:
            old = cast(AddPartitionsToTxnRequestV0To3View, req.body)
            partitions = [
                TopicPartition(t.name, int(p))
                for t in old.v3_and_below_topics
                for p in t.partitions
            ]
            refused = _refused_partitions(partitions, self._partition_exists)
            if refused:
                # As Kafka: nothing is added when one partition is refused.
                return AddPartitionsToTxnResponse(
                    results_by_topic_v3_and_below=partition_errors_by_topic(
                        {
                            tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED)
                            for tp in partitions
                        }
                    )
                )
            results = coordinator.add_partitions_to_txn(
                old.v3_and_below_transactional_id,
                int(old.v3_and_below_producer_id),
                int(old.v3_and_below_producer_epoch),
                partitions,
            )
            if req.api_version < 2:
                results = {
                    tp: (ErrorCode.INVALID_PRODUCER_EPOCH if e is ErrorCode.PRODUCER_FENCED else e)
                    for tp, e in results.items()
                }
            return AddPartitionsToTxnResponse(
                results_by_topic_v3_and_below=partition_errors_by_topic(results)
            )
        per_txn: list[AddPartitionsToTxnResult] = []
        for txn in cast(AddPartitionsToTxnRequestV4To5View, req.body).transactions:
            partitions = [TopicPartition(t.name, int(p)) for t in txn.topics for p in t.partitions]
            internal = _refused_partitions(partitions, lambda _tp: True)
            if internal:
                per_txn.append(
                    AddPartitionsToTxnResult(
                        transactional_id=txn.transactional_id,
                        topic_results=partition_errors_by_topic(
                            {
                                tp: internal.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED)
                                for tp in partitions
                            }
                        ),
                    )
                )
                continue
            call = (
                coordinator.verify_partitions
                if txn.verify_only
                else coordinator.add_partitions_to_txn
            )
            results = call(
                txn.transactional_id, int(txn.producer_id), int(txn.producer_epoch), partitions
            )
            per_txn.append(
                AddPartitionsToTxnResult(
                    transactional_id=txn.transactional_id,
                    topic_results=partition_errors_by_topic(results),
                )
            )
        return AddPartitionsToTxnResponse(
            error_code=ErrorCode.NONE, results_by_transaction=tuple(per_txn)
        )

    def _partition_exists(self, tp: TopicPartition) -> bool:
        info = self.core.topics.get(tp.topic)
        return info is not None and 0 <= tp.partition < info.num_partitions

    @api(ApiKey.END_TXN)
    async def end_txn(self, req: DecodedRequest[EndTxnRequestView]) -> EndTxnResponse:
        body = req.body
        result = self.core.txn_coordinator.end_txn(
            body.transactional_id,
            int(body.producer_id),
            int(body.producer_epoch),
            bool(body.committed),
            tv2=req.api_version >= 5,
        )
        return EndTxnResponse(
            error_code=_producer_error(result, fenced_unknown=req.api_version < 2),
            producer_id=result.producer_id,
            producer_epoch=result.producer_epoch,
        )

    @api(ApiKey.LIST_TRANSACTIONS)
    async def list_transactions(
        self, req: DecodedRequest[ListTransactionsRequestView]
    ) -> ListTransactionsResponse:
        body = req.body
        listings = self.core.txn_coordinator.list_transactions(
            list(body.state_filters),
            [int(p) for p in body.producer_id_filters],
            int(optional(body, "duration_filter", default=-1)),
        )
        return ListTransactionsResponse(
            error_code=self.core.txn_coordinator.availability(),
            unknown_state_filters=tuple(
                s for s in body.state_filters if TransactionState.from_name(s) is None
            ),
            transaction_states=tuple(
                ListedTransaction(
                    transactional_id=t.transactional_id,
                    producer_id=t.producer_id,
                    transaction_state=t.state,
                )
                for t in listings
            ),
        )

    @api(ApiKey.DESCRIBE_TRANSACTIONS)
    async def describe_transactions(
        self, req: DecodedRequest[DescribeTransactionsRequestView]
    ) -> DescribeTransactionsResponse:
        descriptions = self.core.txn_coordinator.describe_transactions(
            list(req.body.transactional_ids)
        )
        states: list[DescribedTransaction] = []
        for d in descriptions:
            by_topic: dict[str, list[int]] = {}
            for tp in d.partitions:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            states.append(
                DescribedTransaction(
                    error_code=d.error,
                    transactional_id=d.transactional_id,
                    transaction_state=d.state,
                    transaction_timeout=d.transaction_timeout_ms,
                    transaction_start_time=d.transaction_start_time_ms,
                    producer_id=d.producer_id,
                    producer_epoch=d.producer_epoch,
                    topics=tuple(
                        TransactionTopic(topic=t, partitions=tuple(sorted(ps)))
                        for t, ps in sorted(by_topic.items())
                    ),
                )
            )
        return DescribeTransactionsResponse(transaction_states=tuple(states))

    @api(ApiKey.DESCRIBE_PRODUCERS)
    async def describe_producers(
        self, req: DecodedRequest[DescribeProducersRequestView]
    ) -> DescribeProducersResponse:
        topics: list[DescribeProducersTopic] = []
        for topic in req.body.topics:
            parts: list[DescribeProducersPartition] = []
            for index in topic.partition_indexes:
                error, producers = self.core.describe_producers(
                    TopicPartition(topic.name, int(index))
                )
                parts.append(
                    DescribeProducersPartition(
                        partition_index=int(index),
                        error_code=error,
                        active_producers=tuple(producers),
                    )
                )
            topics.append(DescribeProducersTopic(name=topic.name, partitions=tuple(parts)))
        return DescribeProducersResponse(topics=tuple(topics))

    @api(ApiKey.WRITE_TXN_MARKERS)
    async def write_txn_markers(
        self, req: DecodedRequest[WriteTxnMarkersRequestView]
    ) -> WriteTxnMarkersResponse:
        """A client's markers (``coordinator.protocol.client_markers``; CLUSTER_ACTION is
        checked by the authorizer's rule)."""
        results: list[WritableTxnMarkerResult] = []
        for m in req.body.markers:
            partitions = tuple(
                TopicPartition(t.name, int(index))
                for t in m.topics
                for index in t.partition_indexes
            )
            result = ControlType.COMMIT if m.transaction_result else ControlType.ABORT
            marker = TxnMarker(
                "",
                int(m.producer_id),
                int(m.producer_epoch),
                int(m.coordinator_epoch),
                result,
                partitions,
            )
            errors = write_client_markers(self.core, marker)
            results.append(
                WritableTxnMarkerResult(
                    producer_id=int(m.producer_id), topics=marker_results(errors)
                )
            )
        return WriteTxnMarkersResponse(markers=tuple(results))


def _refused_partitions(
    partitions: list[TopicPartition], exists: Callable[[TopicPartition], bool]
) -> dict[TopicPartition, ErrorCode]:
    """AddPartitionsToTxn's refusals, as Kafka: a partition of an internal topic is
    TOPIC_AUTHORIZATION_FAILED (only the coordinators add their own partitions, for every
    user), an unknown one UNKNOWN_TOPIC_OR_PARTITION."""
    refused: dict[TopicPartition, ErrorCode] = {}
    for tp in partitions:
        if tp.topic in KAFKA_INTERNAL_TOPICS:
            refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif not exists(tp):
            refused[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return refused
