"""A consumer-group consumer: ``subscribe()``, ``poll()``, commits, exactly-once copies.

    from producer import GroupConsumer, TransactionalProducer

    consumer = GroupConsumer({
        "bootstrap.servers": "127.0.0.1:9092",
        "group.id": "orders-copier",
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    consumer.subscribe(["orders"])
    for record in consumer.poll(1.0):
        ...
    consumer.commit_sync()          # the positions of what poll() returned
    consumer.close()

The group protocol is KIP-848 (``group.protocol=consumer``, Kafka 4.x's default for new
consumers): the coordinator assigns partitions (``group.remote.assignor`` names its assignor)
and the member reports what it owns (``producer.consumer.group_membership``).  A revoked
partition is given up between two ``poll()`` calls, after its position was committed when
``enable.auto.commit`` is on -- so, as with Kafka's consumer, call ``poll()`` at least every
``max.poll.interval.ms``.  A member the group fenced loses its partitions without a commit
and joins again; ``commit_sync`` then fails with the coordinator's error.

For a consume-transform-produce copy, pass ``consumer.group_metadata()`` and the positions to
``TransactionalProducer.send_offsets_to_transaction``: the group coordinator fences a commit
from a member the group no longer knows (KIP-447).  Positions come from OffsetFetch with
``require_stable`` under ``read_committed``, so a transaction's offsets still pending are
waited for instead of read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from producer.consumer.group_membership import GroupMembership
from producer.protocol.client import KafkaClient, check_error
from producer.protocol.client_defaults import CONSUMER_DEFAULTS
from producer.protocol.config_values import as_bool, consumer_int
from producer.protocol.records import decode_batch, split_batches
from producer.protocol.security import SECURITY_KEYS, ClientSecurity
from producer.protocol.types import ConsumerGroupMetadata, Record
from txn.api_keys import ApiKey
from txn.batch import ControlType, control_type_of
from txn.errors import (
    ErrorCode,
    IllegalStateError,
    InvalidConfigError,
    KafkaProtocolError,
    OffsetOutOfRangeError,
    RetriableError,
    error_for_code,
)
from txn.ids import KEY_TYPE_GROUP, TopicPartition

log = logging.getLogger("sharetxn.group_consumer")

FETCH_NAMES_MAX_VERSION = 12  # Fetch with topic names (v13+ uses topic ids)
EARLIEST, LATEST = -2, -1
READ_UNCOMMITTED, READ_COMMITTED = 0, 1

DEFAULTS: dict[str, Any] = {
    **CONSUMER_DEFAULTS,
    "client.id": "sharetxn-consumer",
    "group.protocol": "consumer",
    "group.remote.assignor": None,
    "auto.offset.reset": "latest",
    "isolation.level": "read_uncommitted",
    "enable.auto.commit": True,
    "auto.commit.interval.ms": 5000,
    "max.poll.interval.ms": 300000,
    "max.partition.fetch.bytes": 1048576,
}
_INTS = (
    "auto.commit.interval.ms",
    "max.poll.records",
    "max.poll.interval.ms",
    "fetch.max.wait.ms",
    "fetch.min.bytes",
    "fetch.max.bytes",
    "max.partition.fetch.bytes",
    "request.timeout.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
)
_CHOICES = {
    "group.protocol": ("consumer",),
    "auto.offset.reset": ("earliest", "latest", "none"),
    "isolation.level": ("read_uncommitted", "read_committed"),
}


def _bool(key: str, raw: object) -> bool:
    value = as_bool(raw)
    if value is None:
        msg = f"GroupConsumer config {key!r} must be true or false, not {raw!r}"
        raise InvalidConfigError(msg)
    return value


@dataclass(frozen=True, slots=True)
class GroupConsumerConfig:
    values: Mapping[str, Any]

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> GroupConsumerConfig:
        unknown = sorted(k for k in config if k not in DEFAULTS and k not in SECURITY_KEYS)
        if unknown:
            msg = f"unknown GroupConsumer config {unknown[0]!r}"
            raise InvalidConfigError(msg)
        values = {**DEFAULTS, **config}
        for key in ("bootstrap.servers", "group.id"):
            if not isinstance(values[key], str) or not values[key].strip():
                msg = f"GroupConsumer config {key!r} is required (a non-empty string)"
                raise InvalidConfigError(msg)
        for key, choices in _CHOICES.items():
            value = str(values[key]).strip().lower()
            if value not in choices:
                msg = f"GroupConsumer config {key!r} must be one of {', '.join(choices)}"
                if key == "group.protocol":
                    msg += " (the KIP-848 protocol; use confluent-kafka for the classic one)"
                raise InvalidConfigError(f"{msg}, not {values[key]!r}")
            values[key] = value
        for key in _INTS:
            values[key] = consumer_int("GroupConsumer", key, values[key], InvalidConfigError)
        for key in ("enable.auto.commit", "check.crcs"):
            values[key] = _bool(key, values[key])
        return cls(values)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def new_client(self) -> KafkaClient:
        return KafkaClient(
            self["bootstrap.servers"],
            client_id=self["client.id"],
            request_timeout_ms=self["request.timeout.ms"],
            retry_backoff_ms=max(self["retry.backoff.ms"], 1),
            retry_backoff_max_ms=self["retry.backoff.max.ms"],
            security=ClientSecurity.from_config(self.values),
        )


class GroupConsumer:
    """A member of a consumer group reading its assigned partitions."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._cfg = GroupConsumerConfig.parse(config)
        self.group_id: str = self._cfg["group.id"]
        self._client = self._cfg.new_client()
        self._membership = GroupMembership(
            self._cfg.new_client,
            self.group_id,
            rebalance_timeout_ms=self._cfg["max.poll.interval.ms"],
            server_assignor=self._cfg["group.remote.assignor"],
            retry_backoff_ms=self._cfg["retry.backoff.ms"],
            retry_backoff_max_ms=self._cfg["retry.backoff.max.ms"],
        )
        self._read_committed = self._cfg["isolation.level"] == "read_committed"
        self._owned: set[TopicPartition] = set()
        self._positions: dict[TopicPartition, int] = {}
        self._lost_seen = 0
        self._subscription: tuple[str, ...] = ()
        self._next_auto_commit = time.monotonic() + self._cfg["auto.commit.interval.ms"] / 1000
        self._closed = False

    def __enter__(self) -> GroupConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- subscription -----------------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        self._check_open()
        names = tuple(sorted(set(topics)))
        if not names or not all(isinstance(t, str) and t for t in names):
            msg = "subscribe() needs at least one topic name"
            raise ValueError(msg)
        self._subscription = names
        self._membership.subscribe(names)
        self._membership.start()

    def subscribe_pattern(self, pattern: str) -> None:
        """Subscribe to every topic the RE2J regular expression ``pattern`` matches whole,
        resolved by the group coordinator (KIP-848 ``SubscribedTopicRegex``; Java's
        ``subscribe(SubscriptionPattern)``).  A pattern the coordinator refuses fails the
        next ``poll()`` with ``InvalidRegularExpressionError``."""
        self._check_open()
        if not isinstance(pattern, str) or not pattern:
            msg = "subscribe_pattern() needs a regular expression"
            raise ValueError(msg)
        self._subscription = ("", pattern)
        self._membership.subscribe_pattern(pattern)
        self._membership.start()

    def subscription(self) -> set[str]:
        """The topic names subscribed to (a pattern subscription: the topics assigned)."""
        if self._subscription[:1] == ("",):
            return {tp.topic for tp in self._owned}
        return set(self._subscription)

    def assignment(self) -> set[TopicPartition]:
        """The partitions this member consumes now."""
        return set(self._owned)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """For ``TransactionalProducer.send_offsets_to_transaction`` (KIP-447 fencing)."""
        _version, epoch, _target, _lost = self._membership.snapshot()
        return ConsumerGroupMetadata(self.group_id, epoch, self._membership.member_id)

    def position(self, tp: TopicPartition) -> int | None:
        """The offset of the next record ``poll()`` returns for ``tp`` (None: not known yet)."""
        return self._positions.get(tp)

    def positions(self) -> dict[TopicPartition, int]:
        """Every known position: what to commit after processing what ``poll()`` returned."""
        return dict(self._positions)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if tp not in self._owned:
            msg = f"{tp.topic}-{tp.partition} is not assigned to this consumer"
            raise IllegalStateError(msg)
        self._positions[tp] = offset

    # -- polling ----------------------------------------------------------------------------------

    def poll(self, timeout_s: float = 0.0) -> list[Record]:
        """Records of the assigned partitions, at most ``max.poll.records``."""
        self._check_open()
        if not self._subscription:
            msg = "poll() before subscribe()"
            raise IllegalStateError(msg)
        deadline = time.monotonic() + max(timeout_s, 0.0)
        while True:
            self._raise_fatal()
            self._maybe_auto_commit()
            version = self._reconcile()
            self._fill_positions()
            ready = {tp: off for tp, off in self._positions.items() if tp in self._owned}
            remaining = deadline - time.monotonic()
            if ready:
                records = self._fetch(ready, max(0, min(remaining, 60.0)))
                if records or time.monotonic() >= deadline:
                    return records
            elif remaining <= 0:
                return []
            else:
                self._membership.wait_for_change(version, min(remaining, 0.1))

    def _reconcile(self) -> int:
        """Apply the coordinator's assignment: give revoked partitions up, take new ones."""
        version, _epoch, target, lost = self._membership.snapshot()
        if lost != self._lost_seen:
            self._lost_seen = lost
            if self._owned:
                log.warning(
                    "consumer group %s: partitions lost without a commit: %s",
                    self.group_id,
                    ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(self._owned)),
                )
            self._owned.clear()
            self._positions.clear()
        revoked = self._owned - target
        if revoked:
            if self._cfg["enable.auto.commit"]:
                self._commit_quietly(
                    {tp: self._positions[tp] for tp in revoked if tp in self._positions}
                )
            for tp in revoked:
                self._owned.discard(tp)
                self._positions.pop(tp, None)
        added = target - self._owned
        self._owned |= added
        if revoked or added:
            self._membership.set_owned(frozenset(self._owned))
        return version

    def _fill_positions(self) -> None:
        """Committed offsets for partitions without a position, else auto.offset.reset."""
        missing = sorted(tp for tp in self._owned if tp not in self._positions)
        if not missing:
            return
        try:
            committed = self._offset_fetch(missing)
        except RetriableError as exc:
            log.debug("consumer group %s: OffsetFetch: %s", self.group_id, exc)
            return
        reset: list[TopicPartition] = []
        for tp in missing:
            offset = committed.get(tp)
            if offset is None:
                continue  # unstable (a transaction's offsets are pending): ask again later
            if offset >= 0:
                self._positions[tp] = offset
            else:
                reset.append(tp)
        if reset:
            self._reset(reset)

    def _reset(self, partitions: list[TopicPartition]) -> None:
        policy = self._cfg["auto.offset.reset"]
        if policy == "none":
            names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in partitions)
            msg = f"no committed offset for {names} and auto.offset.reset is none"
            raise OffsetOutOfRangeError(msg, group_id=self.group_id)
        timestamp = EARLIEST if policy == "earliest" else LATEST
        for tp, offset in self._list_offsets(partitions, timestamp).items():
            self._positions[tp] = offset

    def _fetch(self, positions: dict[TopicPartition, int], wait_s: float) -> list[Record]:
        by_node: dict[int, dict[TopicPartition, int]] = {}
        for tp, offset in positions.items():
            try:
                node = self._client.leader_for(tp)
            except KafkaProtocolError:
                continue
            by_node.setdefault(node, {})[tp] = offset
        records: list[Record] = []
        cap = self._cfg["max.poll.records"]
        for node, wanted in sorted(by_node.items()):
            body = {
                "replica_id": -1,
                "max_wait": int(wait_s * 1000) if not records else 0,
                "min_bytes": self._cfg["fetch.min.bytes"],
                "max_bytes": self._cfg["fetch.max.bytes"],
                "isolation_level": READ_COMMITTED if self._read_committed else READ_UNCOMMITTED,
                "session_id": 0,
                "session_epoch": -1,
                "topics": _grouped(
                    wanted,
                    lambda tp, off: {
                        "partition": tp.partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": off,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": self._cfg["max.partition.fetch.bytes"],
                    },
                    "topic",
                ),
                "forgotten_topics_data": [],
                "rack_id": "",
            }
            try:
                resp = self._client.send(
                    node, ApiKey.FETCH, body, max_version=FETCH_NAMES_MAX_VERSION
                )
            except RetriableError as exc:
                log.debug("consumer group %s: Fetch from %d: %s", self.group_id, node, exc)
                self._client.refresh_metadata()
                continue
            check_error(int(resp.error_code), group_id=self.group_id)
            for topic in resp.responses:
                for part in topic.partitions:
                    tp = TopicPartition(topic.topic, int(part.partition_index))
                    if tp not in wanted or self._positions.get(tp) != wanted[tp]:
                        continue
                    records.extend(self._on_partition(tp, part, cap - len(records)))
        return records

    def _on_partition(self, tp: TopicPartition, part: Any, room: int) -> list[Record]:
        code = ErrorCode(int(part.error_code))
        if code is ErrorCode.OFFSET_OUT_OF_RANGE:
            log.info("consumer group %s: %s out of range, resetting", self.group_id, tp)
            self._positions.pop(tp, None)
            self._reset([tp])
            return []
        if code is not ErrorCode.NONE:
            error = error_for_code(int(code))
            if not issubclass(error, RetriableError):
                raise error(f"Fetch of {tp.topic}-{tp.partition}", topic=tp.topic)
            self._client.refresh_metadata()
            return []
        raw = bytes(part.records or b"")
        position = self._positions[tp]
        aborted = sorted(
            (int(a.first_offset), int(a.producer_id)) for a in (part.aborted_transactions or ())
        )
        aborting: set[int] = set()
        out: list[Record] = []
        for pos, header in split_batches(raw):
            if len(out) >= room:
                break
            while aborted and aborted[0][0] <= header.last_offset:
                aborting.add(aborted.pop(0)[1])
            if header.last_offset < position:
                continue
            if header.is_control:
                if control_type_of(raw, pos, header) is ControlType.ABORT:
                    aborting.discard(header.producer_id)
                position = header.last_offset + 1
                continue
            if self._read_committed and header.is_transactional and header.producer_id in aborting:
                position = header.last_offset + 1
                continue
            batch = decode_batch(raw, pos, header, check_crc=self._cfg["check.crcs"])
            for rec in batch.records:
                if rec.offset < position:
                    continue
                if len(out) >= room:
                    break
                out.append(
                    Record(
                        tp.topic,
                        tp.partition,
                        rec.offset,
                        rec.key,
                        rec.value,
                        rec.headers,
                        rec.timestamp,
                        timestamp_type=rec.timestamp_type,
                    )
                )
                position = rec.offset + 1
            else:
                position = max(position, header.last_offset + 1)
        self._positions[tp] = position
        return out

    # -- offsets ----------------------------------------------------------------------------------

    def commit_sync(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commit ``offsets`` (default: the positions of what ``poll()`` returned)."""
        self._check_open()
        wanted = (
            dict(offsets)
            if offsets is not None
            else {tp: off for tp, off in self._positions.items() if tp in self._owned}
        )
        if not wanted:
            return
        _version, epoch, _target, _lost = self._membership.snapshot()
        body = {
            "group_id": self.group_id,
            "generation_id_or_member_epoch": epoch,
            "member_id": self._membership.member_id,
            "group_instance_id": None,
            "retention_time": -1,
            "topics": _grouped(
                wanted,
                lambda tp, off: {
                    "partition_index": tp.partition,
                    "committed_offset": off,
                    "committed_leader_epoch": -1,
                    "committed_metadata": "",
                },
                "name",
            ),
        }
        resp = self._group_call(ApiKey.OFFSET_COMMIT, body)
        for topic in resp.topics:
            for part in topic.partitions:
                check_error(int(part.error_code), group_id=self.group_id, topic=topic.name)

    def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The group's committed offsets (None where there is none).

        Under read_committed, as Kafka's consumer: with ``require_stable``, waiting (up to
        ``request.timeout.ms``) while a transaction's offsets are still pending -- a
        transaction's markers reach the group coordinator after its commit returned.
        """
        wanted = sorted(set(partitions))
        deadline = time.monotonic() + self._cfg["request.timeout.ms"] / 1000
        while True:
            got = self._offset_fetch(wanted)  # require_stable follows isolation.level
            if all(tp in got for tp in wanted) or time.monotonic() > deadline:
                break
            time.sleep(self._cfg["retry.backoff.ms"] / 1000)
        missing = [tp for tp in wanted if tp not in got]
        if missing:
            msg = f"offsets of {missing} stayed unstable (a transaction is still pending)"
            raise error_for_code(ErrorCode.UNSTABLE_OFFSET_COMMIT)(msg, group_id=self.group_id)
        return {tp: (got[tp] if got[tp] >= 0 else None) for tp in wanted}

    def _offset_fetch(
        self, partitions: list[TopicPartition], *, require_stable: bool | None = None
    ) -> dict[TopicPartition, int]:
        """OffsetFetch: -1 for no committed offset; unstable partitions are left out."""
        stable = self._read_committed if require_stable is None else require_stable
        body = {
            "group_id": self.group_id,
            "topics": _grouped(
                dict.fromkeys(partitions, 0),
                lambda tp, _v: tp.partition,
                "name",
                key="partition_indexes",
            ),
            "require_stable": stable,
        }
        resp = self._group_call(ApiKey.OFFSET_FETCH, body)
        check_error(int(getattr(resp, "error_code", 0)), group_id=self.group_id)
        out: dict[TopicPartition, int] = {}
        for topic in resp.topics:
            for part in topic.partitions:
                code = ErrorCode(int(part.error_code))
                if code is ErrorCode.UNSTABLE_OFFSET_COMMIT:
                    continue
                check_error(int(code), group_id=self.group_id, topic=topic.name)
                out[TopicPartition(topic.name, int(part.partition_index))] = int(
                    part.committed_offset
                )
        return out

    def _list_offsets(
        self, partitions: list[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            by_node.setdefault(self._client.leader_for(tp), []).append(tp)
        for node, tps in by_node.items():
            body = {
                "replica_id": -1,
                "isolation_level": READ_COMMITTED if self._read_committed else READ_UNCOMMITTED,
                "topics": _grouped(
                    dict.fromkeys(tps, timestamp),
                    lambda tp, ts: {
                        "partition_index": tp.partition,
                        "current_leader_epoch": -1,
                        "timestamp": ts,
                    },
                    "name",
                ),
            }
            resp = self._client.call(partial(self._client.send, node, ApiKey.LIST_OFFSETS, body))
            for topic in resp.topics:
                for part in topic.partitions:
                    check_error(int(part.error_code), topic=topic.name)
                    out[TopicPartition(topic.name, int(part.partition_index))] = int(part.offset)
        return out

    def _group_call(self, api_key: ApiKey, body: Mapping[str, Any]) -> Any:
        def once() -> Any:
            node = self._client.coordinator_for(KEY_TYPE_GROUP, self.group_id)
            try:
                resp = self._client.send(node, api_key, body)
            except RetriableError:
                self._client.forget_coordinator(KEY_TYPE_GROUP, self.group_id)
                raise
            codes = [int(getattr(resp, "error_code", 0))]
            codes += [int(p.error_code) for t in resp.topics for p in t.partitions]
            if any(
                c in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE) for c in codes
            ):
                self._client.forget_coordinator(KEY_TYPE_GROUP, self.group_id)
                raise error_for_code(ErrorCode.NOT_COORDINATOR)("coordinator moved")
            return resp

        return self._client.call(once)

    def _commit_quietly(self, offsets: dict[TopicPartition, int]) -> None:
        try:
            self.commit_sync(offsets)
        except KafkaProtocolError as exc:
            log.warning("consumer group %s: commit failed: %s", self.group_id, exc)

    def _maybe_auto_commit(self) -> None:
        if not self._cfg["enable.auto.commit"]:
            return
        now = time.monotonic()
        if now >= self._next_auto_commit:
            self._next_auto_commit = now + self._cfg["auto.commit.interval.ms"] / 1000
            self._commit_quietly(
                {tp: off for tp, off in self._positions.items() if tp in self._owned}
            )

    # -- lifecycle --------------------------------------------------------------------------------

    def _raise_fatal(self) -> None:
        fatal = self._membership.fatal
        if fatal is not None:
            raise fatal

    def _check_open(self) -> None:
        if self._closed:
            msg = "the consumer is closed"
            raise IllegalStateError(msg)

    def close(self) -> None:
        """Commit (with ``enable.auto.commit``), leave the group, close the connections."""
        if self._closed:
            return
        if self._cfg["enable.auto.commit"] and self._membership.fatal is None:
            self._commit_quietly(
                {tp: off for tp, off in self._positions.items() if tp in self._owned}
            )
        self._closed = True
        self._membership.close(leave=True)
        self._client.close()


def _grouped(
    values: Mapping[TopicPartition, Any],
    entry: Any,
    name_field: str,
    *,
    key: str = "partitions",
) -> list[dict[str, Any]]:
    """[{name_field: topic, key: [entry(tp, value), ...]}] in sorted order."""
    topics: dict[str, list[Any]] = {}
    for tp in sorted(values):
        topics.setdefault(tp.topic, []).append(entry(tp, values[tp]))
    return [{name_field: name, key: parts} for name, parts in topics.items()]
