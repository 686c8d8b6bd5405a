"""Roles a KIP-1289 test runs in a child process (so the test can SIGKILL it).

    python -m tests.integration.kip1289_worker ROLE BOOTSTRAP GROUP IN OUT TID [N]

``prepare``: consume N records in transactional mode, produce a transformed copy
and put the acks into a 2PC transaction, prepare it, print the PreparedTxnState
as one JSON line, then wait forever (the test kills it).
``hang``: the same but without 2PC and without preparing: the transaction stays
open until its timeout.
``nomarkers``: run a broker whose marker channel drops every delivery (fault
injection for the "crash after PREPARE_COMMIT, before the markers" test).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from producer.consumer.share_consumer import ShareConsumer
from producer.produce.transactional_producer import TransactionalProducer


def _copy_into_transaction(argv: list[str], two_phase: bool) -> None:
    bootstrap, group, topic_in, topic_out, tid, count = argv[:6]
    want = int(count)
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "transactional",
        }
    )
    consumer.subscribe([topic_in])
    producer = TransactionalProducer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": tid,
            "transaction.timeout.ms": 3000,
            "transaction.two.phase.commit.enable": two_phase,
        }
    )
    producer.init_transactions()
    producer.begin_transaction()
    got = 0
    deadline = time.monotonic() + 30
    while got < want and time.monotonic() < deadline:
        for record in consumer.poll(0.5):
            producer.send(topic_out, (record.value or b"").upper(), key=record.key)
            consumer.acknowledge(record)
            got += 1
    producer.send_share_acks_to_transaction(consumer.acknowledgements(), consumer.group_metadata())
    producer.flush()
    if two_phase:
        state = producer.prepare_transaction()
        print(str(state), flush=True)
    else:
        print('{"ready": true}', flush=True)
    while True:
        time.sleep(1)


def _broker_without_markers(argv: list[str]) -> None:
    from coordinator.launcher import serve  # noqa: PLC0415
    from coordinator.marker_channel import MarkerChannel  # noqa: PLC0415
    from txn.config import BrokerConfig  # noqa: PLC0415

    def drop(self: MarkerChannel, marker: object, respond: object) -> None:
        return None  # the markers are lost; the broker is about to be killed anyway

    MarkerChannel.deliver = drop  # type: ignore[method-assign,assignment]
    data_dir, port = argv[0], int(argv[1])
    asyncio.run(serve(Path(data_dir), "127.0.0.1", port, BrokerConfig()))


def main() -> None:
    role, *argv = sys.argv[1:]
    if role == "prepare":
        _copy_into_transaction(argv, two_phase=True)
    elif role == "hang":
        _copy_into_transaction(argv, two_phase=False)
    elif role == "nomarkers":
        _broker_without_markers(argv)
    else:
        raise SystemExit(f"unknown role {role}")


if __name__ == "__main__":
    main()
