"""The data path: Produce, Fetch (long-polled on the broker's Clock) and ListOffsets."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Iterable
from typing import cast

from coordinator.broker import BrokerCore
from coordinator.log.group_commit import GroupCommit
from coordinator.log.storage import PartitionLog
from coordinator.protocol.data_messages import (
    BatchIndexAndErrorMessage,
    FetchableTopicResponse,
    FetchPartitionData,
    FetchResponse,
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from coordinator.protocol.request_views import (
    FetchRequestView,
    ListOffsetsRequestView,
    ProduceRequestView,
    TopicProduceDataView,
)
from coordinator.protocol.responses import Handler, WaitForAppend, api, handler_table, millis
from coordinator.protocol.wire import DecodedRequest, optional
from txn.api_keys import ApiKey
from txn.batch import BatchFormatError, iter_batches
from txn.errors import ErrorCode
from txn.ids import TopicPartition


class DataHandlers:
    def __init__(
        self,
        core: BrokerCore,
        wait_for_append: WaitForAppend,
        group_commit: GroupCommit | None = None,
    ) -> None:
        self.core = core
        self._wait_for_append = wait_for_append
        self.group_commit = group_commit or GroupCommit()
        self.table: dict[int, Handler] = handler_table(self)

    @api(ApiKey.PRODUCE)
    async def produce(self, req: DecodedRequest[ProduceRequestView]) -> ProduceResponse | None:
        body = req.body
        transactional_id = body.transactional_id
        acks_ok = int(body.acks) in (-1, 0, 1)
        if transactional_id is None and has_transactional_records(body):
            # Kafka refuses the whole request before anything else (handleProduceRequest).
            return _refuse_all(body, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        responses: list[TopicProduceResponse] = []
        touched: dict[TopicPartition, PartitionLog] = {}
        for topic in body.topic_data:
            parts: list[PartitionProduceResponse] = []
            for pdata in topic.partition_data:
                tp = TopicPartition(topic.name, int(pdata.index))
                msg: str | None
                record_errors: tuple[tuple[int, str], ...] = ()
                append_ms = -1
                if not acks_ok:  # Kafka refuses the whole request before appending anything
                    result_error, base, start, msg = ErrorCode.INVALID_REQUIRED_ACKS, -1, -1, None
                elif pdata.records is None:
                    result_error, base, start, msg = ErrorCode.CORRUPT_MESSAGE, -1, -1, "no records"
                else:
                    result = self.core.produce(
                        tp, bytes(pdata.records), transactional_id, defer_flush=True
                    )
                    if (target := self.core.partition_log(tp)) is not None:
                        touched[tp] = target
                    record_errors = result.record_errors
                    append_ms = result.log_append_time_ms
                    result_error, base, start, msg = (
                        result.error,
                        result.base_offset,
                        result.log_start_offset,
                        result.error_message,
                    )
                    if result_error is ErrorCode.TRANSACTION_ABORTABLE and req.api_version < 11:
                        # Clients before KIP-890 do not know TRANSACTION_ABORTABLE.
                        result_error = ErrorCode.INVALID_TXN_STATE
                parts.append(
                    PartitionProduceResponse(
                        index=int(pdata.index),
                        error_code=result_error,
                        base_offset=base,
                        log_append_time=_log_append_time(append_ms, req.api_version),
                        log_start_offset=start,
                        error_message=msg if result_error is not ErrorCode.NONE else None,
                        record_errors=tuple(
                            BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                            for i, m in record_errors
                        ),
                    )
                )
            responses.append(
                TopicProduceResponse(name=topic.name, partition_responses=tuple(parts))
            )
        due = {tp: target for tp, target in touched.items() if target.flush_due()}
        if int(body.acks) == 0:
            if due:
                self.group_commit.request(due.values())
            return None
        if due and self.group_commit.fast():
            # Fast fsyncs (a moving average under INLINE_BELOW_S): done here, at once, as
            # cheaper than any hand-over; the connection waits for them, as for any request.
            failed = self.group_commit.sync_now(due.values())
        elif due:
            # Answered once durable: the group commit's round, on a worker thread while
            # other connections' requests go on (and share the next round).
            failed = await self.group_commit.request(due.values())
        else:
            failed = {}
        if failed:
            lost = {tp for tp, target in due.items() if target in failed}
            responses = [_storage_error(t, lost) for t in responses]
        return ProduceResponse(responses=tuple(responses))

    def _fetch_once(self, req: DecodedRequest[FetchRequestView]) -> tuple[FetchResponse, int]:
        body = req.body
        read_committed = int(body.isolation_level) == 1
        total = 0
        budget = int(body.max_bytes)
        responses: list[FetchableTopicResponse] = []
        for topic in body.topics:
            topic_id: uuid.UUID | None = optional(topic, "topic_id", default=None)  # v13+
            name: str | None = optional(topic, "topic", default=None)  # v4-12
            info = (
                self.core.topics.by_id(cast(uuid.UUID, topic_id))
                if name is None
                else self.core.topics.get(name)
            )
            parts: list[FetchPartitionData] = []
            for p in topic.partitions:
                index = int(p.partition)
                if info is None:
                    error = (
                        ErrorCode.UNKNOWN_TOPIC_ID
                        if name is None
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    )
                    parts.append(
                        FetchPartitionData(
                            partition_index=index,
                            error_code=error,
                            high_watermark=-1,
                            aborted_transactions=(),
                            records=b"",
                        )
                    )
                    continue
                max_bytes = min(int(p.partition_max_bytes), max(budget - total, 0))
                data = self.core.fetch(
                    TopicPartition(info.name, index),
                    int(p.fetch_offset),
                    max_bytes,
                    read_committed=read_committed,
                )
                # Only the first non-empty partition may exceed the budget (Kafka's rule, so a
                # batch larger than max_bytes can still be consumed).
                over_budget = total > 0 and len(data.records) > max_bytes
                records = b"" if over_budget else data.records
                total += len(records)
                if data.error is not ErrorCode.NONE:
                    # Kafka answers an errored partition with no offsets at all
                    parts.append(
                        FetchPartitionData(
                            partition_index=index,
                            error_code=data.error,
                            high_watermark=-1,
                            aborted_transactions=(
                                () if data.error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else None
                            ),
                            records=b"",
                        )
                    )
                    continue
                parts.append(
                    FetchPartitionData(
                        partition_index=index,
                        error_code=data.error,
                        high_watermark=data.high_watermark,
                        last_stable_offset=data.last_stable_offset,
                        log_start_offset=data.log_start_offset,
                        aborted_transactions=data.aborted,
                        records=records,
                    )
                )
            responses.append(
                FetchableTopicResponse(partitions=tuple(parts), topic_id=topic_id)
                if name is None
                else FetchableTopicResponse(partitions=tuple(parts), topic=name)
            )
        return FetchResponse(error_code=ErrorCode.NONE, responses=tuple(responses)), total

    @api(ApiKey.FETCH)
    async def fetch(self, req: DecodedRequest[FetchRequestView]) -> FetchResponse:
        body = req.body
        clock = self.core.clock
        deadline_ms = clock.now_ms() + millis(body.max_wait)
        min_bytes = int(body.min_bytes)
        while True:
            response, size = self._fetch_once(req)
            if (
                size >= max(min_bytes, 1)
                or clock.now_ms() >= deadline_ms
                or response.has_partition_error()
            ):
                return response
            await self._wait_for_append(deadline_ms)

    @api(ApiKey.LIST_OFFSETS)
    async def list_offsets(
        self, req: DecodedRequest[ListOffsetsRequestView]
    ) -> ListOffsetsResponse:
        body = req.body
        read_committed = int(optional(body, "isolation_level", default=0)) == 1
        topics: list[ListOffsetsTopicResponse] = []
        for topic in body.topics:
            parts: list[ListOffsetsPartitionResponse] = []
            for p in topic.partitions:
                error, offset, ts = self.core.list_offset(
                    TopicPartition(topic.name, int(p.partition_index)),
                    int(p.timestamp),
                    read_committed=read_committed,
                    version=req.api_version,
                )
                parts.append(
                    ListOffsetsPartitionResponse(
                        partition_index=int(p.partition_index),
                        error_code=error,
                        timestamp=ts,
                        offset=offset,
                        # no offset (a tiered target on a log without tiered storage, a
                        # lookup past the end) comes with no epoch, as in Kafka
                        leader_epoch=0 if error is ErrorCode.NONE and offset >= 0 else -1,
                    )
                )
            topics.append(ListOffsetsTopicResponse(name=topic.name, partitions=tuple(parts)))
        return ListOffsetsResponse(topics=tuple(topics))


def _log_append_time(ms: int, version: int) -> datetime.datetime | int | None:
    """The Produce response's log_append_time: the append time of a LogAppendTime topic,
    else -1 (kio's None from v2, where the field is a timestamp)."""
    if ms < 0:
        return None if version >= 2 else -1
    seconds, millis_ = divmod(ms, 1000)
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC) + datetime.timedelta(
        milliseconds=millis_
    )


