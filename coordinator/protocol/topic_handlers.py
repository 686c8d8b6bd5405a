"""Topic administration APIs: CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords,
and the legacy AlterConfigs (topics; on a broker, checked as IncrementalAlterConfigs SET)."""

from __future__ import annotations

import uuid
from typing import cast

from coordinator.broker import BrokerCore
from coordinator.partition_limits import create_partitions_refusal, create_topics_refusal
from coordinator.protocol.broker_config_alter import (
    broker_alter_refusal,
    legacy_broker_ops,
    tls_store_refusal,
)
from coordinator.protocol.request_views import (
    AlterConfigsRequestView,
    CreatableTopicView,
    CreatePartitionsRequestView,
    CreatePartitionsTopicView,
    CreateTopicsRequestView,
    DeleteRecordsRequestView,
    DeleteTopicsRequestV1To5View,
    DeleteTopicsRequestV6To6View,
    DeleteTopicsRequestView,
)
from coordinator.protocol.responses import Handler, api, handler_table
from coordinator.protocol.throttling import mutation_quota
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
from coordinator.protocol.topic_requests import (
    DUPLICATE,
    added_assignments_refusal,
    assignment_refusal,
    counts_refusal,
    duplicated,
)
from coordinator.protocol.wire import DecodedRequest
from coordinator.reserved_topics import create_refusal, delete_refusal, partitions_refusal
from coordinator.topics import partition_count_error
from txn.api_keys import ApiKey
from txn.errors import ErrorCode, KafkaProtocolError
from txn.ids import TopicPartition
from txn.topic_config_defs import ConfigOperation

_TOPIC_RESOURCE = 2
_BROKER_RESOURCE = 4
_BROKER_LOGGER_RESOURCE = 8


