"""The blocking Kafka client core: bootstrap, metadata, routing and retries.

``KafkaClient`` keeps one ``BrokerConnection`` per broker, a metadata cache
(topic -> topic id and partition leaders), and coordinator look-ups
(FindCoordinator for groups, transactions and share-state keys).  ``call``
sends a request to a node and retries retriable failures with tenacity inside
the caller's deadline; anything else surfaces as the typed exception of
``txn.errors``.  It speaks only the Kafka protocol, so the same code talks to
the sharetxn broker and to an Apache Kafka cluster for the standard APIs.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_delay,
    wait_exponential,
)

from producer.protocol.client_defaults import (
    REQUEST_TIMEOUT_MS,
    RETRY_BACKOFF_MAX_MS,
    RETRY_BACKOFF_MS,
)
from producer.protocol.connection import BrokerConnection
from producer.protocol.security import ClientSecurity
from txn.api_keys import ApiKey
from txn.errors import (
    ErrorCode,
    InvalidConfigError,
    InvalidTopicError,
    KafkaProtocolError,
    RetriableError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from txn.ids import TopicPartition
from txn.topic_names import topic_name_error

T = TypeVar("T")

log = logging.getLogger("producer.client")  # its name before the split by role


# Highest versions this client's request builders understand.
CLIENT_MAX_VERSIONS: dict[int, int] = {
    ApiKey.PRODUCE: 10,
    ApiKey.FETCH: 16,
    ApiKey.LIST_OFFSETS: 7,
    ApiKey.METADATA: 12,
    ApiKey.OFFSET_COMMIT: 9,
    ApiKey.OFFSET_FETCH: 7,  # one group, require_stable
    ApiKey.FIND_COORDINATOR: 4,  # batched keys from v4
    ApiKey.DESCRIBE_GROUPS: 5,
    ApiKey.JOIN_GROUP: 7,  # classic groups: the sink worker's "connect" group
    ApiKey.SYNC_GROUP: 5,
    ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 4,
    ApiKey.LIST_GROUPS: 5,
    ApiKey.CREATE_TOPICS: 7,
    ApiKey.DELETE_TOPICS: 6,
    ApiKey.INIT_PRODUCER_ID: 6,
    ApiKey.ADD_PARTITIONS_TO_TXN: 3,  # client form
    ApiKey.ADD_OFFSETS_TO_TXN: 3,
    ApiKey.END_TXN: 4,  # TV0/1 from clients
    ApiKey.TXN_OFFSET_COMMIT: 3,  # KIP-447 generation fencing
    ApiKey.DESCRIBE_CONFIGS: 4,
    ApiKey.DESCRIBE_LOG_DIRS: 4,
    ApiKey.DELETE_GROUPS: 2,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: 1,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: 1,  # KIP-546
    ApiKey.ALTER_CLIENT_QUOTAS: 1,
    ApiKey.OFFSET_DELETE: 0,  # KIP-496
    ApiKey.DESCRIBE_PRODUCERS: 0,
    ApiKey.DESCRIBE_TRANSACTIONS: 0,
    ApiKey.LIST_TRANSACTIONS: 1,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: 1,  # SubscribedTopicRegex; the member names itself
    ApiKey.SHARE_GROUP_HEARTBEAT: 1,
    ApiKey.SHARE_GROUP_DESCRIBE: 1,
    ApiKey.SHARE_FETCH: 2,  # ShareAcquireMode (KIP-1206)
    ApiKey.SHARE_ACKNOWLEDGE: 1,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: 1,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: 0,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: 0,
    ApiKey.TXN_SHARE_ACKNOWLEDGE: 0,  # KIP-1289
    ApiKey.ADD_SHARE_ACKS_TO_TXN: 0,  # KIP-1289
    ApiKey.DESCRIBE_SHARE_PENDING_ACKS: 0,  # sharetxn admin API
    ApiKey.CREATE_DELEGATION_TOKEN: 3,  # KIP-373 owner
    ApiKey.RENEW_DELEGATION_TOKEN: 2,
    ApiKey.EXPIRE_DELEGATION_TOKEN: 2,
    ApiKey.DESCRIBE_DELEGATION_TOKEN: 3,
}


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int


@dataclass(slots=True)
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    leaders: dict[int, int] = field(default_factory=dict)  # partition -> leader node id
    internal: bool = False  # one of Kafka's internal topics (__consumer_offsets, ...)

    @property
    def partitions(self) -> list[int]:
        return sorted(self.leaders)


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for item in servers.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not port.isdigit():
            msg = f"bootstrap.servers entry {item!r} is not HOST:PORT"
            raise ValueError(msg)
        out.append((host, int(port)))
    if not out:
        msg = "bootstrap.servers is empty"
        raise ValueError(msg)
    return out


def _unresolvable(host: str) -> bool:
    try:
        socket.getaddrinfo(host, None)
    except socket.gaierror:
        return True
    except OSError:
        return False
    return False


class _RetryLog:
    """Says what a retry loop waits for: once at the first retry, then every few seconds."""

    EVERY_S = 5.0

    def __init__(self, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        self.last_logged: float | None = None

    def __call__(self, state: RetryCallState) -> None:
        now = time.monotonic()
        if self.last_logged is not None and now - self.last_logged < self.EVERY_S:
            return
        self.last_logged = now
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        log.warning(
            "retrying after %s (attempt %d, %.0fs of %.0fs spent)",
            error,
            state.attempt_number,
            state.seconds_since_start or 0.0,
            self.deadline_s,
        )


def check_error(code: int, message: str | None = None, **ids: Any) -> None:
    """Raise the typed exception for a non-zero error code."""
    if int(code) != 0:
        raise error_for_code(int(code))(message, **ids)


class KafkaClient:
    """Connections, metadata and retries for every sharetxn client."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        client_id: str = "sharetxn",
        request_timeout_ms: int = REQUEST_TIMEOUT_MS,
        retry_backoff_ms: int = RETRY_BACKOFF_MS,
        retry_backoff_max_ms: int = RETRY_BACKOFF_MAX_MS,
        security: ClientSecurity | None = None,
    ) -> None:
        self.security = security or ClientSecurity()
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms
        self._lock = threading.RLock()
        self._conns: dict[int, BrokerConnection] = {}
        self._bootstrap_conn: BrokerConnection | None = None
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self._invalid_topics: set[str] = set()
        self._coordinators: dict[tuple[int, str], int] = {}
        self._closed = False

    # -- connections ----------------------------------------------------------------------------

    def _connection(self, node_id: int | None) -> BrokerConnection:
        with self._lock:
            if node_id is None or node_id not in self.brokers:
                if self._bootstrap_conn is None:
                    last: Exception | None = None
                    for host, port in self.bootstrap:
                        conn = BrokerConnection(
                            host,
                            port,
                            client_id=self.client_id,
                            timeout_s=self.request_timeout_ms / 1000,
                            security=self.security,
                        )
                        try:
                            conn.connect()
                        except KafkaProtocolError as exc:
                            last = exc
                            continue
                        self._bootstrap_conn = conn
                        break
                    if self._bootstrap_conn is None:
                        assert last is not None
                        if all(_unresolvable(h) for h, _p in self.bootstrap):
                            # Kafka's clients refuse bootstrap.servers that no host of
                            # resolves ("No resolvable bootstrap urls"): not worth retrying.
                            msg = f"no resolvable bootstrap urls in bootstrap.servers: {last}"
                            raise InvalidConfigError(msg) from last
                        raise last
                return self._bootstrap_conn
            existing = self._conns.get(node_id)
            if existing is not None:
                return existing
            info = self.brokers[node_id]
            conn = BrokerConnection(
                info.host,
                info.port,
                client_id=self.client_id,
                timeout_s=self.request_timeout_ms / 1000,
                security=self.security,
            )
            self._conns[node_id] = conn
            return conn

    def send(
        self,
        node_id: int | None,
        api_key: ApiKey,
        body: Mapping[str, Any],
        *,
        min_version: int = 0,
        max_version: int | None = None,
    ) -> Any:
        """One request to a node (None = any bootstrap broker), at the best common version."""
        conn = self._connection(node_id)
        highest = CLIENT_MAX_VERSIONS.get(api_key, 0)
        if max_version is not None:
            highest = min(highest, max_version)
        version = conn.pick_version(api_key, highest, min_version)
        try:
            return conn.request(api_key, version, body)
        except RetriableError:
            with self._lock:
                if conn is self._bootstrap_conn:
                    self._bootstrap_conn = None
                self._conns.pop(node_id if node_id is not None else -999, None)
            raise

    def require_kip1289(self, api_key: ApiKey, node_id: int | None = None) -> None:
        """Raise ``Kip1289NotSupportedError`` unless the broker serves this KIP-1289 API."""
        self._connection(node_id).require_kip1289(api_key)

    def version_for(self, node_id: int | None, api_key: ApiKey) -> int:
        conn = self._connection(node_id)
        return conn.pick_version(api_key, CLIENT_MAX_VERSIONS.get(api_key, 0))

    # -- retries --------------------------------------------------------------------------------

    def call(self, fn: Callable[[], T], *, timeout_ms: int | None = None) -> T:
        """Run ``fn``, retrying retriable errors with backoff until the deadline."""
        deadline_s = (timeout_ms if timeout_ms is not None else self.request_timeout_ms) / 1000
        retrying = Retrying(
            retry=retry_if_exception(lambda e: isinstance(e, RetriableError)),
            stop=stop_after_delay(deadline_s),
            wait=wait_exponential(
                multiplier=self.retry_backoff_ms / 1000, max=self.retry_backoff_max_ms / 1000
            ),
            before_sleep=_RetryLog(deadline_s),
            reraise=True,
        )
        return retrying(self._invalidating(fn))

    def _invalidating(self, fn: Callable[[], T]) -> Callable[[], T]:
        def run() -> T:
            try:
                return fn()
            except RetriableError:
                # Leaders or coordinators may have moved: look them up again on the next try.
                with self._lock:
                    self._coordinators.clear()
                raise

        return run

    # -- metadata -------------------------------------------------------------------------------

    def refresh_metadata(
        self, topics: list[str] | None = None, *, auto_create: bool = False
    ) -> None:
        body: dict[str, Any] = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": auto_create,
        }
        resp = self.send(None, ApiKey.METADATA, body, min_version=1)
        with self._lock:
            self.brokers = {
                int(b.node_id): BrokerInfo(int(b.node_id), b.host, int(b.port))
                for b in resp.brokers
            }
            for t in resp.topics:
                if t.name is not None and int(t.error_code) == ErrorCode.INVALID_TOPIC_EXCEPTION:
                    self._invalid_topics.add(t.name)
                if int(t.error_code) != ErrorCode.NONE or t.name is None:
                    continue
                meta = TopicMetadata(
                    t.name,
                    getattr(t, "topic_id", None) or uuid.UUID(int=0),
                    internal=bool(getattr(t, "is_internal", False)),
                )
                for p in t.partitions:
                    meta.leaders[int(p.partition_index)] = int(p.leader_id)
                self.topics[t.name] = meta

    def forget_topics(self, names: list[str]) -> None:
        """Drop cached metadata (after the topics were deleted)."""
        with self._lock:
            for name in names:
                self.topics.pop(name, None)
                self._invalid_topics.discard(name)

    def topic(self, name: str, *, auto_create: bool = False) -> TopicMetadata:
        meta = self.topics.get(name)
        if meta is None:
            self.refresh_metadata([name], auto_create=auto_create)
            meta = self.topics.get(name)
        if meta is None:
            if name in self._invalid_topics:
                msg = f"invalid topic name {name!r}: {topic_name_error(name) or 'refused'}"
                raise InvalidTopicError(msg, topic=name)
            msg = f"unknown topic {name!r}"
            raise UnknownTopicOrPartitionError(msg, topic=name)
        return meta

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        for meta in self.topics.values():
            if meta.topic_id == topic_id:
                return meta
        self.refresh_metadata(None)
        for meta in self.topics.values():
            if meta.topic_id == topic_id:
                return meta
        return None

    def leader_for(self, tp: TopicPartition) -> int:
        meta = self.topic(tp.topic)
        leader = meta.leaders.get(tp.partition)
        if leader is None or leader < 0:
            self.refresh_metadata([tp.topic])
            leader = self.topic(tp.topic).leaders.get(tp.partition)
        if leader is None or leader < 0:
            msg = f"no leader for {tp}"
            raise UnknownTopicOrPartitionError(msg, topic=tp.topic, partition=tp.partition)
        return leader

    def coordinator_for(self, key_type: int, key: str) -> int:
        with self._lock:
            cached = self._coordinators.get((key_type, key))
        if cached is not None:
            return cached
        version = self.version_for(None, ApiKey.FIND_COORDINATOR)
        if version >= 4:
            resp = self.send(
                None, ApiKey.FIND_COORDINATOR, {"key_type": key_type, "coordinator_keys": [key]}
            )
            entry = resp.coordinators[0]
            check_error(entry.error_code, entry.error_message, key=key)
            node, host, port = int(entry.node_id), entry.host, int(entry.port)
        else:
            resp = self.send(None, ApiKey.FIND_COORDINATOR, {"key": key, "key_type": key_type})
            check_error(resp.error_code, getattr(resp, "error_message", None), key=key)
            node, host, port = int(resp.node_id), resp.host, int(resp.port)
        with self._lock:
            self.brokers.setdefault(node, BrokerInfo(node, host, port))
            self._coordinators[(key_type, key)] = node
        return node

    def forget_coordinator(self, key_type: int, key: str) -> None:
        with self._lock:
            self._coordinators.pop((key_type, key), None)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for conn in self._conns.values():
                conn.close()
            self._conns.clear()
            if self._bootstrap_conn is not None:
                self._bootstrap_conn.close()
                self._bootstrap_conn = None


def deadline_after(timeout_ms: int) -> float:
    return time.monotonic() + timeout_ms / 1000
