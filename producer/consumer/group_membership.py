"""KIP-848 group membership for ``GroupConsumer``: ConsumerGroupHeartbeat from a daemon thread.

The thread owns the member's epoch and the assignment the coordinator sent (its *target*);
the consumer thread owns the partitions it actually consumes and reports them back
(``set_owned``), so a revoked partition is given up only after the consumer committed it,
as Kafka's consumer does.  It has its own ``KafkaClient``, so a long Fetch never delays a
heartbeat.
"""

from __future__ import annotations

import datetime
import logging
import threading
import uuid
from collections.abc import Callable

from producer.consumer.heartbeat_backoff import HeartbeatBackoff
from producer.consumer.heartbeat_thread import HeartbeatThread
from producer.protocol.client import KafkaClient
from txn.api_keys import ApiKey
from txn.errors import (
    ErrorCode,
    KafkaProtocolError,
    RetriableError,
    error_for_code,
)
from txn.ids import KEY_TYPE_GROUP, TopicPartition

log = logging.getLogger("sharetxn.group_consumer")

JOIN_EPOCH = 0
LEAVE_EPOCH = -1

# The member is no longer in the group: give everything up (no commit) and join again.
_FENCED = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH})
_COORDINATOR = frozenset(
    {
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


class GroupMembership(HeartbeatThread):
    """One member of a consumer group (the KIP-848 protocol)."""

    def __init__(
        self,
        new_client: Callable[[], KafkaClient],
        group_id: str,
        *,
        rebalance_timeout_ms: int,
        server_assignor: str | None,
        retry_backoff_ms: int,
        retry_backoff_max_ms: int,
    ) -> None:
        self.group_id = group_id
        self.member_id = str(uuid.uuid4())
        self._client = new_client()
        self._rebalance_timeout_ms = rebalance_timeout_ms
        self._server_assignor = server_assignor
        self._backoff = HeartbeatBackoff(
            log, f"consumer group {group_id}", retry_backoff_ms, retry_backoff_max_ms
        )
        self._lock = threading.Lock()
        self.changed = threading.Condition(self._lock)
        self._send_lock = threading.Lock()
        # topic names, or ("", regex) for a regex subscription (KIP-848 SubscribedTopicRegex)
        self._subscription: tuple[str, ...] = ()
        self._sent_subscription: tuple[str, ...] | None = None
        self._owned: frozenset[TopicPartition] = frozenset()
        self._sent_owned: frozenset[TopicPartition] | None = None
        self.member_epoch = JOIN_EPOCH
        self.interval_ms = 5000
        self.target: frozenset[TopicPartition] = frozenset()
        self.lost = 0  # bumped whenever the member was fenced out of the group
        self.version = 0
        self.fatal: KafkaProtocolError | None = None
        super().__init__()

    # -- called by the consumer thread ------------------------------------------------------------

    def subscribe(self, topics: tuple[str, ...]) -> None:
        with self._lock:
            self._subscription = topics
        self._wakeup.set()

    def subscribe_pattern(self, regex: str) -> None:
        """Subscribe to the topics an RE2J regex matches, resolved by the coordinator."""
        self.subscribe(("", regex))

    def set_owned(self, owned: frozenset[TopicPartition]) -> None:
        """The partitions the consumer consumes now (sent with the next heartbeat, at once)."""
        with self._lock:
            changed = owned != self._owned
            self._owned = owned
        if changed:
            self._wakeup.set()

    def snapshot(self) -> tuple[int, int, frozenset[TopicPartition], int]:
        """(version, member epoch, target assignment, times lost)."""
        with self._lock:
            return self.version, self.member_epoch, self.target, self.lost

    def wait_for_change(self, version: int, timeout_s: float) -> None:
        with self._lock:
            if self.version == version and self.fatal is None:
                self.changed.wait(timeout_s)

    def close(self, *, leave: bool) -> None:
        self._stop.set()
        self._wakeup.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if leave and self.fatal is None:
            self._leave()
        self._client.close()

    # -- the heartbeat thread ---------------------------------------------------------------------

    def _thread_name(self) -> str:
        return f"group-heartbeat-{self.group_id}"

    def _beat(self) -> int:
        with self._send_lock:
            with self._lock:
                topics = self._subscription
                epoch = self.member_epoch
                owned = self._owned
                if self.fatal is not None or not topics:
                    return 3_600_000  # idle until subscribe() wakes us
                full = epoch == JOIN_EPOCH or topics != self._sent_subscription
                send_owned = full or owned != self._sent_owned
            regex = topics[1] if topics[0] == "" else None
            body = {
                "group_id": self.group_id,
                "member_id": self.member_id,
                "member_epoch": epoch,
                "rebalance_timeout": self._rebalance_timeout_ms if full else -1,
                "subscribed_topic_names": list(topics) if full and regex is None else None,
                "server_assignor": self._server_assignor if full else None,
                "topic_partitions": self._owned_body(owned) if send_owned else None,
            }
            if full:  # "" drops a regex, as Java's consumer sends when it subscribes to names
                body["subscribed_topic_regex"] = regex if regex is not None else ""
            try:
                node = self._client.coordinator_for(KEY_TYPE_GROUP, self.group_id)
                resp = self._client.send(node, ApiKey.CONSUMER_GROUP_HEARTBEAT, body)
            except RetriableError as exc:
                self._client.forget_coordinator(KEY_TYPE_GROUP, self.group_id)
                self._backoff.unreachable(exc)
                return self._backoff.next_ms()
            except KafkaProtocolError as exc:
                return self._set_fatal(exc)
            code = ErrorCode(int(resp.error_code))
            if code is ErrorCode.NONE:
                self._backoff.succeeded()
                self._on_success(resp, topics, owned, send_owned)
                return max(self.interval_ms, 1)
            if code in _FENCED:
                log.warning(
                    "consumer group %s: member %s was fenced (%s); its partitions are lost",
                    self.group_id,
                    self.member_id,
                    code.name,
                )
                with self._lock:
                    self.member_epoch = JOIN_EPOCH
                    self._sent_subscription = None
                    self._sent_owned = None
                    self.target = frozenset()
                    self.lost += 1
                    self.version += 1
                    self.changed.notify_all()
                return 0
            if code in _COORDINATOR:
                self._client.forget_coordinator(KEY_TYPE_GROUP, self.group_id)
                return self._backoff.next_ms()
            error = error_for_code(int(code))(resp.error_message, group_id=self.group_id)
            if error.retriable:
                return self._backoff.next_ms()
            return self._set_fatal(error)

    def _owned_body(self, owned: frozenset[TopicPartition]) -> list[dict[str, object]]:
        by_topic: dict[uuid.UUID, list[int]] = {}
        for tp in sorted(owned):
            try:
                topic_id = self._client.topic(tp.topic).topic_id
            except KafkaProtocolError:
                continue
            by_topic.setdefault(topic_id, []).append(tp.partition)
        return [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()]

    def _on_success(
        self,
        resp: object,
        topics: tuple[str, ...],
        owned: frozenset[TopicPartition],
        sent_owned: bool,
    ) -> None:
        assignment = getattr(resp, "assignment", None)
        target: frozenset[TopicPartition] | None = None
        if assignment is not None:
            parts: set[TopicPartition] = set()
            for entry in assignment.topic_partitions:
                name = self._topic_name(entry.topic_id)
                if name is None:
                    continue
                parts.update(TopicPartition(name, int(p)) for p in entry.partitions)
            target = frozenset(parts)
        with self._lock:
            member_id = getattr(resp, "member_id", None)
            if member_id:
                self.member_id = str(member_id)
            new_epoch = int(getattr(resp, "member_epoch", self.member_epoch))
            interval = getattr(resp, "heartbeat_interval", None)
            if isinstance(interval, datetime.timedelta) and interval.total_seconds() > 0:
                self.interval_ms = int(interval.total_seconds() * 1000)
            self._sent_subscription = topics
            if sent_owned:
                self._sent_owned = owned
            changed = new_epoch != self.member_epoch or (
                target is not None and target != self.target
            )
            self.member_epoch = new_epoch
            if target is not None:
                self.target = target
            if changed:
                self.version += 1
                self.changed.notify_all()

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        meta = self._client.topic_by_id(topic_id)
        if meta is None:
            try:
                self._client.refresh_metadata()
            except KafkaProtocolError:
                return None
            meta = self._client.topic_by_id(topic_id)
        return None if meta is None else meta.name

    def _leave(self) -> None:
        with self._lock:
            epoch = self.member_epoch
        if epoch <= JOIN_EPOCH:
            return
        body = {"group_id": self.group_id, "member_id": self.member_id, "member_epoch": LEAVE_EPOCH}
        try:
            node = self._client.coordinator_for(KEY_TYPE_GROUP, self.group_id)
            self._client.send(node, ApiKey.CONSUMER_GROUP_HEARTBEAT, body)
        except KafkaProtocolError as exc:
            log.info("consumer group %s: leaving failed (%s)", self.group_id, exc)

    def _set_fatal(self, error: KafkaProtocolError) -> int:
        with self._lock:
            self.fatal = error
            self.version += 1
            self.changed.notify_all()
        return 3_600_000
