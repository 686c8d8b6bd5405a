"""Cluster and metadata APIs: ApiVersions, Metadata, DescribeCluster, FindCoordinator,
DescribeConfigs, DescribeLogDirs."""

from __future__ import annotations

import uuid
from typing import Any, cast

from coordinator.broker import BrokerCore
from coordinator.protocol.admin_request_views import UpdateFeaturesRequestView
from coordinator.protocol.api_versions import SUPPORTED
from coordinator.protocol.broker_loggers import (
    describe_broker_loggers,
    describe_logger_resource_error,
)
from coordinator.protocol.cluster_messages import (
    ApiVersion,
    ApiVersionsResponse,
    Coordinator,
    DescribeClusterBroker,
    DescribeClusterResponse,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeLogDirsPartition,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
    FindCoordinatorResponse,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
    UpdateFeaturesResponse,
)
from coordinator.protocol.config_describe import (
    broker_resource_error,
    describe_broker_configs,
    describe_cluster_default_configs,
    describe_group_configs,
    describe_topic_configs,
    describe_topic_name_error,
)
from coordinator.protocol.features import (
    FINALIZED_EPOCH,
    finalized_features,
    supported_features,
    update_features,
)
from coordinator.protocol.request_views import (
    ApiVersionsRequestView,
    DescribeClusterRequestView,
    DescribeConfigsRequestView,
    DescribeLogDirsRequestView,
    FindCoordinatorRequestView,
    MetadataRequestView,
)
from coordinator.protocol.responses import Handler, api, handler_table
from coordinator.protocol.share_handlers import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    ShareHandlers,
)
from coordinator.protocol.wire import DecodedRequest, optional
from coordinator.security.listeners import CURRENT_ENDPOINT
from coordinator.topics import TopicInfo
from txn.api_keys import ApiKey
from txn.errors import ErrorCode
from txn.ids import (
    GROUP_METADATA_TOPIC,
    KAFKA_INTERNAL_TOPICS,
    KEY_TYPE_GROUP,
    KEY_TYPE_SHARE,
    KEY_TYPE_TRANSACTION,
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
    TopicPartition,
)
from txn.topic_names import topic_name_error

#: FindCoordinator's key type -> the internal topic Kafka creates on its first lookup.
_COORDINATOR_TOPICS = {
    KEY_TYPE_GROUP: GROUP_METADATA_TOPIC,
    KEY_TYPE_TRANSACTION: TRANSACTION_STATE_TOPIC,
    KEY_TYPE_SHARE: SHARE_GROUP_STATE_TOPIC,
}