def has_transactional_records(body: ProduceRequestView) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords: any batch of the request transactional."""
    for topic in body.topic_data:
        for pdata in topic.partition_data:
            if pdata.records is None:
                continue
            try:
                batches = iter_batches(bytes(pdata.records))
            except BatchFormatError:
                continue  # answered CORRUPT_MESSAGE on its own partition
            if any(header.is_transactional for _pos, header in batches):
                return True
    return False


def refused_topics(
    topics: Iterable[TopicProduceDataView], error: ErrorCode, log_append_time: int | None = -1
) -> tuple[TopicProduceResponse, ...]:
    """Produce's answer for every partition of ``topics`` (the request's topic_data) refused
    with ``error`` before anything is appended (error_message None, as Kafka 4.4)."""
    return tuple(
        TopicProduceResponse(
            name=topic.name,
            partition_responses=tuple(
                PartitionProduceResponse(
                    index=int(pdata.index),
                    error_code=error,
                    base_offset=-1,
                    log_append_time=log_append_time,
                )
                for pdata in topic.partition_data
            ),
        )
        for topic in topics
    )


def _refuse_all(body: ProduceRequestView, error: ErrorCode) -> ProduceResponse | None:
    """ProduceRequest.getErrorResponse: every partition answers ``error`` (acks=0: nothing)."""
    if int(body.acks) == 0:
        return None
    return ProduceResponse(responses=refused_topics(body.topic_data, error))


def _storage_error(topic: TopicProduceResponse, lost: set[TopicPartition]) -> TopicProduceResponse:
    """``topic``'s answers with KAFKA_STORAGE_ERROR for the partitions whose fsync failed."""
    parts = tuple(
        dataclasses.replace(
            p,
            error_code=ErrorCode.KAFKA_STORAGE_ERROR,
            base_offset=-1,
            error_message="fsync failed",
        )
        if TopicPartition(topic.name, p.index) in lost and p.error_code is ErrorCode.NONE
        else p
        for p in topic.partition_responses
    )
    return dataclasses.replace(topic, partition_responses=parts)
