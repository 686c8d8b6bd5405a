"""A connection's reads give way to cancellation (KafkaServer.stop cancels every connection).

On Python 3.11 ``asyncio.wait_for`` returned a read that completed as its task was cancelled
and dropped the cancellation: a connection whose client kept sending (a producer, a consumer
group's fetches) went on being served after SIGTERM, and the broker did not stop until the
client went away (found by Kafka's VerifiableProducer and VerifiableConsumer in
tests/reference/test_system_workloads.py: LocalBroker.stop waited its 20 s, then SIGKILL).
"""

from __future__ import annotations

import asyncio

import pytest

from coordinator.security.limits import ConnectionIdle, read_exactly, read_frame


def test_a_read_cancelled_as_its_bytes_arrive_is_cancelled() -> None:
    async def scenario() -> None:
        reader = asyncio.StreamReader()
        task = asyncio.create_task(read_exactly(reader, 4, 5.0))
        await asyncio.sleep(0)  # the task waits for bytes
        reader.feed_data(b"\x00\x00\x00\x01")  # they arrive ...
        task.cancel()  # ... as the server stops
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())


def test_reads_still_time_out_and_return_frames() -> None:
    async def scenario() -> None:
        idle = asyncio.StreamReader()
        with pytest.raises(ConnectionIdle):
            await read_exactly(idle, 4, 0.05)
        reader = asyncio.StreamReader()
        reader.feed_data(b"\x00\x00\x00\x08abcdefgh")
        assert await read_frame(reader, 100, None, limit_name="limit") == b"abcdefgh"

    asyncio.run(scenario())
