"""The Produce path on real sockets and segment files: while a request waits for its fsync
other connections go on, one fsync per partition covers every request that arrived
meanwhile (from any connection), and each connection's responses come back in request
order.

The group commit's rounds are held by the test (no sleeps): ``HeldRunner`` runs a round's
fsyncs only when released, and fsyncs are counted through the storage (``fsync_later`` and
``flush`` of the partition logs)."""

from __future__ import annotations

import asyncio
import random
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.serial import entity_reader

from coordinator.broker import BrokerCore
from coordinator.log.file_log import FileLog, FileStorage
from coordinator.log.group_commit import Failures
from coordinator.protocol.server import KafkaServer
from tests.kafka_wire import WireClient
from tests.unit.log.test_group_commit import HeldRunner
from txn.api_keys import ApiKey
from txn.batch import build_batch
from txn.clock import ManualClock
from txn.config import BrokerConfig
from txn.errors import ErrorCode
from txn.ids import TopicPartition
from txn.kip1289_schema import load_response

TOPIC = "events"
VERSION = 9


class Counted:
    fsync_later = 0
    flush = 0


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[Counted]]:
    """Counts the partition logs' fsyncs: deferred (group commit) and inline (flush)."""
    later, flush = FileLog.fsync_later, FileLog.flush

    def fsync_later(self: FileLog) -> Callable[[], None]:
        if self.name.startswith(TOPIC):
            Counted.fsync_later += 1
        return later(self)

    def flushed(self: FileLog) -> None:
        if self.name.startswith(TOPIC):
            Counted.flush += 1
        flush(self)

    Counted.fsync_later = Counted.flush = 0
    monkeypatch.setattr(FileLog, "fsync_later", fsync_later)
    monkeypatch.setattr(FileLog, "flush", flushed)
    yield Counted


def _core(tmp_path: Path) -> BrokerCore:
    core = BrokerCore(
        FileStorage(tmp_path), ManualClock(1_700_000_000_000), BrokerConfig(), random.Random(1)
    )
    assert core.create_topic(TOPIC, 3, 1).error is ErrorCode.NONE
    return core


def _produce(client: WireClient, partition: int, value: bytes = b"v") -> bytes:
    batch = build_batch([(None, value)], timestamp_ms=1_700_000_000_000)
    body = {
        "acks": -1,
        "timeout": 30_000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition, "records": batch}]}],
    }
    payload = client.encode(ApiKey.PRODUCE, VERSION, body)
    return struct.pack(">i", len(payload)) + payload


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.encoder = WireClient.__new__(WireClient)  # its encoder only: no socket
        self.encoder.correlation = 0

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    def send(self, partition: int) -> int:
        self.writer.write(_produce(self.encoder, partition))
        return self.encoder.correlation

    async def response(self) -> tuple[int, Any]:
        (size,) = struct.unpack(">i", await self.reader.readexactly(4))
        frame = await self.reader.readexactly(size)
        cls = load_response(ApiKey.PRODUCE, VERSION)
        header, at = entity_reader(cls.__header_schema__)(frame, 0)
        body, _ = entity_reader(cls)(frame, at)
        return int(header.correlation_id), body

    def close(self) -> None:
        self.writer.close()


def _answer(body: Any) -> tuple[int, int, int]:
    (topic,) = body.responses
    (part,) = topic.partition_responses
    return int(part.index), int(part.error_code), int(part.base_offset)


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


def _ends(core: BrokerCore) -> list[int]:
    return [core.partitions[TopicPartition(TOPIC, p)].high_watermark for p in range(3)]


