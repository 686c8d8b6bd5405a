"""Share-group membership: ShareGroupHeartbeat from a background thread (KIP-932)."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any, Final

from producer.consumer.heartbeat_backoff import HeartbeatBackoff
from producer.consumer.heartbeat_thread import HeartbeatThread
from producer.consumer.share_consumer_config import ShareConsumerConfig
from producer.protocol.types import ShareGroupMetadata
from txn.api_keys import ApiKey
from txn.errors import ErrorCode, KafkaProtocolError, RetriableError, SharetxnError, error_for_code
from txn.ids import KEY_TYPE_GROUP, TopicPartition

__all__ = ["COORDINATOR_ERRORS", "Membership", "ms_of"]

log = logging.getLogger("producer.share_consumer")

JOIN_EPOCH: Final = 0
LEAVE_GROUP_EPOCH: Final = -1

COORDINATOR_ERRORS: Final = frozenset(
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


def ms_of(value: Any) -> int:
    if hasattr(value, "total_seconds"):
        return int(value.total_seconds() * 1000)
    return int(value)


# -- group membership (the heartbeat thread) -------------------------------------------------------


class Membership(HeartbeatThread):
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
        super().__init__()

    # called by the consumer thread

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
                    resp = self._client.send(
                        node, ApiKey.SHARE_GROUP_HEARTBEAT, body, min_version=1
                    )
                    code = ErrorCode(int(resp.error_code))
                    if code not in (ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID):
                        log.warning("leaving share group %s: %s", self.group_id, code.name)
                except SharetxnError as exc:
                    log.warning("leaving share group %s failed: %s", self.group_id, exc)
            self._drop_membership()

    def _drop_membership(self) -> None:
        """Back to epoch 0 without an assignment (after leaving, or when told to rejoin)."""
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

    def _thread_name(self) -> str:
        return f"sharetxn-heartbeat-{self.member_id}"

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
                full = epoch == JOIN_EPOCH or topics != self._sent_subscription
            body = {
                "group_id": self.group_id,
                "member_id": self.member_id,
                "member_epoch": epoch,
                "rack_id": self._cfg.rack_id if epoch == JOIN_EPOCH else None,
                "subscribed_topic_names": list(topics) if full else None,
            }
            try:
                node = self._client.coordinator_for(KEY_TYPE_GROUP, self.group_id)
                resp = self._client.send(node, ApiKey.SHARE_GROUP_HEARTBEAT, body, min_version=1)
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
                self._drop_membership()
                return 0
            if code in COORDINATOR_ERRORS:
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
        interval_ms = ms_of(resp.heartbeat_interval)
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
