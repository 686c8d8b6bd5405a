"""A topic read from its start and written to, as Connect's ``KafkaBasedLog``.

The distributed herder keeps its connector configs and statuses in two compacted topics;
every worker reads them whole (``read_to_end``: up to the end offsets it looked up first,
so a read sees every write that was acknowledged before it began) and writes keyed JSON
records to them (``send``, acknowledged by the leader with ``acks=all``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from producer.admin import Admin, TopicSpec
from producer.produce.transactional_producer import TransactionalProducer
from producer.protocol.client import KafkaClient, check_error
from producer.protocol.records import decode_batch, split_batches
from txn.api_keys import ApiKey
from txn.errors import ErrorCode, RetriableError
from txn.ids import TopicPartition

__all__ = ["KafkaLog"]

log = logging.getLogger("producer.sink")

_FETCH_MAX_VERSION = 12  # topic names, not ids
_LATEST = -1


class KafkaLog:
    """One topic: created if missing (compacted), read from offset 0, written with keys."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        *,
        partitions: int,
        replication_factor: int,
        client_id: str,
    ) -> None:
        self.topic = topic
        self._bootstrap = bootstrap
        self._partitions = partitions
        self._replication = replication_factor
        self._client = KafkaClient(bootstrap, client_id=client_id)
        self._producer: TransactionalProducer | None = None
        self._client_id = client_id
        self._positions: dict[int, int] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        """Create the topic (compacted, as Connect requires) unless it exists."""
        with Admin({"bootstrap.servers": self._bootstrap, "client.id": self._client_id}) as a:
            if self.topic not in a.list_topics():
                spec = TopicSpec(
                    self.topic,
                    self._partitions,
                    self._replication,
                    {"cleanup.policy": "compact"},
                )
                error = a.create_topics([spec])[self.topic]
                if error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                    msg = f"cannot create the topic {self.topic!r}: {error.name}"
                    raise RuntimeError(msg)
        self._producer = TransactionalProducer(
            {
                "bootstrap.servers": self._bootstrap,
                "client.id": f"{self._client_id}-producer",
                "acks": "all",
                "linger.ms": 0,
            }
        )

    def send(self, key: str, value: bytes | None, partition: int | None = None) -> int:
        """Write one record and wait for it; its offset."""
        assert self._producer is not None, "start() first"
        part = 0 if partition is None and self._partitions == 1 else partition
        future = self._producer.send(self.topic, value, key=key.encode(), partition=part)
        self._producer.flush(30)
        return int(future.result(30).offset)

    def read_to_end(self, apply: Callable[[str, bytes | None, int, int], None]) -> None:
        """Every record not read yet, up to the current end: ``apply(key, value, part, off)``."""
        with self._lock:
            meta = self._client.call(lambda: self._client.topic(self.topic))
            ends = {p: self._end_offset(p) for p in meta.partitions}
            for part, end in sorted(ends.items()):
                while self._positions.get(part, 0) < end:
                    if not self._fetch(part, apply):
                        break

    def _end_offset(self, partition: int) -> int:
        tp = TopicPartition(self.topic, partition)
        body = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": self.topic,
                    "partitions": [{"partition_index": partition, "timestamp": _LATEST}],
                }
            ],
        }

        def once() -> int:
            node = self._client.leader_for(tp)
            resp = self._client.send(node, ApiKey.LIST_OFFSETS, body, min_version=1)
            part = resp.topics[0].partitions[0]
            check_error(part.error_code, topic=self.topic, partition=partition)
            return int(part.offset)

        return self._client.call(once)

    def _fetch(self, partition: int, apply: Callable[[str, bytes | None, int, int], None]) -> bool:
        tp = TopicPartition(self.topic, partition)
        position = self._positions.get(partition, 0)
        body: dict[str, Any] = {
            "replica_id": -1,
            "max_wait": 100,
            "min_bytes": 1,
            "max_bytes": 8 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": self.topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": position,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 8 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }

        def once() -> Any:
            node = self._client.leader_for(tp)
            return self._client.send(node, ApiKey.FETCH, body, max_version=_FETCH_MAX_VERSION)

        try:
            resp = self._client.call(once)
        except RetriableError as exc:
            log.debug("reading %s: %s", self.topic, exc)
            return False
        part = resp.responses[0].partitions[0]
        code = ErrorCode(int(part.error_code))
        if code is ErrorCode.OFFSET_OUT_OF_RANGE:
            self._positions[partition] = int(part.log_start_offset)
            return True
        check_error(int(code), topic=self.topic, partition=partition)
        raw = bytes(part.records or b"")
        moved = False
        for pos, header in split_batches(raw):
            if header.last_offset < position:
                continue
            if not header.is_control:
                for rec in decode_batch(raw, pos, header).records:
                    if rec.offset >= position:
                        key = (rec.key or b"").decode("utf-8")
                        apply(key, rec.value, partition, rec.offset)
            position = header.last_offset + 1
            moved = True
        self._positions[partition] = position
        return moved

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()
        self._client.close()