def test_requests_on_different_connections_share_one_fsync_per_partition(
    tmp_path: Path, counted: type[Counted]
) -> None:
    async def scenario() -> None:
        core = _core(tmp_path)
        server = KafkaServer(core, "127.0.0.1", 0)
        runner = HeldRunner()
        server.group_commit._runner = runner
        server.group_commit.others_waiting = None  # always a round in the (held) runner
        await server.start()
        conns = [await Connection.open(server.port) for _ in range(4)]
        try:
            conns[0].send(0)  # round 1: partition 0, held
            await _until(lambda: len(runner.rounds) == 1)
            assert counted.fsync_later == 1
            # three requests on three other connections, to partitions 0, 1 and 2
            for i, conn in enumerate(conns[1:]):
                conn.send(i)
            await _until(lambda: sum(_ends(core)) == 4)  # all appended, none answered
            assert len(runner.rounds) == 1 and counted.fsync_later == 1
            runner.release()
            assert _answer((await conns[0].response())[1])[:2] == (0, ErrorCode.NONE)
            await _until(lambda: len(runner.rounds) == 2)
            assert counted.fsync_later == 4  # round 2: one fsync for each of the 3 partitions
            runner.release()
            for i, conn in enumerate(conns[1:]):
                _c, body = await conn.response()
                assert _answer(body) == (i, ErrorCode.NONE, 1 if i == 0 else 0)
            assert (server.group_commit.rounds, server.group_commit.fsyncs) == (2, 4)
            assert counted.flush == 0  # no inline fsync on the Produce path
        finally:
            for conn in conns:
                conn.close()
            await server.stop()
            core.close()

    asyncio.run(scenario())


def test_requests_sent_back_to_back_are_answered_in_order(
    tmp_path: Path, counted: type[Counted]
) -> None:
    async def scenario() -> None:
        core = _core(tmp_path)
        server = KafkaServer(core, "127.0.0.1", 0)
        runner = HeldRunner()
        server.group_commit._runner = runner
        server.group_commit.others_waiting = None  # always a round in the (held) runner
        await server.start()
        conn = await Connection.open(server.port)
        try:
            sent = [conn.send(i % 3) for i in range(5)]  # as librdkafka's max.in.flight=5
            for expected in range(1, 6):  # one at a time: each waits for its round
                await _until(lambda n=expected: len(runner.rounds) == n)
                assert sum(_ends(core)) == expected
                runner.release()
            answers = [await conn.response() for _ in sent]
            assert [c for c, _b in answers] == sent  # request order
            offsets = [_answer(b) for _c, b in answers]
            assert offsets == [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 0, 1), (1, 0, 1)]
            assert counted.fsync_later == 5 and counted.flush == 0
        finally:
            conn.close()
            await server.stop()
            core.close()

    asyncio.run(scenario())


def test_fast_fsyncs_are_done_at_once_by_the_produce_handler(
    tmp_path: Path, counted: type[Counted]
) -> None:
    async def scenario() -> None:
        core = _core(tmp_path)
        server = KafkaServer(core, "127.0.0.1", 0)  # the server's own choice of path
        await server.start()
        conn = await Connection.open(server.port)
        try:
            conn.send(2)
            _c, body = await conn.response()
            assert _answer(body) == (2, ErrorCode.NONE, 0)
            assert (counted.flush, counted.fsync_later) == (1, 0)
            assert server.group_commit.rounds == 0 and server.group_commit.fsyncs == 1
        finally:
            conn.close()
            await server.stop()
            core.close()

    asyncio.run(scenario())


def test_a_failed_group_fsync_answers_kafka_storage_error(
    tmp_path: Path, counted: type[Counted]
) -> None:
    async def failing(work: Callable[[], Failures]) -> Failures:
        raise OSError(5, "EIO")

    async def scenario() -> None:
        core = _core(tmp_path)
        server = KafkaServer(core, "127.0.0.1", 0)
        server.group_commit._runner = failing
        server.group_commit.others_waiting = None
        await server.start()
        conn = await Connection.open(server.port)
        try:
            conn.send(1)
            _c, body = await conn.response()
            assert _answer(body) == (1, ErrorCode.KAFKA_STORAGE_ERROR, -1)
        finally:
            conn.close()
            await server.stop()
            core.close()

    asyncio.run(scenario())
