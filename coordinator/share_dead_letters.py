"""Dead-letter queues of share groups (KIP-1191), as Kafka 4.4 writes them.

A share group whose ``errors.deadletterqueue.topic.name`` is set sends the records it archives
because a client rejected them (REJECT) or because they reached the delivery count limit to
that topic: one record per offset, carrying the headers ``__dlq.errors.topic``,
``__dlq.errors.partition``, ``__dlq.errors.offset``, ``__dlq.errors.group``,
``__dlq.errors.delivery.count`` and ``__dlq.errors.message`` (the cause), and the original
record's key and value when ``errors.deadletterqueue.copy.record.enable`` is true (null key
and value otherwise), timestamped when written.  The destination partition is the source
partition modulo the dead-letter topic's partition count.

The topic is checked first, in Kafka's order and words: a name starting with ``__``; an
existing topic without the topic config ``errors.deadletterqueue.group.enable=true``; a
missing topic while the broker's ``errors.deadletterqueue.auto.create.topics.enable`` is off
(on: it is created with the broker's default partition count and that topic config set, and
``message.timestamp.type=CreateTime``); a name without the broker's
``errors.deadletterqueue.topic.name.prefix`` (both dynamic broker configs, read when the
write happens).  A refused or failed write is logged and the records stay archived, as in
Kafka.

A range is written as Kafka's writer sends it: in batches of at most the dead-letter topic's
``max.message.bytes`` (``split_at``), one Produce each, in order; a failed one ends the
write.  Each Produce, each failure and the dead letters written are counted per group as
Kafka's ``ShareGroupMetrics`` DLQ meters count them.

The share partition reports the archived ranges (``SharePartition``'s dead-letter sink) and
the write is scheduled on the clock, after the operation that archived them, as Kafka's
writer works apart from the share partition.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final, Protocol

from coordinator.log_settings import TopicLogSettings
from coordinator.partition import AppendResult, FetchData
from coordinator.share.partition_model import DeadLetter
from coordinator.topics import TopicInfo, TopicRegistry
from txn.batch import BatchFormatError, build_batch, iter_batches
from txn.clock import Clock
from txn.codec import Reader
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.record_keys import records_of

log = logging.getLogger(__name__)

#: the topic config that lets a topic be a share group's dead-letter topic
GROUP_ENABLE = "errors.deadletterqueue.group.enable"
AUTO_CREATE = "errors.deadletterqueue.auto.create.topics.enable"
NAME_PREFIX = "errors.deadletterqueue.topic.name.prefix"
#: the share events of the writer (Kafka's ``ShareGroupMetrics`` meters
#: ``DeadLetterQueueRecordCount``, ``DeadLetterQueueTotalProduceRequestsPerSec`` and
#: ``DeadLetterQueueFailedProduceRequestsPerSec``): dead letters written, Produce requests
#: sent to a dead-letter topic, and those that failed
RECORDS: Final = "dead-letter-queue-record-count"
PRODUCE_REQUESTS: Final = "dead-letter-queue-total-produce-requests"
FAILED_PRODUCE_REQUESTS: Final = "dead-letter-queue-failed-produce-requests"
#: the record batch's own bytes, before its records (Kafka's ``RECORD_BATCH_OVERHEAD``)
BATCH_OVERHEAD: Final = 61
#: Kafka reads at most this much of the source partition per pass for the records to copy
_READ_BYTES = 1 << 20


def dead_letter_headers(letter: DeadLetter, offset: int) -> list[tuple[str, bytes | None]]:
    """The headers of the dead letter of ``offset``, in Kafka's order."""
    return [
        ("__dlq.errors.topic", letter.topic.encode()),
        ("__dlq.errors.partition", str(letter.partition).encode()),
        ("__dlq.errors.offset", str(offset).encode()),
        ("__dlq.errors.group", letter.group_id.encode()),
        ("__dlq.errors.delivery.count", str(letter.delivery_count).encode()),
        ("__dlq.errors.message", letter.cause.encode()),
    ]


