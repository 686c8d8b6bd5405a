"""Kafka API handlers: decoded kio requests in, version-free response dicts out.

This is the thin adapter between the wire and ``BrokerCore``.  Each handler
reads request fields by name (``wire.field`` copes with names that differ
across versions), calls the core and returns a dict that ``wire.render``
turns into the negotiated response version.  Only Fetch is asynchronous: it
long-polls until ``min_bytes`` are available or ``max_wait`` passes.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from coordinator.broker import BrokerCore
from coordinator.log_settings import default_topic_configs
from coordinator.protocol.api_versions import SUPPORTED
from coordinator.protocol.group_handlers import GroupHandlers
from coordinator.protocol.share_handlers import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    ShareHandlers,
)
from coordinator.protocol.wire import DecodedRequest, field
from coordinator.security.listeners import CURRENT_ENDPOINT
from coordinator.topics import TopicInfo
from txn.config import CONFIG_DEFS
from txn.errors import ErrorCode
from txn.ids import TRANSACTION_STATE_TOPIC, TopicPartition
from txn.kip1289_schema import KIP1289_FEATURE, KIP1289_FEATURE_LEVEL
from txn.limits import INT32_MAX
from txn.security_config import is_sensitive
from txn.topic_names import topic_name_error

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2  # share coordinator, key "group:topicId:partition" (KIP-932)

Handler = Callable[[DecodedRequest], Awaitable[dict[str, Any] | None]]


def _ms(value: Any) -> int:
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


class Handlers:
    """Dispatch table for the APIs in ``api_versions.SUPPORTED``."""

    def __init__(
        self,
        core: BrokerCore,
        host: str,
        port: int,
        wait_for_append: Callable[[float], Awaitable[None]],
    ) -> None:
        self.core = core
        self.host = host
        self.port = port
        self._wait_for_append = wait_for_append
        self.table: dict[int, Handler] = {
            0: self.produce,
            1: self.fetch,
            2: self.list_offsets,
            3: self.metadata,
            10: self.find_coordinator,
            18: self.api_versions,
            19: self.create_topics,
            20: self.delete_topics,
            21: self.delete_records,
            22: self.init_producer_id,
            24: self.add_partitions_to_txn,
            26: self.end_txn,
            32: self.describe_configs,
            35: self.describe_log_dirs,
            37: self.create_partitions,
            60: self.describe_cluster,
            61: self.describe_producers,
            65: self.describe_transactions,
            66: self.list_transactions,
        }
        self.share = ShareHandlers(core, wait_for_append, self._broker)
        self.table.update(self.share.table)
        self.groups = GroupHandlers(core)
        self.table.update(self.groups.table)

    def endpoint(self) -> tuple[str, int]:
        """The advertised address of the listener the current request came in on."""
        current = CURRENT_ENDPOINT.get()
        return current if current is not None else (self.host, self.port)

    def _broker(self) -> dict[str, Any]:
        host, port = self.endpoint()
        return {"node_id": self.core.node_id, "host": host, "port": port, "rack": None}

    # -- cluster ---------------------------------------------------------------------------------

    async def api_versions(self, req: DecodedRequest) -> dict[str, Any]:
        keys = [
            {"api_key": key, "min_version": lo, "max_version": hi}
            for key, (_name, lo, hi) in sorted(SUPPORTED.items())
        ]
        answer: dict[str, Any] = {"error_code": ErrorCode.NONE, "api_keys": keys}
        if req.api_version >= 3:
            # KIP-1289 is told by this feature: its API keys alone collide with Kafka 4.4's.
            level = KIP1289_FEATURE_LEVEL
            answer["supported_features"] = [
                {"name": KIP1289_FEATURE, "min_version": level, "max_version": level}
            ]
            answer["finalized_features_epoch"] = 0
            answer["finalized_features"] = [
                {"name": KIP1289_FEATURE, "max_version_level": level, "min_version_level": level}
            ]
        return answer

    async def metadata(self, req: DecodedRequest) -> dict[str, Any]:
        body = req.body
        requested = body.topics
        auto_create = bool(field(body, "allow_auto_topic_creation", default=True))
        infos: list[tuple[str | None, TopicInfo | None]]
        if requested is None or (req.api_version == 0 and not requested):
            infos = [(t.name, t) for t in self.core.visible_topics()]
        else:
            infos = []
            for topic in requested:
                name = field(topic, "name")
                topic_id = field(topic, "topic_id")
                if name is None and topic_id is not None:
                    info = self.core.topics.by_id(topic_id)
                    infos.append((info.name if info else None, info))
                    continue
                info = self.core.ensure_topic(name) if auto_create else self.core.topics.get(name)
                infos.append((name, info))
        topics: list[dict[str, Any]] = []
        for name, info in infos:
            if info is None:
                # Kafka checks the name of a topic it does not know, with or without
                # auto-creation: an illegal name is INVALID_TOPIC_EXCEPTION (not retriable),
                # so clients fail at once instead of waiting for the topic to appear.
                illegal = name is not None and topic_name_error(name) is not None
                topics.append(
                    {
                        "error_code": ErrorCode.INVALID_TOPIC_EXCEPTION
                        if illegal
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        "name": name,
                        "topic_id": uuid.UUID(int=0),
                        "partitions": [],
                    }
                )
                continue
            topics.append(
                {
                    "error_code": ErrorCode.NONE,
                    "name": info.name,
                    "topic_id": info.topic_id,
                    "is_internal": info.internal or info.name == TRANSACTION_STATE_TOPIC,
                    "partitions": [
                        {
                            "error_code": ErrorCode.NONE,
                            "partition_index": i,
                            "leader_id": self.core.node_id,
                            "leader_epoch": 0,
                            "replica_nodes": [self.core.node_id],
                            "isr_nodes": [self.core.node_id],
                            "offline_replicas": [],
                        }
                        for i in range(info.num_partitions)
                    ],
                    "topic_authorized_operations": -2147483648,
                }
            )
        return {
            "brokers": [self._broker()],
            "cluster_id": self.core.cluster_id,
            "controller_id": self.core.node_id,
            "topics": topics,
        }

    async def describe_cluster(self, req: DecodedRequest) -> dict[str, Any]:
        host, port = self.endpoint()
        return {
            "error_code": ErrorCode.NONE,
            "endpoint_type": 1,
            "cluster_id": self.core.cluster_id,
            "controller_id": self.core.node_id,
            "brokers": [{"broker_id": self.core.node_id, "host": host, "port": port, "rack": None}],
            "cluster_authorized_operations": -2147483648,
        }

    async def find_coordinator(self, req: DecodedRequest) -> dict[str, Any]:
        body = req.body
        key_type = int(field(body, "key_type", default=0))
        keys = list(field(body, "coordinator_keys", default=()) or ())
        single = field(body, "key")
        if single is not None:
            keys = [single]
        results: list[dict[str, Any]] = []
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
                {
                    "key": key,
                    "node_id": self.core.node_id if ok else -1,
                    "host": host if ok else "",
                    "port": port if ok else -1,
                    "error_code": error,
                    "error_message": message,
                }
            )
        if req.api_version >= 4:
            return {"coordinators": results}
        first = results[0] if results else {"error_code": ErrorCode.INVALID_REQUEST}
        return {
            "error_code": first["error_code"],
            "error_message": first.get("error_message"),
            "node_id": first.get("node_id", -1),
            "host": first.get("host", ""),
            "port": first.get("port", -1),
        }

    async def describe_configs(self, req: DecodedRequest) -> dict[str, Any]:
        results: list[dict[str, Any]] = []
        for resource in req.body.resources:
            rtype = int(resource.resource_type)
            name = resource.resource_name
            wanted = resource.configuration_keys
            configs: list[dict[str, Any]] = []
            error = ErrorCode.NONE
            message = None
            if rtype == RESOURCE_TOPIC:
                info = self.core.topics.get(name)
                if info is None:
                    error, message = (
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"topic {name!r} does not exist",
                    )
                else:
                    defaults = default_topic_configs(self.core.config)
                    for key, (text, static) in defaults.items():
                        if key not in info.configs:
                            configs.append(_config_entry(key, text, source=4 if static else 5))
                    for key, value in info.configs.items():
                        configs.append(_config_entry(key, value, source=1))
                    configs.sort(key=lambda c: str(c["name"]))
            elif rtype == RESOURCE_GROUP:
                configs = self.share.describe_group_configs(name)
            elif rtype == RESOURCE_BROKER:
                for defn in CONFIG_DEFS:
                    value = self.core.config[defn.name]
                    shown = None if value is None else str(value)
                    if isinstance(value, bool):
                        shown = str(value).lower()
                    entry = _config_entry(defn.name, shown, source=5, doc=defn.doc)
                    if is_sensitive(defn.name):
                        entry.update(value=None, is_sensitive=True)  # Kafka hides them
                    configs.append(entry)
            else:
                error, message = ErrorCode.INVALID_REQUEST, f"unsupported resource type {rtype}"
            if wanted is not None:
                configs = [c for c in configs if c["name"] in wanted]
            results.append(
                {
                    "error_code": error,
                    "error_message": message,
                    "resource_type": rtype,
                    "resource_name": name,
                    "configs": configs,
                }
            )
        return {"results": results}

    async def describe_log_dirs(self, req: DecodedRequest) -> dict[str, Any]:
        """One log directory (the data dir) with the size of each partition's segments."""
        wanted = req.body.topics
        selected: dict[str, set[int] | None] | None = None
        if wanted is not None:
            selected = {t.topic: {int(p) for p in t.partitions} for t in wanted}
        topics: list[dict[str, Any]] = []
        for info in self.core.visible_topics():
            if selected is not None and info.name not in selected:
                continue
            parts = []
            for index in range(info.num_partitions):
                chosen = selected[info.name] if selected is not None else None
                if chosen is not None and index not in chosen:
                    continue
                size = self.core.partition_size(TopicPartition(info.name, index))
                if size is not None:
                    parts.append(
                        {
                            "partition_index": index,
                            "partition_size": size,
                            "offset_lag": 0,
                            "is_future_key": False,
                        }
                    )
            if parts:
                topics.append({"name": info.name, "partitions": parts})
        result = {"error_code": ErrorCode.NONE, "log_dir": self.core.log_dir, "topics": topics}
        return {"error_code": ErrorCode.NONE, "results": [result]}

    # -- topics ---------------------------------------------------------------------------------

    async def create_topics(self, req: DecodedRequest) -> dict[str, Any]:
        body = req.body
        validate_only = bool(field(body, "validate_only", default=False))
        out: list[dict[str, Any]] = []
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
                {
                    "name": topic.name,
                    "topic_id": uuid.UUID(result.topic_id) if result.topic_id else uuid.UUID(int=0),
                    "error_code": result.error,
                    "error_message": result.message,
                    "num_partitions": result.num_partitions,
                    "replication_factor": 1 if result.error is ErrorCode.NONE else -1,
                    "configs": [],
                }
            )
        return {"topics": out}

    async def delete_topics(self, req: DecodedRequest) -> dict[str, Any]:
        body = req.body
        names: list[tuple[str | None, uuid.UUID | None]] = []
        if hasattr(body, "topic_names"):
            names = [(n, None) for n in body.topic_names]
        else:
            names = [(t.name, t.topic_id) for t in body.topics]
        out: list[dict[str, Any]] = []
        for requested, topic_id in names:
            name = requested
            if name is None and topic_id is not None:
                info = self.core.topics.by_id(topic_id)
                name = info.name if info else None
            if name is None:
                out.append(
                    {"name": None, "topic_id": topic_id, "error_code": ErrorCode.UNKNOWN_TOPIC_ID}
                )
                continue
            result = self.core.delete_topic(name)
            out.append(
                {
                    "name": name,
                    "topic_id": uuid.UUID(result.topic_id) if result.topic_id else uuid.UUID(int=0),
                    "error_code": result.error,
                    "error_message": result.message,
                }
            )
        return {"responses": out}

    async def create_partitions(self, req: DecodedRequest) -> dict[str, Any]:
        validate_only = bool(field(req.body, "validate_only", default=False))
        results: list[dict[str, Any]] = []
        for topic in req.body.topics:
            result = self.core.create_partitions(
                topic.name, int(topic.count), validate_only=validate_only
            )
            results.append(
                {"name": topic.name, "error_code": result.error, "error_message": result.message}
            )
        return {"results": results}

    async def delete_records(self, req: DecodedRequest) -> dict[str, Any]:
        topics: list[dict[str, Any]] = []
        for topic in req.body.topics:
            parts: list[dict[str, Any]] = []
            for p in topic.partitions:
                error, low = self.core.delete_records(
                    TopicPartition(topic.name, int(p.partition_index)), int(p.offset)
                )
                parts.append(
                    {
                        "partition_index": p.partition_index,
                        "low_watermark": low if error is ErrorCode.NONE else -1,
                        "error_code": error,
                    }
                )
            topics.append({"name": topic.name, "partitions": parts})
        return {"topics": topics}

    # -- produce / fetch / offsets --------------------------------------------------------------

    async def produce(self, req: DecodedRequest) -> dict[str, Any] | None:
        body = req.body
        transactional_id = field(body, "transactional_id")
        acks_ok = int(body.acks) in (-1, 0, 1)
        responses: list[dict[str, Any]] = []
        for topic in body.topic_data:
            parts: list[dict[str, Any]] = []
            for pdata in topic.partition_data:
                tp = TopicPartition(topic.name, int(pdata.index))
                msg: str | None
                record_errors: tuple[tuple[int, str], ...] = ()
                if not acks_ok:  # Kafka refuses the whole request before appending anything
                    result_error, base, start, msg = ErrorCode.INVALID_REQUIRED_ACKS, -1, -1, None
                elif pdata.records is None:
                    result_error, base, start, msg = ErrorCode.CORRUPT_MESSAGE, -1, -1, "no records"
                else:
                    result = self.core.produce(tp, bytes(pdata.records), transactional_id)
                    record_errors = result.record_errors
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
                    {
                        "index": pdata.index,
                        "error_code": result_error,
                        "base_offset": base,
                        "log_append_time": None if req.api_version >= 2 else -1,
                        "log_start_offset": start,
                        "error_message": msg if result_error is not ErrorCode.NONE else None,
                        "record_errors": [
                            {"batch_index": i, "batch_index_error_message": m}
                            for i, m in record_errors
                        ],
                    }
                )
            responses.append({"name": topic.name, "partition_responses": parts})
        if int(body.acks) == 0:
            return None
        return {"responses": responses}

    def _fetch_once(self, req: DecodedRequest) -> tuple[dict[str, Any], int]:
        body = req.body
        read_committed = int(field(body, "isolation_level", default=0)) == 1
        total = 0
        budget = int(field(body, "max_bytes", default=INT32_MAX))
        responses: list[dict[str, Any]] = []
        for topic in body.topics:
            topic_id = field(topic, "topic_id")
            name = field(topic, "topic")
            info = self.core.topics.by_id(topic_id) if name is None else self.core.topics.get(name)
            parts: list[dict[str, Any]] = []
            for p in topic.partitions:
                index = int(p.partition)
                if info is None:
                    error = (
                        ErrorCode.UNKNOWN_TOPIC_ID
                        if name is None
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    )
                    parts.append(
                        {
                            "partition_index": index,
                            "error_code": error,
                            "high_watermark": -1,
                            "last_stable_offset": -1,
                            "log_start_offset": -1,
                            "aborted_transactions": [],
                            "records": b"",
                        }
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
                        {
                            "partition_index": index,
                            "error_code": data.error,
                            "high_watermark": -1,
                            "last_stable_offset": -1,
                            "log_start_offset": -1,
                            "aborted_transactions": (
                                [] if data.error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else None
                            ),
                            "records": b"",
                        }
                    )
                    continue
                parts.append(
                    {
                        "partition_index": index,
                        "error_code": data.error,
                        "high_watermark": data.high_watermark,
                        "last_stable_offset": data.last_stable_offset,
                        "log_start_offset": data.log_start_offset,
                        "aborted_transactions": (
                            None
                            if data.aborted is None
                            else [
                                {"producer_id": a.producer_id, "first_offset": a.first_offset}
                                for a in data.aborted
                            ]
                        ),
                        "records": records,
                    }
                )
            entry: dict[str, Any] = {"partitions": parts}
            if name is None:
                entry["topic_id"] = topic_id
            else:
                entry["topic"] = name
            responses.append(entry)
        return {"error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}, total

    async def fetch(self, req: DecodedRequest) -> dict[str, Any]:
        body = req.body
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _ms(body.max_wait) / 1000.0
        min_bytes = int(body.min_bytes)
        while True:
            response, size = self._fetch_once(req)
            remaining = deadline - loop.time()
            if size >= max(min_bytes, 1) or remaining <= 0 or _has_error(response):
                return response
            await self._wait_for_append(remaining)

    async def list_offsets(self, req: DecodedRequest) -> dict[str, Any]:
        body = req.body
        read_committed = int(field(body, "isolation_level", default=0)) == 1
        topics: list[dict[str, Any]] = []
        for topic in body.topics:
            parts: list[dict[str, Any]] = []
            for p in topic.partitions:
                error, offset, ts = self.core.list_offset(
                    TopicPartition(topic.name, int(p.partition_index)),
                    int(p.timestamp),
                    read_committed=read_committed,
                )
                parts.append(
                    {
                        "partition_index": p.partition_index,
                        "error_code": error,
                        "timestamp": ts,
                        "offset": offset,
                        "leader_epoch": 0 if error is ErrorCode.NONE else -1,
                    }
                )
            topics.append({"name": topic.name, "partitions": parts})
        return {"topics": topics}

    # -- transactions ---------------------------------------------------------------------------

    async def init_producer_id(self, req: DecodedRequest) -> dict[str, Any]:
        body = req.body
        result = self.core.txn_coordinator.init_producer_id(
            body.transactional_id,
            _ms(body.transaction_timeout),
            int(field(body, "producer_id", default=-1)),
            int(field(body, "producer_epoch", default=-1)),
            enable_2pc=bool(field(body, "enable2_pc", default=False)),
            keep_prepared_txn=bool(field(body, "keep_prepared_txn", default=False)),
        )
        error = result.error
        if error is ErrorCode.PRODUCER_FENCED and req.api_version < 4:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        return {
            "error_code": error,
            "producer_id": result.producer_id,
            "producer_epoch": result.producer_epoch,
            "ongoing_txn_producer_id": result.ongoing_txn_producer_id,
            "ongoing_txn_producer_epoch": result.ongoing_txn_producer_epoch,
        }

    async def add_partitions_to_txn(self, req: DecodedRequest) -> dict[str, Any]:
        body = req.body
        coordinator = self.core.txn_coordinator
        if req.api_version <= 3:
            partitions = [
                TopicPartition(t.name, int(p))
                for t in body.v3_and_below_topics
                for p in t.partitions
            ]
            unknown = {tp for tp in partitions if not self._partition_exists(tp)}
            if unknown:
                # As Kafka: nothing is added when one partition is unknown.
                return {
                    "results_by_topic_v3_and_below": _by_topic(
                        {
                            tp: (
                                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                                if tp in unknown
                                else ErrorCode.OPERATION_NOT_ATTEMPTED
                            )
                            for tp in partitions
                        }
                    )
                }
            results = coordinator.add_partitions_to_txn(
                body.v3_and_below_transactional_id,
                int(body.v3_and_below_producer_id),
                int(body.v3_and_below_producer_epoch),
                partitions,
            )
            if req.api_version < 2:
                results = {
                    tp: (ErrorCode.INVALID_PRODUCER_EPOCH if e is ErrorCode.PRODUCER_FENCED else e)
                    for tp, e in results.items()
                }
            return {"results_by_topic_v3_and_below": _by_topic(results)}
        per_txn: list[dict[str, Any]] = []
        for txn in body.transactions:
            partitions = [TopicPartition(t.name, int(p)) for t in txn.topics for p in t.partitions]
            call = (
                coordinator.verify_partitions
                if txn.verify_only
                else coordinator.add_partitions_to_txn
            )
            results = call(
                txn.transactional_id, int(txn.producer_id), int(txn.producer_epoch), partitions
            )
            per_txn.append(
                {"transactional_id": txn.transactional_id, "topic_results": _by_topic(results)}
            )
        return {"error_code": ErrorCode.NONE, "results_by_transaction": per_txn}

    def _partition_exists(self, tp: TopicPartition) -> bool:
        info = self.core.topics.get(tp.topic)
        return info is not None and 0 <= tp.partition < info.num_partitions

    async def end_txn(self, req: DecodedRequest) -> dict[str, Any]:
        body = req.body
        result = self.core.txn_coordinator.end_txn(
            body.transactional_id,
            int(body.producer_id),
            int(body.producer_epoch),
            bool(body.committed),
            tv2=req.api_version >= 5,
        )
        error = result.error
        if error is ErrorCode.PRODUCER_FENCED and req.api_version < 2:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        return {
            "error_code": error,
            "producer_id": result.producer_id,
            "producer_epoch": result.producer_epoch,
        }

    async def list_transactions(self, req: DecodedRequest) -> dict[str, Any]:
        body = req.body
        listings = self.core.txn_coordinator.list_transactions(
            list(body.state_filters),
            [int(p) for p in body.producer_id_filters],
            int(field(body, "duration_filter", default=-1)),
        )
        known = {
            "Empty",
            "Ongoing",
            "PrepareCommit",
            "PrepareAbort",
            "CompleteCommit",
            "CompleteAbort",
            "PrepareEpochFence",
            "Dead",
        }
        return {
            "error_code": self.core.txn_coordinator.availability(),
            "unknown_state_filters": [s for s in body.state_filters if s not in known],
            "transaction_states": [
                {
                    "transactional_id": t.transactional_id,
                    "producer_id": t.producer_id,
                    "transaction_state": t.state,
                }
                for t in listings
            ],
        }

    async def describe_transactions(self, req: DecodedRequest) -> dict[str, Any]:
        descriptions = self.core.txn_coordinator.describe_transactions(
            list(req.body.transactional_ids)
        )
        states: list[dict[str, Any]] = []
        for d in descriptions:
            by_topic: dict[str, list[int]] = {}
            for tp in d.partitions:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            states.append(
                {
                    "error_code": d.error,
                    "transactional_id": d.transactional_id,
                    "transaction_state": d.state,
                    "transaction_timeout": d.transaction_timeout_ms,
                    "transaction_start_time": d.transaction_start_time_ms,
                    "producer_id": d.producer_id,
                    "producer_epoch": d.producer_epoch,
                    "topics": [
                        {"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())
                    ],
                }
            )
        return {"transaction_states": states}

    async def describe_producers(self, req: DecodedRequest) -> dict[str, Any]:
        topics: list[dict[str, Any]] = []
        for topic in req.body.topics:
            parts: list[dict[str, Any]] = []
            for index in topic.partition_indexes:
                error, producers = self.core.describe_producers(
                    TopicPartition(topic.name, int(index))
                )
                parts.append(
                    {
                        "partition_index": index,
                        "error_code": error,
                        "error_message": None,
                        "active_producers": producers,
                    }
                )
            topics.append({"name": topic.name, "partitions": parts})
        return {"topics": topics}


def _by_topic(results: dict[TopicPartition, ErrorCode]) -> list[dict[str, Any]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for tp, error in results.items():
        grouped.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "partition_error_code": error}
        )
    return [{"name": name, "results_by_partition": parts} for name, parts in grouped.items()]


def _has_error(response: dict[str, Any]) -> bool:
    return any(
        p["error_code"] is not ErrorCode.NONE
        for t in response["responses"]
        for p in t["partitions"]
    )


def _config_entry(
    name: str, value: str | None, *, source: int, doc: str | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "read_only": source == 5,
        "config_source": source,
        "is_sensitive": False,
        "synonyms": [],
        "config_type": 0,
        "documentation": doc,
    }