class ClusterHandlers:
    def __init__(self, core: BrokerCore, host: str, port: int, share: ShareHandlers) -> None:
        self.core = core
        self.host = host
        self.port = port
        self.share = share
        self.table: dict[int, Handler] = handler_table(self)

    def endpoint(self) -> tuple[str, int]:
        """The advertised address of the listener the current request came in on."""
        current = CURRENT_ENDPOINT.get()
        return current if current is not None else (self.host, self.port)

    def _broker(self) -> dict[str, Any]:
        """This broker as the share handlers' responses list it."""
        host, port = self.endpoint()
        return {"node_id": self.core.node_id, "host": host, "port": port, "rack": None}

    @api(ApiKey.API_VERSIONS)
    async def api_versions(
        self, req: DecodedRequest[ApiVersionsRequestView]
    ) -> ApiVersionsResponse:
        keys = tuple(
            ApiVersion(api_key=key, min_version=lo, max_version=hi)
            for key, (_name, lo, hi) in sorted(SUPPORTED.items())
        )
        if req.api_version < 3:
            return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=keys)
        # KIP-1289 is told by share.transaction.version: its API keys alone collide with
        # Kafka 4.4's (coordinator.protocol.features).
        return ApiVersionsResponse(
            error_code=ErrorCode.NONE,
            api_keys=keys,
            supported_features=supported_features(req.api_version),
            finalized_features_epoch=FINALIZED_EPOCH,
            finalized_features=finalized_features(),
        )

    @api(ApiKey.UPDATE_FEATURES)
    async def update_features(
        self, req: DecodedRequest[UpdateFeaturesRequestView]
    ) -> UpdateFeaturesResponse:
        """The levels are fixed (``coordinator.protocol.features``): only the current ones
        are accepted, as Kafka's controller accepts only levels it supports."""
        updates = [(str(u.feature), int(u.max_version_level)) for u in req.body.feature_updates]
        return update_features(updates, self.core.node_id, req.api_version)

    @api(ApiKey.METADATA)
    async def metadata(self, req: DecodedRequest[MetadataRequestView]) -> MetadataResponse:
        body = req.body
        requested = body.topics
        auto_create = bool(optional(body, "allow_auto_topic_creation", default=True))
        infos: list[tuple[str | None, TopicInfo | None]]
        cluster_id = self.core.cluster_id
        if requested is None or (req.api_version == 0 and not requested):
            infos = [(t.name, t) for t in self.core.visible_topics()]
            # Kafka lists its internal topics too once created (is_internal; clients leave them
            # out).
            infos += [(t.name, t) for t in self.core.internal_topics.all_listed(cluster_id)]
        else:
            infos = []
            for topic in requested:
                name = topic.name
                topic_id: uuid.UUID | None = optional(topic, "topic_id", default=None)
                # By id when one is given: Java's consumer names assigned topic ids with "".
                if not name and topic_id is not None and topic_id.int != 0:
                    info = self.core.topics.by_id(topic_id)
                    infos.append((info.name if info else None, info))
                    continue
                # A null name without an id (v10+) is looked up as None, as it was before the
                # request was typed: the view says ``str | None``, the registry takes ``str``.
                looked_up = cast(str, name)
                if looked_up in KAFKA_INTERNAL_TOPICS:
                    # Kafka creates its internal topic when auto-creation would create a topic.
                    if auto_create and self.core.config.get_bool("auto.create.topics.enable"):
                        self.core.internal_topics.create(looked_up, self.core.clock.now_ms())
                    info = self.core.internal_topics.listed(looked_up, cluster_id)
                elif auto_create:
                    info = self.core.ensure_topic(looked_up)
                else:
                    info = self.core.topics.get(looked_up)
                infos.append((name, info))
        topics: list[MetadataResponseTopic] = []
        node = self.core.node_id
        for name, info in infos:
            if info is None:
                # Kafka checks the name of a topic it does not know, with or without
                # auto-creation: an illegal name is INVALID_TOPIC_EXCEPTION (not retriable),
                # so clients fail at once instead of waiting for the topic to appear.
                illegal = name is not None and topic_name_error(name) is not None
                topics.append(
                    MetadataResponseTopic(
                        error_code=ErrorCode.INVALID_TOPIC_EXCEPTION
                        if illegal
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        name=name,
                        topic_id=uuid.UUID(int=0),
                        is_internal=name in KAFKA_INTERNAL_TOPICS,  # as Kafka, before creation
                    )
                )
                continue
            topics.append(
                MetadataResponseTopic(
                    error_code=ErrorCode.NONE,
                    name=info.name,
                    topic_id=info.topic_id,
                    is_internal=info.internal,
                    partitions=tuple(
                        MetadataResponsePartition(
                            error_code=ErrorCode.NONE,
                            partition_index=i,
                            leader_id=node,
                            leader_epoch=0,
                            replica_nodes=(node,),
                            isr_nodes=(node,),
                        )
                        for i in range(info.num_partitions)
                    ),
                )
            )
        host, port = self.endpoint()
        return MetadataResponse(
            brokers=(MetadataResponseBroker(node_id=node, host=host, port=port),),
            cluster_id=self.core.cluster_id,
            controller_id=node,
            topics=tuple(topics),
        )

    @api(ApiKey.DESCRIBE_CLUSTER)
    async def describe_cluster(
        self, req: DecodedRequest[DescribeClusterRequestView]
    ) -> DescribeClusterResponse:
        host, port = self.endpoint()
        return DescribeClusterResponse(
            error_code=ErrorCode.NONE,
            cluster_id=self.core.cluster_id,
            controller_id=self.core.node_id,
            brokers=(DescribeClusterBroker(broker_id=self.core.node_id, host=host, port=port),),
        )

    @api(ApiKey.FIND_COORDINATOR)
    async def find_coordinator(
        self, req: DecodedRequest[FindCoordinatorRequestView]
    ) -> FindCoordinatorResponse:
        body = req.body
        key_type = int(optional(body, "key_type", default=0))
        coordinator_keys: tuple[str, ...] = optional(body, "coordinator_keys", default=())
        keys = list(coordinator_keys or ())
        single: str | None = optional(body, "key", default=None)
        if single is not None:
            keys = [single]
        results: list[Coordinator] = []
        host, port = self.endpoint()
        for key in keys:
            error = ErrorCode.NONE
            message = None
            if key_type == KEY_TYPE_TRANSACTION and not key:
                error, message = ErrorCode.INVALID_REQUEST, "empty transactional id"
            elif key_type not in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, KEY_TYPE_SHARE):
                error, message = ErrorCode.INVALID_REQUEST, f"unsupported key type {key_type}"
            ok = error is ErrorCode.NONE
            results.append(
                Coordinator(
                    key=key,
                    node_id=self.core.node_id if ok else -1,
                    host=host if ok else "",
                    port=port if ok else -1,
                    error_code=error,
                    error_message=message,
                )
            )
        topic = _COORDINATOR_TOPICS.get(key_type)
        if topic is not None and any(r.error_code is ErrorCode.NONE for r in results):
            # Kafka creates the coordinators' internal topic on the first lookup.
            self.core.internal_topics.create(topic, self.core.clock.now_ms())
        if req.api_version >= 4:
            return FindCoordinatorResponse(coordinators=tuple(results))
        if not results:
            return FindCoordinatorResponse(error_code=ErrorCode.INVALID_REQUEST)
        return one_coordinator(results[0])

    @api(ApiKey.DESCRIBE_CONFIGS)
    async def describe_configs(
        self, req: DecodedRequest[DescribeConfigsRequestView]
    ) -> DescribeConfigsResponse:
        results: list[DescribeConfigsResult] = []
        docs = bool(optional(req.body, "include_documentation", default=False))
        for resource in req.body.resources:
            rtype = int(resource.resource_type)
            name = resource.resource_name
            wanted = resource.configuration_keys
            configs: list[DescribeConfigsResourceResult] = []
            error = ErrorCode.NONE
            message = None
            if rtype == RESOURCE_TOPIC:
                info = self.core.topics.get(name) or self.core.internal_topics.listed(
                    name, self.core.cluster_id
                )
                invalid = describe_topic_name_error(name)
                if invalid is not None:
                    error, message = ErrorCode.INVALID_TOPIC_EXCEPTION, invalid
                elif info is None:
                    error, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ""  # Kafka's
                else:
                    message = ""  # Kafka answers an empty message, not null
                    configs = describe_topic_configs(
                        self.core.dynamic.static,
                        info.configs,
                        wanted,
                        include_synonyms=bool(
                            optional(req.body, "include_synonyms", default=False)
                        ),
                        include_documentation=docs,
                        dynamic=self.core.dynamic.layers,
                    )
            elif rtype == RESOURCE_GROUP:
                message = ""
                configs = describe_group_configs(
                    self.core.dynamic.static,
                    self.core.share.groups.describe_group_configs(name),
                    wanted,
                    include_synonyms=bool(optional(req.body, "include_synonyms", default=False)),
                    include_documentation=docs,
                )
            elif rtype == RESOURCE_BROKER_LOGGER:
                wrong = describe_logger_resource_error(self.core.node_id, name)
                if wrong is not None:
                    error, message = ErrorCode.INVALID_REQUEST, wrong
                else:
                    message = ""
                    configs = describe_broker_loggers(wanted)
            elif rtype == RESOURCE_BROKER:
                wrong = broker_resource_error(self.core.node_id, name, describe=True)
                synonyms = bool(optional(req.body, "include_synonyms", default=False))
                if wrong is not None:
                    error, message = ErrorCode.INVALID_REQUEST, wrong
                elif name == "":
                    message = ""
                    configs = describe_cluster_default_configs(
                        wanted,
                        include_synonyms=synonyms,
                        include_documentation=docs,
                        dynamic=self.core.dynamic.layers,
                    )
                else:
                    message = ""
                    configs = describe_broker_configs(
                        self.core.dynamic.static,
                        wanted,
                        include_synonyms=synonyms,
                        include_documentation=docs,
                        dynamic=self.core.dynamic.layers,
                    )
            else:
                error, message = ErrorCode.INVALID_REQUEST, f"unsupported resource type {rtype}"
            if wanted is not None:
                configs = [c for c in configs if c.name in wanted]
            results.append(
                DescribeConfigsResult(
                    error_code=error,
                    error_message=message,
                    resource_type=rtype,
                    resource_name=name,
                    configs=tuple(configs),
                )
            )
        return DescribeConfigsResponse(results=tuple(results))

    @api(ApiKey.DESCRIBE_LOG_DIRS)
    async def describe_log_dirs(
        self, req: DecodedRequest[DescribeLogDirsRequestView]
    ) -> DescribeLogDirsResponse:
        """One log directory (the data dir) with the size of each partition's segments."""
        wanted = req.body.topics
        selected: dict[str, set[int] | None] | None = None
        if wanted is not None:
            selected = {t.topic: {int(p) for p in t.partitions} for t in wanted}
        topics: list[DescribeLogDirsTopic] = []
        for info in self.core.visible_topics():
            if selected is not None and info.name not in selected:
                continue
            parts: list[DescribeLogDirsPartition] = []
            for index in range(info.num_partitions):
                chosen = selected[info.name] if selected is not None else None
                if chosen is not None and index not in chosen:
                    continue
                size = self.core.partition_size(TopicPartition(info.name, index))
                if size is not None:
                    parts.append(
                        DescribeLogDirsPartition(partition_index=index, partition_size=size)
                    )
            if parts:
                topics.append(DescribeLogDirsTopic(name=info.name, partitions=tuple(parts)))
        result = DescribeLogDirsResult(
            error_code=ErrorCode.NONE, log_dir=self.core.log_dir, topics=tuple(topics)
        )
        return DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=(result,))


def one_coordinator(entry: Coordinator) -> FindCoordinatorResponse:
    """The FindCoordinator answer of v3 and earlier: the one key's coordinator (or error)."""
    return FindCoordinatorResponse(
        error_code=entry.error_code,
        error_message=entry.error_message,
        node_id=entry.node_id,
        host=entry.host,
        port=entry.port,
    )


def config_entry(
    name: str, value: str | None, *, source: int, doc: str | None = None
) -> DescribeConfigsResourceResult:
    """A config as DescribeConfigs shows it; the static broker configs (5) are read-only."""
    return DescribeConfigsResourceResult(
        name=name, value=value, read_only=source == 5, config_source=source, documentation=doc
    )