def topic_refusal(
    group_id: str,
    topic: str,
    *,
    prefix: str,
    info: TopicInfo | None,
    auto_create: bool,
) -> str | None:
    """Why ``topic`` cannot take ``group_id``'s dead letters (Kafka's words), or None."""
    if not topic:
        return f"Configured DLQ topic name in share group: {group_id} is empty."
    if topic.startswith("__"):
        return (
            f"Configured DLQ topic name in share group: {group_id} cannot start with __, "
            f"topic: {topic}."
        )
    if info is not None and info.configs.get(GROUP_ENABLE, "false").lower() != "true":
        return (
            f"DLQ is not enabled on configured DLQ topic for share group: {group_id}, "
            f"topic: {topic}."
        )
    if info is None and not auto_create:
        return (
            "DLQ topic does not exist and auto create is disabled on cluster for share group: "
            f"{group_id}, topic: {topic}."
        )
    if prefix and not topic.startswith(prefix):
        return (
            "Configured DLQ topic name does not comply with the DLQ topic prefix in share "
            f"group: {group_id}, topic: {topic}, prefix: {prefix}."
        )
    return None


def _varint_size(value: int) -> int:
    zigzag = (value << 1) ^ (value >> 63)
    size = 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def _blob_size(blob: bytes | None) -> int:
    return 1 if blob is None else _varint_size(len(blob)) + len(blob)


def record_size(
    offset_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]],
) -> int:
    """The encoded size of a record (its length varint included) with timestamp delta 0."""
    body = 1 + 1 + _varint_size(offset_delta) + _blob_size(key) + _blob_size(value)
    body += _varint_size(len(headers))
    for name, header_value in headers:
        body += _blob_size(name.encode()) + _blob_size(header_value)
    return _varint_size(body) + body


#: (source offset, (key, value), headers) of one dead letter
Letter = tuple[int, tuple[bytes | None, bytes | None], list[tuple[str, bytes | None]]]


def split_at(letters: list[Letter], max_bytes: int) -> list[list[Letter]]:
    """The batches Kafka's writer sends ``letters`` in, one Produce each: a batch takes
    records while it stays within ``max_bytes`` (the topic's ``max.message.bytes``), its
    first record even when that alone is larger, and ends once it has passed the bound."""
    batches: list[list[Letter]] = []
    current: list[Letter] = []
    size = BATCH_OVERHEAD
    for letter in letters:
        _, (key, value), headers = letter
        grown = record_size(len(current), key, value, headers)
        if current and size + grown > max_bytes:
            batches.append(current)
            current, size = [], BATCH_OVERHEAD
            grown = record_size(0, key, value, headers)
        current.append(letter)
        size += grown
        if size > max_bytes:
            batches.append(current)
            current, size = [], BATCH_OVERHEAD
    if current:
        batches.append(current)
    return batches


def _key_value(raw: bytes) -> tuple[bytes | None, bytes | None]:
    """The key and value of one encoded record (its length varint first)."""
    reader = Reader(raw, BatchFormatError)
    reader.varint()  # length
    reader.take(">b")  # attributes
    reader.varint()  # timestamp delta
    reader.varint()  # offset delta
    key_length = reader.varint()
    key = None if key_length < 0 else bytes(reader.raw(key_length))
    value_length = reader.varint()
    value = None if value_length < 0 else bytes(reader.raw(value_length))
    return key, value