class TopicHandlers:
    def __init__(self, core: BrokerCore) -> None:
        self.core = core
        self.table: dict[int, Handler] = handler_table(self)

    @api(ApiKey.CREATE_TOPICS)
    async def create_topics(
        self, req: DecodedRequest[CreateTopicsRequestView]
    ) -> CreateTopicsResponse:
        body = req.body
        validate_only = bool(body.validate_only)
        # Kafka answers a name given twice once, INVALID_REQUEST, after the other topics.
        twice = duplicated([t.name for t in body.topics])
        topics = [t for t in body.topics if t.name not in twice]
        tail = tuple(_refused_topic(name, *DUPLICATE) for name in twice)
        refusal = create_topics_refusal(
            (
                (len(topic.assignments) or int(topic.num_partitions), len(topic.configs))
                for topic in topics
            ),
            self.core.config.get_int("num.partitions"),
        )
        if refusal is not None:  # Kafka's controller refuses the whole request
            return CreateTopicsResponse(
                topics=tuple(_refused_topic(t.name, *refusal) for t in topics) + tail
            )
        out = tuple(self._create_topic(topic, validate_only) for topic in topics)
        return CreateTopicsResponse(topics=out + tail)

    def _create_topic(self, topic: CreatableTopicView, validate_only: bool) -> CreatableTopicResult:
        """One topic of CreateTopics, checked in the order of Kafka's controller: the name, an
        existing or colliding topic, the configs, then assignments or counts."""
        name = str(topic.name)
        if (refusal := create_refusal(name)) is not None:
            return _refused_topic(name, *refusal)
        configs: dict[str, str | None] = {c.name: c.value for c in topic.configs}
        try:
            self.core.topics.check_new(name, configs)
        # KafkaProtocolError's constructor takes ``**ids: Any``: the one Any this module sees.
        except KafkaProtocolError as exc:  # type: ignore[misc]
            return _refused_topic(name, exc.code, exc.message or str(exc))
        partitions, replication = int(topic.num_partitions), int(topic.replication_factor)
        brokers = {self.core.node_id}
        if topic.assignments:
            given = [
                (int(a.partition_index), [int(b) for b in a.broker_ids]) for a in topic.assignments
            ]
            refusal = assignment_refusal(given, partitions, replication, brokers)
            partitions, replication = len(given), 1
        else:
            if partitions == -1:
                partitions = self.core.config.get_int("num.partitions")
            replication = 1 if replication == -1 else replication  # default.replication.factor
            refusal = counts_refusal(partitions, replication, len(brokers))
        if refusal is not None:
            return _refused_topic(name, *refusal)
        if (quota := mutation_quota()) is not None and not quota.permit(partitions):
            return _refused_topic(name, ErrorCode.THROTTLING_QUOTA_EXCEEDED, None)
        result = self.core.create_topic(
            name,
            partitions,
            replication,
            {k: v for k, v in configs.items() if v is not None},
            validate_only=validate_only,
        )
        return CreatableTopicResult(
            name=name,
            topic_id=uuid.UUID(result.topic_id) if result.topic_id else uuid.UUID(int=0),
            error_code=result.error,
            error_message=result.message,
            num_partitions=result.num_partitions,
            replication_factor=1 if result.error is ErrorCode.NONE else -1,
            configs=(),
        )

    @api(ApiKey.ALTER_CONFIGS)
    async def alter_configs(
        self, req: DecodedRequest[AlterConfigsRequestView]
    ) -> AlterConfigsResponse:
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
                    self.core.node_id, name, ops, replace_all=True
                )
                current = self.core.dynamic.configs_of(name)
                legacy = legacy_broker_ops(list(current), [(c.name, c.value) for c in r.configs])
                stores = tls_store_refusal(self.core.dynamic.static, current, legacy)
                if error is ErrorCode.NONE and stores is not None:
                    error, message = stores
                if error is ErrorCode.NONE and not body.validate_only:
                    self.core.alter_broker_configs(name, legacy)
            elif rtype == _BROKER_LOGGER_RESOURCE:
                message = f"Unknown resource type {rtype}"  # Kafka's: incremental alters only
            else:
                message = f"AlterConfigs does not alter resource type {rtype}"
            responses.append(
                AlterConfigsResourceResponse(
                    error_code=error, error_message=message, resource_type=rtype, resource_name=name
                )
            )
        return AlterConfigsResponse(responses=tuple(responses))

    @api(ApiKey.DELETE_TOPICS)
    async def delete_topics(
        self, req: DecodedRequest[DeleteTopicsRequestView]
    ) -> DeleteTopicsResponse:
        body = req.body
        entries: list[tuple[str | None, uuid.UUID | None]]
        if hasattr(body, "topic_names"):
            entries = [(n, None) for n in cast(DeleteTopicsRequestV1To5View, body).topic_names]
        else:
            entries = [
                (t.name, t.topic_id if t.topic_id is not None and t.topic_id.int else None)
                for t in cast(DeleteTopicsRequestV6To6View, body).topics
            ]
        # Kafka refuses names or ids given twice, and a name whose topic's id is given too.
        names = [n for n, _ in entries if n is not None]
        ids = [i for n, i in entries if n is None and i is not None]
        twice, ids_twice = set(duplicated(names)), set(duplicated(ids))
        out: list[DeletableTopicResult] = []
        answered: set[str | uuid.UUID] = set()
        for name, topic_id in entries:
            if name is not None:
                info = self.core.topics.get(name)
                if name in answered:
                    continue
                answered.add(name)
                if name in twice:
                    out.append(_refused_deletion(name, None, "Duplicate topic name."))
                elif info is not None and info.topic_id in ids:
                    answered.add(info.topic_id)
                    out.append(
                        _refused_deletion(
                            name,
                            info.topic_id,
                            "The provided topic name maps to an ID that was already supplied.",
                        )
                    )
                else:
                    out.append(self._delete_topic(name))
                continue
            if topic_id is None or topic_id in answered:
                continue
            answered.add(topic_id)
            info = self.core.topics.by_id(topic_id)
            if topic_id in ids_twice:
                out.append(_refused_deletion(None, topic_id, "Duplicate topic id."))
            elif info is not None and info.name in names:
                continue  # answered under its name
            elif info is None:
                out.append(
                    DeletableTopicResult(
                        name=None,
                        topic_id=topic_id,
                        error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                        error_message="This server does not host this topic ID.",
                    )
                )
            else:
                out.append(self._delete_topic(info.name))
        return DeleteTopicsResponse(responses=tuple(out))

    def _delete_topic(self, name: str) -> DeletableTopicResult:
        info = self.core.topics.get(name)
        quota = mutation_quota()
        if (
            quota is not None
            and info is not None
            and delete_refusal(name) is None
            and not quota.permit(info.num_partitions)
        ):
            return DeletableTopicResult(
                name=name,
                topic_id=info.topic_id,
                error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                error_message=None,
            )
        result = self.core.delete_topic(name)
        return DeletableTopicResult(
            name=name,
            topic_id=uuid.UUID(result.topic_id) if result.topic_id else uuid.UUID(int=0),
            error_code=result.error,
            error_message=result.message,
        )

    @api(ApiKey.CREATE_PARTITIONS)
    async def create_partitions(
        self, req: DecodedRequest[CreatePartitionsRequestView]
    ) -> CreatePartitionsResponse:
        validate_only = bool(req.body.validate_only)
        # Kafka answers a name given twice once, INVALID_REQUEST, before the other topics.
        twice = duplicated([t.name for t in req.body.topics])
        topics = [t for t in req.body.topics if t.name not in twice]
        head = tuple(
            CreatePartitionsTopicResult(name=name, error_code=code, error_message=message)
            for name in twice
            for code, message in (DUPLICATE,)
        )
        refusal = create_partitions_refusal(
            int(t.count) - info.num_partitions
            for t in topics
            if (info := self.core.topics.get(t.name)) is not None
        )
        if refusal is not None:  # Kafka's controller refuses the whole request
            code, message = refusal
            return CreatePartitionsResponse(
                results=head
                + tuple(
                    CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=message)
                    for t in topics
                )
            )
        results = tuple(self._create_partitions(t, validate_only) for t in topics)
        return CreatePartitionsResponse(results=head + results)

    def _create_partitions(
        self, topic: CreatePartitionsTopicView, validate_only: bool
    ) -> CreatePartitionsTopicResult:
        name, count = str(topic.name), int(topic.count)
        refusal = partitions_refusal(name)
        info = self.core.topics.get(name)
        if refusal is None and info is None:
            refusal = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        if refusal is None and info is not None:
            if (message := partition_count_error(name, info.num_partitions, count)) is not None:
                refusal = ErrorCode.INVALID_PARTITIONS, message
            elif topic.assignments is not None:
                refusal = added_assignments_refusal(
                    count - info.num_partitions,
                    [[int(b) for b in a.broker_ids] for a in topic.assignments],
                    {self.core.node_id},
                    1,
                )
        if refusal is not None:
            code, text = refusal
            return CreatePartitionsTopicResult(name=name, error_code=code, error_message=text)
        quota = mutation_quota()
        if quota is not None and info is not None and not quota.permit(count - info.num_partitions):
            return CreatePartitionsTopicResult(
                name=name, error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED, error_message=None
            )
        result = self.core.create_partitions(name, count, validate_only=validate_only)
        return CreatePartitionsTopicResult(
            name=name, error_code=result.error, error_message=result.message
        )

    @api(ApiKey.DELETE_RECORDS)
    async def delete_records(
        self, req: DecodedRequest[DeleteRecordsRequestView]
    ) -> DeleteRecordsResponse:
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


def _refused_topic(name: str, code: ErrorCode, message: str | None) -> CreatableTopicResult:
    """CreateTopicsRequest.getErrorResponse's entry for one topic."""
    return CreatableTopicResult(
        name=name,
        topic_id=uuid.UUID(int=0),
        error_code=code,
        error_message=message,
        configs=(),
    )


def _refused_deletion(
    name: str | None, topic_id: uuid.UUID | None, message: str
) -> DeletableTopicResult:
    return DeletableTopicResult(
        name=name,
        topic_id=topic_id or uuid.UUID(int=0),
        error_code=ErrorCode.INVALID_REQUEST,
        error_message=message,
    )
