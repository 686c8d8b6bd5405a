"""A scripted stand-in for the producer's client, with answer builders and the producer set-ups
the producer tests share (no broker, no sleeps)."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from types import SimpleNamespace
from typing import Any, TypeVar

from producer.produce.transactional_producer import TransactionalProducer
from producer.protocol.types import (
    AcknowledgeType,
    ShareAckBatch,
    ShareAcknowledgements,
    ShareGroupMetadata,
)
from txn.api_keys import ApiKey
from txn.batch import parse_header
from txn.errors import Kip1289NotSupportedError, RetriableError
from txn.ids import TopicPartition

T = TypeVar("T")
TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
TP2 = TopicPartition("t", 2)
PID = 4000

# -- fakes ----------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def ns(**kwargs: Any) -> SimpleNamespace:
    return SimpleNamespace(**kwargs)


class FakeClient:
    """Answers requests from per-API handlers; ``scripts`` queue one-off answers first."""

    def __init__(self) -> None:
        self.requests: list[tuple[int | None, int, dict[str, Any]]] = []
        self.scripts: dict[int, list[Callable[[int | None, dict[str, Any]], Any]]] = {}
        self.leaders: dict[TopicPartition, int] = {}
        self.topic_ids = {"t": uuid.uuid4(), "a": uuid.uuid4(), "b": uuid.uuid4()}
        self.offsets: dict[TopicPartition, int] = {}
        self.epoch = 0
        self.without_kip1289 = False
        self._lock = threading.Lock()

    # scripted answers ------------------------------------------------------------------------

    def script(self, api_key: int, *answers: Callable[[int | None, dict[str, Any]], Any]) -> None:
        self.scripts.setdefault(api_key, []).extend(answers)

    def sent(self, api_key: int) -> list[dict[str, Any]]:
        return [body for _node, key, body in self.requests if key == api_key]

    # ProducerClient --------------------------------------------------------------------------

    def send(
        self, node_id: int | None, api_key: int, body: Mapping[str, Any], *, min_version: int = 0
    ) -> Any:
        with self._lock:
            self.requests.append((node_id, api_key, dict(body)))
            queue = self.scripts.get(api_key)
            default = f"default_{ApiKey(api_key).name.lower()}"
            handler = queue.pop(0) if queue else getattr(self, default)
        return handler(node_id, dict(body))

    def call(self, fn: Callable[[], T], *, timeout_ms: int | None = None) -> T:
        last: RetriableError | None = None
        for _ in range(20):
            try:
                return fn()
            except RetriableError as exc:
                last = exc
        assert last is not None
        raise last

    def leader_for(self, tp: TopicPartition) -> int:
        return self.leaders.get(tp, 1)

    def coordinator_for(self, key_type: int, key: str) -> int:
        return 0

    def forget_coordinator(self, key_type: int, key: str) -> None:
        pass

    def require_kip1289(self, api_key: int, node_id: int | None = None) -> None:
        if self.without_kip1289:
            raise Kip1289NotSupportedError("no KIP-1289 here", api_key=api_key)

    def topic(self, name: str, *, auto_create: bool = False) -> Any:
        return ns(name=name, topic_id=self.topic_ids[name], partitions=[0, 1, 2])

    def refresh_metadata(
        self, topics: list[str] | None = None, *, auto_create: bool = False
    ) -> None:
        pass

    def close(self) -> None:
        pass

    # default answers -------------------------------------------------------------------------

    def default_produce(self, node: int | None, body: dict[str, Any]) -> Any:
        topics = []
        for topic in body["topic_data"]:
            parts = []
            for part in topic["partition_data"]:
                tp = TopicPartition(topic["name"], part["index"])
                header = parse_header(part["records"])
                base = self.offsets.get(tp, 0)
                self.offsets[tp] = base + header.records_count
                parts.append(ns(index=tp.partition, error_code=0, base_offset=base))
            topics.append(ns(name=topic["name"], partition_responses=parts))
        return ns(responses=topics)

    def default_init_producer_id(self, node: int | None, body: dict[str, Any]) -> Any:
        if body["producer_epoch"] >= 0:
            self.epoch = body["producer_epoch"] + 1
        return ns(
            error_code=0,
            producer_id=PID,
            producer_epoch=self.epoch,
            ongoing_txn_producer_id=-1,
            ongoing_txn_producer_epoch=-1,
        )

    def default_add_partitions_to_txn(self, node: int | None, body: dict[str, Any]) -> Any:
        return add_partitions_answer(body, 0)

    def default_end_txn(self, node: int | None, body: dict[str, Any]) -> Any:
        return ns(error_code=0)

    def default_add_share_acks_to_txn(self, node: int | None, body: dict[str, Any]) -> Any:
        return ns(error_code=0)

    def default_txn_share_acknowledge(self, node: int | None, body: dict[str, Any]) -> Any:
        return share_ack_answer(body, {})


def add_partitions_answer(body: dict[str, Any], code: int) -> Any:
    return ns(
        results_by_topic_v3_and_below=[
            ns(
                name=t["name"],
                results_by_partition=[
                    ns(partition_index=p, partition_error_code=code) for p in t["partitions"]
                ],
            )
            for t in body["v3_and_below_topics"]
        ]
    )


def produce_answer(code: int, base_offset: int = -1) -> Callable[[int | None, dict[str, Any]], Any]:
    def answer(node: int | None, body: dict[str, Any]) -> Any:
        return ns(
            responses=[
                ns(
                    name=t["name"],
                    partition_responses=[
                        ns(index=p["index"], error_code=code, base_offset=base_offset)
                        for p in t["partition_data"]
                    ],
                )
                for t in body["topic_data"]
            ]
        )

    return answer


def share_ack_answer(body: dict[str, Any], codes: dict[tuple[Any, int], int]) -> Any:
    return ns(
        topics=[
            ns(
                topic_id=t["topic_id"],
                partitions=[
                    ns(
                        partition=p["partition"],
                        error_code=codes.get((t["topic_id"], p["partition"]), 0),
                        error_message=None,
                    )
                    for p in t["partitions"]
                ],
            )
            for t in body["topics"]
        ]
    )


def raising(exc: Exception) -> Callable[[int | None, dict[str, Any]], Any]:
    def answer(node: int | None, body: dict[str, Any]) -> Any:
        raise exc

    return answer


def batches_of(body: dict[str, Any]) -> dict[TopicPartition, bytes]:
    return {
        TopicPartition(t["name"], p["index"]): p["records"]
        for t in body["topic_data"]
        for p in t["partition_data"]
    }


def producer_with(client: FakeClient, **extra: Any) -> TransactionalProducer:
    config = {"bootstrap.servers": "fake:9092", "transactional.id": "tid", **extra}
    return TransactionalProducer(config, client=client)


def share_acks() -> tuple[ShareAcknowledgements, ShareGroupMetadata]:
    acks = ShareAcknowledgements(
        group_id="g",
        member_id="m-old",
        batches={
            TopicPartition("a", 0): (
                ShareAckBatch(0, 4, AcknowledgeType.ACCEPT),
                ShareAckBatch(5, 5, AcknowledgeType.REJECT),
            ),
            TopicPartition("a", 1): (ShareAckBatch(10, 12, AcknowledgeType.RELEASE),),
            TopicPartition("b", 0): (ShareAckBatch(7, 7, AcknowledgeType.ACCEPT),),
        },
    )
    return acks, ShareGroupMetadata(group_id="g", member_id="m-1", member_epoch=3)


@contextlib.contextmanager
def in_transaction(
    client: FakeClient, *, acks: bool = True, **extra: Any
) -> Iterator[TransactionalProducer]:
    """A producer in an open transaction (with share acks staged unless ``acks`` is False)."""
    producer = producer_with(client, **extra)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        if acks:
            producer.send_share_acks_to_transaction(*share_acks())
        yield producer
    finally:
        producer.close()


def fail_share_ack(client: FakeClient, topic: str, partition: int, code: int) -> None:
    """The next TxnShareAcknowledge answers ``code`` for ``topic``-``partition``."""
    client.script(
        ApiKey.TXN_SHARE_ACKNOWLEDGE,
        lambda _n, body: share_ack_answer(body, {(client.topic_ids[topic], partition): code}),
    )