class DeadLetterHost(Protocol):
    """What the writer needs of the broker (``BrokerCore``)."""

    config: BrokerConfig
    topics: TopicRegistry
    clock: Clock

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: dict[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> object: ...

    def produce(
        self,
        tp: TopicPartition,
        records: bytes,
        transactional_id: str | None,
        *,
        defer_flush: bool = False,
    ) -> AppendResult: ...

    def fetch(
        self, tp: TopicPartition, offset: int, max_bytes: int, *, read_committed: bool
    ) -> FetchData: ...

    def log_settings(self, info: TopicInfo) -> TopicLogSettings: ...


#: (dead letter, the group's dead-letter topic, copy the records?)
DeadLetterJob = tuple[DeadLetter, str, bool]


class ShareDeadLetters:
    """Writes share groups' dead letters into their dead-letter topics on one broker, and
    counts them with Kafka's ``ShareGroupMetrics`` DLQ meters (events ``RECORDS``,
    ``PRODUCE_REQUESTS``, ``FAILED_PRODUCE_REQUESTS`` per group, given to ``on_event``)."""

    def __init__(
        self, host: DeadLetterHost, on_event: Callable[[str, str, int], None] | None = None
    ) -> None:
        self._host = host
        self._on_event = on_event

    def _event(self, group_id: str, kind: str, count: int) -> None:
        if self._on_event is not None:
            self._on_event(group_id, kind, count)

    def enqueue(self, letter: DeadLetter, topic: str, copy_record: bool) -> None:
        """Write ``letter`` once the current operation is over (a timer of delay 0)."""
        job: DeadLetterJob = (letter, topic, copy_record)
        self._host.clock.schedule(0, self._runner(job))

    def _runner(self, job: DeadLetterJob) -> Callable[[], None]:
        letter, topic, copy_record = job

        def run() -> None:
            self.write(letter, topic, copy_record=copy_record)

        return run

    def write(self, letter: DeadLetter, topic: str, *, copy_record: bool) -> ErrorCode:
        """Check ``topic`` and append the dead letters of ``letter`` to it."""
        host = self._host
        info = host.topics.get(topic)
        refusal = topic_refusal(
            letter.group_id,
            topic,
            prefix=str(host.config[NAME_PREFIX] or ""),
            info=info,
            auto_create=host.config.get_bool(AUTO_CREATE),
        )
        if refusal is not None:
            log.error("share group dead letters not written: %s", refusal)
            return ErrorCode.INVALID_CONFIG
        if info is None:
            configs = {GROUP_ENABLE: "true", "message.timestamp.type": "CreateTime"}
            host.create_topic(topic, -1, -1, configs)
            info = host.topics.get(topic)
            if info is None:
                log.error("share group %s: could not create DLQ topic %s", letter.group_id, topic)
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        originals = self._originals(letter) if copy_record else {}
        destination = TopicPartition(topic, letter.partition % info.num_partitions)
        max_bytes = host.log_settings(info).max_message_bytes
        now_ms = host.clock.now_ms()
        letters = [
            (offset, originals.get(offset, (None, None)), dead_letter_headers(letter, offset))
            for offset in range(letter.first_offset, letter.last_offset + 1)
        ]
        for chunk in split_at(letters, max_bytes):
            batch = build_batch(
                [key_value for _, key_value, _ in chunk],
                timestamp_ms=now_ms,
                headers=[headers for _, _, headers in chunk],
            )
            self._event(letter.group_id, PRODUCE_REQUESTS, 1)
            result = host.produce(destination, batch, None)
            if result.error is not ErrorCode.NONE:
                self._event(letter.group_id, FAILED_PRODUCE_REQUESTS, 1)
                log.error(
                    "share group %s: DLQ write to %s failed: %s",
                    letter.group_id,
                    destination,
                    result.error.name,
                )
                return result.error
            self._event(letter.group_id, RECORDS, len(chunk))
        return ErrorCode.NONE

    def _originals(self, letter: DeadLetter) -> dict[int, tuple[bytes | None, bytes | None]]:
        """The key and value of each record of the letter's range still in the log."""
        source = TopicPartition(letter.topic, letter.partition)
        out: dict[int, tuple[bytes | None, bytes | None]] = {}
        offset = letter.first_offset
        while offset <= letter.last_offset:
            data = self._host.fetch(source, offset, _READ_BYTES, read_committed=False)
            if data.error is not ErrorCode.NONE or not data.records:
                break
            try:
                batches = iter_batches(data.records)
                next_offset = offset
                for pos, header in batches:
                    next_offset = max(next_offset, header.last_offset + 1)
                    if header.is_control:
                        continue
                    for record in records_of(memoryview(data.records)[pos:], header):
                        if letter.first_offset <= record.offset <= letter.last_offset:
                            out[record.offset] = _key_value(record.raw)
            except BatchFormatError as exc:
                log.error("share group %s: unreadable records to copy: %s", letter.group_id, exc)
                break
            if next_offset <= offset:
                break
            offset = next_offset
        return out
