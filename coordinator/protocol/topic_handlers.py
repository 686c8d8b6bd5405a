"""Topic administration APIs: CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords,
and the legacy AlterConfigs (topics only: broker configs are static)."""

from __future__ import annotations

import uuid

from coordinator.broker import BrokerCore
from coordinator.partition_limits import create_partitions_refusal, create_topics_refusal
from coordinator.protocol.broker_config_alter import broker_alter_refusal
from coordinator.protocol.responses import Handler, api, handler_table
from coordinator.protocol.topic_messages import (
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
    CreatableTopicResult,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
    DeleteTopicsResponse,
)
from coordinator.protocol.wire import DecodedRequest, field
from txn.api_keys import ApiKey
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.topic_config_defs import ConfigOperation

_TOPIC_RESOURCE = 2
_BROKER_RESOURCE = 4


class TopicHandlers:
    def __init__(self, core: BrokerCore) -> None:
        self.core = core
        self.table: dict[int, Handler] = handler_table(self)

    @api(ApiKey.CREATE_TOPICS)
    async def create_topics(self, req: DecodedRequest) -> CreateTopicsResponse:
        body = req.body
        validate_only = bool(field(body, "validate_only", default=False))
        out: list[CreatableTopicResult] = []
        refusal = create_topics_refusal(
            (
                (len(topic.assignments) or int(topic.num_partitions), len(topic.configs))
                for topic in body.topics
            ),
            self.core.config.get_int("num.partitions"),
        )
        if refusal is not None:  # Kafka's controller refuses the whole request
            return CreateTopicsResponse(
                topics=tuple(_refused_topic(t.name, *refusal) for t in body.topics)
            )
        for topic in body.topics:
            configs = {c.name: c.value for c in topic.configs if c.value is not None}
            result = self.core.create_topic(
                topic.name,
                int(topic.num_partitions),
                int(topic.replication_factor),
                configs,
                validate_only=validate_only,
            )
            out.append(
                CreatableTopicResult(
                    name=topic.name,
                    topic_id=uuid.UUID(result.topic_id) if result.topic_id else uuid.UUID(int=0),
                    error_code=result.error,
                    error_message=result.message,
                    num_partitions=result.num_partitions,
                    replication_factor=1 if result.error is ErrorCode.NONE else -1,
                    configs=(),
                )
            )
        return CreateTopicsResponse(topics=tuple(out))

    @api(ApiKey.ALTER_CONFIGS)
    async def alter_configs(self, req: DecodedRequest) -> AlterConfigsResponse:
        """Kafka's legacy AlterConfigs: a topic's configs become exactly the ones given."""
        body = req.body
        responses: list[AlterConfigsResourceResponse] = []
        for r in body.resources:
            rtype, name = int(r.resource_type), str(r.resource_name)
            error, message = ErrorCode.INVALID_REQUEST, None
            if rtype == _TOPIC_RESOURCE:
                info = self.core.topics.get(name)
                wanted = {c.name: c.value or "" for c in r.configs}
                stale = [k for k in (info.configs if info else {}) if k not in wanted]
                error, message = self.core.alter_topic_configs(
                    name, wanted, stale, validate_only=bool(body.validate_only)
                )
            elif rtype == _BROKER_RESOURCE:
                ops = [(c.name, ConfigOperation.SET, c.value) for c in r.configs]
                error, message = broker_alter_refusal(
                    self.core.node_id,
                    name,
                    ops,
                    validate_only=bool(body.validate_only),
                    replace_all=True,
                )
            else:
                message = f"AlterConfigs does not alter resource type {rtype}"
            responses.append(
                AlterConfigsResourceResponse(
                    error_code=error, error_message=message, resource_type=rtype, resource_name=name
                )
            )
        return AlterConfigsResponse(responses=tuple(responses))

    @api(ApiKey.DELETE_TOPICS)
    async def delete_topics(self, req: DecodedRequest) -> DeleteTopicsResponse:
        body = req.body
        names: list[tuple[str | None, uuid.UUID | None]] = []
        if hasattr(body, "topic_names"):
            names = [(n, None) for n in body.topic_names]
        else:
            names = [(t.name, t.topic_id) for t in body.topics]
        out: list[DeletableTopicResult] = []
        for requested, topic_id in names:
            name = requested
            if name is None and topic_id is not None:
                info = self.core.topics.by_id(topic_id)
                name = info.name if info else None
            if name is None:
                out.append(
                    DeletableTopicResult(
                        name=None, topic_id=topic_id, error_code=ErrorCode.UNKNOWN_TOPIC_ID
                    )
                )
                continue
            result = self.core.delete_topic(name)
            out.append(
                DeletableTopicResult(
                    name=name,
                    topic_id=uuid.UUID(result.topic_id) if result.topic_id else uuid.UUID(int=0),
                    error_code=result.error,
                    error_message=result.message,
                )
            )
        return DeleteTopicsResponse(responses=tuple(out))

    @api(ApiKey.CREATE_PARTITIONS)
    async def create_partitions(self, req: DecodedRequest) -> CreatePartitionsResponse:
        validate_only = bool(field(req.body, "validate_only", default=False))
        results: list[CreatePartitionsTopicResult] = []
        refusal = create_partitions_refusal(
            int(t.count) - info.num_partitions
            for t in req.body.topics
            if (info := self.core.topics.get(t.name)) is not None
        )
        if refusal is not None:  # Kafka's controller refuses the whole request
            code, message = refusal
            return CreatePartitionsResponse(
                results=tuple(
                    CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=message)
                    for t in req.body.topics
                )
            )
        for topic in req.body.topics:
            result = self.core.create_partitions(
                topic.name, int(topic.count), validate_only=validate_only
            )
            results.append(
                CreatePartitionsTopicResult(
                    name=topic.name, error_code=result.error, error_message=result.message
                )
            )
        return CreatePartitionsResponse(results=tuple(results))

    @api(ApiKey.DELETE_RECORDS)
    async def delete_records(self, req: DecodedRequest) -> DeleteRecordsResponse:
        topics: list[DeleteRecordsTopicResult] = []
        for topic in req.body.topics:
            parts: list[DeleteRecordsPartitionResult] = []
            for p in topic.partitions:
                error, low = self.core.delete_records(
                    TopicPartition(topic.name, int(p.partition_index)), int(p.offset)
                )
                parts.append(
                    DeleteRecordsPartitionResult(
                        partition_index=int(p.partition_index),
                        low_watermark=low if error is ErrorCode.NONE else -1,
                        error_code=error,
                    )
                )
            topics.append(DeleteRecordsTopicResult(name=topic.name, partitions=tuple(parts)))
        return DeleteRecordsResponse(topics=tuple(topics))


def _refused_topic(name: str, code: ErrorCode, message: str) -> CreatableTopicResult:
    """CreateTopicsRequest.getErrorResponse's entry for one topic."""
    return CreatableTopicResult(
        name=name,
        topic_id=uuid.UUID(int=0),
        error_code=code,
        error_message=message,
        configs=(),
    )
