"""The share consumer (KIP-932) with implicit, explicit and transactional acknowledgement.

``ShareConsumer(config)`` joins a share group with ShareGroupHeartbeat from a
background thread, opens one share session per leader broker and fetches with
ShareFetch, decoding the RecordBatch v2 bytes itself (``producer.records``).
Only records inside the acquired ranges are returned; acquired offsets with no
data record (control batches, compacted or aborted records) are acknowledged
as GAP automatically, as Kafka's client does.

``share.acknowledgement.mode``:

``implicit`` (default)
    every record returned by a poll is accepted by the next ``poll``,
    ``commit_sync`` or ``close``;
``explicit``
    the application calls ``acknowledge(record, type)`` for every record of a
    poll before the next poll (else ``IllegalStateError``, as Kafka);
    acknowledgements ride on the next ShareFetch or go out with
    ``commit_sync`` (ShareAcknowledge);
``transactional`` (KIP-1289)
    ``acknowledge`` only records; nothing is sent to the broker for them.
    ``acknowledgements()`` returns the recorded ones (and clears them) for
    ``TransactionalProducer.send_share_acks_to_transaction``; until then the
    records stay acquired by this member (their locks keep running).

Wire behaviour follows librdkafka's ShareConsumer: a client-made 22-character
member id, heartbeat epoch 0 with the topic names to join, ShareFetch at
session epoch 0 with every assigned partition then epochs 1, 2, ... carrying
only added/forgotten partitions and the pending acknowledgements, and on close
ShareAcknowledge at epoch -1 (closing the session releases whatever is still
acquired) followed by the heartbeat at epoch -1 that leaves the group.

The public methods are for one thread at a time (``ConcurrentAccessError``
otherwise, like Kafka's ``ConcurrentModificationException``); ``close`` may be
called from any thread and is idempotent.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from producer.client import KafkaClient
from producer.client_defaults import CONSUMER_DEFAULTS
from producer.heartbeat_backoff import HeartbeatBackoff
from producer.records import (
    CorruptRecordError,
    RecordDecodeError,
    decode_batch,
    split_batches,
)
from producer.security import PLAINTEXT, SECURITY_KEYS, ClientSecurity
from producer.types import (
    AcknowledgeType,
    Record,
    ShareAckBatch,
    ShareAcknowledgements,
    ShareGroupMetadata,
)
from txn.errors import (
    ClosedError,
    ErrorCode,
    IllegalStateError,
    KafkaProtocolError,
    RetriableError,
    SharetxnError,
    error_for_code,
)
from txn.ids import KEY_TYPE_GROUP, TopicPartition
from txn.kip1289_schema import ADD_SHARE_ACKS_TO_TXN, TXN_SHARE_ACKNOWLEDGE
from txn.limits import next_share_session_epoch

__all__ = [
    "ConcurrentAccessError",
    "IllegalStateError",
    "ShareConsumer",
]

log = logging.getLogger(__name__)


SHARE_GROUP_HEARTBEAT: Final = 76
SHARE_FETCH: Final = 78
SHARE_ACKNOWLEDGE: Final = 79

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
LEAVE_GROUP_EPOCH: Final = -1

MODES: Final = ("implicit", "explicit", "transactional")

# Kafka config name -> default.  Anything else is rejected.
DEFAULTS: Final[dict[str, Any]] = {
    **CONSUMER_DEFAULTS,
    "client.id": "sharetxn-share-consumer",
    "share.acknowledgement.mode": "implicit",
    "rack.id": None,
}

_INT_KEYS: Final = (
    "max.poll.records",
    "fetch.max.wait.ms",
    "fetch.min.bytes",
    "fetch.max.bytes",
    "request.timeout.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
)

# Partition errors after which the leader must be looked up again.
_METADATA_ERRORS: Final = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.LEADER_NOT_AVAILABLE,
    }
)
_SESSION_ERRORS: Final = frozenset(
    {ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH}
)
_COORDINATOR_ERRORS: Final = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)
# Heartbeat answers after which the member rejoins with epoch 0 and the same member id.
_REJOIN_ERRORS: Final = frozenset(
    {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.GROUP_ID_NOT_FOUND}
)
_USER_ACK_TYPES: Final = frozenset(
    {AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT}
)
_CLOSE_TIMEOUT_S: Final = 30.0


class ConcurrentAccessError(SharetxnError):
    """Two threads used the consumer at once (Kafka's ConcurrentModificationException)."""


class TopicIdPartition(NamedTuple):
    topic_id: uuid.UUID
    partition: int


def new_member_id() -> str:
    """A 22-character url-safe base64 uuid4, as librdkafka and the Java client make them."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")


# -- configuration ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareConsumerConfig:
    bootstrap_servers: str
    group_id: str
    client_id: str
    mode: str
    max_poll_records: int
    fetch_max_wait_ms: int
    fetch_min_bytes: int
    fetch_max_bytes: int
    request_timeout_ms: int
    rack_id: str | None
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    check_crcs: bool
    security: ClientSecurity = PLAINTEXT

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> ShareConsumerConfig:
        raw_config: object = config
        if not isinstance(raw_config, Mapping):
            msg = f"ShareConsumer config must be a dict, not {type(raw_config).__name__}"
            raise TypeError(msg)
        for key in config:
            if key not in DEFAULTS and key not in SECURITY_KEYS:
                msg = f"unknown ShareConsumer config {key!r}"
                raise ValueError(msg)
        values = {**DEFAULTS, **config}
        for key in ("bootstrap.servers", "group.id"):
            value = values[key]
            if not isinstance(value, str) or not value.strip():
                msg = f"ShareConsumer config {key!r} is required (a non-empty string)"
                raise ValueError(msg)
        mode = str(values["share.acknowledgement.mode"]).strip().lower()
        if mode not in MODES:
            msg = (
                f"share.acknowledgement.mode must be one of {', '.join(MODES)}, "
                f"not {values['share.acknowledgement.mode']!r}"
            )
            raise ValueError(msg)
        ints: dict[str, int] = {}
        for key in _INT_KEYS:
            raw = values[key]
            try:
                if isinstance(raw, bool):
                    raise TypeError
                number = int(raw)
            except (TypeError, ValueError):
                msg = f"ShareConsumer config {key!r} must be an integer, not {raw!r}"
                raise ValueError(msg) from None
            minimum = 0 if key in ("fetch.max.wait.ms", "retry.backoff.ms") else 1
            if number < minimum:
                msg = f"ShareConsumer config {key!r} must be >= {minimum}, not {number}"
                raise ValueError(msg)
            ints[key] = number
        rack = values["rack.id"]
        if rack is not None and (not isinstance(rack, str) or not rack.strip()):
            msg = "ShareConsumer config 'rack.id' must be a non-empty string"
            raise ValueError(msg)
        crcs = values["check.crcs"]
        if isinstance(crcs, str):
            if crcs.lower() not in ("true", "false"):
                msg = f"ShareConsumer config 'check.crcs' must be true or false, not {crcs!r}"
                raise ValueError(msg)
            crcs = crcs.lower() == "true"
        return cls(
            bootstrap_servers=values["bootstrap.servers"],
            group_id=values["group.id"],
            client_id=str(values["client.id"]),
            mode=mode,
            max_poll_records=ints["max.poll.records"],
            fetch_max_wait_ms=ints["fetch.max.wait.ms"],
            fetch_min_bytes=ints["fetch.min.bytes"],
            fetch_max_bytes=ints["fetch.max.bytes"],
            request_timeout_ms=ints["request.timeout.ms"],
            rack_id=rack,
            retry_backoff_ms=ints["retry.backoff.ms"],
            retry_backoff_max_ms=max(ints["retry.backoff.max.ms"], ints["retry.backoff.ms"]),
            check_crcs=bool(crcs),
            security=ClientSecurity.from_config(config),
        )

    def new_client(self) -> KafkaClient:
        return KafkaClient(
            self.bootstrap_servers,
            client_id=self.client_id,
            request_timeout_ms=self.request_timeout_ms,
            retry_backoff_ms=max(self.retry_backoff_ms, 1),
            retry_backoff_max_ms=self.retry_backoff_max_ms,
            security=self.security,
        )


# -- group membership (the heartbeat thread) -------------------------------------------------------


class _Membership:
    """ShareGroupHeartbeat v1 from a daemon thread; the assignment mapped to topic names.

    It has its own ``KafkaClient`` (own connections), so a long-polling ShareFetch
    never delays a heartbeat.
    """

    def __init__(self, cfg: ShareConsumerConfig, member_id: str) -> None:
        self._cfg = cfg
        self.group_id = cfg.group_id
        self.member_id = member_id
        self._client = cfg.new_client()
        self._lock = threading.Lock()
        self.changed = threading.Condition(self._lock)
        self._send_lock = threading.Lock()  # one heartbeat on the wire at a time
        self._subscription: tuple[str, ...] = ()
        self._sent_subscription: tuple[str, ...] | None = None
        self.member_epoch = 0
        self.interval_ms = 5000
        self._assignment: dict[TopicPartition, uuid.UUID] = {}
        self._unresolved: list[tuple[uuid.UUID, list[int]]] = []
        self.version = 0
        self.fatal: KafkaProtocolError | None = None
        self._backoff = HeartbeatBackoff(
            log, f"share group {cfg.group_id}", cfg.retry_backoff_ms, cfg.retry_backoff_max_ms
        )
        self._stop = threading.Event()
        self._wakeup = threading.Event()
        self._thread: threading.Thread | None = None

    # called by the consumer thread

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"sharetxn-heartbeat-{self.member_id}", daemon=True
            )
            self._thread.start()

    def subscribe(self, topics: tuple[str, ...]) -> None:
        with self._lock:
            self._subscription = topics
        self.start()
        self._wakeup.set()

    def metadata(self) -> ShareGroupMetadata:
        with self._lock:
            return ShareGroupMetadata(self.group_id, self.member_id, self.member_epoch)

    def snapshot(self) -> tuple[int, dict[TopicPartition, uuid.UUID]]:
        with self._lock:
            return self.version, dict(self._assignment)

    def wait_for_change(self, version: int, timeout_s: float, stop: threading.Event) -> None:
        end = time.monotonic() + timeout_s
        with self._lock:
            while self.version == version and not stop.is_set() and self.fatal is None:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    return
                self.changed.wait(min(remaining, 0.1))

    def notify(self) -> None:
        with self._lock:
            self.changed.notify_all()

    def leave(self) -> None:
        """Heartbeat at epoch -1 (best effort); the member is no longer subscribed."""
        with self._send_lock:
            with self._lock:
                joined = self.member_epoch > 0 or self._sent_subscription is not None
                self._subscription = ()
            if joined:
                body = {
                    "group_id": self.group_id,
                    "member_id": self.member_id,
                    "member_epoch": LEAVE_GROUP_EPOCH,
                    "rack_id": None,
                    "subscribed_topic_names": None,
                }
                try:
                    node = self._client.coordinator_for(KEY_TYPE_GROUP, self.group_id)
                    resp = self._client.send(node, SHARE_GROUP_HEARTBEAT, body, min_version=1)
                    code = ErrorCode(int(resp.error_code))
                    if code not in (ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID):
                        log.warning("leaving share group %s: %s", self.group_id, code.name)
                except SharetxnError as exc:
                    log.warning("leaving share group %s failed: %s", self.group_id, exc)
            with self._lock:
                self.member_epoch = 0
                self._sent_subscription = None
                self._assignment = {}
                self._unresolved = []
                self.version += 1
                self.changed.notify_all()

    def stop_nowait(self) -> None:
        self._stop.set()
        self._wakeup.set()

    def close(self, *, leave: bool) -> None:
        self._stop.set()
        self._wakeup.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(self._cfg.request_timeout_ms / 1000 + 1)
        if leave:
            self.leave()
        self._client.close()

    # the heartbeat thread

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                delay_ms = self._beat()
            except Exception:  # never let the heartbeat thread die silently
                log.exception("share group %s: heartbeat failed", self.group_id)
                delay_ms = self._backoff_ms()
            if self._wakeup.wait(delay_ms / 1000):
                self._wakeup.clear()

    def _warn_unreachable(self, exc: Exception) -> None:
        self._backoff.unreachable(exc)

    def _backoff_ms(self) -> int:
        return self._backoff.next_ms()

    def _beat(self) -> int:
        with self._send_lock:
            with self._lock:
                topics = self._subscription
                epoch = self.member_epoch
                if self.fatal is not None or not topics:
                    return 3_600_000  # idle until subscribe() wakes us
                full = epoch == INITIAL_EPOCH or topics != self._sent_subscription
            body = {
                "group_id": self.group_id,
                "member_id": self.member_id,
                "member_epoch": epoch,
                "rack_id": self._cfg.rack_id if epoch == INITIAL_EPOCH else None,
                "subscribed_topic_names": list(topics) if full else None,
            }
            try:
                node = self._client.coordinator_for(KEY_TYPE_GROUP, self.group_id)
                resp = self._client.send(node, SHARE_GROUP_HEARTBEAT, body, min_version=1)
            except RetriableError as exc:
                self._client.forget_coordinator(KEY_TYPE_GROUP, self.group_id)
                self._warn_unreachable(exc)
                return self._backoff_ms()
            except KafkaProtocolError as exc:
                return self._set_fatal(exc)
            code = ErrorCode(int(resp.error_code))
            if code is ErrorCode.NONE:
                self._backoff.succeeded()
                self._on_success(resp, topics)
                return max(self.interval_ms, 1)
            if code is ErrorCode.GROUP_ID_NOT_FOUND and epoch == 0:
                # Joining failed: the id belongs to another kind of group (Kafka's clients
                # raise GroupIdNotFoundException from poll).
                return self._set_fatal(
                    error_for_code(int(code))(resp.error_message, group_id=self.group_id)
                )
            if code in _REJOIN_ERRORS:
                log.warning(
                    "share group %s: member %s must rejoin (%s): its acquired records are lost",
                    self.group_id,
                    self.member_id,
                    code.name,
                )
                with self._lock:
                    self.member_epoch = 0
                    self._sent_subscription = None
                    self._assignment = {}
                    self._unresolved = []
                    self.version += 1
                    self.changed.notify_all()
                return 0
            if code in _COORDINATOR_ERRORS:
                self._client.forget_coordinator(KEY_TYPE_GROUP, self.group_id)
                return self._backoff_ms()
            error = error_for_code(int(code))(resp.error_message, group_id=self.group_id)
            if error.retriable:
                return self._backoff_ms()
            return self._set_fatal(error)

    def _set_fatal(self, error: KafkaProtocolError) -> int:
        log.error("share group %s: heartbeat failed fatally: %s", self.group_id, error)
        with self._lock:
            self.fatal = error
            self.changed.notify_all()
        return 3_600_000

    def _on_success(self, resp: Any, topics: tuple[str, ...]) -> None:
        interval_ms = _ms(resp.heartbeat_interval)
        with self._lock:
            if resp.member_id:
                self.member_id = resp.member_id
            self.member_epoch = int(resp.member_epoch)
            if interval_ms > 0:
                self.interval_ms = interval_ms
            self._sent_subscription = topics
            replace = resp.assignment is not None
            if replace:
                pending = [
                    (tp.topic_id, [int(p) for p in tp.partitions])
                    for tp in resp.assignment.topic_partitions
                    if tp.topic_id is not None
                ]
            else:
                pending = list(self._unresolved)
        resolved, still = self._resolve(pending)
        with self._lock:
            if replace:
                self._assignment = resolved
                self._unresolved = still
                self.version += 1
            elif pending and resolved:
                self._assignment.update(resolved)
                self._unresolved = still
                self.version += 1
            self.changed.notify_all()

    def _resolve(
        self, pending: list[tuple[uuid.UUID, list[int]]]
    ) -> tuple[dict[TopicPartition, uuid.UUID], list[tuple[uuid.UUID, list[int]]]]:
        """Topic ids of an assignment mapped to names (ids not in the metadata yet are kept)."""
        resolved: dict[TopicPartition, uuid.UUID] = {}
        still: list[tuple[uuid.UUID, list[int]]] = []
        for topic_id, parts in pending:
            try:
                meta = self._client.topic_by_id(topic_id)
            except SharetxnError as exc:
                log.debug("resolving topic id %s: %s", topic_id, exc)
                meta = None
            if meta is None:
                still.append((topic_id, parts))
                continue
            for p in parts:
                resolved[TopicPartition(meta.name, p)] = topic_id
        return resolved, still


# -- in-flight bookkeeping -------------------------------------------------------------------------


class _Delivery(NamedTuple):
    node_id: int
    generation: int
    delivery_count: int


class _Ack(NamedTuple):
    ack_type: AcknowledgeType
    node_id: int
    generation: int


@dataclass(slots=True)
class _InFlight:
    """One partition: records delivered to the application and acknowledgements not yet sent."""

    topic_id: uuid.UUID
    delivered: dict[int, _Delivery] = field(default_factory=dict)
    acks: dict[int, _Ack] = field(default_factory=dict)


@dataclass(slots=True)
class _Session:
    """The client side of one share session (one per leader broker)."""

    node_id: int
    epoch: int = INITIAL_EPOCH
    generation: int = 0
    partitions: set[TopicIdPartition] = field(default_factory=set)

    def advance(self) -> None:
        self.epoch = next_share_session_epoch(self.epoch)


@dataclass(slots=True)
class _Outgoing:
    """One ShareFetch about to be sent to one node."""

    session: _Session
    body: dict[str, Any]
    want: set[TopicIdPartition]
    acks: dict[TopicPartition, list[tuple[int, AcknowledgeType]]]


def ack_ranges(
    offsets: Iterable[tuple[int, AcknowledgeType]],
) -> list[ShareAckBatch]:
    """Ascending ranges of consecutive offsets that share one type."""
    out: list[ShareAckBatch] = []
    for offset, ack_type in sorted(offsets):
        last = out[-1] if out else None
        if last is not None and last.last_offset + 1 == offset and last.ack_type is ack_type:
            out[-1] = ShareAckBatch(last.first_offset, offset, ack_type)
        else:
            out.append(ShareAckBatch(offset, offset, ack_type))
    return out


def _wire_batches(offsets: list[tuple[int, AcknowledgeType]]) -> list[dict[str, Any]]:
    return [
        {
            "first_offset": b.first_offset,
            "last_offset": b.last_offset,
            "acknowledge_types": [int(b.ack_type)],
        }
        for b in ack_ranges(offsets)
    ]


def _outside(want: set[TopicIdPartition]) -> Callable[[TopicPartition, uuid.UUID], bool]:
    def test(tp: TopicPartition, topic_id: uuid.UUID) -> bool:
        return TopicIdPartition(topic_id, tp.partition) not in want

    return test


def _ms(value: Any) -> int:
    if hasattr(value, "total_seconds"):
        return int(value.total_seconds() * 1000)
    return int(value)


# -- the consumer ----------------------------------------------------------------------------------


class ShareConsumer:
    """A KIP-932 share-group consumer; see the module docstring for the three modes."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._cfg = ShareConsumerConfig.parse(config)
        self._mode = self._cfg.mode
        self._client = self._cfg.new_client()
        self._membership = _Membership(self._cfg, new_member_id())
        self._subscription: tuple[str, ...] = ()
        self._sessions: dict[int, _Session] = {}
        self._inflight: dict[TopicPartition, _InFlight] = {}
        self._topic_names: dict[uuid.UUID, str] = {}
        self._results: dict[TopicPartition, Exception | None] = {}
        self._deferred_error: Exception | None = None
        self._metadata_stale = False
        self._lock_timeout_ms: int | None = None
        self._executor: ThreadPoolExecutor | None = None
        # single-thread use, close from anywhere
        self._guard = threading.Condition(threading.Lock())
        self._owner: int | None = None
        self._depth = 0
        self._close_lock = threading.Lock()
        self._closing = threading.Event()
        self._closed = False
        # transactional mode: the cluster must serve KIP-1289, checked before any record is read
        self._kip1289_checked = self._mode != "transactional"

    # -- context manager --------------------------------------------------------------------------

    def __enter__(self) -> ShareConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- properties -------------------------------------------------------------------------------

    @property
    def acknowledgement_mode(self) -> str:
        return self._mode

    @property
    def member_id(self) -> str:
        return self._membership.member_id

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        """The record lock duration the broker reported with the last ShareFetch, if any."""
        return self._lock_timeout_ms

    def group_metadata(self) -> ShareGroupMetadata:
        """Group id, member id and member epoch, for ``send_share_acks_to_transaction``."""
        return self._membership.metadata()

    def subscription(self) -> set[str]:
        return set(self._subscription)

    # -- single-thread guard ----------------------------------------------------------------------

    @contextmanager
    def _use(self, name: str) -> Iterator[None]:
        me = threading.get_ident()
        with self._guard:
            if self._owner is not None and self._owner != me:
                msg = (
                    f"ShareConsumer is not safe for multi-threaded access: {name}() was called "
                    "while another thread is using the consumer"
                )
                raise ConcurrentAccessError(msg)
            self._owner = me
            self._depth += 1
        try:
            if self._closed or self._closing.is_set():
                msg = "the ShareConsumer is closed"
                raise ClosedError(msg)
            yield
        finally:
            with self._guard:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
                    self._guard.notify_all()

    # -- subscription -----------------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Join the share group for these topics (an empty list unsubscribes)."""
        if isinstance(topics, str):
            msg = "subscribe() takes a list of topic names, not a string"
            raise TypeError(msg)
        names = list(topics)
        for name in names:
            if not isinstance(name, str) or not name.strip():
                msg = f"invalid topic name {name!r}"
                raise ValueError(msg)
        if not names:
            self.unsubscribe()
            return
        with self._use("subscribe"):
            self._check_kip1289()
            self._subscription = tuple(sorted(set(names)))
            self._membership.subscribe(self._subscription)

    def unsubscribe(self) -> None:
        """Send pending acknowledgements, close the share sessions and leave the group."""
        with self._use("unsubscribe"):
            if not self._subscription and not self._sessions:
                return
            self._finish_sessions(time.monotonic() + self._cfg.request_timeout_ms / 1000)
            self._membership.leave()
            self._subscription = ()
            for inflight in self._inflight.values():
                inflight.delivered.clear()

    # -- poll -------------------------------------------------------------------------------------

    def poll(self, timeout_s: float = 0.0) -> list[Record]:
        """Records acquired for this member; waits up to ``timeout_s`` seconds for some."""
        with self._use("poll"):
            self._raise_deferred()
            self._settle_previous_poll()
            if not self._subscription:
                msg = "Consumer is not subscribed to any topics."
                raise IllegalStateError(msg)
            if not self._check_kip1289():
                # Cluster unreachable: nothing can be acquired yet, as when not yet assigned.
                wait_s = min(max(0.0, float(timeout_s)), self._cfg.retry_backoff_ms / 1000)
                self._closing.wait(wait_s)
                return []
            deadline = time.monotonic() + max(0.0, float(timeout_s))
            while True:
                self._raise_fatal()
                if self._closing.is_set():
                    return []
                version, assignment = self._membership.snapshot()
                for tp, topic_id in assignment.items():
                    self._topic_names[topic_id] = tp.topic
                records, worked = self._fetch_round(assignment, deadline)
                if records:
                    return records
                self._raise_deferred()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                if worked:
                    continue
                if assignment:
                    # Assigned, but no leader known yet: back off, then look again.
                    self._closing.wait(min(remaining, self._cfg.retry_backoff_ms / 1000))
                else:
                    # Not assigned anything yet: wait for the heartbeat thread.
                    self._membership.wait_for_change(version, remaining, self._closing)

    def _check_kip1289(self) -> bool:
        """Transactional mode refuses a cluster without KIP-1289 before acquiring records.

        Acquired records could not be acknowledged there at all (``Kip1289NotSupportedError``
        names the missing API).  An unreachable cluster defers the check (False): ``poll``
        makes it before its first fetch.
        """
        if self._kip1289_checked:
            return True
        try:
            self._client.require_kip1289(TXN_SHARE_ACKNOWLEDGE)
            self._client.require_kip1289(ADD_SHARE_ACKS_TO_TXN)
        except RetriableError:
            return False
        self._kip1289_checked = True
        return True

    def _raise_fatal(self) -> None:
        fatal = self._membership.fatal
        if fatal is not None:
            raise fatal

    def _raise_deferred(self) -> None:
        error, self._deferred_error = self._deferred_error, None
        if error is not None:
            raise error

    def _settle_previous_poll(self) -> None:
        if self._mode == "implicit":
            self._accept_delivered()
            return
        unacked = sum(len(i.delivered) for i in self._inflight.values())
        if unacked:
            if self._mode == "explicit":
                msg = "All records must be acknowledged in explicit acknowledgement mode."
            else:
                msg = (
                    "All records must be acknowledged in transactional acknowledgement mode "
                    f"before the next poll ({unacked} of the previous poll are not)."
                )
            raise IllegalStateError(msg)

    def _accept_delivered(self) -> None:
        for inflight in self._inflight.values():
            for offset, d in inflight.delivered.items():
                inflight.acks[offset] = _Ack(AcknowledgeType.ACCEPT, d.node_id, d.generation)
            inflight.delivered.clear()

    # -- acknowledgements -------------------------------------------------------------------------

    def acknowledge(self, record: Record, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Acknowledge one record of the last poll (explicit and transactional modes)."""
        with self._use("acknowledge"):
            if self._mode == "implicit":
                msg = (
                    "acknowledge() needs share.acknowledgement.mode=explicit or transactional; "
                    "in implicit mode the next poll accepts every record"
                )
                raise IllegalStateError(msg)
            try:
                ack_type = AcknowledgeType(int(type))
            except ValueError:
                msg = f"unknown acknowledge type {type!r}"
                raise ValueError(msg) from None
            if ack_type not in _USER_ACK_TYPES:
                msg = f"a record takes ACCEPT, RELEASE or REJECT, not {ack_type.name}"
                raise ValueError(msg)
            inflight = self._inflight.get(record.topic_partition)
            delivery = inflight.delivered.get(record.offset) if inflight is not None else None
            if inflight is None or delivery is None:
                msg = (
                    f"record {record.topic}-{record.partition}@{record.offset} cannot be "
                    "acknowledged: it was not returned by the last poll or is acknowledged already"
                )
                raise IllegalStateError(msg)
            if record.delivery_count != delivery.delivery_count:
                msg = (
                    f"record {record.topic}-{record.partition}@{record.offset} is from delivery "
                    f"{record.delivery_count}, the in-flight one is delivery "
                    f"{delivery.delivery_count}"
                )
                raise IllegalStateError(msg)
            del inflight.delivered[record.offset]
            inflight.acks[record.offset] = _Ack(ack_type, delivery.node_id, delivery.generation)

    def acknowledge_delivered(self) -> int:
        """ACCEPT every record of the last poll not acknowledged yet; returns how many.

        What ``acknowledge(record)`` for each of them does (explicit and transactional
        modes), in one step: for consumers that take whole polls, such as a read task that
        stages a poll's acknowledgements in its transaction.
        """
        with self._use("acknowledge"):
            if self._mode == "implicit":
                msg = "acknowledge_delivered() needs explicit or transactional mode"
                raise IllegalStateError(msg)
            count = 0
            for inflight in self._inflight.values():
                for offset, d in inflight.delivered.items():
                    inflight.acks[offset] = _Ack(AcknowledgeType.ACCEPT, d.node_id, d.generation)
                count += len(inflight.delivered)
                inflight.delivered.clear()
            return count

    def acknowledgements(self) -> ShareAcknowledgements:
        """The recorded acknowledgements (transactional mode), cleared from the consumer.

        Hand them to ``TransactionalProducer.send_share_acks_to_transaction`` together with
        ``group_metadata()``.  Besides the application's acknowledgements they hold the GAP
        acknowledgements of acquired offsets that had no data record and the REJECT/RELEASE
        of batches the consumer could not decode.
        """
        with self._use("acknowledgements"):
            if self._mode != "transactional":
                msg = "acknowledgements() needs share.acknowledgement.mode=transactional"
                raise IllegalStateError(msg)
            batches: dict[TopicPartition, tuple[ShareAckBatch, ...]] = {}
            for tp, inflight in sorted(self._inflight.items()):
                if inflight.acks:
                    batches[tp] = tuple(
                        ack_ranges((o, a.ack_type) for o, a in inflight.acks.items())
                    )
                    inflight.acks.clear()
            meta = self._membership.metadata()
            return ShareAcknowledgements(meta.group_id, meta.member_id, batches)

    def commit_sync(self, timeout_s: float | None = None) -> dict[TopicPartition, Exception | None]:
        """Send the pending acknowledgements now (ShareAcknowledge) and wait for the outcome.

        Returns, per partition, ``None`` or the exception of every acknowledgement sent since
        the previous ``commit_sync`` (including those that rode on a ShareFetch, and those that
        could not be delivered because their share session was lost).
        """
        with self._use("commit_sync"):
            if self._mode == "transactional":
                msg = (
                    "commit_sync() is not used in transactional mode: pass acknowledgements() "
                    "to TransactionalProducer.send_share_acks_to_transaction"
                )
                raise IllegalStateError(msg)
            if self._mode == "implicit":
                self._accept_delivered()
            timeout_ms = self._cfg.request_timeout_ms if timeout_s is None else timeout_s * 1000
            self._send_acknowledgements(time.monotonic() + max(timeout_ms, 0) / 1000, final=False)
            results, self._results = self._results, {}
            return results

    def commit_async(self) -> None:
        """Queue the pending acknowledgements for the next ShareFetch or ``commit_sync``.

        Their outcome is reported by the next ``commit_sync``.
        """
        with self._use("commit_async"):
            if self._mode == "transactional":
                msg = "commit_async() is not used in transactional mode"
                raise IllegalStateError(msg)
            if self._mode == "implicit":
                self._accept_delivered()

    def _record_result(self, tp: TopicPartition, error: Exception | None) -> None:
        if error is not None or tp not in self._results:
            self._results[tp] = error
        elif self._results.get(tp) is None:
            self._results[tp] = None

    def _fail_acks(
        self, acks: Mapping[TopicPartition, list[tuple[int, AcknowledgeType]]], error: Exception
    ) -> None:
        for tp, offsets in acks.items():
            if offsets:
                self._record_result(tp, error)

    def _take_acks(
        self,
        session: _Session,
        keep: Callable[[TopicPartition, uuid.UUID], bool] | None = None,
    ) -> dict[TopicPartition, list[tuple[int, AcknowledgeType]]]:
        """Remove and return the pending acknowledgements for records from ``session``.

        ``keep`` limits which partitions are taken.  Acknowledgements of records acquired
        through an earlier, lost session of the node cannot succeed any more: they are all
        taken and failed (reported by ``commit_sync``) instead of sent.
        """
        out: dict[TopicPartition, list[tuple[int, AcknowledgeType]]] = {}
        if self._mode == "transactional":
            # Recorded acks reach the broker only inside a transaction: never piggyback
            # them on a ShareFetch (a second poll before send_share_acks_to_transaction).
            return out
        stale: dict[TopicPartition, list[tuple[int, AcknowledgeType]]] = {}
        for tp, inflight in self._inflight.items():
            wanted = keep is None or keep(tp, inflight.topic_id)
            mine = [(o, a) for o, a in inflight.acks.items() if a.node_id == session.node_id]
            for offset, ack in mine:
                if ack.generation == session.generation and session.epoch > INITIAL_EPOCH:
                    if wanted:
                        del inflight.acks[offset]
                        out.setdefault(tp, []).append((offset, ack.ack_type))
                else:
                    del inflight.acks[offset]
                    stale.setdefault(tp, []).append((offset, ack.ack_type))
        if stale:
            count = sum(len(v) for v in stale.values())
            log.warning(
                "share group %s: %d acknowledgement(s) for records from a lost share session "
                "with node %d were dropped; the broker released those records",
                self._cfg.group_id,
                count,
                session.node_id,
            )
            error = error_for_code(int(ErrorCode.SHARE_SESSION_NOT_FOUND))(
                "the share session that acquired these records was lost",
                node_id=session.node_id,
            )
            self._fail_acks(stale, error)
        return out

    def _reset_session(self, session: _Session, reason: Exception) -> None:
        if session.epoch != INITIAL_EPOCH:
            log.warning(
                "share group %s: share session with node %d reset (%s); records it acquired "
                "are released by the broker and their pending acknowledgements fail",
                self._cfg.group_id,
                session.node_id,
                reason,
            )
        session.epoch = INITIAL_EPOCH
        session.generation += 1
        session.partitions.clear()

    # -- fetching ---------------------------------------------------------------------------------

    def _leaders(
        self, assignment: Mapping[TopicPartition, uuid.UUID]
    ) -> dict[int, set[TopicIdPartition]]:
        if self._metadata_stale and assignment:
            self._metadata_stale = False
            try:
                self._client.refresh_metadata(sorted({tp.topic for tp in assignment}))
            except SharetxnError as exc:
                log.debug("metadata refresh failed: %s", exc)
                self._metadata_stale = True
        out: dict[int, set[TopicIdPartition]] = {}
        for tp, topic_id in assignment.items():
            try:
                node = self._client.leader_for(tp)
            except SharetxnError as exc:
                log.debug("no leader for %s yet: %s", tp, exc)
                self._metadata_stale = True
                continue
            out.setdefault(node, set()).add(TopicIdPartition(topic_id, tp.partition))
        return out

    def _fetch_round(
        self, assignment: Mapping[TopicPartition, uuid.UUID], deadline: float
    ) -> tuple[list[Record], bool]:
        """One ShareFetch per node with work; returns the records and whether anything was sent."""
        desired = self._leaders(assignment)
        nodes = set(desired)
        for node, s in self._sessions.items():
            if s.epoch > INITIAL_EPOCH and (s.partitions or self._has_acks(node)):
                nodes.add(node)
        if not nodes:
            return [], False
        # A partition named in a ShareFetch joins the session, so acknowledgements for records of
        # partitions this node no longer serves us go in a ShareAcknowledge first.
        side: list[_Outgoing] = []
        for node in sorted(nodes):
            session = self._sessions.setdefault(node, _Session(node))
            if session.epoch > INITIAL_EPOCH:
                want = desired.get(node, set())
                stray = self._take_acks(session, _outside(want))
                if stray:
                    side.append(self._ack_request(session, stray, final=False))
        if side:
            for ack_req, resp in zip(
                side, self._exchange_all(side, SHARE_ACKNOWLEDGE), strict=True
            ):
                self._on_acknowledge_response(ack_req, resp, final=False)
        remaining_ms = max(0, int((deadline - time.monotonic()) * 1000))
        max_wait = min(self._cfg.fetch_max_wait_ms, remaining_ms)
        outgoing: list[_Outgoing] = []
        for node in sorted(nodes):
            session = self._sessions.setdefault(node, _Session(node))
            fetch = self._build_fetch(session, desired.get(node, set()), max_wait)
            if fetch is not None:
                outgoing.append(fetch)
        if not outgoing:
            return [], False
        responses = self._exchange_all(outgoing, SHARE_FETCH)
        records: list[Record] = []
        backoff = False
        for out, resp in zip(outgoing, responses, strict=True):
            got, retry = self._on_fetch_response(out, resp)
            records.extend(got)
            backoff = backoff or retry
        if backoff and not records:
            self._closing.wait(
                min(self._cfg.retry_backoff_ms / 1000, max(0.0, deadline - time.monotonic()))
            )
        return records, True

    def _has_acks(self, node: int) -> bool:
        if self._mode == "transactional":
            return False  # only a transaction sends them
        return any(
            a.node_id == node
            for inflight in self._inflight.values()
            for a in inflight.acks.values()
        )

    def _build_fetch(
        self, session: _Session, want: set[TopicIdPartition], max_wait_ms: int
    ) -> _Outgoing | None:
        acks = self._take_acks(session)  # at epoch 0 only stale ones exist: failed, not sent
        if session.epoch == INITIAL_EPOCH:
            if not want:
                return None
            added = set(want)
            forgotten: set[TopicIdPartition] = set()
        else:
            if not want and not session.partitions and not acks:
                return None
            added = want - session.partitions
            forgotten = session.partitions - want
        by_topic: dict[uuid.UUID, dict[int, list[dict[str, Any]]]] = {}
        for tip in added:
            by_topic.setdefault(tip.topic_id, {}).setdefault(tip.partition, [])
        for tp, offsets in acks.items():
            topic_id = self._inflight[tp].topic_id
            by_topic.setdefault(topic_id, {})[tp.partition] = _wire_batches(offsets)
        gone: dict[uuid.UUID, list[int]] = {}
        for tip in forgotten:
            gone.setdefault(tip.topic_id, []).append(tip.partition)
        body: dict[str, Any] = {
            "group_id": self._cfg.group_id,
            "member_id": self._membership.member_id,
            "share_session_epoch": session.epoch,
            "max_wait": max_wait_ms if want else 0,
            "min_bytes": self._cfg.fetch_min_bytes,
            "max_bytes": self._cfg.fetch_max_bytes,
            "max_records": self._cfg.max_poll_records,
            "batch_size": self._cfg.max_poll_records,
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {"partition_index": p, "acknowledgement_batches": batches}
                        for p, batches in sorted(parts.items())
                    ],
                }
                for topic_id, parts in by_topic.items()
            ],
            "forgotten_topics_data": [
                {"topic_id": topic_id, "partitions": sorted(parts)}
                for topic_id, parts in gone.items()
            ],
        }
        return _Outgoing(session, body, set(want), acks)

    def _exchange_all(self, outgoing: list[_Outgoing], api_key: int) -> list[Any]:
        """Send one request per node (concurrently when there are several); exceptions returned."""

        def one(out: _Outgoing) -> Any:
            try:
                return self._client.send(out.session.node_id, api_key, out.body, min_version=1)
            except SharetxnError as exc:
                return exc

        if len(outgoing) == 1:
            return [one(outgoing[0])]
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=8, thread_name_prefix=f"sharetxn-share-fetch-{self.member_id}"
            )
        return list(self._executor.map(one, outgoing))

    def _on_fetch_response(self, out: _Outgoing, resp: Any) -> tuple[list[Record], bool]:
        """Apply one ShareFetch response; returns its records and whether to back off."""
        session = out.session
        if isinstance(resp, Exception):
            # The connection is gone, and with it the broker's session and its acquired records.
            self._reset_session(session, resp)
            self._fail_acks(out.acks, resp)
            if isinstance(resp, RetriableError):
                self._metadata_stale = True
                return [], True
            raise resp
        code = ErrorCode(int(resp.error_code))
        if code is not ErrorCode.NONE:
            error = error_for_code(int(code))(
                resp.error_message, group_id=self._cfg.group_id, node_id=session.node_id
            )
            self._fail_acks(out.acks, error)
            if code in _SESSION_ERRORS:
                self._reset_session(session, error)
                return [], False
            if error.retriable or code is ErrorCode.SHARE_SESSION_LIMIT_REACHED:
                return [], True
            raise error
        if session.epoch == INITIAL_EPOCH:
            session.epoch = 1
        else:
            session.advance()
        session.partitions = set(out.want)
        self._lock_timeout_ms = _ms(resp.acquisition_lock_timeout)
        acked = dict(out.acks)
        records: list[Record] = []
        problems: list[Exception] = []
        for topic in resp.responses:
            for p in topic.partitions:
                topic_id = topic.topic_id
                name = self._topic_names.get(topic_id) if topic_id is not None else None
                if name is None or topic_id is None:
                    continue
                tp = TopicPartition(name, int(p.partition_index))
                if tp in acked:
                    del acked[tp]
                    ack_code = int(p.acknowledge_error_code)
                    self._record_result(
                        tp,
                        None
                        if ack_code == 0
                        else error_for_code(ack_code)(
                            p.acknowledge_error_message, topic=tp.topic, partition=tp.partition
                        ),
                    )
                part_code = ErrorCode(int(p.error_code))
                if part_code is not ErrorCode.NONE:
                    if part_code in _METADATA_ERRORS:
                        self._metadata_stale = True
                    elif part_code in (
                        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        ErrorCode.GROUP_AUTHORIZATION_FAILED,
                    ):
                        problems.append(
                            error_for_code(int(part_code))(
                                p.error_message, topic=tp.topic, partition=tp.partition
                            )
                        )
                    else:
                        log.warning(
                            "share fetch of %s failed: %s %s",
                            tp,
                            part_code.name,
                            p.error_message or "",
                        )
                    continue
                if p.acquired_records:
                    got, problem = self._decode_partition(tp, topic_id, session, p)
                    records.extend(got)
                    if problem is not None:
                        problems.append(problem)
        for tp in acked:
            self._record_result(tp, None)  # acknowledged partitions without an entry: applied
        if problems:
            if records:
                self._deferred_error = problems[0]
            else:
                raise problems[0]
        return records, False

    def _decode_partition(
        self, tp: TopicPartition, topic_id: uuid.UUID, session: _Session, p: Any
    ) -> tuple[list[Record], Exception | None]:
        """The acquired records of one partition; gaps and undecodable batches auto-acked."""
        ranges = sorted(
            (int(a.first_offset), int(a.last_offset), int(a.delivery_count))
            for a in p.acquired_records
        )
        acquired: dict[int, int] = {}
        for first, last, dc in ranges:
            for offset in range(first, last + 1):
                acquired[offset] = dc
        inflight = self._inflight.get(tp)
        if inflight is None or inflight.topic_id != topic_id:
            inflight = self._inflight[tp] = _InFlight(topic_id)
        node, gen = session.node_id, session.generation
        raw = bytes(p.records or b"")
        out: list[Record] = []
        handled: set[int] = set()
        problem: Exception | None = None
        lo, hi = ranges[0][0], ranges[-1][1]
        try:
            batches = split_batches(raw)
        except RecordDecodeError as exc:
            batches = []
            problem = exc
        for pos, header in batches:
            if header.last_offset < lo or header.base_offset > hi:
                continue
            try:
                batch = decode_batch(raw, pos, header, check_crc=self._cfg.check_crcs)
            except RecordDecodeError as exc:
                # Kafka rejects a corrupt batch; a codec we lack is released for another consumer.
                ack = (
                    AcknowledgeType.REJECT
                    if isinstance(exc, CorruptRecordError)
                    else AcknowledgeType.RELEASE
                )
                for offset in range(header.base_offset, header.last_offset + 1):
                    if offset in acquired:
                        inflight.acks[offset] = _Ack(ack, node, gen)
                        handled.add(offset)
                if problem is None:
                    exc.add_note(
                        f"fetched from {tp} (offsets {header.base_offset}-{header.last_offset})"
                    )
                    problem = exc
                continue
            for r in batch.records:
                count = acquired.get(r.offset)
                if count is None or r.offset in handled:
                    continue
                handled.add(r.offset)
                inflight.delivered[r.offset] = _Delivery(node, gen, count)
                out.append(
                    Record(
                        topic=tp.topic,
                        partition=tp.partition,
                        offset=r.offset,
                        key=r.key,
                        value=r.value,
                        headers=r.headers,
                        timestamp=r.timestamp,
                        delivery_count=count,
                    )
                )
        for offset in acquired:
            if offset not in handled:
                inflight.acks[offset] = _Ack(AcknowledgeType.GAP, node, gen)
        return out, problem

    # -- sending acknowledgements and closing sessions --------------------------------------------

    def _send_acknowledgements(self, deadline: float, *, final: bool) -> None:
        """ShareAcknowledge to every node with pending acknowledgements (all sessions if final)."""
        outgoing: list[_Outgoing] = []
        for _node, session in sorted(self._sessions.items()):
            if session.epoch == INITIAL_EPOCH:
                self._take_acks(session)  # nothing open: those can only fail
                continue
            acks = self._take_acks(session)
            if acks or final:
                outgoing.append(self._ack_request(session, acks, final=final))
        # Acknowledgements recorded for nodes we have no session with at all.
        for inflight_tp, inflight in self._inflight.items():
            orphans = [(o, a) for o, a in inflight.acks.items() if a.node_id not in self._sessions]
            if orphans:
                for o, _a in orphans:
                    del inflight.acks[o]
                self._record_result(
                    inflight_tp,
                    error_for_code(int(ErrorCode.SHARE_SESSION_NOT_FOUND))(
                        "no share session with the broker that delivered these records"
                    ),
                )
        if not outgoing:
            return
        if time.monotonic() > deadline:
            error = error_for_code(int(ErrorCode.REQUEST_TIMED_OUT))("commit timed out")
            for out in outgoing:
                self._fail_acks(out.acks, error)
            return
        for out, resp in zip(
            outgoing, self._exchange_all(outgoing, SHARE_ACKNOWLEDGE), strict=True
        ):
            self._on_acknowledge_response(out, resp, final=final)

    def _ack_request(
        self,
        session: _Session,
        acks: dict[TopicPartition, list[tuple[int, AcknowledgeType]]],
        *,
        final: bool,
    ) -> _Outgoing:
        by_topic: dict[uuid.UUID, list[dict[str, Any]]] = {}
        for tp, offsets in sorted(acks.items()):
            by_topic.setdefault(self._inflight[tp].topic_id, []).append(
                {"partition_index": tp.partition, "acknowledgement_batches": _wire_batches(offsets)}
            )
        body = {
            "group_id": self._cfg.group_id,
            "member_id": self._membership.member_id,
            "share_session_epoch": FINAL_EPOCH if final else session.epoch,
            "topics": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        return _Outgoing(session, body, set(session.partitions), acks)

    def _on_acknowledge_response(self, out: _Outgoing, resp: Any, *, final: bool) -> None:
        session = out.session
        if isinstance(resp, Exception):
            self._fail_acks(out.acks, resp)
            self._reset_session(session, resp)
            if final:
                self._sessions.pop(session.node_id, None)
            return
        code = ErrorCode(int(resp.error_code))
        if code is not ErrorCode.NONE:
            error = error_for_code(int(code))(
                resp.error_message, group_id=self._cfg.group_id, node_id=session.node_id
            )
            self._fail_acks(out.acks, error)
            if code in _SESSION_ERRORS or final:
                self._reset_session(session, error)
            if final:
                self._sessions.pop(session.node_id, None)
            return
        pending = dict(out.acks)
        for topic in resp.responses:
            name = self._topic_names.get(topic.topic_id) if topic.topic_id is not None else None
            if name is None:
                continue
            for p in topic.partitions:
                tp = TopicPartition(name, int(p.partition_index))
                if tp not in pending:
                    continue
                del pending[tp]
                part_code = int(p.error_code)
                self._record_result(
                    tp,
                    None
                    if part_code == 0
                    else error_for_code(part_code)(
                        p.error_message, topic=tp.topic, partition=tp.partition
                    ),
                )
        for tp in pending:
            self._record_result(tp, None)
        if final:
            self._sessions.pop(session.node_id, None)
        else:
            session.advance()

    def _finish_sessions(self, deadline: float) -> None:
        """Final acknowledgements and session close (epoch -1) on every node."""
        if self._mode == "implicit":
            self._accept_delivered()
        elif self._mode == "transactional":
            recorded = sum(len(i.acks) for i in self._inflight.values())
            if recorded:
                log.warning(
                    "share group %s: %d recorded acknowledgement(s) were never handed to a "
                    "transaction; closing the share session releases their records",
                    self._cfg.group_id,
                    recorded,
                )
            for inflight in self._inflight.values():
                inflight.acks.clear()
        self._send_acknowledgements(deadline, final=True)
        self._sessions.clear()
        for inflight in self._inflight.values():
            inflight.delivered.clear()

    # -- close ------------------------------------------------------------------------------------

    def close(self, timeout_s: float | None = None) -> None:
        """Send the last acknowledgements, close the share sessions and leave the group.

        Idempotent, and safe to call from any thread: a ``poll`` running in another thread
        returns early and the close waits for it (up to ``timeout_s``, default 30 s).
        """
        with self._close_lock:
            if self._closed:
                return
            wait_s = _CLOSE_TIMEOUT_S if timeout_s is None else max(0.0, timeout_s)
            deadline = time.monotonic() + wait_s
            self._closing.set()
            self._membership.notify()
            me = threading.get_ident()
            with self._guard:
                while self._owner is not None and self._owner != me:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._guard.wait(remaining)
                other_still_running = self._owner is not None and self._owner != me
                if not other_still_running:
                    self._owner = me
                    self._depth += 1
            try:
                if other_still_running:
                    log.warning("ShareConsumer.close: another thread is still in the consumer")
                else:
                    try:
                        self._finish_sessions(deadline)
                    except Exception:
                        log.exception("share group %s: closing share sessions", self._cfg.group_id)
                try:
                    self._membership.close(leave=True)
                except Exception:
                    log.exception("share group %s: leaving the group", self._cfg.group_id)
                if self._executor is not None:
                    self._executor.shutdown(wait=False, cancel_futures=True)
                self._client.close()
            finally:
                self._closed = True
                if not other_still_running:
                    with self._guard:
                        self._depth -= 1
                        if self._depth == 0:
                            self._owner = None
                            self._guard.notify_all()

    def __del__(self) -> None:
        # A consumer dropped without close(): stop its heartbeat thread; the broker releases
        # its records when the connections close and the member's session times out.
        membership = getattr(self, "_membership", None)
        if membership is not None and not getattr(self, "_closed", True):
            membership.stop_nowait()
