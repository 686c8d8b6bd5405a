"""A response the broker cannot encode is answered UNKNOWN_SERVER_ERROR (issue 25), as Kafka
answers a request whose handling failed; the connection is not dropped."""

from __future__ import annotations

import asyncio
import random
import struct
from typing import Any

from coordinator.broker import BrokerCore
from coordinator.log.memory_log import MemoryStorage
from coordinator.protocol.server import KafkaServer
from coordinator.protocol.wire import DecodedRequest
from tests.kafka_wire import WireClient
from txn.clock import ManualClock
from txn.config import BrokerConfig


def test_a_response_field_left_none_is_an_error_answer_not_a_close() -> None:
    core = BrokerCore(
        MemoryStorage(),  # type: ignore[arg-type]
        ManualClock(1_700_000_000_000),
        BrokerConfig(),
        random.Random(1),
    )
    server = KafkaServer(core, "127.0.0.1", 9092)

    async def broken(_req: DecodedRequest[Any]) -> dict[str, Any]:
        return {"error_code": 0, "api_keys": [{"api_key": None, "min_version": 0}]}

    server.handlers.table[18] = broken
    client = WireClient.__new__(WireClient)  # only its encoder: no socket
    client.correlation = 0
    frame = client.encode(18, 3, {})
    response = asyncio.run(server._handle_frame(frame, 1, "127.0.0.1"))
    assert isinstance(response, bytes)
    # size, correlation id, (v3: flexible header's tags are not in ApiVersions' header) error
    (_size, correlation, error) = struct.unpack_from(">iih", response)
    assert correlation == 1
    assert error == -1  # UNKNOWN_SERVER_ERROR
